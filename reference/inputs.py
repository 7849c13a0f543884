"""Seeded inputs and weights, rounded to the run's dtype, identical for every side."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reference.dtypes import numpy_dtype
from reference.errors import MalformedInput
from reference.spec import Entry, TensorSpec, Value

# The seeds `landscape run --seed` takes: numpy's generators accept any non-negative integer; we
# keep to 32 bits, the range every framework's seed takes.
SEED_RANGE = (0, 2**32 - 1)


def check_seed(seed: object) -> int:
    """The seed as an int in SEED_RANGE.

    Raises:
        MalformedInput: not an integer, or outside SEED_RANGE.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise MalformedInput(
            f"seed {seed!r} is invalid; a seed is an integer in [{SEED_RANGE[0]}, {SEED_RANGE[1]}] (2**32-1)"
        )
    return int(seed)


@dataclass(frozen=True)
class Case:
    """One concrete problem: the entry, its resolved shapes, the dtype and the arrays.

    `inputs` and `weights` hold the dtype's storage type (bfloat16 via ml_dtypes), token ids
    int32. The reference reads them as float64, so every side and the reference start from
    exactly the same values.
    """

    entry: Entry
    shapes: Mapping[str, Value]
    dtype: str
    seed: int
    inputs: Mapping[str, np.ndarray]
    weights: Mapping[str, np.ndarray]

    def float64_inputs(self) -> dict[str, np.ndarray]:
        """The inputs as the reference reads them: floats widened exactly to float64, ids unchanged."""
        return _widen(self.inputs)

    def float64_weights(self) -> dict[str, np.ndarray]:
        return _widen(self.weights)

    def reference(self) -> tuple[np.ndarray, ...]:
        """The float64 reference outputs, always as a tuple."""
        out = self.entry.reference(self.shapes, self.float64_inputs(), self.float64_weights())
        return tuple(out) if isinstance(out, tuple) else (out,)

    def term_scale(self) -> float:
        """The entry's `terms` on the float64 inputs (0.0 where it has none)."""
        if self.entry.terms is None:
            return 0.0
        return float(self.entry.terms(self.shapes, self.float64_inputs(), self.float64_weights()))


def _widen(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: (v if v.dtype.kind == "i" else v.astype(np.float64)) for k, v in arrays.items()}


def _rng(seed: int, name: str) -> np.random.Generator:
    # One stream per tensor name, so adding a tensor never changes the others' values.
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def draw(spec: TensorSpec, rng: np.random.Generator, dtype: str) -> np.ndarray:
    """Draw one tensor per its spec and round it to the dtype."""
    if spec.kind == "index":
        return rng.integers(0, spec.high, size=spec.shape, dtype=np.int32)
    values = rng.standard_normal(spec.shape) * spec.std
    if spec.kind == "scale":
        values = 1.0 + values
    return values.astype(numpy_dtype(dtype))


def make_case(entry: Entry, shapes: Mapping[str, Value], dtype: str, seed: int = 0) -> Case:
    """Generate the inputs and weights of `entry` at resolved `shapes` in `dtype`.

    Args:
        entry: a catalogue entry.
        shapes: the output of `entry.resolve(...)`.
        dtype: "float32", "bfloat16" or "float16".
        seed: the generator seed; the same seed gives the same arrays.
    """
    entry.check_dtype(dtype)
    seed = check_seed(seed)
    inputs = {k: draw(s, _rng(seed, "input:" + k), dtype) for k, s in entry.inputs(shapes).items()}
    weights = {k: draw(s, _rng(seed, "weight:" + k), dtype) for k, s in entry.weights(shapes).items()}
    if entry.condition is not None:
        entry.condition(shapes, inputs, weights, _rng(seed, "condition"), dtype)
    return Case(entry, dict(shapes), dtype, seed, inputs, weights)
