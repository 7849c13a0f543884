"""The Spyre family (IBM Spyre): 32 cores of two 8 x 8 systolic corelets, a 2 MB scratchpad (LX)
per core, LPDDR5, and tensors laid out in 128-byte sticks; torch-spyre is an Inductor back end.

The cost model is hardware_models/families/spyre/cost.py.

Tiling (8 x 8 corelets fed in sticks):
    m pads to 8-row passes (chip.matmul_row_pass), n and k to whole sticks (B's k zero-filled);
    units = b * (mp / 8) * (np / stick) over the cores, steps = ceil(units / cores).
Worked number: an fp16 65 x 65 by 65 x 65 matmul pads to 72 x 128 x 128: 9 passes x 2 sticks =
18 units, one round on 18 of the 32 cores.

Upcasts (fold_upcasts, in the pipeline): torch-spyre is an Inductor back end, which hands a bf16
`nn.Linear` to its matmul in the model's own type; torch-mlir's converts to f32 around the dot
are folded as on a GPU (both types run as f16 here, so the fold removes the convert kernels, not
a slower matmul). A missing f64 (torch-mlir's LayerNorm variance) runs as f16, as f32 does on
Spyre (no f32 to pair into double-f32; resolve_dtypes).
"""

from __future__ import annotations

from functools import partial

from hardware_models.cost.model import bus_allreduce
from hardware_models.families import Compiler, Family, register
from hardware_models.families.spyre.cost import spyre_group_cost
from hardware_models.families.spyre.divide_work import divide_work
from hardware_models.families.spyre.fire_kernels import fire_kernels
from hardware_models.families.spyre.insert_restickify import insert_restickify
from hardware_models.families.spyre.plan_scratchpad import plan_scratchpad
from hardware_models.families.spyre.stickify import stickify
from hardware_models.passes.assign_groups import assign_groups
from hardware_models.passes.fold_upcasts import fold_upcasts
from hardware_models.passes.fuse_elementwise import INDUCTOR, fuse_elementwise
from hardware_models.passes.pad_to_tiles import pad_to_tiles
from hardware_models.passes.resolve_dtypes import resolve_dtypes
from hardware_models.passes.shard_tensor_parallel import shard_tensor_parallel
from hardware_models.plan import GemmShape, Tiling, ceil_div, round_up
from hardware_models.target import Target
from reference.ir.graph import element_bytes


def spyre_tiling(shape: GemmShape, target: Target, out_bytes: int) -> Tiling:
    row_pass = int(target["chip.matmul_row_pass"])
    per_stick = int(target["chip.stick_bytes"]) // element_bytes(shape.dtype)
    mp, np_, kp = round_up(shape.m, row_pass), round_up(shape.n, per_stick), round_up(shape.k, per_stick)
    units = shape.batch * (mp // row_pass) * (np_ // per_stick)
    return Tiling(
        shape,
        (row_pass, per_stick, per_stick),
        (mp, np_, kp),
        units,
        ceil_div(units, int(target["chip.cores"])),
        (mp, np_),
    )


def spyre_ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    cores = target["chip.cores"]
    return (
        {
            "matmul fp16": 2 * cores * target["fitted.matmul_mac_per_s_per_core"],
            "vector": cores * target["chip.vector_ops_per_s_per_core"],
        },
        {"LPDDR5": target["fitted.lpddr5_one_way_bytes_per_s"]},
    )


SPYRE = register(
    Family(
        name="spyre",
        column=4,  # its place among the map's and compare's columns
        vendor="IBM",
        noun="Spyre card",
        representative="spyre",
        schema={
            "chip": (
                "cores",
                "corelets_per_core",
                "pe_rows",
                "pe_cols",
                "stick_bytes",
                "matmul_row_pass",
                "vector_ops_per_s_per_core",
            ),
            "peak": ("fp16_mac_per_s_per_core",),
            "interconnect": ("host_bytes_per_s", "allreduce_bus_bytes_per_s"),
            "schedule": ("launch_overhead_s", "collective_latency_s"),
            "fitted": (
                "matmul_mac_per_s_per_core",
                "bmm_mac_per_s_per_core",
                "bmm_small_batch_mac_per_s_per_core",
                "lpddr5_one_way_bytes_per_s",
                "lpddr5_read_write_bytes_per_s",
                "restickify_bytes_per_s",
            ),
            "host": ("flop_per_s",),
        },
        levels={
            "lpddr5": ("bytes", "bytes_per_s", "usable_fraction"),
            "lx": ("bytes", "usable_bytes", "buffer_fraction"),
        },
        compilers=(
            Compiler(
                "torch-spyre",
                pipeline=(
                    resolve_dtypes,  # first because every later pass reads the types it decides (a type it lacks is emulated or refused)
                    fold_upcasts,  # after resolve_dtypes because it narrows to checked types only; Inductor takes the Linear in its type
                    assign_groups,  # after fold_upcasts because a folded convert forms no kernel
                    partial(fuse_elementwise, rules=INDUCTOR),  # torch-spyre is an Inductor back end
                    shard_tensor_parallel,  # cards in a cluster (up to 8) when one cannot hold the model
                    stickify,  # after fusion because only tensors between kernels live in LPDDR5 or LX
                    insert_restickify,  # after stickify because it compares a matmul operand's layout with the one it needs
                    pad_to_tiles,  # 8-row passes, n and k to whole sticks
                    divide_work,  # after pad_to_tiles because a matmul's units are its row passes x output sticks
                    plan_scratchpad,  # after divide_work because residency is counted per core
                    fire_kernels,  # last: the dataflow edges need where every tensor waits
                ),
                group_cost=spyre_group_cost,
                stack="torch-spyre (an Inductor back end): kernels laid out in 128-byte sticks over 32 cores, re-layouts inserted where a kernel needs another stick dimension",
            ),
        ),
        ceilings=spyre_ceilings,
        peak_16bit=lambda t: 2 * t["chip.cores"] * t["peak.fp16_mac_per_s_per_core"],
        off_chip=lambda t: ("LPDDR5", t.main_memory_bytes_per_s),
        tiling=spyre_tiling,
        allreduce=bus_allreduce,
    )
)
