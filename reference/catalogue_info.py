"""The catalogue as data for listings: what `landscape kernels` prints."""

from __future__ import annotations

from reference.catalogue import CATALOGUE

SIDES = ("reference", "torch", "jax")


def describe_catalogue() -> list[dict]:
    """One record per entry: name, kind, description, parameters with defaults, dtypes, sides, layout."""
    rows = []
    for entry in CATALOGUE.values():
        params = {}
        for p in entry.params:
            rule = {"choices": list(p.choices)} if p.choices else {"minimum": p.minimum}
            if p.multiple_of > 1:
                rule["multiple_of"] = p.multiple_of
            params[p.name] = {"default": p.default, "doc": p.doc, **rule}
        rows.append(
            {
                "name": entry.name,
                "kind": entry.kind,
                "description": entry.description,
                "params": params,
                "dtypes": list(entry.dtypes),
                "sides": list(SIDES),
                "layout": entry.layout,
            }
        )
    return rows
