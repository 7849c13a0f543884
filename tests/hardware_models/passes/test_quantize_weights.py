"""quantize_weights: weights and matmul operands in 8 bits, norms and activations left 16-bit."""

from __future__ import annotations

import pytest

from hardware_models.estimate import estimate
from hardware_models.passes.quantize_weights import quantize_weights
from hardware_models.target import get_target
from reference.errors import UnsupportedDtype
from tests.hardware_models.programs import linear_gelu


def test_weights_and_matmul_operands_narrow_and_the_bias_and_epilogue_do_not():
    module = quantize_weights(linear_gelu(64, 128, 256), "f8E4M3FN")
    args = dict(module.main.args)
    dtypes = {name: t.dtype for name, t in args.items()}
    # the bias (rank 1) stays 16-bit; w and x, arguments of rank 2, narrow (a model's inputs are token ids)
    assert sorted(dtypes.values()) == ["bf16", "f8E4M3FN", "f8E4M3FN"]
    dot = next(op for op in module.main.ops if op.short_name == "dot_general")
    assert {t.dtype for t in dot.operand_types} == {"f8E4M3FN"} and dot.result_types[0].dtype == "bf16"


def test_fp8_halves_a_decode_matmuls_time_on_an_h100():
    """A decode matmul is memory-bound: 8-bit weights halve its roofline time (the bytes); the
    kernels' fixed costs (launch, a GEMM's fixed overhead) are the same in any type."""
    module = linear_gelu(1, 8192, 8192)
    bf16 = estimate(module, get_target("h100")).total
    fp8 = estimate(quantize_weights(module, "f8E4M3FN"), get_target("h100")).total
    assert fp8.time_s - fp8.schedule_s == pytest.approx((bf16.time_s - bf16.schedule_s) / 2, rel=0.1)
    assert fp8.schedule_s == pytest.approx(bf16.schedule_s, rel=0.1)
    assert fp8.time_s < 0.6 * bf16.time_s


def test_an_8_bit_type_the_target_lacks_is_refused():
    with pytest.raises(UnsupportedDtype, match="f8E4M3FN"):
        estimate(quantize_weights(linear_gelu(8, 8, 8), "f8E4M3FN"), get_target("tpu-v5e"))
    with pytest.raises(UnsupportedDtype, match="'i8'"):
        estimate(quantize_weights(linear_gelu(8, 8, 8), "i8"), get_target("h100"))
    assert estimate(quantize_weights(linear_gelu(8, 8, 8), "i8"), get_target("tpu-v5e")).total.time_s > 0


def test_a_called_blocks_arguments_bound_to_weights_narrow_and_its_data_movement_carries_the_type():
    """A regional block (tests/hardware_models/test_survivors._regional): main's 16-bit weight
    and input of rank 2 narrow; the block's arguments bound to them narrow too; its dot reads
    both operands in i8; exp's result stays bf16 (an activation), and the transposes of it stay
    bf16 as well, since only data movement of a narrowed value carries the type on."""
    from reference.ir.graph import TensorType
    from tests.hardware_models.test_survivors import _regional

    module = _regional(3)
    q = quantize_weights(module, "i8")
    assert q.entry == module.entry and [f.name for f in q.functions] == [f.name for f in module.functions]
    assert [t.dtype for _, t in q.main.args] == ["i8", "i8"]
    block = q.function("block")
    assert [t.dtype for _, t in block.args] == ["i8", "i8"]
    dot, exp, t1, t2, _ = block.ops
    assert [t.dtype for t in dot.operand_types] == ["i8", "i8"] and dot.result_types[0].dtype == "bf16"
    assert exp.result_types[0].dtype == "bf16"
    assert t1.operand_types[0].dtype == t1.result_types[0].dtype == t2.result_types[0].dtype == "bf16"
    call = q.main.ops[0]
    assert [t.dtype for t in call.operand_types] == ["i8", "i8"]
    assert block.ops[0].result_types == (TensorType((64, 128), "bf16"),)


def test_a_transpose_of_a_weight_is_narrowed_and_the_matmul_reading_it_too():
    """w^T feeds the matmul: the transpose moves 8-bit data and produces 8-bit data; an f32
    argument and a rank-1 bias stay as they are."""
    from reference.ir import parse_stablehlo

    x, w, wt, b, f = "tensor<4x8xbf16>", "tensor<16x8xbf16>", "tensor<8x16xbf16>", "tensor<16xbf16>", "tensor<4x16xf32>"
    module = parse_stablehlo(
        f"func.func @main(%x: {x}, %w: {w}, %b: {b}, %f: {f}) -> {f} {{\n"
        f"  %0 = stablehlo.transpose %w, dims = [1, 0] : ({w}) -> {wt}\n"
        f"  %1 = stablehlo.dot_general %x, %0, contracting_dims = [1] x [0] : ({x}, {wt}) -> tensor<4x16xbf16>\n"
        f"  %2 = stablehlo.broadcast_in_dim %b, dims = [1] : ({b}) -> tensor<4x16xbf16>\n"
        f"  %3 = stablehlo.add %1, %2 : tensor<4x16xbf16>\n"
        f"  %4 = stablehlo.convert %3 : (tensor<4x16xbf16>) -> {f}\n"
        f"  %5 = stablehlo.add %4, %f : {f}\n"
        f"  return %5 : {f}\n}}\n"
    )
    q = quantize_weights(module, "f8E4M3FN")
    assert [t.dtype for _, t in q.main.args] == ["f8E4M3FN", "f8E4M3FN", "bf16", "f32"]
    transpose, dot, bcast, add = q.main.ops[:4]
    assert transpose.operand_types[0].dtype == transpose.result_types[0].dtype == "f8E4M3FN"
    assert [t.dtype for t in dot.operand_types] == ["f8E4M3FN", "f8E4M3FN"]
    assert bcast.result_types[0].dtype == "bf16" and add.result_types[0].dtype == "bf16"


def test_fp4_quarters_a_decode_matmuls_bytes_on_a_b200_and_an_h100_refuses_it():
    """W4A4 (NVFP4): the weight is half a byte an element, so a memory-bound decode matmul's
    roofline time is a quarter of bf16's; the H100 has no fp4 tensor cores and refuses it."""
    module = linear_gelu(1, 8192, 8192)
    b200 = get_target("b200")
    bf16 = estimate(module, b200).total
    fp4 = estimate(quantize_weights(module, "f4E2M1FN"), b200).total
    assert fp4.time_s - fp4.schedule_s == pytest.approx((bf16.time_s - bf16.schedule_s) / 4, rel=0.1)
    with pytest.raises(UnsupportedDtype, match="f4E2M1FN"):
        estimate(quantize_weights(module, "f4E2M1FN"), get_target("h100"))


def test_with_an_fp8_cache_the_cache_and_attentions_contractions_stay_fp8():
    """fp4 serving (quantize_weights(cache=...)): a rank-4 argument (a layer's KV cache) and a
    contraction that reads no weight (attention's) take the cache's type; weights take fp4."""
    from reference.ir import parse_stablehlo

    text = """func.func @main(%w: tensor<64x64xbf16>, %x: tensor<2x8x64xbf16>, %k: tensor<2x4x8x64xbf16>) -> tensor<2x4x8x8xbf16> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [2] x [0] : (tensor<2x8x64xbf16>, tensor<64x64xbf16>) -> tensor<2x8x64xbf16>
  %1 = stablehlo.reshape %0 : (tensor<2x8x64xbf16>) -> tensor<2x1x8x64xbf16>
  %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<2x1x8x64xbf16>) -> tensor<2x4x8x64xbf16>
  %3 = stablehlo.dot_general %2, %k, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3] : (tensor<2x4x8x64xbf16>, tensor<2x4x8x64xbf16>) -> tensor<2x4x8x8xbf16>
  return %3 : tensor<2x4x8x8xbf16>
}"""
    module = quantize_weights(parse_stablehlo(text), "f4E2M1FN", "f8E4M3FN")
    assert [t.dtype for _, t in module.main.args] == ["f4E2M1FN", "f4E2M1FN", "f8E4M3FN"]  # w, x, k
    projection, attention = (op for op in module.main.ops if op.short_name == "dot_general")
    assert {t.dtype for t in projection.operand_types} == {"f4E2M1FN"}
    assert {t.dtype for t in attention.operand_types} == {"f8E4M3FN"}
