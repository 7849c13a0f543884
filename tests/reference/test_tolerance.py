"""The tolerance table: each row derived from a stated error bound and recomputed, checked against
the measured worst cases, widened past its reduction domain, judged by a second opinion, and the
check can fail."""

import math

import numpy as np
import pytest

from reference.agreement import compare_outputs, error_stats
from reference.dtypes import unit_roundoff
from reference.tolerance import TOLERANCES, tolerance_for


def test_unit_roundoffs_are_the_ieee_and_bfloat16_values():
    assert unit_roundoff("float32") == 2**-23
    assert unit_roundoff("float16") == 2**-10
    assert unit_roundoff("bfloat16") == 2**-7


def test_bfloat16_bounds_are_eight_times_float16_bounds():
    """Same multiple of eps; bfloat16 has 8 significand bits to float16's 11."""
    assert tolerance_for("bfloat16").rtol == 8 * tolerance_for("float16").rtol


def test_every_row_states_its_accumulation():
    assert all(t.accumulation for t in TOLERANCES.values())


def test_an_error_past_the_bound_fails():
    ref = (np.ones((4, 4)),)
    tol = tolerance_for("float16")
    off = (ref[0] + 2 * tol.bound(1.0),)
    assert not error_stats(off, ref, tol).ok
    assert error_stats((ref[0] + 0.5 * tol.bound(1.0),), ref, tol).ok


def test_a_sum_that_cancels_is_bounded_by_its_terms_and_only_then():
    """The scale is max(max|ref|, term_scale): a larger term scale widens the bound, a smaller one
    leaves it as it was."""
    ref = (np.full(4, 0.1),)
    tol = tolerance_for("float16")
    off = (ref[0] + 3 * tol.bound(0.1),)
    assert not error_stats(off, ref, tol).ok
    assert error_stats(off, ref, tol, term_scale=10.0).ok
    assert error_stats(off, ref, tol, term_scale=0.01).bound == error_stats(off, ref, tol).bound


def test_term_scale_of_a_projection_is_the_root_sum_square_by_hand():
    """h = [3, 4], w = [[1, -1]]: terms 3 and -4, sum -1, root-sum-square 5."""
    from reference.catalogue.mlp import projection_terms

    assert math.sqrt(projection_terms(np.array([[3.0, 4.0]]), np.array([[1.0, -1.0]]))[0, 0]) == 5.0


@pytest.mark.parametrize("name", ["mlp", "moe"])
def test_at_the_defaults_the_terms_leave_the_bound_as_it_was(name):
    """Random signs do not cancel: the largest output exceeds the largest root-sum-square of its
    terms, so the bound is the normwise one."""
    from reference.agreement import make_case
    from reference.catalogue import CATALOGUE

    entry = CATALOGUE[name]
    case = make_case(entry, entry.resolve({}), "float32", 0)
    assert case.term_scale() < float(np.abs(case.reference()[0]).max())


def test_cross_side_check_is_reported_and_can_fail():
    ref = (np.ones(8),)
    bound = tolerance_for("bfloat16").bound(1.0)
    result = compare_outputs("x", "bfloat16", ref, {"torch": (ref[0] + 0.9 * bound,), "jax": (ref[0] - 0.9 * bound,)})
    assert result.errors["torch_vs_ref"].ok and result.errors["jax_vs_ref"].ok
    assert result.errors["torch_vs_jax"].ok  # 1.8 bounds apart, inside twice the bound
    result = compare_outputs("x", "bfloat16", ref, {"torch": (ref[0] + 3 * bound,), "jax": (ref[0],)})
    assert not result.ok and not result.errors["torch_vs_jax"].ok


def test_nan_output_fails():
    ref = (np.ones(3),)
    assert not error_stats((np.array([1.0, np.nan, 1.0]),), ref, tolerance_for("float32")).ok


def test_shape_mismatch_is_an_error():
    from reference.errors import InvalidShape

    with pytest.raises(InvalidShape):
        error_stats((np.ones(3),), (np.ones(4),), tolerance_for("float32"))


def test_every_row_follows_from_its_stated_bound():
    """float32: sqrt(K) u over reductions of up to K = 4096 (random rounding errors, Higham and
    Mary 2019); 16-bit: 4 roundings of order-one values; atol one u. Recomputed here, so loosening
    (or tightening) any row by 2x fails."""
    import math

    from reference.tolerance import REDUCTION_DOMAIN, STORED_ROUNDINGS

    assert (REDUCTION_DOMAIN, STORED_ROUNDINGS) == (4096, 4)
    expected = {"float32": math.sqrt(4096) * 2**-23, "float16": 4 * 2**-10, "bfloat16": 4 * 2**-7}
    for dtype, rtol in expected.items():
        assert tolerance_for(dtype).rtol == rtol and tolerance_for(dtype).atol == unit_roundoff(dtype), dtype


def test_a_reduction_past_the_domain_widens_the_bound_by_its_float32_accumulation():
    import math

    k = 274_625  # a 65 x 65 convolution window over 65 input channels
    assert tolerance_for("float32", k).rtol == math.sqrt(k) * 2**-23
    assert tolerance_for("bfloat16", k).rtol == 4 * 2**-7 + (math.sqrt(k) - 64) * 2**-23
    assert tolerance_for("float32", 4096) == tolerance_for("float32")


def _margins():
    import csv
    import pathlib

    from reference.catalogue import CATALOGUE

    path = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "tolerance_margins.csv"
    rows = []
    with path.open() as f:
        table = list(csv.DictReader(f))
    for r in table:
        entry = CATALOGUE[r["entry"]]
        shapes = (
            {} if r["shapes"] == "defaults" else {k: int(v) for k, v in (p.split("=") for p in r["shapes"].split())}
        )
        resolved = entry.resolve(shapes)
        rows.append((r["dtype"], entry.reduction(resolved) if entry.reduction else 0, float(r["max_rel_eps"])))
    return rows


def test_the_measured_worst_cases_are_the_ones_the_table_states_and_within_every_bound():
    """benchmarks/tolerance_margins.py's run (every entry under 200M weights, defaults and odd
    sizes, three seeds, both sides): inside the domain the worst error per dtype is the figure
    tolerance.py states, and every run, inside or past the domain, is within its bound."""
    from reference.tolerance import MEASURED_WORST_EPS, REDUCTION_DOMAIN, RTOL_EPS

    rows = _margins()
    for dtype in TOLERANCES:
        inside = [e for d, k, e in rows if d == dtype and k <= REDUCTION_DOMAIN]
        assert max(inside) == pytest.approx(MEASURED_WORST_EPS[dtype], abs=1e-3), dtype
        assert MEASURED_WORST_EPS[dtype] < RTOL_EPS[dtype] <= 16 * MEASURED_WORST_EPS[dtype], dtype
    for dtype, k, eps in rows:
        assert eps * unit_roundoff(dtype) <= tolerance_for(dtype, k).rtol, (dtype, k, eps)


@pytest.mark.torch
@pytest.mark.jax
def test_a_float32_convolution_summing_over_274625_elements_passes_at_its_widened_bound():
    """It measured 180 u (sqrt(k) = 524), past the table's 64 u: `landscape run` failed it before."""
    from landscape.cli import default_runners
    from reference.agreement import check_agreement

    shapes = {"batch": 1, "c_in": 65, "c_out": 2, "height": 65, "width": 65, "kernel": 65}
    result = check_agreement("conv2d", shapes, "float32", 0, runners=default_runners())
    assert result.ok and result.tolerance.rtol > tolerance_for("float32").rtol


@pytest.mark.torch
@pytest.mark.jax
@pytest.mark.parametrize("dtype, rtol", [("float32", 1.3e-6), ("float16", 1e-3), ("bfloat16", 1.6e-2)])
@pytest.mark.parametrize(
    "name, shapes",
    [
        ("block", {}),
        ("matmul", {"m": 65, "n": 63, "k": 129}),
        ("softmax", {}),
        ("layernorm", {"d": 65}),
        ("mlp", {"kind": "gelu"}),
    ],
)
def test_a_second_opinion_relative_rmse_within_torch_testings_default_rtol(name, shapes, dtype, rtol):
    """Judged without our table: the relative RMSE against float64, sqrt(mean (side - ref)^2) /
    sqrt(mean ref^2), within torch.testing.assert_close's default rtol for the dtype."""
    from landscape.cli import default_runners
    from reference.agreement import check_agreement

    result = check_agreement(name, shapes, dtype, 0, runners=default_runners())
    for side in ("torch", "jax"):
        for out, ref in zip(result.outputs[side], result.reference):
            out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
            rmse = np.sqrt(np.mean((out - ref) ** 2)) / np.sqrt(np.mean(ref**2))
            assert rmse <= rtol, (side, rmse)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_a_long_reduction_widens_rtol_alone_by_the_float32_accumulation_term(dtype):
    """k = 274,625 (a 65^3 convolution window): rtol + (sqrt(k) - 64) x 2^-23, the same atol, the
    dtype kept and the accumulation saying how long the sums are; at or below 4096 the row itself."""
    from reference.tolerance import TOLERANCES, tolerance_for

    row = TOLERANCES[dtype]
    wide = tolerance_for(dtype, 274_625)
    assert wide.dtype == dtype and wide.atol == row.atol
    assert wide.rtol == pytest.approx(row.rtol + (math.sqrt(274_625) - 64) * 2.0**-23, rel=1e-12)
    assert wide.accumulation == row.accumulation + "; reductions of 274,625 elements"
    assert tolerance_for(dtype, 4096) == row == tolerance_for(dtype)
    twice = row.widened(2)
    assert (twice.dtype, twice.atol, twice.rtol, twice.accumulation) == (
        dtype,
        2 * row.atol,
        2 * row.rtol,
        row.accumulation,
    )
    assert row.to_dict() == {"dtype": dtype, "atol": row.atol, "rtol": row.rtol, "accumulation": row.accumulation}
