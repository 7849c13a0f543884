"""The dtypes every side understands, by one canonical name, with their numpy storage types."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from reference.errors import UnknownName

# numpy storage type for each canonical dtype name; bfloat16 comes from ml_dtypes,
# the same package jax uses, so a bfloat16 array crosses to jax without conversion.
NUMPY_DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float16": np.dtype(np.float16),
}

FLOAT_DTYPES = tuple(NUMPY_DTYPES)


def numpy_dtype(name: str) -> np.dtype:
    """Return the numpy storage dtype for a canonical name.

    Raises:
        UnknownName: the name is not a dtype this project knows.
    """
    try:
        return NUMPY_DTYPES[name]
    except KeyError:
        raise UnknownName("dtype", name, FLOAT_DTYPES) from None


def unit_roundoff(name: str) -> float:
    """Machine epsilon of the dtype: the gap between 1 and the next representable value.

    float32 2**-23, float16 2**-10, bfloat16 2**-7.
    """
    return float(ml_dtypes.finfo(numpy_dtype(name)).eps)
