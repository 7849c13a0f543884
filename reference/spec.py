"""What a catalogue entry is: named shape parameters, tensor specs and a float64 reference.

An `Entry` is pure data plus pure functions. The PyTorch and JAX implementations live in
`pytorch_side` and `jax_side` under the same entry name; `reference` never imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Union

import numpy as np

from reference.dtypes import FLOAT_DTYPES
from reference.errors import InvalidShape, MalformedInput, UnknownName, UnsupportedDtype

Value = Union[int, str]
Shapes = Mapping[str, Value]
Arrays = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Param:
    """A named shape parameter: an integer with a minimum (and a multiple), or a string choice."""

    name: str
    default: Value
    doc: str
    minimum: int = 1
    multiple_of: int = 1
    choices: tuple[str, ...] = ()

    def parse(self, entry: str, raw: Value) -> Value:
        """Convert a command-line string (or a value) to this parameter's type and check it.

        Raises:
            InvalidShape: not an integer, below the minimum, or not a multiple.
            UnknownName: a choice parameter given a value outside its choices.
        """
        if self.choices:
            if str(raw) not in self.choices:
                raise UnknownName(f"value for {entry} parameter {self.name}", str(raw), self.choices)
            return str(raw)
        try:
            value = int(raw)
        except (TypeError, ValueError):
            raise InvalidShape(entry, self.name, raw, "expected an integer") from None
        if value < self.minimum:
            raise InvalidShape(entry, self.name, value, f"must be >= {self.minimum}")
        if value % self.multiple_of:
            raise InvalidShape(entry, self.name, value, f"must be a multiple of {self.multiple_of}")
        return value

    def describe(self) -> str:
        if self.choices:
            return f"{self.name}={self.default} ({'|'.join(self.choices)}): {self.doc}"
        rule = f">= {self.minimum}" + (f", multiple of {self.multiple_of}" if self.multiple_of > 1 else "")
        return f"{self.name}={self.default} ({rule}): {self.doc}"


@dataclass(frozen=True)
class TensorSpec:
    """How to generate one input or weight.

    kind:
      normal: N(0, std^2)
      scale:  1 + N(0, std^2), for norm gains
      index:  integers uniform in [0, high), for token ids
    """

    shape: tuple[int, ...]
    std: float = 1.0
    kind: str = "normal"
    high: int = 0


def weight(shape: tuple[int, ...], fan_in: int) -> TensorSpec:
    """A projection weight drawn N(0, 1/fan_in), so outputs stay of order one at any width."""
    return TensorSpec(shape, std=1.0 / np.sqrt(fan_in))


def bias(shape: tuple[int, ...]) -> TensorSpec:
    return TensorSpec(shape, std=0.1)


def gain(shape: tuple[int, ...]) -> TensorSpec:
    return TensorSpec(shape, std=0.1, kind="scale")


Reference = Callable[[Shapes, Arrays, Arrays], Union[np.ndarray, tuple]]
Condition = Callable[[Shapes, dict, dict, np.random.Generator, str], None]


@dataclass(frozen=True)
class Entry:
    """One catalogue entry.

    Attributes:
        name: the catalogue name, shared by both sides.
        description: one line.
        params: shape parameters with defaults and constraints.
        inputs: shapes -> runtime input specs (activations, caches, token ids).
        weights: shapes -> weight specs keyed by canonical (PyTorch state-dict) names.
        reference: float64 numpy reference, (shapes, inputs, weights) -> array or tuple.
        dtypes: dtypes both sides support.
        check: cross-parameter constraints; raises InvalidShape.
        layout: how the sides' preferred layouts map to the reference layout.
        condition: optional step that redraws inputs which would put a discrete decision
            (top-k routing) on a tie, so that rounding cannot flip it between sides.
        kind: "kernel" or "model".
    """

    name: str
    description: str
    params: tuple[Param, ...]
    inputs: Callable[[Shapes], dict[str, TensorSpec]]
    weights: Callable[[Shapes], dict[str, TensorSpec]]
    reference: Reference
    dtypes: tuple[str, ...] = FLOAT_DTYPES
    check: Callable[[Shapes], None] | None = None
    layout: str = ""
    condition: Condition | None = None
    kind: str = "kernel"

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise UnknownName(f"parameter of {self.name}", name, [p.name for p in self.params])

    def resolve(self, overrides: Mapping[str, Value] | None = None) -> dict[str, Value]:
        """Defaults updated by overrides, each parsed and checked.

        Raises:
            UnknownName: an override names no parameter of this entry.
            InvalidShape: a value breaks its constraint or a cross-parameter rule.
        """
        shapes: dict[str, Value] = {p.name: p.default for p in self.params}
        for key, raw in (overrides or {}).items():
            shapes[key] = self.param(key).parse(self.name, raw)
        if self.check is not None:
            self.check(shapes)
        return shapes

    def check_dtype(self, dtype: str) -> str:
        if dtype not in self.dtypes:
            raise UnsupportedDtype(self.name, dtype, self.dtypes)
        return dtype

    def n_weights(self, shapes: Shapes) -> int:
        """Number of weight elements at these shapes."""
        return sum(int(np.prod(s.shape)) for s in self.weights(shapes).values())


def no_weights(_: Shapes) -> dict[str, TensorSpec]:
    return {}


def parse_assignments(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Parse command-line `P=V` items into a dict.

    Raises:
        MalformedInput: an item lacks '=' or a name.
    """
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise MalformedInput(f"--shape expects PARAM=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def require_divisible(entry: str, shapes: Shapes, num: str, den: str) -> None:
    if int(shapes[num]) % int(shapes[den]):
        raise InvalidShape(
            entry, num, shapes[num], f"must be divisible by {den}={shapes[den]} (grouped-query attention)"
        )
