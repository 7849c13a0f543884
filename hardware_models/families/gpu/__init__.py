"""The GPU family (NVIDIA H100, H200, A100): SIMT SMs with tensor cores, HBM behind a shared L2.

Its compiler is Inductor-like: one kernel per contraction (cuBLAS/CUTLASS, epilogues not fused
into it), elementwise work fused in producer-consumer order, and a contraction tiled into
thread blocks that run in waves over the SMs. The cost model is hardware_models/families/gpu/cost.py.

Tiling (thread-block tiles over SMs), chosen as cuBLAS's heuristics choose, by an explicit cost:
    candidates: tiles (tm, tn) in CANDIDATE_TILES, each shrunk to m, n rounded up to mma_m, times
    split-K s in SPLIT_K (k slices at least MIN_K_SLICE deep);
    tk = the MMA's k (mma_k_bytes / element bytes; 1 for f32 and f64 on the CUDA cores)
    padded = (mp, np, kp) = each extent rounded up to its tile; k_slice = ceil(kp / tk / s) * tk
    units  = b * (mp / tm) * (np / tn) * s thread blocks;   steps = ceil(units / SMs) waves
    reuse block (bm, bn): the rows of A and columns of B that one wave touches when A, B and C do
    not fit in L2 together (gm x gn tiles with gm * gn ~ SMs); the whole problem when they do.
    partials (s > 1): 2 * s * b * m * n * 4 bytes, through L2 if s*b*m*n*4 fits its resident share
    cost (kernel_seconds, the cost model's own formulas, families/gpu/cost.py):
        max(waves * tile_s + reduce_s, compute_s, HBM bytes / HBM rate) + launch + gemm_overhead
        (+ launch for split-K's reduction kernel); the least wins, ties to the earlier candidate.
Worked numbers: an H100 bf16 GEMM m = n = k = 8192 keeps 128 x 256 tiles, 64 * 32 = 2048 thread
blocks in ceil(2048 / 132) = 16 waves. m=256, k=2048, n=512 bf16 takes 64 x 64 tiles and split-K 4:
4 * 8 * 4 = 128 thread blocks in one wave (the fixed 128 x 256 tile ran 4), tile_s =
(2*64*64*512 / 7.49e12 + 128*512*2 / 7.10e10) / (0.67645 * 2.237) = 1.590 us, partials
4,194,304 B / 9.37e12 B/s = 0.448 us, + 1.235 + 4.030 + 1.235 us fixed = 8.54 us (27.8 us before).

Upcasts (fold_upcasts): torch-mlir lowers a bf16 `nn.Linear` with a bias to an f32 dot over
converted operands; Inductor hands cuBLAS the bf16 operands with f32 accumulation, so the fold
runs it on the tensor cores (the unfolded f32 dot would run on the CUDA cores, 16x slower on an
H100). f64 is native (CUDA cores).
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

from hardware_models.cost.model import bus_allreduce
from hardware_models.families import Compiler, Family, register
from hardware_models.families.gpu.cost import (
    contraction_peak,
    gemm_times,
    gpu_group_cost,
    hbm_rate,
    vector_rate,
)
from hardware_models.families.gpu.view import nvidia_view
from hardware_models.passes.assign_groups import assign_groups
from hardware_models.passes.fold_upcasts import fold_upcasts
from hardware_models.passes.fuse_attention import fuse_attention
from hardware_models.passes.fuse_elementwise import INDUCTOR, fuse_elementwise
from hardware_models.passes.pad_to_tiles import pad_to_tiles
from hardware_models.passes.place_buffers import place_buffers
from hardware_models.passes.resolve_dtypes import resolve_dtypes
from hardware_models.passes.shard_tensor_parallel import shard_tensor_parallel
from hardware_models.plan import GemmShape, Tiling, ceil_div, round_up
from hardware_models.target import Target
from reference.ir.graph import element_bytes

# Compiler choices, not hardware limits (those are in the target files): the CTA tiles cuBLAS's
# and CUTLASS's Hopper and Ampere GEMM kernels come in (CUTLASS's sm80/sm90 default tile shapes:
# 128x256, 256x128, 128x128, 128x64, 64x128, 64x64), largest first so that a tie keeps the larger
# tile; each shrinks for a skinny operand to whole MMAs (chip.mma_m rows or columns).
CANDIDATE_TILES = ((128, 256), (256, 128), (128, 128), (128, 64), (64, 128), (64, 64))
# Split-K: k cut into s slices run as s times the thread blocks (cuBLAS's and CUTLASS's split-K
# and stream-K); a compiler choice: powers of two up to 16, each slice at least 256 deep (four
# 64-deep k-blocks of a 16-bit mainloop), so a slice still pipelines its loads.
SPLIT_K = (1, 2, 4, 8, 16)
MIN_K_SLICE = 256
PARTIAL_BYTES = 4  # split-K partials are the f32 accumulators (hardware: the MMA accumulates in f32)
# A compiler choice: FlashAttention-2's forward block for head_dim 128 on sm80/sm90, 128 query rows
# x 64 keys (flash_fwd_launch_template.h, run_mha_fwd_hdim128); a causal kernel skips the key
# blocks past a query block's last row (FA2 paper, section 3.1.1).
FLASH_TILE = (128, 64)


def _candidate(shape: GemmShape, target: Target, out_bytes: int, tm: int, tn: int, tk: int, split: int) -> Tiling:
    """One (tile, split-K) choice: its padding, thread blocks, waves, reuse block and partials."""
    mp, np_, kp = round_up(shape.m, tm), round_up(shape.n, tn), round_up(shape.k, tk)
    tiles_m, tiles_n = mp // tm, np_ // tn
    units = shape.batch * tiles_m * tiles_n * split
    sms = target.view.units
    cache = target.level("on-chip")
    if sum(shape.operand_bytes()) + out_bytes <= target.level_capacity(cache):
        block = (mp, np_)
    else:  # one wave's footprint: gm x gn tiles, as square as the grid allows
        wave = min(units, sms)
        gm = min(tiles_m, math.ceil(math.sqrt(wave)))
        gn = min(tiles_n, ceil_div(wave, gm))
        block = (gm * tm, gn * tn)
    workspace, level = 0, ""
    if split > 1:  # each slice writes its f32 partial of C, the reduction reads them all back
        partials = split * shape.batch * shape.m * shape.n * PARTIAL_BYTES
        workspace = 2 * partials
        fits = partials <= target.level_capacity(cache) * target.level_value(cache, "resident_fraction")
        level = cache.name if fits else target.main_memory_level
    return Tiling(
        shape,
        (tm, tn, tk),
        (mp, np_, kp),
        units,
        ceil_div(units, sms),
        block,
        split_k=split,
        workspace_bytes=workspace,
        workspace_level=level,
    )


def gpu_candidates(shape: GemmShape, target: Target, out_bytes: int, tiles=CANDIDATE_TILES) -> list[Tiling]:
    """Every (tile, split-K) choice the compiler considers for `shape`, in preference order;
    `tiles`: the library's thread-block tiles, largest first (cuBLAS's here; hipBLASLt's on AMD)."""
    # tensor-core types pad m, n and k to whole MMAs; f32 and f64 run on the CUDA cores (no TF32),
    # unpadded (a Blackwell MMA's 64 rows would otherwise charge an f32 GEMV 64 times its rows)
    on_matrix_units = shape.dtype in target.view.tensor_peaks
    mma_m = target.view.mma_m if on_matrix_units else 1
    width = element_bytes(shape.dtype)
    tk = int(target.view.mma_k_bytes // width) if width <= 2 and on_matrix_units else 1
    tiles = dict.fromkeys((min(tm, round_up(shape.m, mma_m)), min(tn, round_up(shape.n, mma_m))) for tm, tn in tiles)
    k_steps = ceil_div(shape.k, tk)
    splits = [s for s in SPLIT_K if s == 1 or ceil_div(k_steps, s) * tk >= MIN_K_SLICE]
    return [_candidate(shape, target, out_bytes, tm, tn, tk, s) for s in splits for tm, tn in tiles]


def kernel_seconds(tiling: Tiling, target: Target) -> float:
    """The time families/gpu/cost.py gives a plain GEMM kernel tiled so: max(busy, compute, HBM) + fixed,
    its HBM bytes A * ceil(np / bn) + B * ceil(mp / bm) + C (+ partials spilled to HBM), as
    place_buffers counts them."""
    s = tiling.shape
    mainloop_s, reduce_s, fixed_s = gemm_times(tiling, target)
    mp, np_, _ = tiling.padded
    bm, bn = tiling.block
    a, b = s.operand_bytes()
    hbm = a * ceil_div(np_, bn) + b * ceil_div(mp, bm) + s.batch * s.m * s.n * element_bytes(s.dtype)
    hbm += tiling.workspace_bytes if tiling.workspace_level == target.main_memory_level else 0
    compute_s = s.flops / (contraction_peak(target, s.dtype) * target.view.gemm_efficiency)
    return max(mainloop_s + reduce_s, compute_s, hbm / hbm_rate(target)) + fixed_s


def gpu_tiling(shape: GemmShape, target: Target, out_bytes: int, tiles=CANDIDATE_TILES) -> Tiling:
    """The candidate with the least kernel_seconds (the first of equals: larger tiles, no split)."""
    candidates = gpu_candidates(shape, target, out_bytes, tiles)
    best = min(candidates, key=lambda t: kernel_seconds(t, target))
    return replace(best, candidates=len(candidates))


def gpu_ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    eff = target.view.gemm_efficiency
    return (
        {"tensor bf16": contraction_peak(target, "bf16") * eff, "CUDA-core f32": 2 * vector_rate(target)},
        {"HBM": hbm_rate(target)},
    )


def simt_pipeline(attention: str, skip_tile: tuple[int, int]) -> tuple:
    """The Inductor-like pipeline of a SIMT GPU; `attention` names the fused attention kernel its
    stack calls (FlashAttention-2 here; AMD's families/cdna/ names ROCm's), `skip_tile` that
    kernel's (query rows, keys) block, the unit in which it skips what a causal mask hides."""
    return (
        resolve_dtypes,  # first because every later pass reads the types it decides (a type it lacks is emulated or refused)
        fold_upcasts,  # after resolve_dtypes because it narrows to checked types only; cuBLAS takes bf16 operands, f32 accumulation
        assign_groups,  # after fold_upcasts because a folded convert forms no kernel
        partial(fuse_elementwise, rules=INDUCTOR),  # after assign_groups because it merges its groups
        partial(
            fuse_attention, stack=attention, skip_tile=skip_tile
        ),  # after fuse_elementwise because it takes the dots and softmax out of the kernels it made: FlashAttention-2 (SDPA, vLLM, TensorRT-LLM fuse attention), scores never in HBM
        shard_tensor_parallel,  # before pad_to_tiles because a chip tiles only its share of the columns
        pad_to_tiles,  # after fusion because only contraction groups are tiled, once
        place_buffers,  # after pad_to_tiles because re-reads follow the reuse block
    )


GPU = register(
    Family(
        name="gpu",
        column=0,  # its place among the map's and compare's columns
        vendor="NVIDIA",
        noun="GPU",
        representative="h100",
        schema={
            "chip": ("sm_count", "clock_hz", "fp32_lanes_per_sm", "sfu_ops_per_cycle_per_sm", "mma_m", "mma_k_bytes"),
            "peak": ("bf16_flop_per_s", "fp16_flop_per_s"),
            "interconnect": ("nvlink_bytes_per_s", "host_bytes_per_s"),
            "schedule": ("launch_overhead_s", "collective_latency_s", "gemm_overhead_s"),
            "fitted": ("gemm_efficiency", "hbm_efficiency", "allreduce_bus_bytes_per_s", "flash_attention_fraction"),
            "host": ("flop_per_s",),
        },
        optional={
            "interconnect": ("scale_up_chips", "scale_out_bytes_per_s"),
            "peak": ("fp8_flop_per_s", "int8_op_per_s", "fp4_flop_per_s"),
        },
        levels={
            "hbm": ("bytes", "bytes_per_s", "usable_fraction"),
            "l2": ("bytes", "bytes_per_s", "resident_fraction"),
        },
        compilers=(
            Compiler(
                "inductor",
                pipeline=simt_pipeline("FlashAttention-2", FLASH_TILE),
                group_cost=gpu_group_cost,
                stack="Inductor-like: elementwise ops and reductions fused into generated kernels, GEMMs to a cuBLAS-like library (tile and split-K chosen by cost), attention to FlashAttention-2",
            ),
        ),
        ceilings=gpu_ceilings,
        peak_16bit=lambda t: t["peak.bf16_flop_per_s"],
        off_chip=lambda t: ("HBM", t.main_memory_bytes_per_s),
        tiling=gpu_tiling,
        view=nvidia_view,
        allreduce=bus_allreduce,
    )
)
