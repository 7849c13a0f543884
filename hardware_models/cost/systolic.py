"""One systolic-array core for every systolic target: GEMM compute cycles in closed form.

Conventions are SCALE-Sim's (Samajdar et al., "SCALE-Sim: Systolic CNN Accelerator Simulator",
arXiv:1811.02883; scalesim 3.0.0 on PyPI), so that the result equals SCALE-Sim's compute
cycles, which tests/hardware_models/test_systolic.py checks against SCALE-Sim itself.

For C[M,N] = A[M,K] @ B[K,N] on an R x C array, each dataflow maps the GEMM onto three
extents: Sr along the array's rows, Sc along its columns, T streamed through time:

    dataflow  stationary  Sr  Sc  T   cycles per fold
    os        outputs     M   N   K   T + R + C - 2          (fill R-1, stream T, drain C-1)
    ws        weights     K   N   M   2R + C + T - 2         (also load R rows of weights)
    is        inputs      K   M   N   2R + C + T - 2

    folds          = ceil(Sr / R) * ceil(Sc / C)
    compute_cycles = folds * cycles_per_fold - 1   (SCALE-Sim counts from cycle 0)

Worked number: M = N = K = 8 on a 4 x 4 array, os: 4 folds x (8 + 4 + 4 - 2) - 1 = 55 cycles.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from reference.errors import InvalidShape, UnknownName

DATAFLOWS = ("os", "ws", "is")


@dataclass(frozen=True)
class GemmCycles:
    """Compute cycles of one GEMM on one systolic array, with the mapping that produced them."""

    m: int
    n: int
    k: int
    rows: int
    cols: int
    dataflow: str
    sr: int
    sc: int
    t: int
    row_folds: int
    col_folds: int
    cycles_per_fold: int
    compute_cycles: int

    @property
    def folds(self) -> int:
        return self.row_folds * self.col_folds

    @property
    def utilization(self) -> float:
        """MACs done / (MAC slots available in compute_cycles): the array's compute utilization."""
        return self.m * self.n * self.k / (max(self.compute_cycles, 1) * self.rows * self.cols)  # a cycle at the least

    @property
    def mapping_efficiency(self) -> float:
        """Fraction of the array covered by the mapped tile, averaged over folds (padding waste)."""
        return (self.sr * self.sc) / (self.folds * self.rows * self.cols)

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "folds": self.folds,
            "utilization": self.utilization,
            "mapping_efficiency": self.mapping_efficiency,
        }


def systolic_gemm(m: int, n: int, k: int, rows: int, cols: int, dataflow: str = "os") -> GemmCycles:
    """Compute cycles of C[m,n] = A[m,k] @ B[k,n] on a rows x cols array (formula in module doc).

    Raises:
        InvalidShape: a dimension below one.
        UnknownName: a dataflow other than os, ws, is.
    """
    for name, value in (("m", m), ("n", n), ("k", k), ("rows", rows), ("cols", cols)):
        if value < 1:
            raise InvalidShape("gemm", name, value, "must be >= 1")
    if dataflow == "os":
        sr, sc, t = m, n, k
        per_fold = t + rows + cols - 2
    elif dataflow == "ws":
        sr, sc, t = k, n, m
        per_fold = 2 * rows + cols + t - 2
    elif dataflow == "is":
        sr, sc, t = k, m, n
        per_fold = 2 * rows + cols + t - 2
    else:
        raise UnknownName("dataflow", dataflow, DATAFLOWS)
    row_folds, col_folds = -(-sr // rows), -(-sc // cols)  # integer ceil-division: exact at any size
    return GemmCycles(
        m, n, k, rows, cols, dataflow, sr, sc, t, row_folds, col_folds, per_fold, row_folds * col_folds * per_fold - 1
    )


def double_buffered_cycles(folds: int, rows: int, cols: int, t: int) -> int:
    """Cycles of `folds` weight-stationary folds in a row on one array with weight double-buffering.

    A TPU shifts the next fold's weights into a second buffer while the current fold streams its
    T rows (Jouppi et al., "In-Datacenter Performance Analysis of a Tensor Processing Unit",
    ISCA 2017: the MXU "holds one tile of weights plus one for double-buffering"). SCALE-Sim
    loads them in series, 2R + C + T - 2 a fold. Overlapped:

        cycles = R (first load) + (folds - 1) * max(R, T) (stream one, load the next)
                 + T + R + C - 2 (the last fold: stream, skew fill and drain)

    One fold is SCALE-Sim's 2R + C + T - 2 exactly. Worked number: a decode GEMV (T = 1) over
    1024 folds of a 128 x 128 array: 128 + 1023 * 128 + 1 + 254 = 131,327 cycles, against
    1024 * 383 = 392,192 without double-buffering.
    """
    return rows + (folds - 1) * max(rows, t) + t + rows + cols - 2


def parse_array(text: str) -> tuple[int, int]:
    """ "128x128" -> (128, 128).

    Raises:
        InvalidShape: not of the form RxC with positive integers.
    """
    rows, sep, cols = text.lower().partition("x")
    rows, cols = rows.strip(), cols.strip()
    if (
        not sep
        or not (rows + cols).isascii()
        or not rows.isdigit()
        or not cols.isdigit()
        or int(rows) < 1
        or int(cols) < 1
    ):
        raise InvalidShape("gemm", "array", text, "expected ROWSxCOLS, e.g. 128x128")
    return int(rows), int(cols)
