"""Data movement: embedding lookup and a plain copy."""

from __future__ import annotations

from reference.spec import Entry, Param, TensorSpec, no_weights

ENTRIES = (
    Entry(
        name="embedding",
        description="gather rows of a [vocab, dim] table by token id",
        params=(Param("m", 32, "token ids"), Param("vocab", 1000, "table rows"), Param("d", 64, "row width")),
        inputs=lambda s: {"ids": TensorSpec((s["m"],), kind="index", high=s["vocab"])},
        weights=lambda s: {"weight": TensorSpec((s["vocab"], s["d"]))},
        reference=lambda s, x, w: w["weight"][x["ids"]],
        layout="weight is nnx.Embed's embedding",
        largest=lambda s: {"output": (s["m"], s["d"])},
    ),
    Entry(
        name="clone",
        description="copy of a 1-D tensor of any length (1, 63, 65, 129 ... elements)",
        params=(Param("n", 65, "elements"),),
        inputs=lambda s: {"x": TensorSpec((s["n"],))},
        weights=no_weights,
        reference=lambda s, x, w: x["x"].copy(),
    ),
)
