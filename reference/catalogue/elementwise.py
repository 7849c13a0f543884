"""Elementwise kernels and row-wise softmax, referenced in float64."""

from __future__ import annotations

import math

import numpy as np

from reference.spec import Entry, Param, TensorSpec, no_weights

ROWS = Param("m", 64, "rows")
COLS = Param("n", 64, "columns (softmax axis)")
_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """GELU: x * Phi(x) (erf form) or the tanh approximation used by GPT-2."""
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable: subtract the row maximum before exponentiating."""
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _unary(name, description, fn, extra=(), reduces=False):
    return Entry(
        name=name,
        description=description,
        params=(ROWS, COLS, *extra),
        inputs=lambda s: {"x": TensorSpec((s["m"], s["n"]), std=2.0)},
        weights=no_weights,
        reference=fn,
        reduction=(lambda s: s["n"]) if reduces else None,  # a softmax sums its row
    )


def _binary(name, description, fn):
    return Entry(
        name=name,
        description=description,
        params=(ROWS, COLS),
        inputs=lambda s: {"a": TensorSpec((s["m"], s["n"])), "b": TensorSpec((s["m"], s["n"]))},
        weights=no_weights,
        reference=lambda s, x, w: fn(x["a"], x["b"]),
    )


ENTRIES = (
    _binary("add", "elementwise a + b", np.add),
    _binary("mul", "elementwise a * b", np.multiply),
    _unary("relu", "max(x, 0)", lambda s, x, w: np.maximum(x["x"], 0.0)),
    _unary(
        "gelu",
        "GELU, exact erf form or tanh approximation",
        lambda s, x, w: gelu(x["x"], s["approximate"]),
        extra=(Param("approximate", "none", "erf form or tanh form", choices=("none", "tanh")),),
    ),
    _unary("silu", "x * sigmoid(x), also called swish", lambda s, x, w: silu(x["x"])),
    _unary("softmax", "numerically stable softmax over the last axis", lambda s, x, w: softmax(x["x"]), reduces=True),
    _unary("log_softmax", "log of softmax over the last axis", lambda s, x, w: log_softmax(x["x"]), reduces=True),
)
