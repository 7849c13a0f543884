"""Feed-forward layers: GELU MLP (GPT-2), SwiGLU (Llama), top-k routed mixture of experts (Mixtral)."""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from reference.catalogue.elementwise import gelu, silu, softmax
from reference.errors import InvalidShape
from reference.spec import Entry, Param, TensorSpec, bias, weight

# Routing margin: the gap the generator keeps between the k-th and (k+1)-th router logit of
# every token. bfloat16 rounds a logit of order one by up to 2**-8; 0.05 is over ten times
# that, so both sides and the reference pick the same experts.
ROUTER_MARGIN = 0.05
ROUTER_REDRAWS = 1000


def mlp_weights(d_model: int, d_ff: int, kind: str, prefix: str = "") -> dict[str, TensorSpec]:
    """Canonical weights of a GELU MLP (fc, proj with biases) or a SwiGLU (gate, up, down)."""
    if kind == "gelu":
        return {
            f"{prefix}fc.weight": weight((d_ff, d_model), d_model),
            f"{prefix}fc.bias": bias((d_ff,)),
            f"{prefix}proj.weight": weight((d_model, d_ff), d_ff),
            f"{prefix}proj.bias": bias((d_model,)),
        }
    return {
        f"{prefix}gate_proj.weight": weight((d_ff, d_model), d_model),
        f"{prefix}up_proj.weight": weight((d_ff, d_model), d_model),
        f"{prefix}down_proj.weight": weight((d_model, d_ff), d_ff),
    }


def mlp(x: np.ndarray, w, kind: str, prefix: str = "") -> np.ndarray:
    """gelu: proj(gelu_tanh(fc(x))); swiglu: down(silu(gate(x)) * up(x))."""
    if kind == "gelu":
        h = gelu(x @ w[f"{prefix}fc.weight"].T + w[f"{prefix}fc.bias"], "tanh")
        return h @ w[f"{prefix}proj.weight"].T + w[f"{prefix}proj.bias"]
    h = silu(x @ w[f"{prefix}gate_proj.weight"].T) * (x @ w[f"{prefix}up_proj.weight"].T)
    return h @ w[f"{prefix}down_proj.weight"].T


def projection_terms(h: np.ndarray, w_oi: np.ndarray, scale: np.ndarray | float = 1.0) -> np.ndarray:
    """sum_j (scale * h[t, j] * w[o, j])**2 per output [t, o]: the squared terms of a projection."""
    return (np.asarray(scale) ** 2 * h**2) @ (w_oi**2).T


def mlp_terms(x: np.ndarray, w, kind: str, prefix: str = "", scale: np.ndarray | float = 1.0) -> np.ndarray:
    """The squared terms of the MLP's last projection (the hidden activation times the output weight)."""
    if kind == "gelu":
        h = gelu(x @ w[f"{prefix}fc.weight"].T + w[f"{prefix}fc.bias"], "tanh")
        return projection_terms(h, w[f"{prefix}proj.weight"], scale)
    h = silu(x @ w[f"{prefix}gate_proj.weight"].T) * (x @ w[f"{prefix}up_proj.weight"].T)
    return projection_terms(h, w[f"{prefix}down_proj.weight"], scale)


def moe_weights(d_model: int, d_ff: int, n_experts: int, prefix: str = "") -> dict[str, TensorSpec]:
    out = {f"{prefix}router.weight": weight((n_experts, d_model), d_model)}
    for e in range(n_experts):
        out.update(mlp_weights(d_model, d_ff, "swiglu", f"{prefix}experts.{e}."))
    return out


def route(logits_te: np.ndarray, top_k: int) -> np.ndarray:
    """Mixtral routing: softmax over experts, keep the top k, renormalize to sum one.

    Returns dense weights [T, E], zero for experts a token is not routed to.
    """
    probs_te = softmax(logits_te)
    kth = np.sort(probs_te, axis=-1)[:, -top_k][:, None]
    kept_te = np.where(probs_te >= kth, probs_te, 0.0)
    return kept_te / kept_te.sum(-1, keepdims=True)


def moe(x_td: np.ndarray, w, n_experts: int, top_k: int, prefix: str = "") -> np.ndarray:
    """sum_e route(x)[t, e] * SwiGLU_e(x[t]); every expert runs on every token (dense dispatch)."""
    weights_te = route(x_td @ w[f"{prefix}router.weight"].T, top_k)
    out = np.zeros_like(x_td)
    for e in range(n_experts):
        out += weights_te[:, e : e + 1] * mlp(x_td, w, "swiglu", f"{prefix}experts.{e}.")
    return out


def moe_terms(x_td: np.ndarray, w, n_experts: int, top_k: int, prefix: str = "") -> np.ndarray:
    """The squared terms of the experts' down projections, each weighted by its routing weight."""
    weights_te = route(x_td @ w[f"{prefix}router.weight"].T, top_k)
    return sum(
        mlp_terms(x_td, w, "swiglu", f"{prefix}experts.{e}.", weights_te[:, e : e + 1]) for e in range(n_experts)
    )


# How both sides' MoE layers dispatch tokens while a graph is traced: None (dense: every expert
# on every token, what numerical runs use), "expected" (routed at the expected load: the graph
# that is costed, expert_capacity) or "full" (routed over every expert and token: equal to dense,
# to test the routed path). The lowerings set it with `routed_moe`.
MOE_DISPATCH: contextvars.ContextVar[str | None] = contextvars.ContextVar("moe_dispatch", default=None)


@contextlib.contextmanager
def routed_moe(capacity: str = "expected"):
    """Trace MoE layers with routed dispatch (gather, expert, scatter-add)."""
    token = MOE_DISPATCH.set(capacity)
    try:
        yield
    finally:
        MOE_DISPATCH.reset(token)


def expert_capacity(tokens: int, n_experts: int, top_k: int) -> tuple[int, int]:
    """(active experts, tokens per active expert) of routed dispatch at the expected load, as the
    graph that is costed runs it (both sides' MoE under `routed_moe`):

        active   = min(n, ceil(n * (1 - (1 - k/n) ** tokens)))   expected distinct experts chosen
        capacity = ceil(tokens * k / active)                      the routed rows, balanced over them

    so a step computes about tokens * k expert rows (top_k / n_experts of dense dispatch) and
    reads `active` experts' weights. Worked numbers (Mixtral, n = 8, k = 2): a decode step at
    batch 1 runs 2 experts of 1 row each; at batch 8, 8 * (1 - 0.75**8) = 7.2, so 8 experts of 2
    rows; a prefill of 2048 tokens, 8 experts of 512 rows.
    """
    import math

    active = min(n_experts, max(1, math.ceil(n_experts * (1 - (1 - top_k / n_experts) ** tokens) - 1e-9)))
    return active, math.ceil(tokens * top_k / active)


def moe_routed(
    x_td: np.ndarray, w, n_experts: int, top_k: int, active: int, capacity: int, prefix: str = ""
) -> np.ndarray:
    """Routed dispatch: expert e < active runs on the `capacity` tokens with the largest routing
    weight to it (gathered), and its weighted output is added back at their rows (scattered).
    With active = n_experts and capacity = tokens it equals `moe` (a routing weight of 0 adds 0);
    at the expected load (expert_capacity) tokens beyond an expert's capacity are dropped, as
    capacity-factor routing (GShard, Switch) drops them."""
    weights_te = route(x_td @ w[f"{prefix}router.weight"].T, top_k)
    out = np.zeros_like(x_td)
    for e in range(active):
        rows = np.argsort(-weights_te[:, e], kind="stable")[:capacity]
        out[rows] += weights_te[rows, e : e + 1] * mlp(x_td[rows], w, "swiglu", f"{prefix}experts.{e}.")
    return out


def router_margin_ok(logits_te: np.ndarray, top_k: int) -> np.ndarray:
    """Per token: is the gap between the k-th and (k+1)-th logit at least ROUTER_MARGIN?"""
    if top_k >= logits_te.shape[-1]:
        return np.ones(logits_te.shape[0], dtype=bool)
    ordered = np.sort(logits_te, axis=-1)
    return ordered[:, -top_k] - ordered[:, -top_k - 1] >= ROUTER_MARGIN


def separate_router_choices(s, inputs, weights, rng, dtype) -> None:
    """Redraw token rows whose top-k routing sits on a near-tie (see ROUTER_MARGIN)."""
    router = weights["router.weight"].astype(np.float64)
    x = inputs["x"]
    for _ in range(ROUTER_REDRAWS):
        bad = ~router_margin_ok(x.astype(np.float64) @ router.T, s["top_k"])
        if not bad.any():
            return
        fresh = rng.standard_normal((int(bad.sum()), x.shape[1]))
        x[bad] = fresh.astype(x.dtype)
    raise InvalidShape("moe", "n_experts", s["n_experts"], "could not draw well-separated router logits")


def _moe_check(s):
    if s["top_k"] > s["n_experts"]:
        raise InvalidShape("moe", "top_k", s["top_k"], f"must be <= n_experts={s['n_experts']}")


TOKENS = Param("m", 32, "tokens")
D_MODEL = Param("d_model", 64, "model width")
D_FF = Param("d_ff", 128, "hidden width of each MLP")

ENTRIES = (
    Entry(
        name="mlp",
        description="GELU MLP (GPT-2: fc, tanh GELU, proj, with biases) or SwiGLU (Llama: gate, up, down)",
        params=(TOKENS, D_MODEL, D_FF, Param("kind", "swiglu", "MLP family", choices=("swiglu", "gelu"))),
        inputs=lambda s: {"x": TensorSpec((s["m"], s["d_model"]))},
        weights=lambda s: mlp_weights(s["d_model"], s["d_ff"], s["kind"]),
        reference=lambda s, x, w: mlp(x["x"], w, s["kind"]),
        terms=lambda s, x, w: float(np.sqrt(mlp_terms(x["x"], w, s["kind"]).max())),
        largest=lambda s: {"hidden": (s["m"], s["d_ff"]), "output": (s["m"], s["d_model"])},
        reduction=lambda s: max(s["d_model"], s["d_ff"]),
    ),
    Entry(
        name="moe",
        description="Mixtral-style mixture of SwiGLU experts: softmax router, top-k, renormalized weights",
        params=(
            TOKENS,
            D_MODEL,
            D_FF,
            Param("n_experts", 8, "experts"),
            Param("top_k", 2, "experts per token"),
        ),
        inputs=lambda s: {"x": TensorSpec((s["m"], s["d_model"]))},
        weights=lambda s: moe_weights(s["d_model"], s["d_ff"], s["n_experts"]),
        reference=lambda s, x, w: moe(x["x"], w, s["n_experts"], s["top_k"]),
        terms=lambda s, x, w: float(np.sqrt(moe_terms(x["x"], w, s["n_experts"], s["top_k"]).max())),
        check=_moe_check,
        largest=lambda s: {"hidden": (s["n_experts"], s["m"], s["d_ff"]), "routing": (s["m"], s["n_experts"])},
        reduction=lambda s: max(s["d_model"], s["d_ff"], s["n_experts"]),
        condition=separate_router_choices,
    ),
)
