"""What a catalogue entry is: named shape parameters, tensor specs and a float64 reference.

An `Entry` is pure data plus pure functions. The PyTorch and JAX implementations live in
`pytorch_side` and `jax_side` under the same entry name; `reference` never imports them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from reference.dtypes import FLOAT_DTYPES
from reference.errors import InvalidShape, MalformedInput, UnknownName, UnsupportedDtype

Value = int | str
Shapes = Mapping[str, Value]
Arrays = Mapping[str, np.ndarray]

# XLA and PyTorch compute a tensor's element and byte counts in int64 ("overflow in static extent
# product", "Storage size calculation overflowed"): every extent, and every tensor's element count
# times 8 bytes (the widest element, float64), must stay within it. Checked before lowering.
INT64_MAX = 2**63 - 1
WIDEST_ELEMENT_BYTES = 8
_DECIMAL = re.compile(r"[+-]?[0-9]+")


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
        if isinstance(raw, str):
            text = raw.strip()
            if not _DECIMAL.fullmatch(text):  # int() would also take "1_6", " 16 " and "١٦"
                raise InvalidShape(entry, self.name, repr(raw), "expected an integer in plain decimal digits")
            if len(text.lstrip("+-")) > 19:  # beyond int64, and before int()'s 4300-digit limit
                raise InvalidShape(entry, self.name, text[:24] + "...", f"must be <= {INT64_MAX} (int64)")
            value = int(text)
        elif isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
            value = int(raw)
        else:
            raise InvalidShape(entry, self.name, repr(raw), "expected an integer")
        if value > INT64_MAX:
            raise InvalidShape(entry, self.name, value, f"must be <= {INT64_MAX} (int64)")
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


Reference = Callable[[Shapes, Arrays, Arrays], np.ndarray | tuple]
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
        largest: shapes -> the shapes of the outputs and of the largest intermediates the programs
            hold beyond their inputs and weights (attention scores, an im2col copy, logits); None
            when every tensor is the size of an input (elementwise ops, norms). Read by the int64
            extent check and by the memory estimate of a numerical run.
        reduction: shapes -> the longest sum the programs compute (a dot product's k, a
            convolution's window x input channels, a norm's or softmax's row), which widens the
            tolerance past its domain (reference/tolerance.py); None: within the domain.
        terms: (shapes, inputs, weights) -> the largest root-sum-square of the terms of an output's
            last sum (a projection's h_j * W_ij over j), float64. Rounding errors of the stored
            terms scale with the terms, not with their sum, so where the terms cancel the bound's
            scale is this, not max|ref| (reference/agreement.py); None: the sum does not cancel.
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
    largest: Callable[[Shapes], dict[str, tuple[int, ...]]] | None = None
    reduction: Callable[[Shapes], int] | None = None
    terms: Callable[[Shapes, dict, dict], float] | None = None

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
        self.check_extents(shapes)
        return shapes

    def tensor_shapes(self, shapes: Shapes) -> dict[str, tuple[int, ...]]:
        """Every tensor's shape at these shapes: inputs, weights, then `largest` (outputs and the
        largest intermediates), keyed by name."""
        out = {k: tuple(s.shape) for k, s in {**self.inputs(shapes), **self.weights(shapes)}.items()}
        out.update(self.largest(shapes) if self.largest else {})
        return out

    def check_extents(self, shapes: Shapes) -> None:
        """Every tensor's element count times 8 bytes fits in int64 (see INT64_MAX).

        Raises:
            InvalidShape: naming the tensor, its shape and the limit.
        """
        for name, shape in self.tensor_shapes(shapes).items():
            elements = math.prod(shape)
            if elements * WIDEST_ELEMENT_BYTES > INT64_MAX:
                raise InvalidShape(
                    self.name,
                    f"tensor {name}",
                    tuple(shape),
                    f"its {elements:.3g} elements at up to {WIDEST_ELEMENT_BYTES} bytes each exceed int64 "
                    f"(2**63-1 = {INT64_MAX}), the limit of XLA's and PyTorch's size arithmetic; choose smaller shapes",
                )

    def check_dtype(self, dtype: str) -> str:
        if dtype not in self.dtypes:
            raise UnsupportedDtype(self.name, dtype, self.dtypes)
        return dtype

    def n_weights(self, shapes: Shapes) -> int:
        """Number of weight elements at these shapes."""
        return sum(int(np.prod(s.shape)) for s in self.weights(shapes).values())


def no_weights(_: Shapes) -> dict[str, TensorSpec]:
    return {}


def parse_assignments(items: list[str] | tuple[str, ...], option: str = "--shape") -> dict[str, str]:
    """Parse command-line `P=V` items into a dict.

    Raises:
        MalformedInput: an item lacks '=', a name or a value, or names a parameter twice.
    """
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise MalformedInput(f"{option} expects PARAM=VALUE, got {item!r}")
        key = key.strip()
        if key in out:
            raise MalformedInput(
                f"{option} gives {key} twice ({key}={out[key]} and {key}={value.strip()}); give each parameter once"
            )
        out[key] = value.strip()
    return out


def require_divisible(entry: str, shapes: Shapes, num: str, den: str) -> None:
    if int(shapes[num]) % int(shapes[den]):
        raise InvalidShape(
            entry, num, shapes[num], f"must be divisible by {den}={shapes[den]} (grouped-query attention)"
        )
