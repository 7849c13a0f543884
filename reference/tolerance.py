"""The one tolerance table: how far a side may be from the float64 reference, per dtype.

Check (normwise, as in numerical linear algebra):

    max|side - ref| <= atol + rtol * max|ref|

Inputs and weights are drawn so that outputs are of order one, so the bounds read as
"so many units in the last place of an order-one value". See docs/catalogue.md, "Tolerance policy".
"""

from __future__ import annotations

import math
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

    def widened(self, factor: float) -> Tolerance:
        return Tolerance(self.dtype, self.atol * factor, self.rtol * factor, self.accumulation)

    def to_dict(self) -> dict:
        return asdict(self)


# Each row follows from an error bound, written down here and recomputed by
# tests/reference/test_tolerance.py, in multiples of the dtype's unit roundoff u (float32 2**-23,
# float16 2**-10, bfloat16 2**-7), for an output of order one:
#   float32: storage and accumulation in float32, so summation order over the longest reduction
#     dominates. Rounding errors of a length-k sum behave as random (Higham and Mary, "A new
#     approach to probabilistic rounding error analysis", SISC 2019): the error grows like
#     sqrt(k) u, not the worst case gamma_k = k u / (1 - k u). rtol = sqrt(K) u over reductions of
#     up to K = REDUCTION_DOMAIN = 4096 elements: 64 u.
#   float16, bfloat16: every stored intermediate is rounded to the dtype while the sums accumulate
#     in float32, so the error is a few roundings of order-one values: rtol = STORED_ROUNDINGS u,
#     4 u (the float32 accumulation adds sqrt(K) 2**-23 = 0.002 float16 u, left out).
# A longer reduction than K (a convolution's window x input channels, a user's k) widens every
# row by its accumulation term, (sqrt(k) - sqrt(K)) x float32's u (`tolerance_for(dtype, k)`).
# Measured worst cases (`python benchmarks/tolerance_margins.py`, benchmarks/results/
# tolerance_margins.csv: every entry under 200M weights, at its defaults and at odd sizes of 65,
# three seeds, both sides): float32 5.0 u within the domain (179.8 u for a convolution whose sums
# run over k = 274,625, bound 524 u there); float16 2.7 u, bfloat16 3.1 u (both moe at 65).
REDUCTION_DOMAIN = 4096
STORED_ROUNDINGS = 4
MEASURED_WORST_EPS = {"float32": 4.992, "float16": 2.717, "bfloat16": 3.106}  # within the domain; from that CSV
RTOL_EPS = {"float32": math.sqrt(REDUCTION_DOMAIN), "float16": STORED_ROUNDINGS, "bfloat16": STORED_ROUNDINGS}
# atol only matters where the reference is all zeros (relu of negatives): one u.
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


def tolerance_for(dtype: str, reduction: int = 0) -> Tolerance:
    """The dtype's row; for a program whose longest reduction sums more than REDUCTION_DOMAIN
    elements, widened by the float32 accumulation's (sqrt(reduction) - sqrt(REDUCTION_DOMAIN)) u."""
    try:
        row = TOLERANCES[dtype]
    except KeyError:
        raise UnknownName("dtype", dtype, TOLERANCES) from None
    if reduction <= REDUCTION_DOMAIN:
        return row
    extra = (math.sqrt(reduction) - math.sqrt(REDUCTION_DOMAIN)) * unit_roundoff("float32")
    return Tolerance(dtype, row.atol, row.rtol + extra, row.accumulation + f"; reductions of {reduction:,} elements")
