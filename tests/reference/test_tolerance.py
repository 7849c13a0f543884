"""The tolerance table is derived from unit roundoff, and the check can fail."""

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
