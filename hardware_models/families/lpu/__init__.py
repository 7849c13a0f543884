"""The LPU family (Groq): SRAM only, no caches or kernel launches; the compiler schedules every op
on its functional unit (MXM, VXM, SXM, MEM) to the cycle, and a model is partitioned over as
many chips as its weights need. The cost model (hardware_models/families/lpu/cost.py) reads the schedule.

Upcasts (fold_upcasts): not in the pipeline. Whether GroqWare folds a convert into a matmul is
unpublished; assumed it does not. Its real front end (GroqFlow's ONNX export) receives a bf16
`nn.Linear` in its own type, so torch-mlir's f32 converts are an artifact the model keeps here,
at small cost: the MXM has only int8 and fp16 paths, so an f32 dot is already costed at the fp16
rate, and only the converts (VXM ops) remain. A missing f64 runs as double-f32 on the VXM, which
has f32 (assumed; resolve_dtypes).
"""

from __future__ import annotations

from hardware_models.families import Compiler, Family, register
from hardware_models.families.lpu.allocate_sram import allocate_sram
from hardware_models.families.lpu.cost import lpu_allreduce, lpu_group_cost
from hardware_models.families.lpu.partition_chips import partition_chips
from hardware_models.families.lpu.schedule_static import schedule_static
from hardware_models.passes.assign_groups import assign_groups
from hardware_models.passes.resolve_dtypes import resolve_dtypes
from hardware_models.target import Target


def lpu_ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    return (
        {"MXM fp16": target["peak.fp16_flop_per_s"], "VXM": target["chip.vector_alus"] * target["chip.clock_hz"]},
        {"SRAM": target.main_memory_bytes_per_s},
    )


LPU = register(
    Family(
        name="lpu",
        column=3,  # its place among the map's and compare's columns
        vendor="Groq",
        noun="LPU",
        representative="groq-lpu",
        schema={
            "chip": (
                "clock_hz",
                "vector_lanes",
                "vector_alus",
                "mxm_macs_per_cycle",
                "mxm_rows",
                "sxm_vectors_per_cycle",
            ),
            "peak": ("int8_op_per_s", "fp16_flop_per_s"),
            "interconnect": ("c2c_links", "c2c_bytes_per_s_per_link", "host_bytes_per_s"),
            "schedule": (
                "mem_latency_cycles",
                "vxm_latency_cycles",
                "sxm_latency_cycles",
                "mxm_latency_cycles",
                "c2c_hop_latency_s",
            ),
            "host": ("flop_per_s",),
        },
        levels={"sram": ("bytes", "bytes_per_s", "usable_fraction")},
        compilers=(
            Compiler(
                "groqware",
                pipeline=(
                    resolve_dtypes,  # first because every later pass reads the types it decides (a type it lacks is emulated or refused)
                    assign_groups,  # no fusion: streams chain ops instead, in schedule_static
                    partition_chips,  # before the schedule because a layer split over chips shortens its matmuls
                    schedule_static,
                    allocate_sram,  # after the schedule because a value's slot is live from its write to its last read
                ),
                group_cost=lpu_group_cost,
                stack="GroqWare: every op scheduled to the cycle on its functional unit, values placed in SRAM, the model partitioned over chips",
            ),
        ),
        ceilings=lpu_ceilings,
        peak_16bit=lambda t: t["peak.fp16_flop_per_s"],
        off_chip=lambda t: ("chip-to-chip", t["interconnect.c2c_links"] * t["interconnect.c2c_bytes_per_s_per_link"]),
        scheduled=True,
        allreduce=lpu_allreduce,
    )
)
