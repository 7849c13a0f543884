"""The kernel catalogue: every entry by name, kernels first, then published models."""

from __future__ import annotations

from reference.catalogue import (
    attention,
    elementwise,
    linalg,
    memory,
    mlp,
    norms,
    transformer,
)
from reference.errors import UnknownName
from reference.spec import Entry

KERNELS: dict[str, Entry] = {
    e.name: e for module in (linalg, elementwise, norms, attention, mlp, memory, transformer) for e in module.ENTRIES
}
MODELS: dict[str, Entry] = {e.name: e for e in transformer.MODEL_ENTRIES}
CATALOGUE: dict[str, Entry] = {**KERNELS, **MODELS}
# models.toml's models; one registered later from a config.json's path (resolve_model) is named by
# that path, valid in this process only, and never offered as a choice.
PUBLISHED_MODELS: tuple[str, ...] = tuple(sorted(MODELS))


def get_entry(name: str) -> Entry:
    """Look up a kernel or model by name.

    Raises:
        UnknownName: with the close match and every valid name.
    """
    try:
        return CATALOGUE[name]
    except KeyError:
        raise UnknownName("kernel or model", name, [*KERNELS, *PUBLISHED_MODELS]) from None


def resolve_model(name_or_path: str) -> str:
    """A published model's name, unchanged; or the path of a Hugging Face config.json, or of a
    folder holding one (a downloaded model; reference/hf_config.py), whose model is added to the catalogue under that path as its
    name, so every command and function that takes a model's name takes it.

    Raises:
        BadModelFile: the file is unreadable, not JSON, or holds a config the styles do not model.
    """
    from pathlib import Path

    def is_(path: Path, kind: str) -> bool:  # a name the OS cannot stat (too long, a NUL in it) is no path
        try:
            return getattr(path, kind)()
        except (OSError, ValueError):
            return False

    if name_or_path in CATALOGUE:
        return name_or_path
    if is_(Path(name_or_path), "is_dir") and is_(Path(name_or_path) / "config.json", "is_file"):
        name_or_path = str(Path(name_or_path) / "config.json")
    elif not (name_or_path.endswith(".json") or is_(Path(name_or_path), "is_file")):
        return name_or_path
    from reference.hf_config import load_config_file
    from reference.models import load_models

    cfg = load_config_file(name_or_path)
    load_models()[cfg.name] = cfg  # the registry every model lookup reads
    MODELS[cfg.name] = CATALOGUE[cfg.name] = transformer.model_entry(cfg)
    return cfg.name


__all__ = ["CATALOGUE", "KERNELS", "MODELS", "PUBLISHED_MODELS", "Entry", "get_entry", "resolve_model"]
