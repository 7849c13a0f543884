"""The numpy interpreter of the IR (rung R3): checked against StableHLO's own reference interpreter
(`stablehlo.eval_module`) on every catalogue entry, against JAX running the same functions on odd
shapes, and against each side's eager outputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from reference.catalogue import CATALOGUE

pytestmark = [pytest.mark.torch, pytest.mark.jax]

KERNELS = [n for n, e in CATALOGUE.items() if e.kind == "kernel"]


def _attr(ir, a: np.ndarray):
    a = np.ascontiguousarray(a)
    if a.dtype == ml_dtypes.bfloat16:
        return ir.DenseElementsAttr.get(a.view(np.uint16), type=ir.BF16Type.get())
    if a.dtype == np.bool_:
        return ir.DenseElementsAttr.get(a, type=ir.IntegerType.get_signless(1))
    return ir.DenseElementsAttr.get(a)


def _relative(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    return float(np.max(np.abs(a - b))) / scale if scale else float(np.max(np.abs(a - b), initial=0.0))


@pytest.mark.parametrize("side", ["torch", "jax"])
@pytest.mark.parametrize("name", KERNELS)
def test_agrees_with_stablehlo_eval_module(name, side):
    """Property: on every catalogue entry, our interpreter's outputs equal the StableHLO reference
    interpreter's within twice the float32 tolerance (two summation orders, each within the
    tolerance of the exact result: the side-against-side rule, reference.tolerance)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    from landscape.lowering import lower_named
    from reference.ir.interpret import run_module, seeded_arguments
    from reference.ir.mlir_context import make_context

    lowering = lower_named(name, side, {}, "float32")
    # torch-mlir writes shape constants as arith.constant: the same constant, which eval_module
    # takes under StableHLO's name
    text = lowering.stages["stablehlo"].replace("arith.constant", "stablehlo.constant")
    if "chlo." in text:
        pytest.skip(
            f"{name} on {side} uses chlo ops (erf, square, top_k), which eval_module does not run; "
            "the other side's program and test_interpret_matches_eager cover it"
        )
    from reference.tolerance import CROSS_SIDE_FACTOR, tolerance_for

    entry = CATALOGUE[name]
    bound = CROSS_SIDE_FACTOR * tolerance_for(
        "float32", entry.reduction(entry.resolve({})) if entry.reduction else 0
    ).bound(1.0)
    args = seeded_arguments(lowering.module)
    ours = run_module(lowering.module, args)
    with make_context() as _:
        theirs = [np.array(o) for o in stablehlo.eval_module(ir.Module.parse(text), [_attr(ir, a) for a in args])]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        assert _relative(a, b) <= bound


def test_every_entry_has_a_side_eval_module_runs():
    """The chlo skip above leaves every entry checked on at least one side."""
    from landscape.lowering import lower_named

    unchecked = [
        n
        for n in KERNELS
        if all("chlo." in lower_named(n, s, {}, "float32").stages["stablehlo"] for s in ("torch", "jax"))
    ]
    assert unchecked == []


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("side", ["torch", "jax"])
@pytest.mark.parametrize("name", KERNELS + ["tiny"])
def test_interpret_matches_eager(name, side, dtype):
    """R3 against R1: the lowered program interpreted on the case's own weights and inputs gives the
    side's eager outputs within the dtype's tolerance (both are judged against the float64 reference)."""
    import importlib

    from reference.inputs import make_case
    from reference.ir.interpret import run_module
    from reference.tolerance import tolerance_for

    capture = importlib.import_module(f"{'pytorch' if side == 'torch' else 'jax'}_side.capture")
    entry = CATALOGUE[name]
    case = make_case(entry, entry.resolve({}), dtype, 0)
    captured = capture.capture(case)
    out = run_module(captured.lowering.module, captured.arguments(case))
    if side == "jax":
        out = capture._back(out, capture.LAYOUTS.get(name, ({}, None))[1])
    reference = case.reference()
    bound = tolerance_for(dtype, entry.reduction(case.shapes) if entry.reduction else 0).bound(1.0)
    for a, r in zip(out, reference):
        assert _relative(a, r) <= bound, f"{name} {side} {dtype}"


def _jax_cases():
    import jax
    import jax.numpy as jnp
    from jax import lax

    conv = lambda x, w: lax.conv_general_dilated(x, w, (2, 1), ((1, 2), (0, 1)), rhs_dilation=(1, 2))  # noqa: E731
    return {
        "gather clamps": (lambda t, i: t[jnp.clip(i, -3, 200)], [(65, 3), ("i32", (7,), 70)]),
        "scatter add": (lambda t, i, u: t.at[i].add(u), [(63, 2), ("i32", (5,), 63), (5, 2)]),
        "conv stride, padding, dilation": (conv, [(1, 3, 9, 8), (4, 3, 3, 2)]),
        "pad interior and negative": (lambda x: lax.pad(x, 0.5, ((1, -1, 1), (-2, 3, 0))), [(5, 7)]),
        "sort descending": (lambda x: -jnp.sort(-x, axis=1), [(3, 65)]),
        "top_k": (lambda x: lax.top_k(x, 4)[0], [(2, 63)]),
        "argmax": (lambda x: jnp.argmax(x, axis=-1).astype(jnp.int32), [(4, 129)]),
        "dynamic_update_slice": (
            lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1)),
            [(9, 6), (3, 2), ("i32", (), 8)],
        ),
        "integer divide and remainder": (
            lambda a, b: (a // b, a % b, lax.div(a, b), lax.rem(a, b)),
            [("i32", (65,), 9, -9), ("i32", (65,), 4, 1)],
        ),
        "float to int truncates": (lambda x: x.astype(jnp.int32), [(63,)]),
        "cumulative max by reduce": (lambda x: jnp.max(x, axis=0) - jnp.min(x, axis=1).sum(), [(1, 129)]),
        "reverse, iota, clamp": (lambda x: jnp.clip(jnp.flip(x, 0) + jnp.arange(65.0), -1, 30), [(65,)]),
        "select and compare": (lambda x, y: jnp.where(x > y, x * y, jnp.exp(-y)), [(63,), (63,)]),
        "bf16 elementwise": (lambda x: (x * x + 1).astype(jnp.bfloat16) / 3, [(65,)]),
        "rsqrt, logistic, tanh": (lambda x: lax.rsqrt(jnp.abs(x) + 1) + jax.nn.sigmoid(x) * jnp.tanh(x), [(129,)]),
        "batched dot, odd sizes": (lambda a, b: jnp.einsum("bmk,bkn->bmn", a, b), [(3, 1, 63), (3, 63, 65)]),
    }


@pytest.mark.parametrize("case", list(_jax_cases()))
def test_ops_match_jax(case):
    """Rule: each op computes what XLA computes for it, on odd shapes (1, 63, 65, 129) and edge
    cases: out-of-range gather indices clamp, integer division truncates toward zero, negative
    padding crops."""
    import jax

    from jax_side.lower import lower_function
    from reference.ir.interpret import run_module

    fn, specs = _jax_cases()[case]
    rng = np.random.default_rng(7)
    args = []
    for s in specs:
        if s[0] == "i32":
            _, shape, high, *low = s
            args.append(rng.integers(low[0] if low else 0, high, shape).astype(np.int32))
        else:
            args.append(rng.standard_normal(s).astype(np.float32))
    lowering = lower_function(fn, *args, name=case)
    ours = run_module(lowering.module, args)
    expected = jax.jit(fn)(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for a, b in zip(ours, expected):
        b = np.asarray(b)
        assert a.shape == b.shape
        if b.dtype.kind in "iub":
            assert np.array_equal(a, b), case
        else:
            assert _relative(a, b) <= 8 * 2.0**-8 if b.dtype == ml_dtypes.bfloat16 else _relative(a, b) <= 1e-6, case


def test_refuses_opaque_ops_by_name():
    """An op the IR does not know is refused with its name, not silently skipped."""
    from reference.ir import parse_stablehlo
    from reference.ir.interpret import CannotInterpret, run_module

    module = parse_stablehlo(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        '  %0 = "foo.bar"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}'
    )
    with pytest.raises(CannotInterpret, match="foo.bar"):
        run_module(module, [np.zeros(4, np.float32)])
    with pytest.raises(CannotInterpret, match="takes 1 arguments"):
        run_module(module, [])


@pytest.mark.parametrize("rows, d", [(1, 1), (3, 63), (2, 65)])
def test_batch_norm_ops_are_the_normalization_they_name(rows, d):
    """StableHLO's batch_norm_training (torch-xla's LayerNorm: a [1, rows, d] view, feature axis 1)
    is (x - mean) / sqrt(var + eps) * scale + offset with the biased mean and variance over every
    other axis, and returns them; batch_norm_inference, given them, gives the same output."""
    from reference.ir import parse_stablehlo
    from reference.ir.interpret import run_module

    x_t, f_t = f"tensor<1x{rows}x{d}xf32>", f"tensor<{rows}xf32>"
    text = (
        f"func.func @main(%x: {x_t}, %s: {f_t}, %o: {f_t}) -> ({x_t}, {f_t}, {f_t}, {x_t}) {{\n"
        f'  %0:3 = "stablehlo.batch_norm_training"(%x, %s, %o) {{epsilon = 1.0e-05 : f32, feature_index = 1 : i64}}'
        f" : ({x_t}, {f_t}, {f_t}) -> ({x_t}, {f_t}, {f_t})\n"
        f'  %1 = "stablehlo.batch_norm_inference"(%x, %s, %o, %0#1, %0#2) {{epsilon = 1.0e-05 : f32, feature_index = 1 : i64}}'
        f" : ({x_t}, {f_t}, {f_t}, {f_t}, {f_t}) -> {x_t}\n"
        f"  return %0#0, %0#1, %0#2, %1 : {x_t}, {f_t}, {f_t}, {x_t}\n}}"
    )
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, rows, d)).astype(np.float32)
    scale, offset = rng.normal(size=rows).astype(np.float32), rng.normal(size=rows).astype(np.float32)
    out, mean, var, inferred = run_module(parse_stablehlo(text), [x, scale, offset])
    wide = x.astype(np.float64)
    m, v = wide.mean(axis=(0, 2)), wide.var(axis=(0, 2))
    expected = (wide - m[None, :, None]) / np.sqrt(v[None, :, None] + 1e-5) * scale[None, :, None] + offset[
        None, :, None
    ]
    assert np.allclose(mean, m, atol=1e-6) and np.allclose(var, v, atol=1e-5)
    assert np.allclose(out, expected, atol=1e-4) and np.array_equal(out, inferred)
