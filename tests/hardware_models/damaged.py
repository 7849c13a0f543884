"""A packaged target file copied with some of its lines left out: the damaged files the loader's
and `targets --check`'s tests hand it."""

from __future__ import annotations

from pathlib import Path

from hardware_models.target import get_target


def without_lines(target: str, folder: Path, *starts: str) -> Path:
    """`target`'s file written to `folder` without the lines that start with any of `starts`."""
    text = Path(get_target(target).path).read_text()
    path = folder / f"{target}.toml"
    path.write_text("\n".join(line for line in text.splitlines() if not line.startswith(starts)))
    return path
