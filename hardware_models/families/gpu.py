"""The GPU family (NVIDIA H100, H200, A100): SIMT SMs with tensor cores, HBM behind a shared L2.

Its compiler is Inductor-like: one kernel per contraction (cuBLAS/CUTLASS, epilogues not fused
into it), elementwise work fused in producer-consumer order, and a contraction tiled into
thread blocks that run in waves over the SMs. The cost model is hardware_models/cost/gpu.py.

Tiling (thread-block tiles over SMs):
    tile (tm, tn) = (min(128, m rounded up to mma_m), min(256, n rounded up to mma_m));
    tk = the MMA's k (mma_k_bytes / element bytes; 1 for f32 and f64 on the CUDA cores)
    padded = (mp, np, kp) = each extent rounded up to its tile
    units  = b * (mp / tm) * (np / tn) thread blocks;   steps = ceil(units / SMs) waves
    reuse block (bm, bn): the rows of A and columns of B that one wave touches when A, B and C do
    not fit in L2 together (gm x gn tiles with gm * gn ~ SMs); the whole problem when they do.
Worked number: an H100 bf16 GEMM m = n = k = 8192 takes 128 x 256 tiles, 64 * 32 = 2048 thread
blocks in ceil(2048 / 132) = 16 waves: 3% of the last wave's slots idle.
"""

from __future__ import annotations

import math
from functools import partial

from hardware_models.cost.gpu import contraction_peak, gpu_group_cost, hbm_rate, vector_rate
from hardware_models.families import Family, register
from hardware_models.passes.assign_groups import assign_groups
from hardware_models.passes.fuse_elementwise import INDUCTOR, fuse_elementwise
from hardware_models.passes.pad_to_tiles import pad_to_tiles
from hardware_models.passes.place_buffers import place_buffers
from hardware_models.passes.resolve_dtypes import resolve_dtypes
from hardware_models.passes.shard_tensor_parallel import shard_tensor_parallel
from hardware_models.plan import GemmShape, Tiling, ceil_div, round_up
from hardware_models.target import Target
from reference.ir.graph import ELEMENT_BYTES

# Compiler choices, not hardware limits (those are in the target files): cuBLAS/CUTLASS's large
# CTA tile on Ampere and Hopper, shrunk for skinny operands to whole MMAs (chip.mma_m rows).
TILE_M, TILE_N = 128, 256


def gpu_tiling(shape: GemmShape, target: Target, out_bytes: int) -> Tiling:
    mma_m = int(target["chip.mma_m"])
    tm = min(TILE_M, round_up(shape.m, mma_m))
    tn = min(TILE_N, round_up(shape.n, mma_m))
    element_bytes = ELEMENT_BYTES.get(shape.dtype, 4)
    # tensor-core types pad k to whole MMAs; f32 and f64 run on the CUDA cores (no TF32), unpadded
    tk = int(target["chip.mma_k_bytes"]) // element_bytes if element_bytes <= 2 else 1
    mp, np_, kp = round_up(shape.m, tm), round_up(shape.n, tn), round_up(shape.k, tk)
    tiles_m, tiles_n = mp // tm, np_ // tn
    units = shape.batch * tiles_m * tiles_n
    sms = int(target["chip.sm_count"])
    cache = target.level("on-chip")
    if sum(shape.operand_bytes()) + out_bytes <= target.level_capacity(cache):
        block = (mp, np_)
    else:  # one wave's footprint: gm x gn tiles, as square as the grid allows
        wave = min(units, sms)
        gm = min(tiles_m, math.ceil(math.sqrt(wave)))
        gn = min(tiles_n, ceil_div(wave, gm))
        block = (gm * tm, gn * tn)
    return Tiling(shape, (tm, tn, tk), (mp, np_, kp), units, ceil_div(units, sms), block)


def gpu_ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    eff = target["fitted.gemm_efficiency"]
    return ({"tensor bf16": contraction_peak(target, "bf16") * eff, "CUDA-core f32": 2 * vector_rate(target)},
            {"HBM": hbm_rate(target)})


GPU = register(Family(
    name="gpu", vendor="NVIDIA", noun="GPU", representative="h100",
    schema={
        "chip": ("sm_count", "clock_hz", "fp32_lanes_per_sm", "sfu_ops_per_cycle_per_sm", "mma_m", "mma_k_bytes"),
        "peak": ("bf16_flop_per_s", "fp16_flop_per_s"),
        "interconnect": ("nvlink_bytes_per_s", "host_bytes_per_s"),
        "schedule": ("launch_overhead_s", "collective_latency_s"),
        "fitted": ("gemm_efficiency", "hbm_efficiency", "allreduce_bus_bytes_per_s"),
        "host": ("flop_per_s",),
    },
    optional={"peak": ("fp8_flop_per_s", "int8_op_per_s")},
    levels={"hbm": ("bytes", "bytes_per_s", "usable_fraction"), "l2": ("bytes", "resident_fraction")},
    pipeline=(
        resolve_dtypes,  # first because a type the target lacks is an error before any work
        assign_groups,
        partial(fuse_elementwise, rules=INDUCTOR),  # after assign_groups because it merges its groups
        shard_tensor_parallel,  # before pad_to_tiles because a chip tiles only its share of the columns
        pad_to_tiles,  # after fusion because only contraction groups are tiled, once
        place_buffers,  # after pad_to_tiles because re-reads follow the reuse block
    ),
    group_cost=gpu_group_cost,
    ceilings=gpu_ceilings,
    peak_16bit=lambda t: t["peak.bf16_flop_per_s"],
    off_chip=lambda t: ("HBM", t.main_memory_bytes_per_s),
    tiling=gpu_tiling,
))
