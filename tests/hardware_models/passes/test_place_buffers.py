"""place_buffers: bytes per level by the formulas in its docstring, computed by hand here."""

from __future__ import annotations

import math

from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from tests.hardware_models.programs import elementwise, linear_gelu, softmax


def _placements(module, target):
    plan = compile_plan(module, get_target(target))
    return plan, [plan.placements[g.id] for g in plan.groups]


def test_fusion_moves_its_inputs_and_outputs_once():
    _, (p,) = _placements(elementwise(1000, "f32"), "h100")
    assert p.at("hbm") == 3 * 1000 * 4 == p.at("l2")


def test_a_broadcast_bias_is_read_at_its_own_size_and_the_gemm_output_stays_in_l2():
    m, n, k = 65, 129, 63
    _, (dot, epilogue) = _placements(linear_gelu(m, n, k), "h100")
    assert dot.at("hbm") == 2 * (m * k + k * n + m * n)
    # epilogue: reads the GEMM output (from L2, made by the kernel just before) and the bias; writes y
    assert epilogue.resident_inputs and epilogue.at("hbm") == 2 * (n + m * n)


def test_tpu_keeps_nothing_across_fusions_and_counts_every_op_in_vmem():
    """XLA's TPU fusions (one reduction each) pass every op's operands and results through VMEM:
    its op-boundary bytes, derived here op by op (f32, 8 x 1000, x = 32,000 B, a row vector 32 B)."""
    _, (first, second) = _placements(softmax(8, 1000), "tpu-v5e")
    x, row, init = 8 * 1000 * 4, 8 * 4, 4
    assert first.resident_inputs == () and first.at("hbm") == x + x + init  # reads x (and the init), writes exp
    reduce_max = x + init + row  # reads x and -inf, writes the row maxima
    subtract = x + x + x  # reads x and the broadcast maxima (at x's size), writes
    exponential = x + x
    assert first.at("vmem") == reduce_max + subtract + exponential == 192_036
    assert second.at("hbm") == x + init + x  # reads exp (and 0), writes y
    reduce_sum, divide = x + init + row, x + x + x
    assert second.at("vmem") == reduce_sum + divide == 128_036


def test_a_gemm_larger_than_l2_rereads_its_operands_per_reuse_block():
    size = 16384
    plan, (p,) = _placements(_gemm(size), "h100")
    tiling = next(iter(plan.tilings.values()))
    a = b = c = size * size * 2
    bm, bn = tiling.block
    assert p.at("hbm") == a * math.ceil(size / bn) + b * math.ceil(size / bm) + c
    assert p.at("l2") == a * (size // tiling.tile[1]) + b * (size // tiling.tile[0]) + c


def _gemm(size):
    from hardware_models.calibration import gemm_module

    return gemm_module(size, size, size, "bf16")


def test_bytes_per_level_of_a_gemm_with_a_fused_epilogue_by_hand_on_tpu_spyre_and_the_wafer():
    """y = gelu(x @ w + b), x 65 x 63, w 63 x 129, bf16/f16 (2 B), derived level by level:
    TPU (one MXU fusion): HBM reads x, w, b and writes y once; VMEM holds x once per 128-column
    tile of the padded 256 output columns, w and b once, and y.
    Spyre (matmul, then the epilogue): every row is read in 64-element sticks of 128 B (x: 65 rows
    of 1 stick, w: 63 rows of 3, b: 3, y: 65 rows of 3); the GEMM's output stays in LX.
    Wafer (one region): SRAM moves every op's operands and results; the fabric carries y on."""
    x, w, b, y = 65 * 63 * 2, 63 * 129 * 2, 129 * 2, 65 * 129 * 2
    _, (tpu,) = _placements(linear_gelu(65, 129, 63), "tpu-v5e")
    assert tpu.at("hbm") == x + w + b + y == 41_472
    assert tpu.at("vmem") == x * 2 + w + b + y == 49_662
    _, (dot, epilogue) = _placements(linear_gelu(65, 129, 63), "spyre")
    stick = 128
    assert dot.at("lpddr5") == 65 * 1 * stick + 63 * 3 * stick == 32_512
    assert epilogue.at("lpddr5") == 3 * stick + 65 * 3 * stick == 25_344
    _, (wafer,) = _placements(linear_gelu(65, 129, 63), "wse-3")
    add, logistic, multiply = 3 * y, 2 * y, 3 * y  # the broadcast bias is read at y's shape
    assert wafer.at("sram") == (x + w + y) + add + logistic + multiply == 175_374
    assert wafer.at("fabric") == y
