"""The wafer family (Cerebras WSE-2, WSE-3): a wafer of PEs, each with its own SRAM; the compiler
lays the whole program out, one region of PEs per kernel, weights resident in the SRAM of the
PEs that use them, activations flowing over the fabric as a pipeline. When the weights do not
fit, it splits the model over wafers or streams the weights from MemoryX, whichever costs less.
The cost model is hardware_models/families/wafer/cost.py.

Upcasts (fold_upcasts): not in the pipeline. Whether the Cerebras compiler folds a convert into a
matmul is unpublished; assumed it does not. Its real front end (the Cerebras PyTorch tracer)
receives a bf16 `nn.Linear` in its own type, so torch-mlir's f32 converts are an artifact the
model keeps here, at small cost: every contraction is costed at the fp16 rate
(peak.fp16_flop_per_s) whatever its type, so only the converts (PE elementwise work) remain. A
missing f64 runs as double-f32 on the PEs' f32 units (assumed; resolve_dtypes).
"""

from __future__ import annotations

from functools import partial

from hardware_models.families import Compiler, Family, register
from hardware_models.families.wafer.cost import wafer_allreduce, wafer_group_cost
from hardware_models.families.wafer.place_layers import place_layers
from hardware_models.passes.assign_groups import assign_groups
from hardware_models.passes.fuse_elementwise import XLA_TPU, fuse_elementwise
from hardware_models.passes.resolve_dtypes import resolve_dtypes
from hardware_models.target import Target


def wafer_ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    return (
        {"wafer fp16": target["peak.fp16_flop_per_s"] * target["fitted.compute_efficiency"]},
        {"SRAM": target.main_memory_bytes_per_s, "fabric": target["interconnect.fabric_bytes_per_s"]},
    )


WAFER = register(
    Family(
        name="wafer",
        column=2,  # its place among the map's and compare's columns
        vendor="Cerebras",
        noun="wafer-scale engine",
        representative="wse-3",
        schema={
            "chip": ("pes",),
            "peak": ("fp16_flop_per_s",),
            "interconnect": ("fabric_bytes_per_s", "system_io_bytes_per_s", "host_bytes_per_s"),
            "schedule": ("region_latency_s", "wafer_hop_latency_s"),
            "fitted": ("compute_efficiency",),
            "host": ("flop_per_s",),
        },
        levels={"sram": ("bytes", "bytes_per_s", "usable_fraction")},
        compilers=(
            Compiler(
                "cerebras",
                pipeline=(
                    resolve_dtypes,  # first because every later pass reads the types it decides (a type it lacks is emulated or refused)
                    assign_groups,
                    partial(fuse_elementwise, rules=XLA_TPU),  # a region computes a matmul and streams its epilogue on
                    place_layers,  # after fusion because each kernel gets one region of the wafer
                ),
                group_cost=wafer_group_cost,
                stack="the Cerebras compiler: one region of PEs per kernel, weights resident in their SRAM, the model split over wafers or streamed from MemoryX",
            ),
        ),
        ceilings=wafer_ceilings,
        peak_16bit=lambda t: t["peak.fp16_flop_per_s"],
        off_chip=lambda t: ("system I/O", t["interconnect.system_io_bytes_per_s"]),
        chip_unit="wafer",
        allreduce=wafer_allreduce,
    )
)
