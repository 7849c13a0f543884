"""The GPU model: SIMT SMs with tensor cores, HBM behind a shared L2, one kernel per group.

Rates (per chip, from the target file):
    tensor peak   peak.<dtype>_flop_per_s (bf16, fp16, fp8); f32 contractions run on the CUDA
                  cores at 2 * SMs * fp32_lanes * clock (an FMA is two FLOPs); so does f64
                  (torch-mlir computes layernorm statistics in f64): an assumption, since
                  FP64 rates are not in specs.md
    vector rate   SMs * fp32_lanes * clock element operations per second
    SFU rate      SMs * sfu_ops_per_cycle * clock transcendentals per second
    HBM           hbm_bytes_per_s * fitted.hbm_efficiency (STREAM, kernels.csv G30-G32)
Contraction (a cuBLAS-like kernel tiled by pad_to_tiles):
    compute_s = FLOPs / (peak * gemm_efficiency)                 gemm_efficiency fitted: G23/G27/G28
    busy_s    = waves * 2 * tm * tn * kp / (peak / SMs) / gemm_efficiency   (wave quantization, padding)
    memory_s  = HBM bytes / (HBM bandwidth * hbm_efficiency)
    time_s    = max(busy_s, memory_s) + launch_overhead           launch fitted: G41
Fusion (elementwise, data movement, reductions): compute_s = FLOPs / vector rate +
    transcendentals / SFU rate; time_s = max(compute_s, memory_s) + launch_overhead.
Host fallbacks and tensor-parallel all-reduces are costed alike on every family
(estimate.group_cost; cost/model.py).
L2 bytes are reported, not timed: NVIDIA publishes no L2 bandwidth, and its effect on GEMMs is
inside the fitted gemm_efficiency.

Worked number (H100, bf16, m = n = k = 8192, gemm_efficiency e): 16 waves of one 128 x 256 x 8192
tile each, 2 * 128 * 256 * 8192 / (989e12 / 132) = 71.6 us per wave at e = 1: busy 1.146 ms /
e against 1.11 ms of useful compute / e.
"""

from __future__ import annotations

from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.plan import Group, Plan, group_work
from hardware_models.target import Target
from reference.ir import Module

TENSOR_PEAK_KEYS = {
    "bf16": "peak.bf16_flop_per_s", "f16": "peak.fp16_flop_per_s", "f8E4M3FN": "peak.fp8_flop_per_s",
    "f8E5M2": "peak.fp8_flop_per_s", "i8": "peak.int8_op_per_s",
}


def vector_rate(target: Target) -> float:
    return target["chip.sm_count"] * target["chip.fp32_lanes_per_sm"] * target["chip.clock_hz"]


def contraction_peak(target: Target, dtype: str) -> float:
    """FLOP/s of a contraction in `dtype`: tensor cores, or the CUDA cores' FMAs for f32."""
    key = TENSOR_PEAK_KEYS.get(dtype)
    if key and key in target.quantities:
        return target[key]
    return 2 * vector_rate(target)


def hbm_rate(target: Target) -> float:
    return target.main_memory_bytes_per_s * target["fitted.hbm_efficiency"]


def gpu_group_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    placement = plan.placements[group.id]
    launch_s = target["schedule.launch_overhead_s"]
    work = group_work(plan, module, group)
    flops, transcendentals = work.flops, work.transcendentals
    memory_s = {target.main_memory_level: placement.at(target.main_memory_level) / hbm_rate(target)}
    sfu_s = transcendentals / (target["chip.sm_count"] * target["chip.sfu_ops_per_cycle_per_sm"] * target["chip.clock_hz"])
    if group.kind == "contraction":
        tiling = plan.tilings[group.id]
        peak = contraction_peak(target, tiling.shape.dtype) * target["fitted.gemm_efficiency"]
        tm, tn, _ = tiling.tile
        tile_s = 2 * tm * tn * tiling.padded[2] / (peak / target["chip.sm_count"])
        compute_s = tiling.shape.flops / peak
        epilogue_s = work.epilogue_flops / vector_rate(target) + sfu_s
        busy_s = tiling.steps * tile_s + epilogue_s
        return roofline_cost(flops, tiling.padded_flops + work.epilogue_flops, compute_s + epilogue_s, dict(placement.bytes), memory_s, busy_s, launch_s)
    compute_s = flops / vector_rate(target) + sfu_s
    return roofline_cost(flops, flops, compute_s, dict(placement.bytes), memory_s, compute_s, launch_s)
