"""--chips beyond what a partition can use is refused, naming the maximum (a billion chips on a
two-layer model gave a billion pipeline stages and a 1670 s first token)."""

from __future__ import annotations

import pytest

from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from reference.errors import InvalidShape
from tests.hardware_models.programs import elementwise, linear_gelu


@pytest.mark.parametrize(
    "target, chips, most",
    [
        ("h100", 1_000_000_000, 96),  # tensor parallel: the GEMM's 96 output columns, one per chip at the most
        ("spyre", 97, 96),
        ("groq-lpu", 1_000_000_000, 384),  # 96 columns per layer x 4 unfused kernels, a stage each
        ("wse-3", 97, 96),  # one fused kernel split across wafers: a column of its weight on each at the most
    ],
)
def test_chips_beyond_the_partitions_maximum_are_refused_naming_it(target, chips, most):
    with pytest.raises(InvalidShape, match=f"at most {most}"):
        compile_plan(linear_gelu(64, 96, 64), get_target(target), chips=chips)


def test_chips_at_the_maximum_are_accepted():
    plan = compile_plan(linear_gelu(64, 96, 64), get_target("h100"), chips=96)
    assert plan.partition.chips == 96


def test_tensor_parallelism_without_a_weight_matmul_is_refused():
    with pytest.raises(InvalidShape, match="at most 1: the program has no weight matmul"):
        compile_plan(elementwise(64), get_target("tpu-v5e"), chips=2)


def test_attention_dots_do_not_bound_tensor_parallelism():
    """Only weight matmuls are split by columns: a decode step's attention dot against the cache
    (batched over heads, 1 query row) does not cap the chips (a GQA model took at most 4 before)."""
    from tests.hardware_models.programs import program, t

    x, w, y = t((1, 64)), t((64, 256)), t((1, 256))
    q, kv, s, flat = t((16, 1, 16)), t((16, 4, 16)), t((16, 1, 4)), t((1, 64))  # 4 keys: the dot's n is 4
    module = program(
        {"x": x, "w": w, "q": q, "k": kv, "w2": w},
        [
            f"%0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : ({x}, {w}) -> {y}",
            f"%1 = stablehlo.dot_general %q, %k, batching_dims = [0] x [0], contracting_dims = [2] x [2] : ({q}, {kv}) -> {s}",
            f"%2 = stablehlo.reshape %1 : ({s}) -> {flat}",
            f"%3 = stablehlo.dot_general %2, %w2, contracting_dims = [1] x [0] : ({flat}, {w}) -> {y}",
            f"%4 = stablehlo.add %0, %3 : {y}",
        ],
        "%4",
        y,
    )
    assert compile_plan(module, get_target("h100"), chips=8).partition.chips == 8
    with pytest.raises(InvalidShape, match="at most 256: .* the narrowest has 256"):
        compile_plan(module, get_target("h100"), chips=512)
