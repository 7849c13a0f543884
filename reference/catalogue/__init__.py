"""The kernel catalogue: every entry by name, kernels first, then published models."""

from __future__ import annotations

from reference.catalogue import attention, elementwise, linalg, memory, mlp, norms, transformer
from reference.errors import UnknownName
from reference.spec import Entry

KERNELS: dict[str, Entry] = {
    e.name: e
    for module in (linalg, elementwise, norms, attention, mlp, memory, transformer)
    for e in module.ENTRIES
}
MODELS: dict[str, Entry] = {e.name: e for e in transformer.MODEL_ENTRIES}
CATALOGUE: dict[str, Entry] = {**KERNELS, **MODELS}


def get_entry(name: str) -> Entry:
    """Look up a kernel or model by name.

    Raises:
        UnknownName: with the close match and every valid name.
    """
    try:
        return CATALOGUE[name]
    except KeyError:
        raise UnknownName("kernel or model", name, CATALOGUE) from None


__all__ = ["CATALOGUE", "KERNELS", "MODELS", "Entry", "get_entry"]
