"""The systolic core: hand-checkable numbers, hardware rules, and equality with SCALE-Sim itself."""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

from hardware_models.cost.systolic import DATAFLOWS, parse_array, systolic_gemm
from reference.errors import InvalidShape, UnknownName

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCALESIM_PYTHON = ROOT / ".venv-scalesim" / "bin" / "python"
ORACLE = ROOT / "tests" / "oracles" / "scalesim_gemm.py"


def test_worked_number_from_the_docstring():
    assert systolic_gemm(8, 8, 8, 4, 4, "os").compute_cycles == 55


@pytest.mark.parametrize(
    "dataflow, extents, folds, per_fold, cycles",
    [
        ("os", (9, 2, 5), 3 * 1, 5 + 4 + 3 - 2, 3 * 10 - 1),  # outputs M x N stay, K streams
        ("ws", (5, 2, 9), 2 * 1, 2 * 4 + 3 + 9 - 2, 2 * 18 - 1),  # weights K x N stay, M streams
        ("is", (5, 9, 2), 2 * 3, 2 * 4 + 3 + 2 - 2, 6 * 11 - 1),  # inputs K x M stay, N streams
    ],
)
def test_hand_worked_numbers_of_every_dataflow_without_scalesim(dataflow, extents, folds, per_fold, cycles):
    """C[9,2] = A[9,5] @ B[5,2] on a 4-row, 3-column array, by the module doc's table: each
    dataflow maps (Sr, Sc, T) differently, so a swapped extent or a wrong fill term changes a
    number here even where .venv-scalesim is absent."""
    result = systolic_gemm(9, 2, 5, 4, 3, dataflow)
    assert (result.sr, result.sc, result.t) == extents
    assert (result.folds, result.cycles_per_fold, result.compute_cycles) == (folds, per_fold, cycles)


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_cycles_never_beat_the_mac_bound(dataflow):
    """An R x C array does at most R*C multiply-adds per cycle."""
    for m, n, k in [(1, 1, 1), (63, 65, 129), (4096, 4096, 4096), (1, 8192, 8192)]:
        result = systolic_gemm(m, n, k, 128, 128, dataflow)
        assert result.compute_cycles * 128 * 128 >= m * n * k
        assert 0 < result.utilization <= 1 and 0 < result.mapping_efficiency <= 1


def test_one_more_row_than_the_array_costs_a_whole_fold():
    """Padding waste: 129 rows on a 128-row array take two row folds, half of the second idle."""
    fits, spills = systolic_gemm(128, 128, 128, 128, 128, "os"), systolic_gemm(129, 128, 128, 128, 128, "os")
    assert (fits.row_folds, spills.row_folds) == (1, 2)
    assert spills.compute_cycles == 2 * fits.compute_cycles + 1
    assert spills.mapping_efficiency == pytest.approx(129 / 256)


def test_large_square_gemm_approaches_full_utilization():
    assert systolic_gemm(16384, 16384, 16384, 128, 128, "os").utilization > 0.98


@pytest.mark.parametrize("bad", [{"m": 0}, {"rows": -1}])
def test_sizes_below_one_are_rejected(bad):
    args = {"m": 8, "n": 8, "k": 8, "rows": 4, "cols": 4, **bad}
    with pytest.raises(InvalidShape):
        systolic_gemm(**args)


def test_unknown_dataflow_lists_the_valid_ones():
    with pytest.raises(UnknownName, match="os, ws, is"):
        systolic_gemm(8, 8, 8, 4, 4, "rs")


@pytest.mark.parametrize("text", ["128", "0x4", "ax4", "4x"])
def test_malformed_array_is_rejected(text):
    with pytest.raises(InvalidShape, match="ROWSxCOLS"):
        parse_array(text)


SHAPES = [(1, 1, 1), (63, 65, 129), (65, 63, 7), (17, 3, 29), (129, 150, 1)]
ARRAYS = [(8, 4), (4, 8), (16, 16), (3, 5)]


@pytest.mark.skipif(not SCALESIM_PYTHON.exists(), reason="SCALE-Sim's venv is missing: make scalesim")
@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_closed_form_equals_scalesim_compute_cycles(dataflow):
    """SCALE-Sim 3.0.0 is the oracle: same compute cycles over odd shapes and array sizes."""
    cases = [(m, n, k, r, c) for m, n, k in SHAPES for r, c in ARRAYS]
    args = [f"{m},{n},{k},{r},{c},{dataflow}" for m, n, k, r, c in cases]
    out = subprocess.run([str(SCALESIM_PYTHON), str(ORACLE), *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    for case, (cycles, stalls) in zip(cases, measured):
        assert stalls == 0, case
        assert systolic_gemm(*case, dataflow).compute_cycles == cycles, case


@pytest.mark.parametrize("rows,cols,t", [(128, 128, 1), (128, 128, 8192), (4, 4, 8), (256, 256, 65)])
def test_one_double_buffered_fold_is_scale_sims_fold_and_more_overlap_loads(rows, cols, t):
    from hardware_models.cost.systolic import double_buffered_cycles

    one = systolic_gemm(t, cols, rows, rows, cols, "ws")
    assert one.folds == 1
    assert double_buffered_cycles(1, rows, cols, t) == one.cycles_per_fold
    assert double_buffered_cycles(1024, rows, cols, t) <= 1024 * one.cycles_per_fold


def test_double_buffered_worked_number():
    """systolic.py: a GEMV over 1024 folds of 128 x 128: 131,327 cycles against 392,192 in series."""
    from hardware_models.cost.systolic import double_buffered_cycles

    assert double_buffered_cycles(1024, 128, 128, 1) == 131_327
    assert 1024 * systolic_gemm(1, 128, 128, 128, 128, "ws").cycles_per_fold == 392_192


def test_folds_are_exact_integer_ceilings_at_any_size():
    """2^60 + 1 rows over 128: a float ceiling gives 2^53 (9007199254740992), one fold short."""
    m = 2**60 + 1
    assert systolic_gemm(m, 1, 1, 128, 128, "os").row_folds == 9_007_199_254_740_993
    assert systolic_gemm(1, 1, m, 128, 128, "ws").row_folds == 9_007_199_254_740_993


@pytest.mark.parametrize("text,shape", [("128x128", (128, 128)), ("8X4", (8, 4)), ("1x129", (1, 129))])
def test_parse_array_reads_rows_by_columns(text, shape):
    assert parse_array(text) == shape


@pytest.mark.parametrize("text", ["128", "x4", "4x", "0x4", "4x0", "4x8x2", "a x b", "\uff14x4", "-4x4", ""])
def test_parse_array_refuses_what_is_not_two_positive_ascii_integers(text):
    with pytest.raises(InvalidShape):
        parse_array(text)


@pytest.mark.parametrize("name", ["m", "n", "k", "rows", "cols"])
def test_a_dimension_below_one_is_refused_by_name(name):
    sizes = {"m": 4, "n": 4, "k": 4, "rows": 2, "cols": 2, name: 0}
    with pytest.raises(InvalidShape) as err:
        systolic_gemm(**sizes)
    assert (err.value.param, err.value.value) == (name, 0)
