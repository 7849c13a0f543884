"""resolve_dtypes: f64 tensors on a TPU are refused, f16 on a TPU is emulated as f32 and said so."""

from __future__ import annotations

import pytest

from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from reference.errors import UnsupportedDtype
from tests.hardware_models.programs import elementwise, program, t


def test_float64_tensor_on_a_tpu_is_an_error_naming_the_valid_types():
    with pytest.raises(UnsupportedDtype, match="f64.*valid: bf16, f32, i8, f16"):
        compile_plan(elementwise(128, "f64"), get_target("tpu-v5e"))


def test_float16_on_a_tpu_is_emulated_as_float32_and_noted():
    plan = compile_plan(elementwise(128, "f16"), get_target("tpu-v5e"))
    assert plan.notes == ("f16 is emulated on tpu-v5e: it runs, is stored and is costed as f32",)
    assert plan.runs_as("f16") == "f32" and plan.runs_as("bf16") == "bf16"


def test_an_emulated_type_is_counted_at_the_width_it_runs_as():
    """One decision, read everywhere: f16 on a TPU runs as f32, so its bytes are f32 bytes (the
    note said "costed as f32" while place_buffers counted 2-byte elements)."""
    tpu = get_target("tpu-v5e")
    half = compile_plan(elementwise(1024, "f16"), tpu)
    single = compile_plan(elementwise(1024, "f32"), tpu)
    (g,) = half.groups
    assert half.placements[g.id].at("hbm") == single.placements[g.id].at("hbm") == 3 * 4 * 1024


def test_float16_is_native_on_a_gpu():
    assert compile_plan(elementwise(128, "f16"), get_target("a100")).notes == ()


def test_fp8_is_refused_on_an_a100_which_has_no_fp8():
    with pytest.raises(UnsupportedDtype, match="a100"):
        compile_plan(elementwise(128, "f8E4M3FN"), get_target("a100"))


def test_f64_scalars_from_python_floats_are_noted_not_refused():
    s, v = t((), "f64"), t((4,), "f32")
    module = program({"a": v, "s": s}, [
        f"%0 = stablehlo.convert %s : ({s}) -> {t((), 'f32')}",
        f"%1 = stablehlo.broadcast_in_dim %0, dims = [] : ({t((), 'f32')}) -> {v}",
        f"%2 = stablehlo.multiply %a, %1 : {v}",
    ], "%2", v)
    plan = compile_plan(module, get_target("tpu-v5e"))
    assert any("f64 scalars" in n for n in plan.notes)
