"""The dtypes this project knows, in one table: every spelling a user may type maps to one record.

    name (numpy, catalogue)  mlir        short  bytes  also accepted
    float32                  f32         fp32   4      f32, fp32
    bfloat16                 bf16        bf16   2      bf16
    float16                  f16         fp16   2      f16, fp16, half
    float8_e4m3fn            f8E4M3FN    fp8    1      f8E4M3FN, fp8, e4m3
    int8                     i8          int8   1      i8
    float4_e2m1fn            f4E2M1FN    fp4    0.5    f4E2M1FN, fp4, e2m1, nvfp4, mxfp4

The catalogue runs and lowers in the three float types (FLOAT_DTYPES); the 8-bit types are what
`predict --precision fp8|int8` quantizes weights, KV cache and matmul inputs to, and fp4 what it
quantizes weights and matmul inputs to (the KV cache then in fp8; landscape/lowering.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reference.errors import UnknownName

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class DType:
    """One dtype under all its names.

    Attributes:
        name: the canonical name: numpy's and the catalogue's ("bfloat16").
        mlir: the MLIR element type the IR writes ("bf16", "f8E4M3FN").
        short: the short name serving options use ("bf16", "fp8").
        bytes: storage bytes per element (fp4: half a byte; its block scales are not counted).
        aliases: other spellings accepted on the command line.

    numpy and ml_dtypes are imported on first use of `.numpy`, so that the command line can
    read this table without paying for them (`landscape --help`).
    """

    name: str
    mlir: str
    short: str
    bytes: float
    aliases: tuple[str, ...]

    @property
    def numpy(self) -> np.dtype:
        """The numpy storage type; bfloat16 and fp8 come from ml_dtypes, the package jax uses, so
        such an array crosses to jax without conversion."""
        import ml_dtypes
        import numpy as np

        return np.dtype(getattr(ml_dtypes, self.name) if self.name in ML_DTYPES else self.name)

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every name this dtype answers to, the canonical one first."""
        return tuple(dict.fromkeys((self.name, self.mlir, self.short, *self.aliases)))


DTYPES: tuple[DType, ...] = (
    DType("float32", "f32", "fp32", 4, ("f32", "fp32")),
    DType("bfloat16", "bf16", "bf16", 2, ("bf16",)),
    DType("float16", "f16", "fp16", 2, ("f16", "fp16", "half")),
    DType("float8_e4m3fn", "f8E4M3FN", "fp8", 1, ("f8E4M3FN", "fp8", "e4m3")),
    DType("int8", "i8", "int8", 1, ("i8",)),
    DType("float4_e2m1fn", "f4E2M1FN", "fp4", 0.5, ("f4E2M1FN", "fp4", "e2m1", "nvfp4", "mxfp4")),
)
ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float4_e2m1fn")  # the types numpy takes from ml_dtypes
BY_SPELLING: dict[str, DType] = {s.lower(): d for d in DTYPES for s in d.spellings}

# The types the catalogue runs and lowers in (both sides implement these).
FLOAT_DTYPES = ("float32", "bfloat16", "float16")


def get_dtype(spelling: str, allowed: tuple[str, ...] | None = None) -> DType:
    """The record for any spelling of a dtype (case-insensitive): "bf16" and "bfloat16" alike.

    Args:
        spelling: a canonical name, MLIR name, short name or alias.
        allowed: canonical names to accept (default: every dtype in the table).

    Raises:
        UnknownName: not a spelling of an allowed dtype; lists the allowed canonical names.
    """
    allowed = allowed or tuple(d.name for d in DTYPES)
    found = BY_SPELLING.get(str(spelling).lower())
    if found is None or found.name not in allowed:
        raise UnknownName("dtype", spelling, allowed)
    return found


def numpy_dtype(name: str) -> np.dtype:
    """Return the numpy storage dtype for any spelling of a catalogue dtype.

    Raises:
        UnknownName: the name is not a float dtype this project runs in.
    """
    return get_dtype(name, FLOAT_DTYPES).numpy


def unit_roundoff(name: str) -> float:
    """Machine epsilon of the dtype: the gap between 1 and the next representable value.

    float32 2**-23, float16 2**-10, bfloat16 2**-7.
    """
    import ml_dtypes

    return float(ml_dtypes.finfo(numpy_dtype(name)).eps)
