"""Tile arithmetic: the one place padding is computed (ceiling division), read by every pass."""

from __future__ import annotations


def ceil_div(a: int, b: int) -> int:
    """Tiles of size b that cover a: the one place padding is computed."""
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    return ceil_div(a, b) * b
