"""Float64 gradient references for the catalogue, and the bound a side's gradient is held to.

The loss of one case is L = sum_i sum(out_i * cot_i): every output of the entry's float64
reference against a cotangent of its shape (`draw_cotangents`), so dL/d(out_i) = cot_i and the
gradient of L with respect to a tensor is the vector-Jacobian product a training step's backward
computes. A gradient is taken with respect to every float tensor of the entry, inputs and weights
alike (a token id is an index, not differentiable: it has none).

Two references:

    finite_difference   any entry: a central difference of the float64 reference in every
                        element, with an estimate of its own error (`FiniteDifference`)
    analytic            where the backward is a few lines (ANALYTIC): the chain rule written out
                        in float64, checked against the finite difference

The step. A central difference D(h) = (L(x + h) - L(x - h)) / 2h errs by h^2 |L'''| / 6
(truncation) plus about eps |L| / h (rounding of L, eps = 2**-52): their sum is least at
h = cbrt(3 eps) ~ 2**-17, for an x of order one; a larger |x| scales the step with it
(h = 2**-17 max(1, |x|), rounded so that x + h and x - h are exact). D(2h) is computed too, and
the estimate of D(h)'s error is |D(h) - D(2h)| (truncation: D(2h)'s is four times D(h)'s), plus
h |C(h) - C(2h)| for the curvatures C(d) = (L(x + d) - 2 L(x) + L(x - d)) / d^2 (equal where L is
smooth, a factor 2 apart at a kink at x, which the symmetric differences miss), plus the rounding
term; the value returned is the Richardson extrapolation (4 D(h) - D(2h)) / 3,
whose truncation is O(h^4) and so far below that estimate. L's rounding is kept small by
differencing the outputs before the sum with the cotangent: an output that x does not reach
differences to exactly zero. At a kink (relu at 0) within 2h of x the estimate is of the size of
the jump: the reference is then no derivative, and a caller must not use it (tests check the
estimate).

The bound (`GradientReference.bound`). As in reference/tolerance.py, normwise, with the case's
gradient, every float input's and weight's, taken as one vector (as the policy takes an output):

    max over tensors T of max|side_T - ref_T| <= atol + rtol * S
    S = max over T of max(max|ref_T|, max_i terms_T,i), and an entry's declared pieces (PIECES)

rtol and atol are the forward's row (reference/tolerance.py) times BACKWARD_FACTOR = 2: the
backward reads the forward's stored intermediates, each off by the forward's few roundings, and
rounds as many of its own: float32 2 x 64 u = 128 u, float16 and bfloat16 2 x 4 u = 8 u, atol 2 u.
terms_T,i, the root-sum-square of the terms of the backward's last sum, sum_j J_ji cot_j over the
outputs j that element i moves (the finite difference's Jacobian column), plays the part of the
forward's `Entry.terms`: where those terms cancel, the stored roundings scale with them, not with
their sum. One scale for the whole case, not one per tensor, because some gradients are sums
that cancel to zero whatever the values (a key bias's: softmax ignores a shift of its row; the
router's at top_k = 1, whose one weight is 1) and the sides return there the rounding of terms
that the case's other gradients are made of. A norm's input gradient is the difference of
pieces g / sigma (g = cot * weight) that cancel exactly at width 1, where the Jacobian is zero:
PIECES declares them. The reduction that widens float32 past its domain is the longer of the
forward's and the backward's (`FiniteDifference.reach`, the most outputs one element moves).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from reference.catalogue.attention import ROPE_THETA, rope_cos_sin, rope_inv_freq
from reference.catalogue.elementwise import gelu, silu, softmax
from reference.catalogue.mlp import mlp, route
from reference.catalogue.norms import LAYERNORM_EPS, RMSNORM_EPS
from reference.dtypes import numpy_dtype
from reference.errors import InvalidShape, UnknownName
from reference.inputs import Case
from reference.spec import Entry, Shapes
from reference.tolerance import Tolerance, tolerance_for

EPS64 = float(np.finfo(np.float64).eps)
FD_STEP = 2.0**-17  # ~ cbrt(3 * 2**-52): the central difference's truncation and rounding balance there
BACKWARD_FACTOR = 2.0  # the forward's roundings, read by the backward, and the backward's own
_erf = np.vectorize(math.erf, otypes=[np.float64])
Arrays = Mapping[str, np.ndarray]
Outputs = tuple[np.ndarray, ...]


def float_names(entry: Entry, shapes: Shapes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(inputs, weights) of the entry that have a gradient: every tensor but an index (token ids)."""
    inputs = tuple(k for k, s in entry.inputs(shapes).items() if s.kind != "index")
    weights = tuple(k for k, s in entry.weights(shapes).items() if s.kind != "index")
    shared = sorted(set(inputs) & set(weights))
    if shared:  # gradients are keyed by name alone
        raise InvalidShape(
            entry.name, "tensor", shared[0], "is both an input and a weight; gradients need one name each"
        )
    return inputs, weights


def reference_outputs(entry: Entry, shapes: Shapes, inputs: Arrays, weights: Arrays) -> Outputs:
    out = entry.reference(shapes, inputs, weights)
    return tuple(np.asarray(o, dtype=np.float64) for o in (out if isinstance(out, tuple) else (out,)))


def draw_cotangents(outputs: Outputs, dtype: str, seed: int) -> Outputs:
    """One N(0, 1) cotangent per output, rounded to the run's dtype, seeded per output index (as
    reference/inputs.py seeds per tensor name); returned in the dtype's storage type."""
    return tuple(
        np.random.default_rng([seed, zlib.crc32(f"cotangent:{i}".encode())])
        .standard_normal(o.shape)
        .astype(numpy_dtype(dtype))
        for i, o in enumerate(outputs)
    )


def loss(outputs: Outputs, cotangents: Outputs) -> float:
    """L = sum_i sum(out_i * cot_i), in float64."""
    return float(
        sum(np.sum(np.asarray(o, np.float64) * np.asarray(c, np.float64)) for o, c in zip(outputs, cotangents))
    )


@dataclass(frozen=True)
class FiniteDifference:
    """A finite-difference gradient of L with respect to each float tensor, keyed by name.

    Attributes:
        grads: dL/dx, float64, each the shape of its tensor (Richardson-extrapolated).
        error: per element, an estimate of the difference's own error (see the module's docstring).
        terms: per element i, sqrt(sum_j (J_ji cot_j)^2): the root-sum-square of the terms of the
            backward's last sum over the outputs j.
        reach: the most output elements any one element of the tensor moves (the backward's
            longest sum).
    """

    grads: dict[str, np.ndarray]
    error: dict[str, np.ndarray]
    terms: dict[str, np.ndarray]
    reach: dict[str, int]


def finite_difference(
    entry: Entry,
    shapes: Shapes,
    inputs: Arrays,
    weights: Arrays,
    cotangents: Outputs,
    names: tuple[str, ...] | None = None,
    step: float = FD_STEP,
) -> FiniteDifference:
    """The central-difference gradient of L = sum(out * cot) at float64 `inputs` and `weights`
    (token ids as they are), with respect to `names` (default: every float tensor).

    Costs four evaluations of the reference per element: keep the tensors small.
    """
    arrays = {**{k: np.array(v) for k, v in inputs.items()}, **{k: np.array(v) for k, v in weights.items()}}
    split = (set(inputs), set(weights))
    cots = tuple(np.asarray(c, dtype=np.float64) for c in cotangents)

    def outputs() -> Outputs:
        return reference_outputs(entry, shapes, {k: arrays[k] for k in split[0]}, {k: arrays[k] for k in split[1]})

    if names is None:
        names = sum(float_names(entry, shapes), ())
    base = outputs()

    def along(diffs: Outputs) -> float:  # the outputs' change, against the cotangents
        return sum(float(np.sum(d * c)) for d, c in zip(diffs, cots))

    grads, error, terms, reach = {}, {}, {}, {}
    for name in names:
        x = arrays[name]
        g, err, rss = np.zeros(x.shape), np.zeros(x.shape), np.zeros(x.shape)
        most = 0
        for idx in np.ndindex(x.shape):
            x0 = x[idx]
            h = float((x0 + step * max(1.0, abs(x0))) - x0)  # exactly representable: x0 +- h are exact
            runs = []
            for delta in (h, 2 * h):
                x[idx] = x0 + delta
                plus = outputs()
                x[idx] = x0 - delta
                minus = outputs()
                x[idx] = x0
                runs.append((plus, minus))
            (p1, m1), (p2, m2) = runs
            d1 = tuple(p - m for p, m in zip(p1, m1))
            one, two = along(d1) / (2 * h), along(tuple(p - m for p, m in zip(p2, m2))) / (4 * h)
            # curvature at h and 2h: equal where L is smooth, a factor 2 apart at a kink at x0,
            # which the central differences, symmetric about it, do not see
            bend = [
                along(tuple(p - 2 * b + m for p, b, m in zip(pp, base, mm))) / d**2
                for (pp, mm), d in zip(runs, (h, 2 * h))
            ]
            g[idx] = (4 * one - two) / 3
            scale = sum(float(np.sum(np.abs(p * c))) for p, c in zip(p2, cots))
            err[idx] = abs(one - two) + h * abs(bend[0] - bend[1]) + 8 * EPS64 * scale / h
            rss[idx] = math.sqrt(sum(float(np.sum((d * c) ** 2)) for d, c in zip(d1, cots))) / (2 * h)
            most = max(most, sum(int(np.count_nonzero(d)) for d in d1))
        grads[name], error[name], terms[name], reach[name] = g, err, rss, most
    return FiniteDifference(grads, error, terms, reach)


def gradient_tolerance(dtype: str, reduction: int = 0) -> Tolerance:
    """The forward's row for the dtype and reduction (reference/tolerance.py), widened by
    BACKWARD_FACTOR."""
    return tolerance_for(dtype, reduction).widened(BACKWARD_FACTOR)


def gradient_error(side: np.ndarray, ref: np.ndarray) -> float:
    """max|side - ref| in float64; infinity where the side's gradient is not finite.

    Raises:
        InvalidShape: the side's gradient is not the reference's shape.
    """
    side = np.asarray(side, dtype=np.float64)
    if side.shape != ref.shape:
        raise InvalidShape("gradient", "shape", side.shape, f"expected {ref.shape}")
    if not np.isfinite(side).all():
        return float("inf")
    return float(np.max(np.abs(side - ref))) if ref.size else 0.0


def _norm_pieces(stat: Callable[[np.ndarray], np.ndarray]):
    def pieces(s, x, w, cots):
        return float(np.max(np.abs(cots[0] * w["weight"]) / stat(x["x"])))

    return pieces


# entry -> (shapes, inputs, weights, cotangents) -> the largest piece its backward sums and
# cancels out of the Jacobian's sight: a norm's g / sigma (LayerNorm), g / rms (RMSNorm).
PIECES: dict[str, Callable[[Shapes, Arrays, Arrays, Outputs], float]] = {
    "layernorm": _norm_pieces(lambda z: np.sqrt(z.var(-1, keepdims=True) + LAYERNORM_EPS)),
    "rmsnorm": _norm_pieces(lambda z: np.sqrt((z**2).mean(-1, keepdims=True) + RMSNORM_EPS)),
}


@dataclass(frozen=True)
class GradientReference:
    """One case's float64 gradient reference and the bound a side's gradient is held to.

    Attributes:
        cotangents: one per output, in the case's dtype (what the sides multiply their outputs by).
        grads: tensor name -> dL/d(tensor), float64 (the finite difference).
        scale: S of the module's docstring.
        reduction: the longer of the forward's and the backward's longest sums.
        fd_error: the largest error estimate of the finite difference, over every element.
    """

    dtype: str
    cotangents: Outputs
    grads: dict[str, np.ndarray]
    scale: float
    reduction: int
    fd_error: float

    @property
    def tolerance(self) -> Tolerance:
        return gradient_tolerance(self.dtype, self.reduction)

    def bound(self, factor: float = 1.0) -> float:
        """atol + rtol * S, times `factor` (CROSS_SIDE_FACTOR between two sides)."""
        return self.tolerance.widened(factor).bound(self.scale)

    def errors(self, side: Mapping[str, np.ndarray], against: Mapping[str, np.ndarray] | None = None) -> dict:
        """Tensor name -> max|side - reference| (or - `against`, another side's gradients).

        Raises:
            InvalidShape: the side's gradients name other tensors than the reference's.
        """
        if set(side) != set(self.grads):
            raise InvalidShape("gradients", "names", sorted(side), f"expected {sorted(self.grads)}")
        other = self.grads if against is None else {k: np.asarray(v, np.float64) for k, v in against.items()}
        return {k: gradient_error(side[k], other[k]) for k in self.grads}


def gradient_reference(case: Case, cotangents: Outputs | None = None) -> GradientReference:
    """Draw the case's cotangents (seeded by the case's seed), unless given in the case's dtype,
    and take the finite-difference gradient of L at the case's inputs and weights, widened exactly
    to float64."""
    entry, shapes = case.entry, case.shapes
    inputs, weights = case.float64_inputs(), case.float64_weights()
    cots = cotangents
    if cots is None:
        cots = draw_cotangents(reference_outputs(entry, shapes, inputs, weights), case.dtype, case.seed)
    wide = tuple(c.astype(np.float64) for c in cots)
    fd = finite_difference(entry, shapes, inputs, weights, wide)
    scale = max(
        (max(float(np.max(np.abs(g))), float(np.max(fd.terms[k]))) for k, g in fd.grads.items() if g.size), default=0.0
    )
    if entry.name in PIECES:
        scale = max(scale, PIECES[entry.name](shapes, inputs, weights, wide))
    reduction = max([entry.reduction(shapes) if entry.reduction else 0, *fd.reach.values()])
    fd_error = max((float(np.max(e)) for e in fd.error.values() if e.size), default=0.0)
    return GradientReference(case.dtype, cots, fd.grads, scale, reduction, fd_error)


# ---------------------------------------------------------------- analytic references


def _unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a broadcast result's gradient back to an operand's shape."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    return g.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1), keepdims=True)


def _matmul(s, x, w, c):
    a, b = x["a"], x["b"]
    return {
        "a": _unbroadcast(c @ np.swapaxes(b, -1, -2), a.shape),
        "b": _unbroadcast(np.swapaxes(a, -1, -2) @ c, b.shape),
    }


def _linear(s, x, w, c):
    return {"x": c @ w["weight"], "weight": c.T @ x["x"], "bias": c.sum(0)}


def _conv2d(s, x, w, c):
    """y[b,o,i,j] = sum_{c,p,q} xpad[b,c,i*st+p,j*st+q] W[o,c,p,q] + bias[o]: each kernel tap's
    gradient scattered back onto the padded input, then the padding cropped."""
    pad, st, kk = s["padding"], s["stride"], s["kernel"]
    xp = np.pad(x["x"], ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = c.shape[2:]
    dxp, dw = np.zeros_like(xp), np.zeros_like(w["weight"])
    for p in range(kk):
        for q in range(kk):
            rows, cols = slice(p, p + st * (oh - 1) + 1, st), slice(q, q + st * (ow - 1) + 1, st)
            dxp[:, :, rows, cols] += np.einsum("boij,oc->bcij", c, w["weight"][:, :, p, q])
            dw[:, :, p, q] = np.einsum("boij,bcij->oc", c, xp[:, :, rows, cols])
    h, wd = x["x"].shape[2:]
    return {"x": dxp[:, :, pad : pad + h, pad : pad + wd], "weight": dw, "bias": c.sum((0, 2, 3))}


def _silu_grad(z):
    sig = 1.0 / (1.0 + np.exp(-z))
    return sig * (1.0 + z * (1.0 - sig))


def gelu_grad(z: np.ndarray, approximate: str = "none") -> np.ndarray:
    """d gelu / dz: Phi(z) + z phi(z), or the derivative of the tanh form."""
    if approximate == "tanh":
        k = np.sqrt(2.0 / np.pi)
        t = np.tanh(k * (z + 0.044715 * z**3))
        return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t**2) * k * (1.0 + 3 * 0.044715 * z**2)
    phi = np.exp(-0.5 * z**2) / np.sqrt(2.0 * np.pi)
    return 0.5 * (1.0 + _erf(z / np.sqrt(2.0))) + z * phi


def _softmax_vjp(y, c):
    return y * (c - (c * y).sum(-1, keepdims=True))


def _layernorm(s, x, w, c):
    z = x["x"]
    mean = z.mean(-1, keepdims=True)
    sigma = np.sqrt(((z - mean) ** 2).mean(-1, keepdims=True) + LAYERNORM_EPS)
    xhat = (z - mean) / sigma
    g = c * w["weight"]
    dx = (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True)) / sigma
    return {"x": dx, "weight": (c * xhat).sum(0), "bias": c.sum(0)}


def _rmsnorm(s, x, w, c):
    z = x["x"]
    r = np.sqrt((z**2).mean(-1, keepdims=True) + RMSNORM_EPS)
    g = c * w["weight"]
    return {"x": g / r - z * (g * z).mean(-1, keepdims=True) / r**3, "weight": (c * z / r).sum(0)}


def _rope(s, x, w, c):
    """The rotation's transpose: rotate_half^T([a1, a2]) = [a2, -a1]."""
    cos, sin = rope_cos_sin(np.arange(s["seq"]), rope_inv_freq(s["head_dim"], ROPE_THETA))
    cs, half = c * sin, s["head_dim"] // 2
    return {"x": c * cos + np.concatenate([cs[..., half:], -cs[..., :half]], axis=-1)}


def attention_vjp(q, k, v, c, causal: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dq, dk, dv) of reference.catalogue.attention.attention, grouped-query heads summed back."""
    b, n, t, h = q.shape
    kv, s = k.shape[1], k.shape[2]
    group = n // kv
    k_n, v_n = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = q @ np.swapaxes(k_n, -1, -2) / np.sqrt(h)
    if causal:
        allowed = np.arange(s)[None, :] <= np.arange(t)[:, None] + (s - t)
        scores = np.where(allowed, scores, -np.inf)
    p = softmax(scores)
    dv_n = np.swapaxes(p, -1, -2) @ c
    ds = _softmax_vjp(p, c @ np.swapaxes(v_n, -1, -2)) / np.sqrt(h)
    dq, dk_n = ds @ k_n, np.swapaxes(ds, -1, -2) @ q
    fold = lambda a: a.reshape(b, kv, group, s, h).sum(2)  # noqa: E731  head n reads kv head n // group
    return dq, fold(dk_n), fold(dv_n)


def _attention(s, x, w, c):
    dq, dk, dv = attention_vjp(x["q"], x["k"], x["v"], c, causal=s["mode"] == "prefill")
    return {"q": dq, "k": dk, "v": dv}


def mlp_vjp(z: np.ndarray, w: Arrays, kind: str, c: np.ndarray, prefix: str = "") -> dict[str, np.ndarray]:
    """The gradient of sum(mlp(z) * c): "x" for z, and each weight under its canonical name."""
    p = prefix
    if kind == "gelu":
        pre = z @ w[f"{p}fc.weight"].T + w[f"{p}fc.bias"]
        hidden = gelu(pre, "tanh")
        dpre = (c @ w[f"{p}proj.weight"]) * gelu_grad(pre, "tanh")
        return {
            "x": dpre @ w[f"{p}fc.weight"],
            f"{p}fc.weight": dpre.T @ z,
            f"{p}fc.bias": dpre.sum(0),
            f"{p}proj.weight": c.T @ hidden,
            f"{p}proj.bias": c.sum(0),
        }
    gate, up = z @ w[f"{p}gate_proj.weight"].T, z @ w[f"{p}up_proj.weight"].T
    dhidden = c @ w[f"{p}down_proj.weight"]
    dgate, dup = dhidden * up * _silu_grad(gate), dhidden * silu(gate)
    return {
        "x": dgate @ w[f"{p}gate_proj.weight"] + dup @ w[f"{p}up_proj.weight"],
        f"{p}gate_proj.weight": dgate.T @ z,
        f"{p}up_proj.weight": dup.T @ z,
        f"{p}down_proj.weight": c.T @ (silu(gate) * up),
    }


def _mlp(s, x, w, c):
    return mlp_vjp(x["x"], w, s["kind"], c)


def moe_vjp(z: np.ndarray, w: Arrays, n_experts: int, top_k: int, c: np.ndarray) -> dict[str, np.ndarray]:
    """The gradient of sum(moe(z) * c) with the routing's choice held (it is piecewise constant):
    out = sum_e r_e f_e(z), r = p K / sum(p K) over the kept experts K, p = softmax(z R^T).
    dr_e = sum_d c f_e(z); dp_j = K_j (dr_j - sum_e dr_e r_e) / sum(p K); the softmax's vjp; the
    router's matmul; and each expert's own backward under the cotangent r_e c."""
    logits = z @ w["router.weight"].T
    r, p = route(logits, top_k), softmax(logits)
    kept = r > 0
    out: dict[str, np.ndarray] = {}
    dr = np.zeros_like(r)
    dx = np.zeros_like(z)
    for e in range(n_experts):
        prefix = f"experts.{e}."
        dr[:, e] = (c * mlp(z, w, "swiglu", prefix)).sum(-1)
        grads = mlp_vjp(z, w, "swiglu", r[:, e : e + 1] * c, prefix)
        dx += grads.pop("x")
        out.update(grads)
    dp = kept * (dr - (dr * r).sum(-1, keepdims=True)) / (p * kept).sum(-1, keepdims=True)
    dlogits = _softmax_vjp(p, dp)
    out["router.weight"] = dlogits.T @ z
    out["x"] = dx + dlogits @ w["router.weight"]
    return out


def _moe(s, x, w, c):
    return moe_vjp(x["x"], w, s["n_experts"], s["top_k"], c)


def _embedding(s, x, w, c):
    dw = np.zeros_like(w["weight"])
    np.add.at(dw, x["ids"], c)  # a row read twice gathers both cotangents
    return {"weight": dw}


Analytic = Callable[[Shapes, Arrays, Arrays, np.ndarray], dict[str, np.ndarray]]
# entry -> (shapes, float64 inputs, float64 weights, the cotangent of its one output) -> gradients
ANALYTIC: dict[str, Analytic] = {
    "matmul": _matmul,
    "batched_matmul": _matmul,
    "linear": _linear,
    "conv2d": _conv2d,
    "add": lambda s, x, w, c: {"a": c, "b": c},
    "mul": lambda s, x, w, c: {"a": c * x["b"], "b": c * x["a"]},
    "relu": lambda s, x, w, c: {"x": c * (x["x"] > 0)},  # 0 at the kink, as both frameworks take it
    "gelu": lambda s, x, w, c: {"x": c * gelu_grad(x["x"], s["approximate"])},
    "silu": lambda s, x, w, c: {"x": c * _silu_grad(x["x"])},
    "softmax": lambda s, x, w, c: {"x": _softmax_vjp(softmax(x["x"]), c)},
    "log_softmax": lambda s, x, w, c: {"x": c - softmax(x["x"]) * c.sum(-1, keepdims=True)},
    "layernorm": _layernorm,
    "rmsnorm": _rmsnorm,
    "rope": _rope,
    "attention": _attention,
    "mlp": _mlp,
    "moe": _moe,
    "embedding": _embedding,
    "clone": lambda s, x, w, c: {"x": c.copy()},
}


def analytic_gradient(entry: Entry, shapes: Shapes, inputs: Arrays, weights: Arrays, cotangents: Outputs) -> dict:
    """The entry's analytic gradient of L, keyed as `finite_difference` keys it.

    Raises:
        UnknownName: the entry has no analytic reference (block, decoder: use the finite difference).
    """
    if entry.name not in ANALYTIC:
        raise UnknownName("analytic gradient reference", entry.name, ANALYTIC)
    (cot,) = cotangents
    return ANALYTIC[entry.name](shapes, inputs, weights, np.asarray(cot, dtype=np.float64))


__all__ = [
    "ANALYTIC",
    "PIECES",
    "GradientReference",
    "gradient_reference",
    "BACKWARD_FACTOR",
    "FD_STEP",
    "FiniteDifference",
    "analytic_gradient",
    "draw_cotangents",
    "finite_difference",
    "float_names",
    "gradient_error",
    "gradient_tolerance",
    "loss",
]
