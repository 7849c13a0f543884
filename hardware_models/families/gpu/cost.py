"""The GPU model: SIMT SMs with tensor cores, HBM behind a shared L2, one kernel per group.

Rates (per chip, from the target file):
    tensor peak   peak.<dtype>_flop_per_s (bf16, fp16, fp8); f32 contractions run on the CUDA
                  cores at 2 * SMs * fp32_lanes * clock (an FMA is two FLOPs); so does f64
                  (torch-mlir computes layernorm statistics in f64): an assumption, since
                  FP64 rates are not in specs.md
    vector rate   SMs * fp32_lanes * clock element operations per second
    SFU rate      SMs * sfu_ops_per_cycle * clock transcendentals per second
    HBM           hbm_bytes_per_s * fitted.hbm_efficiency (STREAM, kernels.csv G30-G32)
    L2            levels.l2.bytes_per_s: what feeds the SMs' tiles (5120 B/clk, derived per target)
Contraction (a cuBLAS-like kernel tiled by pad_to_tiles; its tile and split-K s chosen there by
this cost, families/gpu/__init__.py):
    compute_s = FLOPs / (peak * gemm_efficiency)                 gemm_efficiency fitted: G23/G27/G28
    tile_s    = (2 tm tn ks / (peak / SMs) + (tm + tn) ks e / (L2 / SMs))
                / (gemm_efficiency * (1 + (peak / L2) * (128 + 256) e / (2 * 128 * 256)))
                a tile's k-loop of depth ks (the k slice): its MMAs plus its operand loads (e bytes
                an element) at its SM's share of L2, relative to the 128 x 256 tile that
                gemm_efficiency was fitted with, so that tile costs 2 tm tn ks / (peak/SMs) / eff
                as before and smaller or skinnier tiles cost more per FLOP. The reference is taken
                on the chip of the fit (the file's peak and L2, before a --set), so more L2
                bandwidth or fewer SMs change a tile's time the way they change the hardware
    reduce_s  = split-K's f32 partials (2 s b m n 4 bytes, written then read) / the rate of the
                level they move through (L2 when they fit its resident share, else HBM)
    busy_s    = waves * tile_s + reduce_s                         (wave quantization, padding)
    memory_s  = HBM bytes / (HBM bandwidth * hbm_efficiency)      (+ the partials when in HBM)
    time_s    = max(busy_s, memory_s) + launch_overhead + gemm_overhead (+ launch_overhead for
                split-K's reduction kernel)               launch fitted: G41; gemm_overhead: G26
Fusion (elementwise, data movement, reductions): compute_s = FLOPs / vector rate +
    transcendentals / SFU rate; time_s = max(compute_s, memory_s) + launch_overhead.
Host fallbacks and tensor-parallel all-reduces are costed alike on every family
(estimate.group_cost; cost/model.py).
Other L2 bytes are reported, not timed: a GEMM's tile loads are inside tile_s.

Worked number (H100, bf16, m = n = k = 8192, gemm_efficiency e): 16 waves of one 128 x 256 x 8192
tile each, 2 * 128 * 256 * 8192 / (989e12 / 132) = 71.6 us per wave at e = 1: busy 1.146 ms /
e against 1.11 ms of useful compute / e. A 128 x 128 tile costs (1 + 1.64) / (1 + 1.23) = 1.18x
its FLOPs' share (L2 = 5120 B/clk * 1.83 GHz = 9.37 TB/s; peak / L2 = 105.5 FLOP/B).
"""

from __future__ import annotations

from hardware_models.cost.attention import attention_chips, dot_flops
from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.plan import Group, Plan, Tiling, group_work, shard_factor
from hardware_models.target import Target
from reference.ir import Module
from reference.ir.graph import element_bytes

# Every quantity below is read through the target's `Simt` view (families/gpu/view.py), which
# each SIMT family builds from its own keys: NVIDIA's here, AMD's in families/cdna/.


def vector_rate(target: Target) -> float:
    return target.view.vector_rate


def contraction_peak(target: Target, dtype: str) -> float:
    """FLOP/s of a contraction in `dtype`: tensor cores, or the CUDA cores' FMAs for f32."""
    return target.view.contraction_peak(dtype)


def hbm_rate(target: Target) -> float:
    return target.view.hbm_bytes_per_s


# The tile gemm_efficiency was fitted with (G23, G27, G28 run it): a compiler choice, cuBLAS's
# and CUTLASS's largest Hopper/Ampere CTA tile.
REFERENCE_TILE = (128, 256)


def l2_rate(target: Target) -> float:
    """Bytes per second the level feeding the tiles (the L2) delivers to all units together."""
    return target.view.tile_feed_bytes_per_s


def tile_seconds(target: Target, dtype: str, tm: int, tn: int, depth: int) -> float:
    """One thread block's k-loop over `depth` of k on one SM (tile_s in the module doc)."""
    v, fitted_on = target.view, target.as_loaded.view  # gemm_efficiency's chip: the file's, before --set
    peak, l2 = v.contraction_peak(dtype), v.tile_feed_bytes_per_s
    e = element_bytes(dtype)
    rm, rn = REFERENCE_TILE  # the 128 x 256 tile's (MMA + loads) / MMA on the chip of the fit
    reference = 1 + fitted_on.contraction_peak(dtype) / fitted_on.tile_feed_bytes_per_s * (rm + rn) * e / (2 * rm * rn)
    mma_s = 2 * tm * tn * depth / (peak / v.units)
    load_s = (tm + tn) * depth * e / (l2 / v.units)
    return (mma_s + load_s) / (v.gemm_efficiency * reference)


def gemm_times(tiling: Tiling, target: Target) -> tuple[float, float, float]:
    """(mainloop_s, reduce_s, fixed_s) of a GEMM kernel tiled as `tiling` (module doc)."""
    v = target.view
    tm, tn, _ = tiling.tile
    mainloop_s = tiling.steps * tile_seconds(target, tiling.shape.dtype, tm, tn, tiling.k_slice)
    reduce_s = 0.0
    if tiling.workspace_bytes:  # at the rate of the level the partials move through
        on_main = tiling.workspace_level == target.main_memory_level
        rate = v.hbm_bytes_per_s if on_main else target.level_value(tiling.workspace_level, "bytes_per_s")
        reduce_s = tiling.workspace_bytes / rate
    fixed_s = v.launch_s + v.gemm_overhead_s + (v.launch_s if tiling.split_k > 1 else 0.0)
    return mainloop_s, reduce_s, fixed_s


def gpu_attention_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    """The fused attention kernel on a GPU (cost/attention.py holds what the families share).

    GPU (FlashAttention-2, what PyTorch's SDPA and vLLM run on Ampere and Hopper):
        compute_s = computed dot FLOPs / chips / (tensor peak of the dtype * fitted.flash_attention_fraction)
        memory_s  = HBM bytes / (HBM bandwidth * hbm_efficiency)
        time_s    = max(compute_s, memory_s) + launch_overhead
      computed dot FLOPs = the two dots' over the whole square x the plan's computed_share (a
      causal kernel skips the key blocks its mask hides: cost/attention.dot_flops).
      fitted.flash_attention_fraction (the GPU target files, F G36) is fitted on kernels.csv row G36
      (H100, FlashAttention-2's benchmark, causal, head_dim 128, batch 2, seq 8192: 327.9 TFLOP/s,
      the Azure guide's fwd + bwd figure, FLOPs counted as FlashAttention's benchmark counts them,
      4 * batch * heads * seq^2 * head_dim / 2 for causal): the rate on the FLOPs the kernel
      computes (65/128 of the square in 128 x 64 blocks, not 1/2) over the H100's dense bf16 peak
      (989 TFLOP/s, h100.toml): 327.9 x (65/128) / (1/2) / 989 = 0.3367 (calibration.flash_fraction).
      The fwd + bwd figure stands for the forward's rate (the backward's extra dot and
      recomputation run slower, so it is a lower bound on it). It holds the softmax's cost (exp on
      the SFUs, max and sum on the CUDA cores, not overlapped with the MMAs in FA2) and FA2's use of
      Ampere's mma.sync on Hopper. Checked on G36's H200 figure (329.3 TFLOP/s), which it was not
      fitted on (tests/hardware_models/passes/test_fuse_attention.py).
      Worked number: G36's workload (16 heads of 128, the FlashAttention benchmark's 2048 wide) is
      4 * 2 * 16 * 8192^2 * 128 = 1.10 TFLOP over the square, 0.558 TFLOP computed:
      0.558e12 / (989e12 * 0.3367) = 1.68 ms, compute-bound (its Q, K, V and O,
      4 * 2 * 8192 * 2048 * 2 B = 268 MB, take 0.09 ms at 3.35 TB/s * 0.887).
    """
    shape = plan.attention[group.id]
    placement = plan.placements[group.id]
    flops = group_work(plan, module, group).flops
    fraction = target.view.flash_attention_fraction  # F G36 (calibration.refit)
    compute_s = dot_flops(plan, group) / attention_chips(plan) / (contraction_peak(target, shape.dtype) * fraction)
    main = target.main_memory_level
    memory_s = {main: placement.at(main) / hbm_rate(target)}
    return roofline_cost(flops, flops, compute_s, dict(placement.bytes), memory_s, compute_s, target.view.launch_s)


def gpu_group_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    if group.kind == "attention":  # a fused attention kernel (fuse_attention)
        return gpu_attention_cost(module, plan, group, target)
    placement = plan.placements[group.id]
    v = target.view
    launch_s = v.launch_s
    work = group_work(plan, module, group)
    flops, transcendentals = work.flops, work.transcendentals
    memory_s = {target.main_memory_level: placement.at(target.main_memory_level) / hbm_rate(target)}
    sfu_s = transcendentals / v.sfu_rate
    if group.kind == "contraction":
        tiling = plan.tilings[group.id]
        peak = v.contraction_peak(tiling.shape.dtype) * v.gemm_efficiency
        compute_s = tiling.shape.flops / peak
        epilogue_s = work.epilogue_flops / vector_rate(target) + sfu_s
        mainloop_s, reduce_s, fixed_s = gemm_times(tiling, target)
        busy_s = mainloop_s + reduce_s + epilogue_s
        bytes_ = dict(placement.bytes)
        if tiling.workspace_bytes:  # split-K's f32 partials, at the level pad_to_tiles put them
            bytes_[tiling.workspace_level] = bytes_.get(tiling.workspace_level, 0) + tiling.workspace_bytes
            memory_s[target.main_memory_level] = bytes_[target.main_memory_level] / hbm_rate(target)
        return roofline_cost(
            flops,
            tiling.padded_flops * shard_factor(plan, group) + work.epilogue_flops,
            compute_s + epilogue_s,
            bytes_,
            memory_s,
            busy_s,
            fixed_s,
        )
    compute_s = flops / vector_rate(target) + sfu_s
    return roofline_cost(flops, flops, compute_s, dict(placement.bytes), memory_s, compute_s, launch_s)
