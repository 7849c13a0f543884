"""Derived (D) quantities of a target file: their arithmetic, checked as a file loads and
recomputed after a --set (hardware_models/target.py reads these).

A derivation is numbers, section.key names and + - * / ("chip.sm_count * chip.clock_hz * 4096"),
evaluated by walking its syntax tree (nothing else is run); the derivations of a file form no
circle, and each gives the value the file states, within DERIVATION_TOLERANCE.
"""

from __future__ import annotations

import ast
import operator
from pathlib import Path
from typing import TYPE_CHECKING

from reference.errors import BadTargetFile

if TYPE_CHECKING:
    from hardware_models.target import Target

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def evaluate(expression: str, target: Target) -> float:
    """Evaluate a derivation: numbers, section.key names, + - * / and parentheses only."""

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.Attribute) and _dotted_name(node):
            return target[_dotted_name(node)]
        raise BadTargetFile(target.path, expression, "derivations use numbers, section.key and + - * / only")

    return walk(ast.parse(expression, mode="eval"))


def derivation_inputs(expression: str) -> set[str]:
    """The section.key names a derivation reads ("chip.sm_count * chip.clock_hz * 4096")."""
    names = {
        _dotted_name(node) for node in ast.walk(ast.parse(expression, mode="eval")) if isinstance(node, ast.Attribute)
    }
    names.discard(None)
    return {n for n in names if not any(m.startswith(n + ".") for m in names)}  # not "levels.lx" of "levels.lx.bytes"


def _dotted_name(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted_name(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def in_order(derived: dict[str, str]) -> tuple[list[str], list[str]]:
    """(the derived keys, each after the derived keys it reads; those left in a circle)."""
    todo = {key: derivation_inputs(expression) & set(derived) for key, expression in derived.items()}
    order: list[str] = []
    while todo:
        ready = [key for key, needs in todo.items() if not needs & set(todo)]
        if not ready:
            break
        for key in ready:
            del todo[key]
        order += ready
    return order, sorted(todo)


class _Values:
    """What `evaluate` reads of a target, over values being recomputed."""

    def __init__(self, path: str, values: dict[str, float]):
        self.path, self.values = path, values

    def __getitem__(self, key: str) -> float:
        return self.values[key]


def rederive(target: Target, changed: set[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Each D quantity that reads a changed key, however indirectly, recomputed from its
    derivation, in order: key -> (value, the changed keys it follows from). `--set
    chip.sm_count=66` halves an H100's peaks (chip.sm_count * chip.clock_hz * 4096), `--set
    chip.clock_hz=1.2e9` its L2 bandwidth too. A derived key set on the command line is the
    user's, and kept (not recomputed). The caller checks each value's domain."""
    values = {key: q.value for key, q in target.quantities.items()}
    derived = {key: q.derivation for key, q in target.quantities.items() if q.derivation and key not in changed}
    stale, out = set(changed), {}
    for key in in_order(derived)[0]:  # a file's derivations form no circle (check_derived)
        needs = derivation_inputs(derived[key])
        if needs & stale:
            values[key] = float(evaluate(derived[key], _Values(target.path, values)))
            out[key] = (values[key], tuple(sorted(needs & stale)))
            stale.add(key)
    return out


DERIVATION_TOLERANCE = 5e-3  # a choice: a stated D value within 0.5% of its derivation (published round figures)


def check_derivations(target: Target, rel_tol: float = DERIVATION_TOLERANCE) -> dict[str, tuple[float, float]]:
    """Each D quantity against its recomputed derivation: key -> (stated, recomputed) where they differ."""
    off = {}
    for key, q in target.quantities.items():
        if q.derivation:
            recomputed = evaluate(q.derivation, target)
            if abs(recomputed - q.value) > rel_tol * abs(q.value):
                off[key] = (q.value, recomputed)
    return off


def check_derived(path: Path, target: Target) -> None:
    """Every derivation reads keys of the file, in + - * / alone, without a cycle, and gives the
    value the file states (so a command never runs on a number its own arithmetic contradicts).

    Raises:
        BadTargetFile: naming the derived key.
    """
    derived = {key: q.derivation for key, q in target.quantities.items() if q.derivation}
    for key, expression in derived.items():
        try:
            needs = derivation_inputs(expression)
        except SyntaxError:
            raise BadTargetFile(path, key, f"its derivation {expression!r} is not arithmetic") from None
        unknown = sorted(n for n in needs if n not in target.quantities)
        if unknown:
            raise BadTargetFile(path, key, f"its derivation reads {unknown[0]!r}, which the file does not have")
    circle = in_order(derived)[1]
    if circle:
        raise BadTargetFile(path, circle[0], f"its derivation is circular: {', '.join(circle)}")
    for key, expression in derived.items():
        try:
            value = evaluate(expression, target)
        except BadTargetFile:
            raise BadTargetFile(
                path, key, f"its derivation {expression!r} uses more than numbers, section.key and + - * /"
            ) from None
        except ZeroDivisionError:
            raise BadTargetFile(path, key, f"its derivation {expression!r} divides by zero") from None
        stated = target.quantities[key].value
        if abs(value - stated) > DERIVATION_TOLERANCE * abs(stated):
            raise BadTargetFile(path, key, f"stated {stated:g}, but its derivation {expression!r} gives {value:g}")
