"""pad_to_tiles: cut each contraction into the tiles its target runs, and pad to them.

Padding is computed here, once, with ceil_div, and stored in the plan's `Tiling`; the cost
models read it and never recompute it.

GPU (thread-block tiles over SMs):
    tile (tm, tn) = (min(128, m rounded up to mma_m), min(256, n rounded up to mma_m));
    tk = the MMA's k (mma_k_bytes / element bytes; 1 for f32 and f64 on the CUDA cores)
    padded = (mp, np, kp) = each extent rounded up to its tile
    units  = b * (mp / tm) * (np / tn) thread blocks;   steps = ceil(units / SMs) waves
    reuse block (bm, bn): the rows of A and columns of B that one wave touches when A, B and C do
    not fit in L2 together (gm x gn tiles with gm * gn ~ SMs); the whole problem when they do.
TPU (weight-stationary MXU folds, the systolic core in hardware_models/cost/systolic.py):
    weights k x n fill R x C arrays: kp = k rounded up to R, np = n rounded up to C, mp = m
    rounded up to the 8 sublanes; units = b * folds; steps = ceil(units / MXUs) folds per MXU,
    each max(R, m) cycles with the next fold's weights loading meanwhile, plus the first load
    and the last fold's fill and drain (`double_buffered_cycles`); reuse block: the whole problem if
    A, B and C fit in half of VMEM (the other half double-buffers), else the largest square
    output block (bm = bn, whole arrays) whose A and B panels of depth 512 (two buffers each)
    and f32 accumulator fit in VMEM.
Spyre (8 x 8 corelets fed in sticks):
    m pads to 8-row passes (chip.matmul_row_pass), n and k to whole sticks (B's k zero-filled);
    units = b * (mp / 8) * (np / stick) over the cores, steps = ceil(units / cores).
Worked number: an H100 bf16 GEMM m = n = k = 8192 takes 128 x 256 tiles, 64 * 32 = 2048 thread
blocks in ceil(2048 / 132) = 16 waves: 3% of the last wave's slots idle.
"""

from __future__ import annotations

import math
from dataclasses import replace

from hardware_models.cost.systolic import double_buffered_cycles, systolic_gemm
from hardware_models.plan import GemmShape, Plan, Tiling, ceil_div, gemm_shape, round_up, shard_factor
from hardware_models.target import Target
from reference.ir import Module
from reference.ir.graph import ELEMENT_BYTES

# Compiler choices, not hardware limits (those are in the target files): cuBLAS/CUTLASS's large
# CTA tile on Ampere and Hopper, shrunk for skinny operands to whole MMAs (chip.mma_m rows)...
GPU_TILE_M, GPU_TILE_N = 128, 256
# ...and the k depth of the A and B panels XLA stages in VMEM for a GEMM too big for it.
TPU_BLOCK_K = 512


def pad_to_tiles(module: Module, plan: Plan, target: Target) -> Plan:
    tilings = {}
    for group in plan.groups:
        if group.kind != "contraction":
            continue
        op = plan.ops[group.members[0]].op
        shape = gemm_shape(op, target.runs_as(op.operand_types[0].dtype))
        shape = replace(shape, n=ceil_div(shape.n, shard_factor(plan, group)))  # this chip's columns
        tilings[group.id] = TILINGS[target.family](shape, target, op.result_types[0].nbytes)
    return plan.with_(tilings=tilings) if tilings else plan


def _operand_bytes(shape: GemmShape, out_bytes: int) -> tuple[int, int, int]:
    e = ELEMENT_BYTES.get(shape.dtype, 4)
    return shape.batch * shape.m * shape.k * e, shape.batch * shape.k * shape.n * e, out_bytes


def gpu_tiling(shape: GemmShape, target: Target, out_bytes: int) -> Tiling:
    mma_m = int(target["chip.mma_m"])
    tm = min(GPU_TILE_M, round_up(shape.m, mma_m))
    tn = min(GPU_TILE_N, round_up(shape.n, mma_m))
    element_bytes = ELEMENT_BYTES.get(shape.dtype, 4)
    # tensor-core types pad k to whole MMAs; f32 and f64 run on the CUDA cores (no TF32), unpadded
    tk = int(target["chip.mma_k_bytes"]) // element_bytes if element_bytes <= 2 else 1
    mp, np_, kp = round_up(shape.m, tm), round_up(shape.n, tn), round_up(shape.k, tk)
    tiles_m, tiles_n = mp // tm, np_ // tn
    units = shape.batch * tiles_m * tiles_n
    sms = int(target["chip.sm_count"])
    if sum(_operand_bytes(shape, out_bytes)) <= target["memory.l2_bytes"]:
        block = (mp, np_)
    else:  # one wave's footprint: gm x gn tiles, as square as the grid allows
        wave = min(units, sms)
        gm = min(tiles_m, math.ceil(math.sqrt(wave)))
        gn = min(tiles_n, ceil_div(wave, gm))
        block = (gm * tm, gn * tn)
    return Tiling(shape, (tm, tn, tk), (mp, np_, kp), units, ceil_div(units, sms), block)


def tpu_tiling(shape: GemmShape, target: Target, out_bytes: int) -> Tiling:
    rows, cols = int(target["chip.mxu_rows"]), int(target["chip.mxu_cols"])
    cycles = systolic_gemm(shape.m, shape.n, shape.k, rows, cols, "ws")
    mp, np_, kp = round_up(shape.m, int(target["chip.vpu_sublanes"])), round_up(shape.n, cols), round_up(shape.k, rows)
    mxus = int(target["chip.tensorcores"] * target["chip.mxus_per_tensorcore"])
    units = shape.batch * cycles.folds
    half_vmem = target["memory.vmem_bytes_per_tensorcore"] / 2  # double buffering
    e = ELEMENT_BYTES.get(shape.dtype, 4)
    if sum(_operand_bytes(shape, out_bytes)) <= half_vmem:
        block = (mp, np_)
    else:
        bk = min(kp, TPU_BLOCK_K)
        b = cols
        while b + cols <= max(mp, np_) and 2 * 2 * (b + cols) * bk * e + (b + cols) ** 2 * 4 <= 2 * half_vmem:
            b += cols
        block = (min(b, mp), min(b, np_))
    steps = ceil_div(units, mxus)
    whole = double_buffered_cycles(steps, rows, cols, shape.m)
    per_fold = max(rows, shape.m)
    return Tiling(shape, (shape.m, cols, rows), (mp, np_, kp), units, steps, block, per_fold, whole - steps * per_fold)


def spyre_tiling(shape: GemmShape, target: Target, out_bytes: int) -> Tiling:
    row_pass = int(target["chip.matmul_row_pass"])
    per_stick = int(target["chip.stick_bytes"]) // ELEMENT_BYTES.get(shape.dtype, 2)
    mp, np_, kp = round_up(shape.m, row_pass), round_up(shape.n, per_stick), round_up(shape.k, per_stick)
    units = shape.batch * (mp // row_pass) * (np_ // per_stick)
    return Tiling(shape, (row_pass, per_stick, per_stick), (mp, np_, kp), units, ceil_div(units, int(target["chip.cores"])), (mp, np_))


TILINGS = {"gpu": gpu_tiling, "tpu": tpu_tiling, "spyre": spyre_tiling}
