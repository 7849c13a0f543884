"""Weights in and out of Flax NNX modules as `dict[str, np.ndarray]` keyed by canonical names.

Canonical names are PyTorch state-dict keys (`layers.0.attn.q_proj.weight`, [out, in]). Each
NNX layer type has a rule mapping the PyTorch leaf to its own variable and layout:

    nnx.Linear     weight [out, in]  -> kernel [in, out]  (transpose)
    nnx.Conv       weight OIHW       -> kernel HWIO
    nnx.LayerNorm  weight, bias      -> scale, bias
    nnx.RMSNorm    weight            -> scale
    nnx.Embed      weight            -> embedding
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np
from flax import nnx

from reference.errors import WeightMismatch

Perm = Callable[[np.ndarray], np.ndarray]
_same: Perm = lambda a: a
_t: Perm = lambda a: a.T

# layer type -> canonical leaf -> (NNX variable, to NNX layout, back to canonical layout)
RULES: dict[type, dict[str, tuple[str, Perm, Perm]]] = {
    nnx.Linear: {"weight": ("kernel", _t, _t), "bias": ("bias", _same, _same)},
    nnx.Conv: {
        "weight": ("kernel", lambda a: a.transpose(2, 3, 1, 0), lambda a: a.transpose(3, 2, 0, 1)),
        "bias": ("bias", _same, _same),
    },
    nnx.LayerNorm: {"weight": ("scale", _same, _same), "bias": ("bias", _same, _same)},
    nnx.RMSNorm: {"weight": ("scale", _same, _same)},
    nnx.Embed: {"weight": ("embedding", _same, _same)},
}


def _layers(module: nnx.Module):
    """(dotted path, layer) for every layer with a conversion rule, in graph order."""
    for path, node in nnx.iter_graph(module):
        if type(node) in RULES:
            yield ".".join(str(p) for p in path), node


def _key(path: str, leaf: str) -> str:
    return f"{path}.{leaf}" if path else leaf


def canonical_names(module: nnx.Module) -> list[str]:
    """The canonical weight names of a module, sorted."""
    names = []
    for path, layer in _layers(module):
        for leaf, (attr, _, _) in RULES[type(layer)].items():
            if getattr(layer, attr, None) is not None:
                names.append(_key(path, leaf))
    return sorted(names)


def load_weights(module: nnx.Module, weights: dict[str, np.ndarray]) -> nnx.Module:
    """Copy canonical weights into the module in place; the key sets must match exactly.

    Raises:
        WeightMismatch: a key the module lacks, a module weight the dict lacks, or a weight whose
            shape is not its layer's (nothing is copied then).
    """
    expected = set(canonical_names(module))
    if expected != set(weights):
        raise WeightMismatch(expected - set(weights), set(weights) - expected)
    staged, wrong = [], {}
    for path, layer in _layers(module):
        for leaf, (attr, to_nnx, to_torch) in RULES[type(layer)].items():
            var = getattr(layer, attr, None)
            if var is not None:
                key, value = _key(path, leaf), to_nnx(weights[_key(path, leaf)])
                if tuple(value.shape) != tuple(var.get_value().shape):  # a layer of another size takes no weight
                    needed = to_torch(
                        np.broadcast_to(np.int8(0), var.get_value().shape)
                    ).shape  # a view: nothing allocated
                    wrong[key] = (np.shape(weights[key]), needed)
                staged.append((var, value))
    if wrong:
        raise WeightMismatch((), (), shapes=wrong)
    for var, value in staged:
        var.set_value(jnp.asarray(value))
    return module


def export_weights(module: nnx.Module) -> dict[str, np.ndarray]:
    """The module's weights under canonical names and in PyTorch layout."""
    out = {}
    for path, layer in _layers(module):
        for leaf, (attr, _, to_torch) in RULES[type(layer)].items():
            var = getattr(layer, attr, None)
            if var is not None:
                out[_key(path, leaf)] = np.ascontiguousarray(to_torch(np.asarray(var.get_value())))
    return out
