"""The TPU model: MXUs as weight-stationary systolic arrays, a VPU, VMEM, HBM; one XLA fusion per group.

Rates (per chip, from the target file; no TPU rows in kernels.csv, so nothing is fitted and
the efficiencies are 1 unless a [fitted] table says otherwise):
    MXU       peak.bf16_flop_per_s (= tensorcores * MXUs * R * C * 2 * clock); f32 runs as one
              bf16 pass (XLA's DEFAULT precision), f16 as f32
    VPU       tensorcores * vector_alus * clock element operations per second;
              transcendentals at tensorcores * transcendentals_per_cycle * clock
    HBM, VMEM hbm_bytes_per_s, vmem_bytes_per_s (about 22x HBM, SB)
Contraction (the MXU fusion, with any fused epilogue on the VPU):
    compute_s = FLOPs / peak
    busy_s    = (R + (folds per MXU - 1) * max(R, M) + M + R + C - 2) / clock   (the systolic core, ws
                dataflow, with the next fold's weights loading while M rows stream:
                systolic.double_buffered_cycles; SCALE-Sim's serial 2R + C + M - 2 per fold
                would make every decode GEMV three times slower than its weight stream),
                divided by the dtype's peak over bf16's (int8, fp8: 2x on the chips that have them)
    time_s    = max(busy_s, epilogue VPU time, HBM time, VMEM time) + launch_overhead
Fusion: compute_s = FLOPs / VPU rate + transcendentals / transcendental rate;
    time_s = max(compute_s, HBM time, VMEM time) + launch_overhead.
Host fallbacks and all-reduces: as on every family (estimate.group_cost).

Worked number (v5e, bf16, m = n = k = 8192): 64 x 64 = 4096 folds over 4 MXUs, 1024 each:
128 + 1024 * 8192 + 254 = 8,388,990 cycles / 1.5e9 = 5.593 ms busy against 1.1e12 / 197e12 =
5.581 ms of compute (99.8%); the rest is the first weight load, fill and drain (schedule).
"""

from __future__ import annotations

from hardware_models.cost.attention import attention_chips, computed_share, square_dot_flops
from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.plan import Group, Plan, group_work, shard_factor
from hardware_models.target import Target
from reference.ir import Module


def vpu_rate(target: Target) -> float:
    return target["chip.tensorcores"] * target["chip.vector_alus_per_tensorcore"] * target["chip.clock_hz"]


def transcendental_rate(target: Target) -> float:
    return (
        target["chip.tensorcores"] * target["chip.transcendentals_per_cycle_per_tensorcore"] * target["chip.clock_hz"]
    )


FP8 = ("f8E4M3FN", "f8E5M2")  # the MXU's 8-bit float inputs where the file gives their peak (Ironwood's)


def mxu_peak(target: Target, dtype: str) -> float:
    """The MXU's rate in `dtype`: its int8 peak, its fp8 peak (peak.fp8_flop_per_s, optional: only
    a generation that has fp8 gives it), else the bf16 one (f32 and bf16)."""
    if dtype == "i8":
        return target["peak.int8_op_per_s"]
    if dtype in FP8 and "peak.fp8_flop_per_s" in target.quantities:
        return target["peak.fp8_flop_per_s"]
    return target["peak.bf16_flop_per_s"]


def tpu_attention_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    """The fused attention kernel on a TPU (cost/attention.py holds what the families share).

    TPU (the Pallas flash-attention kernel, tiled through VMEM; no TPU rows in kernels.csv, so
    nothing is fitted and the efficiencies are the target's, 1 unless fitted):
        mxu_s     = dot FLOPs x share / chips / MXU peak
        vector_s  = (other FLOPs / VPU rate + transcendentals / transcendental rate) x share / chips
                    (share: the score tiles the kernel computes, cost/attention.computed_share;
                    a causal kernel skips the blocks its mask hides)
        compute_s = max(mxu_s, vector_s)      (the VLIW bundles issue MXU and VPU work together)
        memory_s  = {HBM: Q, K, V, O; VMEM: that plus the f32 score tile written and read once}
        time_s    = max(compute_s, memory_s) + launch_overhead
    """
    shape = plan.attention[group.id]
    placement = plan.placements[group.id]
    work = group_work(plan, module, group)
    chips = attention_chips(plan)
    square, share = square_dot_flops(plan, group), computed_share(plan, group)
    eff = target.get("fitted.gemm_efficiency", 1.0)
    mxu_s = square * share / chips / (mxu_peak(target, shape.dtype) * eff)
    vector_s = (
        ((work.flops - square) / vpu_rate(target) + work.transcendentals / transcendental_rate(target)) * share / chips
    )
    hbm_eff = target.get("fitted.hbm_efficiency", 1.0)
    memory_s = {
        level.name: placement.at(level.name)
        / (target.level_value(level, "bytes_per_s") * (hbm_eff if level.role == "main" else 1.0))
        for level in target.levels
    }
    compute_s = max(mxu_s, vector_s)
    return roofline_cost(
        work.flops,
        work.flops,
        compute_s,
        dict(placement.bytes),
        memory_s,
        compute_s,
        target["schedule.launch_overhead_s"],
    )


def tpu_group_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    if group.kind == "attention":  # a fused attention kernel (fuse_attention)
        return tpu_attention_cost(module, plan, group, target)
    placement = plan.placements[group.id]
    launch_s = target["schedule.launch_overhead_s"]
    work = group_work(plan, module, group)
    flops, transcendentals = work.flops, work.transcendentals
    hbm_eff = target.get("fitted.hbm_efficiency", 1.0)  # of the main memory; 1 unless fitted
    memory_s = {
        level.name: placement.at(level.name)
        / (target.level_value(level, "bytes_per_s") * (hbm_eff if level.role == "main" else 1.0))
        for level in target.levels
    }
    vector_s = transcendentals / transcendental_rate(target)
    if group.kind == "contraction":
        tiling = plan.tilings[group.id]
        eff = target.get("fitted.gemm_efficiency", 1.0)
        compute_s = tiling.shape.flops / (mxu_peak(target, tiling.shape.dtype) * eff)
        # the systolic core counts bf16 passes; an 8-bit MXU input streams at its peak's multiple of bf16's
        speedup = mxu_peak(target, tiling.shape.dtype) / target["peak.bf16_flop_per_s"]
        busy_s = (tiling.steps * tiling.cycles_per_step + tiling.fill_cycles) / target["chip.clock_hz"] / eff / speedup
        vector_s += work.epilogue_flops / vpu_rate(target)
        return roofline_cost(
            flops,
            tiling.padded_flops * shard_factor(plan, group) + work.epilogue_flops,
            max(compute_s, vector_s),
            dict(placement.bytes),
            memory_s,
            max(busy_s, vector_s),
            launch_s,
        )
    compute_s = flops / vpu_rate(target) + vector_s
    return roofline_cost(flops, flops, compute_s, dict(placement.bytes), memory_s, compute_s, launch_s)
