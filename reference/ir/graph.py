"""The IR: immutable data for a module of functions, each a list of ops in topological order.

An op names its operands and results by value ids (strings such as "%3" or "%arg0"), carries
its result types, typed attributes for the ops that passes and counters read (dot and
convolution dimension numbers, reduce dimensions...), nested regions (reduce bodies, while
condition and body), the callee of a call, the static trip count of a while when it can be
read, and its provenance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from reference.errors import UnsupportedDtype

# Bytes per element of each MLIR element type the IR holds (the 8-bit floats in every variant
# StableHLO names; complex as two of its parts). A type that holds no data (a token) is 0 bytes;
# f4E2M1FN is half a byte (two a byte, packed, as NVFP4 and MXFP4 store them; their block scales,
# one fp8 or e8m0 per 16 or 32 values, are not counted); any other type, other sub-byte ones
# included (i4), is refused on import (`element_bytes`), so no tensor is ever counted as 0 bytes
# or as a guessed 4. A tensor's bytes round up to whole bytes.
ELEMENT_BYTES = {
    "f64": 8,
    "f32": 4,
    "bf16": 2,
    "f16": 2,
    "f8E4M3FN": 1,
    "f8E5M2": 1,
    "f8E4M3": 1,
    "f8E3M4": 1,
    "f8E4M3FNUZ": 1,
    "f8E5M2FNUZ": 1,
    "f8E4M3B11FNUZ": 1,
    "f8E8M0FNU": 1,
    "f4E2M1FN": 0.5,
    "i64": 8,
    "ui64": 8,
    "i32": 4,
    "ui32": 4,
    "i16": 2,
    "ui16": 2,
    "i8": 1,
    "ui8": 1,
    "i1": 1,
    "complex<f32>": 8,
    "complex<f64>": 16,
}
# An ordering token holds no data; a tuple's bytes are its members', counted where they are made.
NO_DATA_PREFIXES = ("!stablehlo.token", "!mhlo.token", "tuple<")


def element_bytes(dtype: str) -> float:
    """Bytes per element of an MLIR element type; 0 for a token.

    Raises:
        UnsupportedDtype: any other type, naming the ones the IR holds.
    """
    width = ELEMENT_BYTES.get(dtype)
    if width is not None:
        return width
    if dtype.startswith(NO_DATA_PREFIXES):
        return 0
    raise UnsupportedDtype("the IR", dtype, ELEMENT_BYTES)


@dataclass(frozen=True, slots=True)
class TensorType:
    """A ranked tensor: static shape and element type name (MLIR spelling: f32, bf16, i64...)."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return math.ceil(self.elements * element_bytes(self.dtype))

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an op came from: the MLIR location text, the framework scope and the source line.

    scope: JAX's name stack (`jit(f)/layers.0.mlp/dot_general`) or torch-mlir's innermost
    callsite (`linear.py:134`); source: the outermost user file:line, if any.
    """

    scope: str = ""
    source: str = ""
    loc: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class DotDims:
    lhs_batch: tuple[int, ...]
    rhs_batch: tuple[int, ...]
    lhs_contracting: tuple[int, ...]
    rhs_contracting: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConvDims:
    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]
    feature_group_count: int = 1
    batch_group_count: int = 1


@dataclass(frozen=True, slots=True)
class GatherDims:
    """stablehlo.gather's dimension numbers (the StableHLO spec's names)."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    index_vector_dim: int
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ScatterDims:
    """stablehlo.scatter's dimension numbers (the StableHLO spec's names)."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Block:
    """A region's single block: its arguments and ops."""

    args: tuple[tuple[str, TensorType], ...]
    ops: tuple[Op, ...]


@dataclass(frozen=True, slots=True)
class Op:
    name: str  # "stablehlo.dot_general", "func.call", ...
    results: tuple[str, ...]
    result_types: tuple[TensorType, ...]
    operands: tuple[str, ...]
    operand_types: tuple[TensorType, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    regions: tuple[Block, ...] = ()
    callee: str | None = None
    trip_count: int | None = None
    origin: Origin = Origin()
    known: bool = True  # False: an op the importer has no table entry for (kept opaque)
    # A dense constant's elements (a read-only numpy array of its element type), for the
    # interpreter (reference.ir.interpret); None for splats and other ops. Not compared.
    data: Any = field(default=None, compare=False, repr=False)

    def attr(self, key: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    @property
    def short_name(self) -> str:
        return self.name.split(".", 1)[-1]

    @property
    def splat(self) -> float | None:
        """The scalar of a splat constant (every element equal), else None."""
        value = self.attr("value") if self.short_name == "constant" else None
        return value[1] if isinstance(value, tuple) and value and value[0] == "splat" else None


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    args: tuple[tuple[str, TensorType], ...]
    results: tuple[TensorType, ...]
    ops: tuple[Op, ...]
    arg_names: tuple[str, ...] = ()  # source names of the arguments (parameter paths), if known


@dataclass(frozen=True, slots=True)
class Module:
    """A module of functions; `entry` is the one that runs (main)."""

    functions: tuple[Function, ...]
    entry: str = "main"

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def main(self) -> Function:
        return self.function(self.entry)
