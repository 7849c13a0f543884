"""The one tolerance table: how far a side may be from the float64 reference, per dtype.

Check (normwise, as in numerical linear algebra):

    max|side - ref| <= atol + rtol * max|ref|

Inputs and weights are drawn so that outputs are of order one, so the bounds read as
"so many units in the last place of an order-one value". See the README, "Tolerance policy".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from reference.dtypes import FLOAT_DTYPES, unit_roundoff
from reference.errors import UnknownName


@dataclass(frozen=True)
class Tolerance:
    dtype: str
    atol: float
    rtol: float
    accumulation: str

    def bound(self, ref_max_abs: float) -> float:
        return self.atol + self.rtol * ref_max_abs

    def widened(self, factor: float) -> "Tolerance":
        return Tolerance(self.dtype, self.atol * factor, self.rtol * factor, self.accumulation)

    def to_dict(self) -> dict:
        return asdict(self)


# Bounds are whole multiples of the dtype's unit roundoff eps (float32 2**-23, float16
# 2**-10, bfloat16 2**-7), so one rule explains all three rows.
# 16-bit rows: inputs, weights and every stored intermediate are rounded to the dtype while
# matmuls and norms accumulate in float32, so the error is a few roundings of an order-one
# value: measured at most 1.1 eps (block, decoder, gpt2-small; `landscape run`), bound 4 eps.
# bfloat16 keeps 8 significand bits to float16's 11, so the same 4 eps is 8x wider in value.
# float32 row: no storage rounding dominates; summation order over long reductions does,
# growing like sqrt(k) * eps (64 eps at k = 4096); measured at most 5 eps at the defaults.
RTOL_EPS = {"float32": 64, "float16": 4, "bfloat16": 4}
# atol only matters where the reference is all zeros (relu of negatives): one eps.
ATOL_EPS = {"float32": 1, "float16": 1, "bfloat16": 1}
ACCUMULATION = {
    "float32": "float32 throughout; matmuls and reductions accumulate in float32",
    "float16": "float16 storage; matmuls, norms and softmax accumulate in float32, results rounded to float16",
    "bfloat16": "bfloat16 storage; matmuls, norms and softmax accumulate in float32, results rounded to bfloat16",
}

TOLERANCES: dict[str, Tolerance] = {
    d: Tolerance(d, ATOL_EPS[d] * unit_roundoff(d), RTOL_EPS[d] * unit_roundoff(d), ACCUMULATION[d])
    for d in FLOAT_DTYPES
}

# A side and the other side may each sit on opposite sides of the reference: by the
# triangle inequality they are within twice one side's bound of each other.
CROSS_SIDE_FACTOR = 2.0


def tolerance_for(dtype: str) -> Tolerance:
    try:
        return TOLERANCES[dtype]
    except KeyError:
        raise UnknownName("dtype", dtype, TOLERANCES) from None
