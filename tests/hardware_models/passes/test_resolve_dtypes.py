"""resolve_dtypes: f16 on a TPU is emulated as f32 and said so; f64 tensors on a chip without f64
are costed as double-f32 (or as f32 runs, on Spyre) with a note naming the op and its source line,
and refused under --strict-dtypes."""

from __future__ import annotations

import pytest

from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from reference.errors import UnsupportedDtype
from tests.hardware_models.programs import elementwise, program, t


def _layernorm_statistics(dtype: str):
    """The variance torch-mlir computes for LayerNorm (in f64 for a bf16 or f32 model): x - mean,
    squared, summed and divided, over rows of 768; its ops carry a source line, as a lowering's do."""
    x, r, s = t((1024, 768), "f32"), t((1024,), dtype), t((), dtype)
    xd = t((1024, 768), dtype)
    loc = 'loc(callsite("/venv/lib/site-packages/torch/nn/modules/normalization.py":228 at "/home/me/layers.py":146))'
    return program(
        {"x": x},
        [
            f"%zero = stablehlo.constant dense<0.0> : {s}",
            f"%n = stablehlo.constant dense<768.0> : {r}",
            f"%0 = stablehlo.convert %x : ({x}) -> {xd} {loc}",
            f"%1 = stablehlo.reduce(%0 init: %zero) applies stablehlo.add across dimensions = [1] : ({xd}, {s}) -> {r} {loc}",
            f"%2 = stablehlo.divide %1, %n : {r} {loc}",
            f"%3 = stablehlo.broadcast_in_dim %2, dims = [0] : ({r}) -> {xd} {loc}",
            f"%4 = stablehlo.subtract %0, %3 : {xd} {loc}",
            f"%5 = stablehlo.multiply %4, %4 : {xd} {loc}",
            f"%6 = stablehlo.reduce(%5 init: %zero) applies stablehlo.add across dimensions = [1] : ({xd}, {s}) -> {r} {loc}",
            f"%7 = stablehlo.divide %6, %n : {r} {loc}",
            f"%8 = stablehlo.convert %7 : ({r}) -> {t((1024,), 'f32')} {loc}",
        ],
        "%8",
        t((1024,), "f32"),
    )


def test_f64_layernorm_statistics_on_a_tpu_are_costed_as_double_f32_and_noted():
    """A TPU has no f64 (XLA:TPU rewrites it into pairs of f32): the plan costs every f64 op at
    DOUBLE_F32_OPS f32 operations and 8 bytes an element, and a note names the ops and the user's
    source line. The same program in f32 does a twentieth of the arithmetic."""
    from hardware_models.estimate import estimate
    from hardware_models.passes.resolve_dtypes import DOUBLE_F32_OPS

    tpu = get_target("tpu-v5e")
    module = _layernorm_statistics("f64")
    plan = compile_plan(module, tpu)
    (note,) = [n for n in plan.notes if "has no f64" in n]
    assert "at layers.py:146: convert, reduce, divide" in note and "double-f32" in note and "--strict-dtypes" in note
    assert plan.flop_factors == (("f64", DOUBLE_F32_OPS),) and plan.runs_as("f64") == "f64"
    emulated, single = estimate(module, tpu, "", plan), estimate(_layernorm_statistics("f32"), tpu)
    assert emulated.total.time_s > 0
    assert emulated.total.flops == pytest.approx(DOUBLE_F32_OPS * single.total.flops, rel=0.02)


def test_strict_dtypes_refuses_f64_on_a_tpu_naming_the_op_and_what_to_do():
    with pytest.raises(
        UnsupportedDtype,
        match=r"tpu-v5e has no f64 \(convert at layers.py:146; it runs bf16, f32, i8; f16 as f32\).*drop --strict-dtypes",
    ):
        compile_plan(_layernorm_statistics("f64"), get_target("tpu-v5e"), strict_dtypes=True)
    assert compile_plan(_layernorm_statistics("f64"), get_target("h100"), strict_dtypes=True).flop_factors == ()


def test_f64_runs_as_double_f32_where_f32_is_native_and_as_f32_runs_on_spyre():
    """Every family without f64 costs it: the LPU and the wafer have f32 to pair; Spyre has no f32
    (it runs f32 as f16), so f64 runs as f16 there."""
    for name in ("groq-lpu", "wse-3"):
        assert compile_plan(_layernorm_statistics("f64"), get_target(name)).flop_factors == (("f64", 20),)
    spyre = compile_plan(_layernorm_statistics("f64"), get_target("spyre"))
    assert spyre.runs_as("f64") == "f16" and spyre.flop_factors == ()
    assert any("run as f16, as f32 runs there" in n for n in spyre.notes)


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
    module = program(
        {"a": v, "s": s},
        [
            f"%0 = stablehlo.convert %s : ({s}) -> {t((), 'f32')}",
            f"%1 = stablehlo.broadcast_in_dim %0, dims = [] : ({t((), 'f32')}) -> {v}",
            f"%2 = stablehlo.multiply %a, %1 : {v}",
        ],
        "%2",
        v,
    )
    plan = compile_plan(module, get_target("tpu-v5e"))
    assert any("f64 scalars" in n for n in plan.notes)


def test_where_emulated_ops_come_from_by_source_line_then_scope_then_instance():
    """The note names each op's user source line, else its framework scope, else its instance;
    the ops of one line together in program order, three lines at most and how many more."""
    from types import SimpleNamespace as NS

    from hardware_models.passes.resolve_dtypes import _sites, _where
    from reference.ir.graph import Origin

    def p(name, source="", scope="", instance="main"):
        return NS(op=NS(short_name=name, origin=Origin(scope=scope, source=source)), instance=instance)

    ops = [
        p("convert", "a.py:1"),
        p("rsqrt", "a.py:1"),
        p("convert", "a.py:1"),
        p("add", scope="jit(f)/mlp"),
        p("exp", instance="main/0:block"),
        p("tanh", "b.py:9"),
    ]
    assert _sites(ops) == "at a.py:1: convert, rsqrt; at jit(f)/mlp: add; at main/0:block: exp; and 1 more lines"
    assert (
        _sites(ops, shown=4) == "at a.py:1: convert, rsqrt; at jit(f)/mlp: add; at main/0:block: exp; at b.py:9: tanh"
    )
    assert (
        _where(ops[0]) == "convert at a.py:1"
        and _where(ops[3]) == "add at jit(f)/mlp"
        and _where(ops[4]) == "exp at main/0:block"
    )
    assert _where(p("dot", "c.py:2", "jit(g)")) == "dot at c.py:2"


def test_a_strict_refusal_lists_what_the_target_runs_natively_and_as_what():
    """groq-lpu runs f16, f32 and i8, and bf16 as f16; the H100 emulates nothing, so its list
    has no "as" part. Each says how the type would be costed without --strict-dtypes."""
    from hardware_models.passes.resolve_dtypes import StrictDtype, emulation

    lpu, h100 = get_target("groq-lpu"), get_target("h100")
    text = str(StrictDtype(lpu, "f64", "add at a.py:1", ("f16",), "double-f32"))
    assert f"(add at a.py:1; it runs {', '.join(lpu.native_dtypes)}; bf16 as f16)" in text
    assert text.endswith("it is costed as double-f32: drop --strict-dtypes, or lower the program without f64")
    plain = str(StrictDtype(h100, "f64", "x", (), "y"))
    assert (
        f"it runs {', '.join(h100.native_dtypes)})" in plain and " as " not in plain.split("it runs")[1].split(")")[0]
    )
    runs_as, ops, described = emulation("f64", lpu)
    assert (runs_as, described) == (
        "f64",
        f"double-f32 (pairs of f32: 8 bytes an element, {ops} f32 operations an operation, assumed)",
    )
