"""Gradients agree: each side's backward against float64 references, and side against side.

For every catalogue kernel (block and decoder included, every choice of style, mode, GELU form
and MLP kind), the gradient of L = sum(out * cot) with respect to every float input and weight
(reference/gradients.py: a token id has none) is taken by torch.autograd.grad and by jax.grad
under jax.jit, in float32, bfloat16 and float16, and held to the float64 finite difference of
the entry's numpy reference:

    max over tensors T of max|side_T - ref_T| <= atol + rtol * S
    S = max over T of max(max|ref_T|, the root-sum-square of the terms of T's backward sum),
        or a norm's declared pieces g / sigma where larger (reference/gradients.py, PIECES)
    rtol, atol = 2 x the forward's row (reference/tolerance.py): float32 128 u, float16 and
        bfloat16 8 u, atol 2 u, u the dtype's unit roundoff

and torch against jax at CROSS_SIDE_FACTOR (2) times that bound. Measured worst, both sides, two
seeds, every kernel and choice at four shape sets (every extent 1; every extent 2; mixed 3, 5, 7;
mixed 9, 7, 3), against the finite difference: float32 6.9 u of S (JAX's tanh GELU), float16
4.2 u, bfloat16 3.0 u (JAX's softmax); and at widths 63 to 129 against the analytic references
(matmul, softmax, log_softmax, the norms, attention, mlp, gelu, conv2d, moe, rope): float32
12.6 u (JAX's tanh GELU; torch's worst 4.7 u, rope), 16-bit 2.4 u (JAX's bfloat16 conv2d). The
finite difference's own error estimate must stay below a hundredth of the bound, so a failure is
the side's.

Shapes are small and odd (1, 3, 5, 7, 9 in every dimension, head_dim 2 or 4): the reference
runs four times per element. A block or decoder of d_model below 8 is left out of the sweeps:
its norms read rows of a few numbers that can all but cancel (the forward needed
`residual_terms` there; this bound has no such term yet), and a row of variance far below eps
makes the gradient ill-conditioned beyond any rounding bound (d_model 2, gpt2 decode, seed 0:
torch 3.5x off in float16, JAX NaN; d_model 4, a two-layer gpt2 decoder with vocab 1 in
bfloat16, seed 2239: torch 11.1 u against the 8 u bound at o_proj's weight); the JAX NaN is a
LayerNorm finding of its own, tested below on the kernel.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference import gradients as G
from reference.catalogue import KERNELS
from reference.catalogue.attention import ROPE_THETA, apply_rope, rope_cos_sin, rope_inv_freq
from reference.catalogue.elementwise import softmax
from reference.catalogue.mlp import route
from reference.dtypes import FLOAT_DTYPES, numpy_dtype, unit_roundoff
from reference.errors import InvalidShape
from reference.inputs import Case, make_case
from reference.tolerance import CROSS_SIDE_FACTOR

pytestmark = [pytest.mark.torch, pytest.mark.jax]

DIMS = (1, 3, 5, 7, 9)
# Structural parameters, and those the finite difference's cost caps, take these values.
SMALL = {
    "batch": (1, 2),
    "heads": (1, 3),
    "n_heads": (1, 2, 3),
    "n_kv_heads": (1, 3),
    "layers": (1, 2),
    "n_experts": (1, 3),
    "top_k": (1, 2),
    "kernel": (1, 2, 3),
    "stride": (1, 2),
    "padding": (0, 1),
    "height": (1, 3, 5, 7),
    "width": (1, 3, 5, 7),
    "head_dim": (2, 4),
}
NARROW = {
    "block": {"n_heads": (1, 2), "n_kv_heads": (1, 2), "seq": (1, 3, 5), "d_ff": (1, 3, 5)},
    "decoder": {"n_heads": (1, 2), "n_kv_heads": (1, 2), "seq": (1, 3), "d_ff": (1, 3), "vocab": (1, 3, 5)},
    "moe": {"d_model": (1, 3, 5), "d_ff": (1, 3, 5)},
    "conv2d": {"c_in": (1, 3), "c_out": (1, 3)},
}
MAX_ELEMENTS = 700  # float elements of a case's inputs and weights: four reference runs each
FD_SHARE = 0.01  # the finite difference's error estimate, at most this share of the bound
KINK_GAP = 2.0**-8  # relu's inputs kept this far from 0, beyond the difference's steps (2**-16)


def _values(name: str, param) -> tuple:
    """The values a parameter takes here, each made admissible (head_dim even)."""
    if param.choices:
        return param.choices
    table = {**SMALL, **NARROW.get(name, {})}
    admissible = (max(v, param.minimum) for v in table.get(param.name, DIMS))
    return tuple(dict.fromkeys(v + (-v) % param.multiple_of for v in admissible))


def _choice_combinations(name: str) -> list[dict]:
    params = [p for p in KERNELS[name].params if p.choices]
    return [dict(zip((p.name for p in params), values)) for values in itertools.product(*(p.choices for p in params))]


def admissible(name: str, shapes: dict) -> bool:
    """The entry takes the shapes, the finite difference can afford them, and no block or
    decoder has d_model below 8 (see the module's docstring)."""
    entry = KERNELS[name]
    try:
        resolved = entry.resolve(shapes)
    except InvalidShape:
        return False
    if name in ("block", "decoder") and resolved["n_heads"] * resolved["head_dim"] < 8:
        return False
    specs = {**entry.inputs(resolved), **entry.weights(resolved)}
    return sum(math.prod(s.shape) for s in specs.values() if s.kind != "index") <= MAX_ELEMENTS


def odd_shapes(name: str, offset: int, choices: dict) -> dict:
    """The i-th non-choice parameter at its (i + offset)-th value, so extents differ; the first
    admissible assignment from `offset` on."""
    params = [p for p in KERNELS[name].params if not p.choices]
    for shift in range(offset, offset + 64):
        shapes = {p.name: _values(name, p)[(i + shift) % len(_values(name, p))] for i, p in enumerate(params)}
        if admissible(name, {**shapes, **choices}):
            return {**shapes, **choices}
    raise AssertionError(f"no admissible small shapes for {name} {choices}")


@st.composite
def small_shapes(draw, name: str) -> dict:
    """A random admissible assignment of small odd sizes (choices drawn too)."""
    from hypothesis import assume

    shapes = {p.name: draw(st.sampled_from(_values(name, p))) for p in KERNELS[name].params}
    assume(admissible(name, shapes))
    return shapes


def gradient_case(name: str, shapes: dict, dtype: str, seed: int) -> Case:
    """The seeded case, with relu's inputs moved off its kink (at least KINK_GAP from 0), where
    the finite difference is no derivative."""
    entry = KERNELS[name]
    case = make_case(entry, entry.resolve(shapes), dtype, seed)
    if name == "relu":
        x = case.inputs["x"].astype(np.float64)
        x = np.where(np.abs(x) < KINK_GAP, np.where(x < 0, -KINK_GAP, KINK_GAP), x)
        case = dataclasses.replace(case, inputs={"x": x.astype(numpy_dtype(dtype))})
    return case


def torch_gradients(case: Case, cotangents) -> dict[str, np.ndarray]:
    """torch.autograd.grad of L = sum(out * cot) with respect to every float input and parameter."""
    import torch

    from pytorch_side.kernels import build
    from pytorch_side.params import load_weights, to_numpy, to_torch
    from pytorch_side.run import _without_onednn

    module = load_weights(build(case.entry.name, case.shapes, case.dtype), dict(case.weights))
    inputs_names, _ = G.float_names(case.entry, case.shapes)
    args = {k: to_torch(v).clone().requires_grad_(k in inputs_names) for k, v in case.inputs.items()}
    params = dict(module.named_parameters())
    with _without_onednn(module):
        out = module(*args.values())
    out = out if isinstance(out, tuple) else (out,)
    loss = sum((o * to_torch(c)).sum() for o, c in zip(out, cotangents))
    wrt = {**{k: args[k] for k in inputs_names}, **params}
    grads = torch.autograd.grad(loss, list(wrt.values()), allow_unused=True, materialize_grads=True)
    return {k: to_numpy(g).astype(np.float64) for k, g in zip(wrt, grads)}


def jax_gradients(case: Case, cotangents) -> dict[str, np.ndarray]:
    """jax.grad (under jax.jit) of L = sum(out * cot) with respect to every float input and weight,
    in the reference's layout (the side's own layout, LAYOUTS, transposed inside the function)."""
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from jax_side.kernels import LAYOUTS, build
    from jax_side.params import export_weights, load_weights

    fn = build(case.entry.name, case.shapes, case.dtype)
    if case.weights:
        load_weights(fn, dict(case.weights))
    in_perms, out_perm = LAYOUTS.get(case.entry.name, ({}, None))
    inputs_names, _ = G.float_names(case.entry, case.shapes)
    floats = {k: jnp.asarray(v) for k, v in case.inputs.items() if k in inputs_names}
    fixed = {k: jnp.asarray(v) for k, v in case.inputs.items() if k not in inputs_names}
    order = list(case.inputs)
    cots = [jnp.asarray(c) for c in cotangents]
    module = isinstance(fn, nnx.Module)
    graphdef, state = nnx.split(fn) if module else (None, {})

    def loss(state, floats):
        call = nnx.merge(graphdef, state) if module else fn
        xs = {**floats, **fixed}
        out = call(*(xs[k].transpose(in_perms[k]) if k in in_perms else xs[k] for k in order))
        out = out if isinstance(out, tuple) else (out,)
        out = [o.transpose(out_perm) for o in out] if out_perm else out
        return sum(jnp.sum(o * c) for o, c in zip(out, cots))

    d_state, d_floats = jax.jit(jax.grad(loss, argnums=(0, 1)))(state, floats)
    grads = {k: np.asarray(v).astype(np.float64) for k, v in d_floats.items()}
    if module:
        grads.update({k: v.astype(np.float64) for k, v in export_weights(nnx.merge(graphdef, d_state)).items()})
    return grads


def _verdicts(case: Case, ref: G.GradientReference, sides: dict) -> list[str]:
    """Each side against the reference, and torch against jax: the failures, in words."""
    u = unit_roundoff(case.dtype)
    where = f"{case.entry.name} {case.dtype} {dict(case.shapes)} seed {case.seed}"
    failures = []
    pairs = [(f"{s}_vs_ref", sg, None, 1.0) for s, sg in sides.items()]
    if len(sides) == 2:
        (a, ga), (b, gb) = sides.items()
        pairs.append((f"{a}_vs_{b}", ga, gb, CROSS_SIDE_FACTOR))
    for label, grads, against, factor in pairs:
        errors = ref.errors(grads, against)
        worst = max(errors, key=errors.get)
        bound = ref.bound(factor)
        if not errors[worst] <= bound:
            failures.append(
                f"{where}: {label} {errors[worst]:.3g} > bound {bound:.3g} at {worst} "
                f"({errors[worst] / (u * ref.scale) if ref.scale else math.inf:.1f} u of S = {ref.scale:.3g})"
            )
    return failures


def assert_gradients_agree(name: str, shapes: dict, dtype: str, seed: int) -> None:
    case = gradient_case(name, shapes, dtype, seed)
    ref = G.gradient_reference(case)
    assert ref.fd_error <= FD_SHARE * ref.bound(), f"{name} {shapes}: finite difference unreliable ({ref.fd_error:.3g})"
    sides = {"torch": torch_gradients(case, ref.cotangents), "jax": jax_gradients(case, ref.cotangents)}
    failures = _verdicts(case, ref, sides)
    assert not failures, "\n".join(failures)


SWEEP = [
    pytest.param(name, choices, dtype, k, id=f"{name}-{'-'.join(choices.values()) or 'plain'}-{dtype}")
    for name in KERNELS
    for k, choices in enumerate(_choice_combinations(name))
    # every dtype for each choice, but a block's or decoder's six combinations take one dtype each
    # (rotated: each mode meets every dtype, each style two), as their JAX backward compiles slowly
    for dtype in (FLOAT_DTYPES if len(_choice_combinations(name)) <= 2 else (FLOAT_DTYPES[k % 3],))
]


@pytest.mark.parametrize(("name", "choices", "dtype", "offset"), SWEEP)
def test_both_sides_gradients_agree_with_the_finite_difference_at_small_odd_sizes(name, choices, dtype, offset):
    """A property: for every kernel and choice, at small odd sizes that differ per dimension,
    torch's and JAX's gradients of sum(out * cot) with respect to every float input and weight
    are within the bound of the float64 finite difference, and within twice it of each other."""
    assert_gradients_agree(name, odd_shapes(name, offset, choices), dtype, seed=offset)


@pytest.mark.parametrize("name", list(KERNELS))
@given(data=st.data())
def test_both_sides_gradients_agree_with_the_finite_difference_on_random_small_shapes(name, data):
    """A property: the same, on random small odd shapes, choices, dtypes and seeds (the `ci`
    profile draws three per kernel; HYPOTHESIS_PROFILE=dev forty)."""
    shapes = data.draw(small_shapes(name), label="shapes")
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES), label="dtype")
    assert_gradients_agree(name, shapes, dtype, seed=data.draw(st.integers(0, 2**16), label="seed"))


def test_every_kernel_is_swept_and_only_token_ids_go_without_a_gradient():
    """A property: each kernel has a float tensor and is in the sweep; the tensors left without a
    gradient are the token ids (embedding's and the decoder's `ids`), integer indices."""
    assert {p.values[0] for p in SWEEP} == set(KERNELS)
    skipped = set()
    for name, entry in KERNELS.items():
        shapes = entry.resolve({})
        inputs, weights = G.float_names(entry, shapes)
        assert inputs or weights, name
        skipped |= {
            f"{name}.{k}" for k in {**entry.inputs(shapes), **entry.weights(shapes)} if k not in inputs + weights
        }
    assert skipped == {"embedding.ids", "decoder.ids"}


# ---------------------------------------------------------------- the float64 references themselves


@pytest.mark.parametrize("name", sorted(G.ANALYTIC))
@given(data=st.data())
def test_analytic_gradients_agree_with_the_finite_difference(name, data):
    """A property: each analytic backward (the chain rule written out in float64) equals the
    central difference to within its error estimate and 1e-9 of the gradient's scale."""
    shapes = data.draw(small_shapes(name), label="shapes")
    case = gradient_case(name, shapes, "float32", data.draw(st.integers(0, 2**16), label="seed"))
    ref = G.gradient_reference(case)
    wide = tuple(c.astype(np.float64) for c in ref.cotangents)
    analytic = G.analytic_gradient(case.entry, case.shapes, case.float64_inputs(), case.float64_weights(), wide)
    errors = ref.errors(analytic)
    assert max(errors.values()) <= ref.fd_error + 1e-9 * ref.scale, errors


def test_the_finite_difference_says_when_it_is_no_derivative():
    """A property: at relu's kink (an input at 0) the difference's error estimate is of the size
    of the cotangent, where elsewhere it is a rounding's."""
    entry = KERNELS["relu"]
    shapes = entry.resolve({"m": 1, "n": 2})
    x, c = np.array([[0.0, 1.5]]), (np.array([[1.0, 1.0]]),)
    fd = G.finite_difference(entry, shapes, {"x": x}, {}, c)
    assert fd.error["x"][0, 0] > 0.1 and fd.error["x"][0, 1] < 1e-8
    assert fd.grads["x"][0, 1] == pytest.approx(1.0, abs=1e-9)


def test_the_loss_gradient_of_a_matmul_is_the_cotangent_times_the_other_operand_by_hand():
    """A property, on a worked case: A = [[1, 2]], B = [[3], [4]], cot = [[2]]: dL/dA = cot B^T = [[6, 8]],
    dL/dB = A^T cot = [[2], [4]], and L = (1 * 3 + 2 * 4) * 2 = 22; the finite difference finds them."""
    entry = KERNELS["matmul"]
    shapes = entry.resolve({"m": 1, "k": 2, "n": 1})
    a, b, cot = np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]]), (np.array([[2.0]]),)
    assert G.loss(G.reference_outputs(entry, shapes, {"a": a, "b": b}, {}), cot) == 22.0
    fd = G.finite_difference(entry, shapes, {"a": a, "b": b}, {}, cot)
    np.testing.assert_allclose(fd.grads["a"], [[6.0, 8.0]], atol=1e-9)
    np.testing.assert_allclose(fd.grads["b"], [[2.0], [4.0]], atol=1e-9)


# ---------------------------------------------------------------- the bound can fail


def _mistakes():
    """Backward formulas with one real mistake each: name -> (entry, shapes, (case, ref) -> gradients)."""
    an = G.analytic_gradient

    def inputs(case):
        return case.entry, case.shapes, case.float64_inputs(), case.float64_weights()

    def wide(ref):
        return tuple(c.astype(np.float64) for c in ref.cotangents)

    def layernorm_detached(case, ref):  # mean and variance treated as constants: g / sigma alone
        e, s, x, w = inputs(case)
        out = an(e, s, x, w, wide(ref))
        sigma = np.sqrt(x["x"].var(-1, keepdims=True) + 1e-5)
        return {**out, "x": wide(ref)[0] * w["weight"] / sigma}

    def softmax_without_its_row_sum(case, ref):
        e, s, x, w = inputs(case)
        return {"x": softmax(x["x"]) * wide(ref)[0]}

    def moe_without_routing_gradient(case, ref):  # the routing weights detached
        e, s, x, w = inputs(case)
        out = an(e, s, x, w, wide(ref))
        r = route(x["x"] @ w["router.weight"].T, s["top_k"])
        experts = (
            G.mlp_vjp(x["x"], w, "swiglu", r[:, i : i + 1] * wide(ref)[0], f"experts.{i}.")
            for i in range(s["n_experts"])
        )
        return {**out, "router.weight": np.zeros_like(w["router.weight"]), "x": sum(g["x"] for g in experts)}

    def attention_unscaled(case, ref):  # the backward forgets 1/sqrt(head_dim) in dq and dk
        e, s, x, w = inputs(case)
        out = an(e, s, x, w, wide(ref))
        root = math.sqrt(s["head_dim"])
        return {**out, "q": out["q"] * root, "k": out["k"] * root}

    def rope_not_transposed(case, ref):  # the forward rotation applied to the cotangent
        e, s, x, w = inputs(case)
        cos, sin = rope_cos_sin(np.arange(s["seq"]), rope_inv_freq(s["head_dim"], ROPE_THETA))
        return {"x": apply_rope(wide(ref)[0], cos, sin)}

    def linear_bias_averaged(case, ref):
        e, s, x, w = inputs(case)
        out = an(e, s, x, w, wide(ref))
        return {**out, "bias": wide(ref)[0].mean(0)}

    return {
        "layernorm-detached-statistics": ("layernorm", {"m": 3, "d": 5}, layernorm_detached),
        "softmax-without-row-sum": ("softmax", {"m": 3, "n": 5}, softmax_without_its_row_sum),
        "moe-routing-detached": (
            "moe",
            {"m": 3, "d_model": 3, "d_ff": 3, "n_experts": 3, "top_k": 2},
            moe_without_routing_gradient,
        ),
        "attention-unscaled": (
            "attention",
            {"batch": 1, "seq": 3, "n_heads": 2, "n_kv_heads": 1, "head_dim": 4},
            attention_unscaled,
        ),
        "rope-not-transposed": ("rope", {"batch": 1, "seq": 5, "n_heads": 1, "head_dim": 4}, rope_not_transposed),
        "linear-bias-averaged": ("linear", {"m": 3, "k": 3, "n": 3}, linear_bias_averaged),
    }


MISTAKES = _mistakes()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_backward_with_a_real_mistake_fails_the_bound_in_every_dtype(mistake, dtype):
    """A property: the bound is tight enough to catch a wrong formula (statistics detached, a
    missing sum, routing detached, a lost scale, an untransposed rotation, a mean for a sum) even
    in bfloat16, its widest row, and the correct analytic formula passes it."""
    name, shapes, wrong = MISTAKES[mistake]
    case = gradient_case(name, shapes, dtype, seed=3)
    ref = G.gradient_reference(case)
    wide = tuple(c.astype(np.float64) for c in ref.cotangents)
    right = G.analytic_gradient(case.entry, case.shapes, case.float64_inputs(), case.float64_weights(), wide)
    assert max(ref.errors(right).values()) <= ref.bound()
    assert max(ref.errors(wrong(case, ref)).values()) > 2 * ref.bound()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_a_side_gradient_moved_past_the_bound_or_not_finite_fails(dtype):
    """A property: torch's own gradient passes; moved by twice the bound at one element, or with
    one NaN, it fails; moved by half the bound, it still passes."""
    case = gradient_case("mlp", {"m": 3, "d_model": 5, "d_ff": 7, "kind": "swiglu"}, dtype, seed=1)
    ref = G.gradient_reference(case)
    grads = torch_gradients(case, ref.cotangents)
    assert not _verdicts(case, ref, {"torch": grads})
    for step, fails in ((2.0, True), (0.5, False), (math.nan, True)):
        moved = {k: v.copy() for k, v in grads.items()}
        moved["x"][0, 0] = ref.grads["x"][0, 0] + step * ref.bound()
        assert bool(_verdicts(case, ref, {"torch": moved})) is fails, step


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_torch_autograd_through_a_layernorm_with_detached_statistics_fails(dtype):
    """A property: a real framework's wrong backward is caught: torch.autograd through a
    LayerNorm whose mean and variance are detached (a common mistake) misses the bound."""
    import torch

    from pytorch_side.params import to_numpy, to_torch

    case = gradient_case("layernorm", {"m": 3, "d": 5}, dtype, seed=2)
    ref = G.gradient_reference(case)
    x = to_torch(case.inputs["x"]).clone().requires_grad_(True)
    w, b = (to_torch(case.weights[k]).clone().requires_grad_(True) for k in ("weight", "bias"))
    mean = x.mean(-1, keepdim=True).detach()
    var = ((x - mean) ** 2).mean(-1, keepdim=True).detach()
    y = (x - mean) / torch.sqrt(var + 1e-5) * w + b
    grads = torch.autograd.grad((y * to_torch(ref.cotangents[0])).sum(), [x, w, b])
    wrong = {k: to_numpy(g).astype(np.float64) for k, g in zip(("x", "weight", "bias"), grads)}
    assert _verdicts(case, ref, {"torch": wrong})


# ---------------------------------------------------------------- findings at degenerate widths


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_a_layernorm_of_width_one_is_held_to_its_pieces(dtype):
    """A property, and why PIECES exists: at width 1 a LayerNorm's output is its bias and the
    input gradient is 0, yet torch's float32 backward sums pieces g / sigma (sigma = sqrt(eps),
    so 316 g) and leaves their rounding, here 1745 u of the largest gradient (0 to 1745 u over
    seeds 0 to 5): past a bound scaled by the Jacobian alone, within one scaled by the pieces.
    JAX, and torch in 16 bits (which sums in float32), return 0."""
    case = gradient_case("layernorm", {"m": 3, "d": 1}, dtype, seed=5)
    ref = G.gradient_reference(case)
    sides = {"torch": torch_gradients(case, ref.cotangents), "jax": jax_gradients(case, ref.cotangents)}
    assert not _verdicts(case, ref, sides)
    assert np.all(ref.grads["x"] == 0)
    jacobian_only = dataclasses.replace(ref, scale=max(float(np.abs(g).max()) for g in ref.grads.values()))
    assert bool(_verdicts(case, jacobian_only, {"torch": sides["torch"]})) is (dtype == "float32")


def _nearly_constant_row_case():
    """A LayerNorm row of two float16 numbers 4e-4 apart (variance 4e-8, far below eps = 1e-5)
    under a large cotangent: what the residual stream of a d_model-2 gpt2 decoder reaches
    (decode, batch 2, seq 2, d_ff 2, vocab 2, one layer, seed 0)."""
    entry = KERNELS["layernorm"]
    case = make_case(entry, entry.resolve({"m": 1, "d": 2}), "float16", 0)
    ones, zeros = np.ones(2, np.float16), np.zeros(2, np.float16)
    case = dataclasses.replace(
        case, inputs={"x": np.array([[-0.145, -0.1454]], np.float16)}, weights={"weight": ones, "bias": zeros}
    )
    return case, (np.array([[445.5, 194.4]], np.float16),)


def test_torch_layernorm_float16_gradient_of_a_nearly_constant_row_is_within_the_bound():
    """A property: the input gradient, +-39507, fits float16 (65504); torch's backward, which
    sums its pieces in float32, returns it within the bound."""
    case, cots = _nearly_constant_row_case()
    ref = G.gradient_reference(case, cots)
    assert np.abs(ref.grads["x"]).max() < 65504
    assert not _verdicts(case, ref, {"torch": torch_gradients(case, cots)})


@pytest.mark.xfail(
    strict=True,
    reason="finding: flax.nnx.LayerNorm's float16 VJP casts each path's partial gradient g * rsqrt(var + eps) "
    "(1.4e5) to float16 before summing them: inf, and inf - inf = NaN, where the gradient (+-39507) fits",
)
def test_jax_layernorm_float16_gradient_of_a_nearly_constant_row_is_finite():
    """A property JAX fails today (strict xfail: it fails loudly once fixed): the same row's
    float16 gradient through jax.grad is finite and within the bound."""
    case, cots = _nearly_constant_row_case()
    ref = G.gradient_reference(case, cots)
    assert not _verdicts(case, ref, {"jax": jax_gradients(case, cots)})
