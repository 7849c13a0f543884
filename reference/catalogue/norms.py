"""Normalizations over the last axis."""

from __future__ import annotations

import numpy as np

from reference.spec import Entry, Param, TensorSpec, bias, gain, no_weights

LAYERNORM_EPS = 1e-5  # nn.LayerNorm's default and GPT-2's layer_norm_epsilon
RMSNORM_EPS = 1e-6  # Llama 2/3 configs use 1e-5 or 1e-6; the kernel entry picks 1e-6


def layernorm(x: np.ndarray, weight: np.ndarray, b: np.ndarray | None, eps: float) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) * weight + bias, biased variance as in PyTorch."""
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * weight
    return y if b is None else y + b


def rmsnorm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * weight."""
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * weight


_PARAMS = (Param("m", 64, "rows (tokens)"), Param("d", 64, "normalized width"))

ENTRIES = (
    Entry(
        name="layernorm",
        description="LayerNorm over the last axis with gain and bias (eps 1e-5)",
        params=_PARAMS,
        inputs=lambda s: {"x": TensorSpec((s["m"], s["d"]), std=2.0)},
        weights=lambda s: {"weight": gain((s["d"],)), "bias": bias((s["d"],))},
        reference=lambda s, x, w: layernorm(x["x"], w["weight"], w["bias"], LAYERNORM_EPS),
        layout="weight is nnx.LayerNorm's scale",
        reduction=lambda s: s["d"],
    ),
    Entry(
        name="rmsnorm",
        description="RMSNorm over the last axis with gain (eps 1e-6)",
        params=_PARAMS,
        inputs=lambda s: {"x": TensorSpec((s["m"], s["d"]), std=2.0)},
        weights=lambda s: {"weight": gain((s["d"],))},
        reference=lambda s, x, w: rmsnorm(x["x"], w["weight"], RMSNORM_EPS),
        layout="weight is nnx.RMSNorm's scale",
        reduction=lambda s: s["d"],
    ),
)

__all__ = ["ENTRIES", "layernorm", "rmsnorm", "no_weights"]
