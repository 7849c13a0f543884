"""Shapes for property tests: odd sizes (1, 63, 65, 129) for every dimension, all alike
(themed_shapes) or each different (mixed_shapes), small structure.

Dimension parameters (widths, lengths, vocabularies) sweep the odd sizes that break tiling
and padding code; structural parameters (batch, heads, layers, experts, kernel) stay small so
the suite fits its budget.
"""

from __future__ import annotations

from hypothesis import strategies as st

from reference.catalogue import CATALOGUE, KERNELS
from reference.errors import InvalidShape

ODD_SIZES = (1, 63, 65, 129)

STRUCTURAL = {
    "batch": (1, 2, 3),
    "heads": (1, 3),
    "n_heads": (1, 2, 4, 6),
    "n_kv_heads": (1, 2, 3),
    "layers": (1, 2),
    "n_experts": (1, 3, 4),
    "top_k": (1, 2),
    "kernel": (1, 2, 3),
    "stride": (1, 2),
    "padding": (0, 1),
    "height": (1, 5, 9, 17),
    "width": (1, 5, 9, 17),
}

# Entries small enough to sweep: every kernel, and the tiny model.
SWEPT = [*KERNELS, "tiny"]


def _valid(param, value: int) -> int:
    """The nearest admissible value at or above `value` (head_dim must be even)."""
    value = max(value, param.minimum)
    return value + (-value) % param.multiple_of


def themed_shapes(name: str, size: int) -> dict:
    """Every dimension parameter of the entry at `size` (made admissible); the rest at defaults."""
    entry = CATALOGUE[name]
    out = {}
    for p in entry.params:
        if p.choices or p.name in STRUCTURAL:
            continue
        out[p.name] = _valid(p, size)
    if name == "conv2d":  # spatial size stays small: the float64 reference convolves in numpy
        out["height"] = out["width"] = min(size, 17)
    return out


def mixed_shapes(name: str, offset: int) -> dict:
    """Each dimension parameter at a different odd size: the i-th takes ODD_SIZES[(i + offset) % 4],
    so a kernel that mixes up two extents (m for n, seq for head_dim) sees them differ; an
    assignment the entry refuses (a tied pair of extents) falls back to themed_shapes."""
    entry = CATALOGUE[name]
    dims = [p for p in entry.params if not p.choices and p.name not in STRUCTURAL]
    out = {p.name: _valid(p, ODD_SIZES[(i + offset) % len(ODD_SIZES)]) for i, p in enumerate(dims)}
    if name == "conv2d":
        out["height"] = out["width"] = min(out.get("height", 17), 17)
    try:
        entry.resolve(out)
    except InvalidShape:
        return themed_shapes(name, ODD_SIZES[offset % len(ODD_SIZES)])
    return out


@st.composite
def shapes_for(draw, name: str) -> dict:
    """A random admissible shape assignment for the entry (choices drawn too)."""
    entry = CATALOGUE[name]
    dims = st.one_of(st.sampled_from(ODD_SIZES), st.integers(1, 130))
    out = {}
    for p in entry.params:
        if p.choices:
            out[p.name] = draw(st.sampled_from(p.choices))
        elif p.name in STRUCTURAL:
            out[p.name] = draw(st.sampled_from(STRUCTURAL[p.name]))
        else:
            out[p.name] = _valid(p, draw(dims))
    try:
        entry.resolve(out)
    except InvalidShape:
        from hypothesis import assume

        assume(False)
    return out
