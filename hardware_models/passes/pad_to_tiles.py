"""pad_to_tiles: cut each contraction into the tiles its target runs, and pad to them.

Padding is computed here, once, with ceil_div, and stored in the plan's `Tiling`; the cost
models read it and never recompute it.

GPU (thread-block tiles over SMs):
    tile (tm, tn) = (min(128, m rounded up to 16), min(256, n rounded up to 16)); tk = the MMA's k
    padded = (mp, np, kp) = each extent rounded up to its tile
    units  = b * (mp / tm) * (np / tn) thread blocks;   steps = ceil(units / SMs) waves
    reuse block (bm, bn): the rows of A and columns of B that one wave touches when A, B and C do
    not fit in L2 together (gm x gn tiles with gm * gn ~ SMs); the whole problem when they do.
TPU (weight-stationary MXU folds, the systolic core in hardware_models/cost/systolic.py):
    weights k x n fill R x C arrays: kp = k rounded up to R, np = n rounded up to C, mp = m
    rounded up to the 8 sublanes; units = b * folds; steps = ceil(units / MXUs) folds per MXU,
    each `cycles_per_fold` long; reuse block: the whole problem if A, B and C fit in half of
    VMEM (double buffering), else the largest square block of whole arrays that does.
Worked number: an H100 bf16 GEMM m = n = k = 8192 takes 128 x 256 tiles, 64 * 32 = 2048 thread
blocks in ceil(2048 / 132) = 16 waves: 3% of the last wave's slots idle.
"""

from __future__ import annotations

import math

from hardware_models.cost.systolic import systolic_gemm
from hardware_models.plan import GemmShape, Plan, Tiling, ceil_div, gemm_shape, round_up
from hardware_models.target import Target
from reference.ir import Module
from reference.ir.graph import ELEMENT_BYTES

# Compiler choices, not hardware limits: cuBLAS/CUTLASS's large CTA tile on Ampere and Hopper,
# shrunk for skinny operands to the 16 rows of one tensor-core MMA (m16n8k16).
GPU_TILE_M, GPU_TILE_N, GPU_SKINNY_STEP = 128, 256, 16
# Hardware: the k extent of one tensor-core MMA by operand width (bytes); f32 runs on the CUDA
# cores (PyTorch's default, allow_tf32=False), which need no k padding.
GPU_MMA_K = {2: 16, 1: 32, 4: 1}
# Hardware: a TPU vreg is 8 sublanes x 128 lanes; XLA pads the streamed dimension to 8.
TPU_SUBLANES = 8


def pad_to_tiles(module: Module, plan: Plan, target: Target) -> Plan:
    tilings = {}
    for group in plan.groups:
        if group.kind != "contraction":
            continue
        op = plan.ops[group.members[0]].op
        shape = gemm_shape(op, target.runs_as(op.operand_types[0].dtype))
        out_bytes = op.result_types[0].nbytes
        if target.family == "gpu":
            tilings[group.id] = gpu_tiling(shape, target, out_bytes)
        else:
            tilings[group.id] = tpu_tiling(shape, target, out_bytes)
    return plan.with_(tilings=tilings) if tilings else plan


def _operand_bytes(shape: GemmShape, out_bytes: int) -> tuple[int, int, int]:
    e = ELEMENT_BYTES.get(shape.dtype, 4)
    return shape.batch * shape.m * shape.k * e, shape.batch * shape.k * shape.n * e, out_bytes


def gpu_tiling(shape: GemmShape, target: Target, out_bytes: int) -> Tiling:
    tm = min(GPU_TILE_M, round_up(shape.m, GPU_SKINNY_STEP))
    tn = min(GPU_TILE_N, round_up(shape.n, GPU_SKINNY_STEP))
    tk = GPU_MMA_K[ELEMENT_BYTES.get(shape.dtype, 4)]
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
    mp, np_, kp = round_up(shape.m, TPU_SUBLANES), round_up(shape.n, cols), round_up(shape.k, rows)
    mxus = int(target["chip.tensorcores"] * target["chip.mxus_per_tensorcore"])
    units = shape.batch * cycles.folds
    half_vmem = target["memory.vmem_bytes_per_tensorcore"] / 2  # double buffering
    e = ELEMENT_BYTES.get(shape.dtype, 4)
    if sum(_operand_bytes(shape, out_bytes)) <= half_vmem:
        block = (mp, np_)
    else:  # square b x b output block with full-k panels of A and B, f32 accumulator
        b = cols
        while b + cols <= max(mp, np_) and 2 * (b + cols) * kp * e + (b + cols) ** 2 * 4 <= half_vmem:
            b += cols
        block = (min(b, mp), min(b, np_))
    return Tiling(shape, (shape.m, cols, rows), (mp, np_, kp), units, ceil_div(units, mxus), block, cycles.cycles_per_fold)
