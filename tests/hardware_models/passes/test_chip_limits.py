"""--chips beyond what a partition can use is refused, naming the maximum (a billion chips on a
two-layer model gave a billion pipeline stages and a 1670 s first token)."""

from __future__ import annotations

import pytest

from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from reference.errors import InvalidShape
from tests.hardware_models.programs import elementwise, linear_gelu


@pytest.mark.parametrize("target, chips, most", [
    ("h100", 1_000_000_000, 96),   # tensor parallel: the GEMM's 96 output columns, one per chip at the most
    ("spyre", 97, 96),
    ("groq-lpu", 1_000_000_000, 384),  # 96 columns per layer x 4 unfused kernels, a stage each
    ("wse-3", 2, 1),  # one fused kernel: one wafer
])
def test_chips_beyond_the_partitions_maximum_are_refused_naming_it(target, chips, most):
    with pytest.raises(InvalidShape, match=f"at most {most}"):
        compile_plan(linear_gelu(64, 96, 64), get_target(target), chips=chips)


def test_chips_at_the_maximum_are_accepted():
    plan = compile_plan(linear_gelu(64, 96, 64), get_target("h100"), chips=96)
    assert plan.partition.chips == 96


def test_tensor_parallelism_without_a_contraction_is_refused():
    with pytest.raises(InvalidShape, match="at most 1: the program has no contraction"):
        compile_plan(elementwise(64), get_target("tpu-v5e"), chips=2)
