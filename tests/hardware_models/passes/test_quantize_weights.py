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
