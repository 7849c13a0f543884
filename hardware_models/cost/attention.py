"""The cost of a fused attention kernel (fuse_attention), per family that runs one.

The kernel's main-memory bytes are its placement's (Q, K, V, O: place_buffers calls
fuse_attention.attention_placement); the scores never leave the chip. One chip of a
tensor-parallel partition computes its share of the query heads (1 / chips of the FLOPs).

GPU (FlashAttention-2, what PyTorch's SDPA and vLLM run on Ampere and Hopper):
    compute_s = dot FLOPs / chips / (tensor peak of the dtype * fitted.flash_attention_fraction)
    memory_s  = HBM bytes / (HBM bandwidth * hbm_efficiency)
    time_s    = max(compute_s, memory_s) + launch_overhead
  fitted.flash_attention_fraction (the GPU target files, F G36) is fitted: the achieved throughput of kernels.csv row G36 (H100,
  FlashAttention-2, head_dim 128, batch 2, seq 8192: 327.9 TFLOP/s, FLOPs counted as the two
  dots', 4 * batch * heads * seq^2 * head_dim, as FlashAttention's benchmarks count them) over
  the H100's dense bf16 peak (989 TFLOP/s, h100.toml): 0.3315. It holds the softmax's cost
  (exp on the SFUs, max and sum on the CUDA cores, not overlapped with the MMAs in FA2) and
  FA2's use of Ampere's mma.sync on Hopper. Checked on G36's H200 figure (329.3 TFLOP/s), which
  it was not fitted on (tests/hardware_models/passes/test_fuse_attention.py).
  Worked number: G36's workload (16 heads of 128, the FlashAttention benchmark's 2048 wide) is
  4 * 2 * 16 * 8192^2 * 128 = 1.10 TFLOP: 1.10e12 / (989e12 * 0.3315) = 3.35 ms, compute-bound
  (its Q, K, V and O, 4 * 2 * 8192 * 2048 * 2 B = 268 MB, take 0.09 ms at 3.35 TB/s * 0.887).

TPU (the Pallas flash-attention kernel, tiled through VMEM; no TPU rows in kernels.csv, so
nothing is fitted and the efficiencies are the target's, 1 unless fitted):
    mxu_s     = dot FLOPs / chips / MXU peak
    vector_s  = (other FLOPs / VPU rate + transcendentals / transcendental rate) / chips
    compute_s = max(mxu_s, vector_s)      (the VLIW bundles issue MXU and VPU work together)
    memory_s  = {HBM: Q, K, V, O; VMEM: that plus the f32 score tile written and read once}
    time_s    = max(compute_s, memory_s) + launch_overhead
"""

from __future__ import annotations

from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.plan import Group, Plan, group_work
from hardware_models.target import Target
from reference.ir import Module, category
from reference.ir.counters import contraction_flops



def dot_flops(plan: Plan, group: Group) -> int:
    """FLOPs of the kernel's two dots (what attention throughput figures count)."""
    return sum(contraction_flops(plan.ops[i].op) for i in group.members if category(plan.ops[i].op) == "contraction")


def _chips(plan: Plan) -> int:
    p = plan.partition
    return p.tensor_parallel if p and p.mode == "tensor parallel" else 1


def gpu_attention_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    from hardware_models.cost.gpu import contraction_peak, hbm_rate  # gpu.py imports this module

    shape = plan.attention[group.id]
    placement = plan.placements[group.id]
    flops = group_work(plan, module, group).flops
    fraction = target["fitted.flash_attention_fraction"]  # F G36 (calibration.refit)
    compute_s = dot_flops(plan, group) / _chips(plan) / (contraction_peak(target, shape.dtype) * fraction)
    main = target.main_memory_level
    memory_s = {main: placement.at(main) / hbm_rate(target)}
    return roofline_cost(flops, flops, compute_s, dict(placement.bytes), memory_s, compute_s, target["schedule.launch_overhead_s"])


def tpu_attention_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    from hardware_models.cost.tpu import mxu_peak, transcendental_rate, vpu_rate  # tpu.py imports this module

    shape = plan.attention[group.id]
    placement = plan.placements[group.id]
    work = group_work(plan, module, group)
    chips = _chips(plan)
    dots = dot_flops(plan, group)
    eff = target.get("fitted.gemm_efficiency", 1.0)
    mxu_s = dots / chips / (mxu_peak(target, shape.dtype) * eff)
    vector_s = ((work.flops - dots) / vpu_rate(target) + work.transcendentals / transcendental_rate(target)) / chips
    hbm_eff = target.get("fitted.hbm_efficiency", 1.0)
    memory_s = {
        level.name: placement.at(level.name) / (target.level_value(level, "bytes_per_s") * (hbm_eff if level.role == "main" else 1.0))
        for level in target.levels
    }
    compute_s = max(mxu_s, vector_s)
    return roofline_cost(work.flops, work.flops, compute_s, dict(placement.bytes), memory_s, compute_s, target["schedule.launch_overhead_s"])
