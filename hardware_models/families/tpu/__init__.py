"""The TPU family (Google TPU v4, v5e, v5p, v6e): MXUs as weight-stationary systolic arrays, a
VPU, VMEM and HBM; XLA's compiler fuses epilogues into the MXU fusion (output fusion).

The cost model is hardware_models/families/tpu/cost.py, the systolic core hardware_models/cost/systolic.py.

Tiling (weight-stationary MXU folds):
    weights k x n fill R x C arrays: kp = k rounded up to R, np = n rounded up to C, mp = m
    rounded up to the 8 sublanes; units = b * folds; steps = ceil(units / MXUs) folds per MXU,
    each max(R, m) cycles with the next fold's weights loading meanwhile, plus the first load
    and the last fold's fill and drain (`double_buffered_cycles`); reuse block: the whole problem
    if A, B and C fit in VMEM less its buffer_fraction (the double buffers), else the largest
    square output block (bm = bn, whole arrays) whose A and B panels of depth 512 (two buffers
    each) and f32 accumulator fit in VMEM.

Upcasts (fold_upcasts): XLA's algebraic simplifier folds dot(convert(bf16), convert(bf16)) -> f32
into a bf16 dot with f32 accumulation (preferred_element_type), removing the converts. A missing
f64 (torch-mlir's LayerNorm variance) runs as double-f32, pairs of f32, as XLA:TPU does
(resolve_dtypes: jax-ml/jax#21108).
"""

from __future__ import annotations

from functools import partial

from hardware_models.cost.model import bus_allreduce
from hardware_models.cost.systolic import double_buffered_cycles, systolic_gemm
from hardware_models.families import Compiler, Family, register
from hardware_models.families.tpu.cost import tpu_group_cost, vpu_rate
from hardware_models.passes.assign_groups import assign_groups
from hardware_models.passes.fold_upcasts import fold_upcasts
from hardware_models.passes.fuse_attention import fuse_attention
from hardware_models.passes.fuse_elementwise import XLA_TPU, fuse_elementwise
from hardware_models.passes.pad_to_tiles import pad_to_tiles
from hardware_models.passes.place_buffers import place_buffers
from hardware_models.passes.resolve_dtypes import resolve_dtypes
from hardware_models.passes.shard_tensor_parallel import shard_tensor_parallel
from hardware_models.plan import GemmShape, Tiling, ceil_div, round_up
from hardware_models.target import Target
from reference.ir.graph import element_bytes

# A compiler choice, not a hardware limit: the k depth of the A and B panels XLA stages in VMEM
# for a GEMM too big for it.
BLOCK_K = 512
# A compiler choice: the Pallas flash-attention kernel's default blocks (BlockSizes block_q = 128,
# block_k = 128, jax.experimental.pallas.ops.tpu.flash_attention); with causal=True it skips the
# key blocks a query block cannot see.
PALLAS_FLASH_TILE = (128, 128)


def tpu_tiling(shape: GemmShape, target: Target, out_bytes: int) -> Tiling:
    rows, cols = int(target["chip.mxu_rows"]), int(target["chip.mxu_cols"])
    cycles = systolic_gemm(shape.m, shape.n, shape.k, rows, cols, "ws")
    mp, np_, kp = round_up(shape.m, int(target["chip.vpu_sublanes"])), round_up(shape.n, cols), round_up(shape.k, rows)
    mxus = int(target["chip.tensorcores"] * target["chip.mxus_per_tensorcore"])
    units = shape.batch * cycles.folds
    vmem = target.level("on-chip")
    capacity = target.level_value(vmem, "bytes")  # one tensorcore's
    resident = capacity * (1 - target.level_value(vmem, "buffer_fraction"))
    e = element_bytes(shape.dtype)
    if sum(shape.operand_bytes()) + out_bytes <= resident:
        block = (mp, np_)
    else:
        bk = min(kp, BLOCK_K)
        b = cols
        while b + cols <= max(mp, np_) and 2 * 2 * (b + cols) * bk * e + (b + cols) ** 2 * 4 <= capacity:
            b += cols
        block = (min(b, mp), min(b, np_))
    steps = ceil_div(units, mxus)
    whole = double_buffered_cycles(steps, rows, cols, shape.m)
    per_fold = max(rows, shape.m)
    return Tiling(shape, (shape.m, cols, rows), (mp, np_, kp), units, steps, block, per_fold, whole - steps * per_fold)


def tpu_ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    return (
        {"MXU bf16": target["peak.bf16_flop_per_s"], "VPU": vpu_rate(target)},
        {
            lv.name.upper(): target.level_value(lv, "bytes_per_s")
            for lv in target.levels
            if f"levels.{lv.name}.bytes_per_s" in target.quantities
        },
    )


TPU = register(
    Family(
        name="tpu",
        column=1,  # its place among the map's and compare's columns
        vendor="Google",
        noun="TPU",
        representative="tpu-v5e",
        schema={
            "chip": (
                "tensorcores",
                "mxus_per_tensorcore",
                "mxu_rows",
                "mxu_cols",
                "clock_hz",
                "vpu_sublanes",
                "vector_alus_per_tensorcore",
                "transcendentals_per_cycle_per_tensorcore",
            ),
            "peak": ("bf16_flop_per_s", "int8_op_per_s"),
            "interconnect": ("ici_bytes_per_s_per_link", "host_bytes_per_s", "allreduce_bus_bytes_per_s"),
            "schedule": ("launch_overhead_s", "collective_latency_s"),
            "host": ("flop_per_s",),
        },
        optional={
            "fitted": ("gemm_efficiency", "hbm_efficiency"),
            "peak": ("fp8_flop_per_s",),
            "interconnect": ("scale_up_chips", "scale_out_bytes_per_s"),
        },
        levels={
            "hbm": ("bytes", "bytes_per_s", "usable_fraction"),
            "vmem": ("bytes", "bytes_per_s", "buffer_fraction"),
        },
        compilers=(
            Compiler(
                "xla",
                pipeline=(
                    resolve_dtypes,  # first because every later pass reads the types it decides (a type it lacks is emulated or refused)
                    fold_upcasts,  # after resolve_dtypes because it narrows to checked types only; XLA folds converts into the dot
                    assign_groups,  # after fold_upcasts because a folded convert forms no kernel
                    partial(fuse_elementwise, rules=XLA_TPU),  # XLA fuses epilogues into the MXU fusion
                    partial(
                        fuse_attention, stack="Pallas flash attention", skip_tile=PALLAS_FLASH_TILE
                    ),  # after fuse_elementwise because it takes the dots and softmax out of the fusions it made: the Pallas flash-attention kernel (JetStream, MaxText), tiled through VMEM
                    shard_tensor_parallel,  # before pad_to_tiles because a chip tiles only its share of the columns
                    pad_to_tiles,  # after fusion because only contraction groups are tiled, once
                    place_buffers,  # after pad_to_tiles because A is re-streamed per column of arrays
                ),
                group_cost=tpu_group_cost,
                stack="XLA-like: fusions around each MXU contraction, operands padded to the MXU's tiles, attention as the Pallas flash-attention kernel",
            ),
        ),
        ceilings=tpu_ceilings,
        peak_16bit=lambda t: t["peak.bf16_flop_per_s"],
        off_chip=lambda t: ("HBM", t.main_memory_bytes_per_s),
        tiling=tpu_tiling,
        allreduce=bus_allreduce,
    )
)
