"""Both sides agree with the float64 reference, and with each other, for every swept entry.

Odd sizes (1, 63, 65, 129) in every dimension, all alike and each different, and every choice
(mode, style, GELU form, MLP kind) at odd sizes, in every dtype, always run; hypothesis adds
random shapes and seeds on top (bounded by the `ci` profile).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.agreement import check_agreement
from reference.catalogue import CATALOGUE
from reference.dtypes import FLOAT_DTYPES
from tests.shape_cases import ODD_SIZES, SWEPT, mixed_shapes, shapes_for, themed_shapes

pytestmark = [pytest.mark.torch, pytest.mark.jax]


@pytest.fixture(scope="module")
def runners():
    import jax_side
    import pytorch_side

    return {"torch": pytorch_side.run_case, "jax": jax_side.run_case}


def _assert_agrees(result):
    """Our normwise verdict, cross-checked with each framework's own testing assertions."""
    import chex
    import torch

    failed = {k: v.to_dict() for k, v in result.errors.items() if not v.ok}
    assert result.ok, f"{result.kernel} {result.dtype} {dict(result.shapes)}: {failed}"
    for ref, torch_out, jax_out in zip(result.reference, result.outputs["torch"], result.outputs["jax"]):
        # The normwise bound as an elementwise atol: the same inequality, checked independently.
        bound = result.bound(ref)
        torch.testing.assert_close(torch.from_numpy(torch_out), torch.from_numpy(ref), atol=bound, rtol=0)
        chex.assert_tree_all_finite(jax_out)
        chex.assert_trees_all_close(jax_out, ref, atol=bound, rtol=0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("size", ODD_SIZES)
@pytest.mark.parametrize("name", SWEPT)
def test_sides_agree_with_reference_at_odd_sizes(name, size, dtype, runners):
    _assert_agrees(check_agreement(name, themed_shapes(name, size), dtype, seed=size, runners=runners))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("offset", [1, 2])
@pytest.mark.parametrize("name", SWEPT)
def test_sides_agree_with_each_dimension_at_a_different_odd_size(name, offset, dtype, runners):
    _assert_agrees(check_agreement(name, mixed_shapes(name, offset), dtype, seed=offset, runners=runners))


WITH_CHOICES = [n for n in SWEPT if any(p.choices for p in CATALOGUE[n].params)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", WITH_CHOICES)
def test_every_choice_combination_agrees_at_defaults_and_at_odd_sizes(name, dtype, runners):
    """Each combination of the entry's choices (mode, style, GELU form, MLP kind) at its defaults,
    and at odd sizes that differ per dimension (rotated through the combinations)."""
    choice_params = [p for p in CATALOGUE[name].params if p.choices]
    for i, values in enumerate(itertools.product(*(p.choices for p in choice_params))):
        shapes = {p.name: v for p, v in zip(choice_params, values)}
        _assert_agrees(check_agreement(name, shapes, dtype, runners=runners))
        _assert_agrees(check_agreement(name, {**mixed_shapes(name, i), **shapes}, dtype, seed=i, runners=runners))


def test_a_down_projection_whose_terms_cancel_is_held_to_its_terms(runners):
    """Hypothesis found this draw: one model dimension, so each token's output is one sum of 63
    terms that cancel to a tenth of their root-sum-square; torch's float16 rounding of the terms
    (7.9 u) then exceeds 4 u of max|ref|, but not 4 u of the terms (reference/agreement.py)."""
    shapes = {"m": 63, "d_model": 1, "d_ff": 63, "n_experts": 3, "top_k": 1}
    result = check_agreement("moe", shapes, "float16", seed=415, runners=runners)
    largest = max(float(abs(r).max()) for r in result.reference)
    assert result.term_scale > 5 * largest
    _assert_agrees(result)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_decoder_whose_residual_stream_cancels_before_a_norm_is_held_to_its_additions(dtype, runners):
    """Hypothesis found this draw: d_model 2, so a token's residual stream (two numbers) can sum
    to an rms of 0.064 from additions of order one; the norm that reads it divides their stored
    roundings by that, and both sides reached 8.5 u (float16) of max|ref|. The bound's scale is
    the additions' root-sum-square over the stream's, times the row's output (residual_terms)."""
    shapes = {"batch": 1, "seq": 63, "vocab": 129, "layers": 2, "n_heads": 1, "n_kv_heads": 1, "head_dim": 2}
    result = check_agreement("decoder", {**shapes, "d_ff": 1, "mode": "prefill"}, dtype, seed=1, runners=runners)
    assert result.term_scale > 5 * max(float(abs(r).max()) for r in result.reference)
    _assert_agrees(result)


@pytest.mark.parametrize("stride_kernel", [(2, 2), (2, 3)])
def test_a_bfloat16_convolution_on_shapes_onednn_gets_wrong_agrees(stride_kernel, runners):
    """Hypothesis found torch 2.13's oneDNN bfloat16 convolution 1e13 off at height 9, stride 2,
    padding 1; the side runs such modules on ATen's kernel (pytorch_side/run.py)."""
    stride, kernel = stride_kernel
    shapes = {
        "batch": 1,
        "c_in": 1,
        "c_out": 63,
        "height": 9,
        "width": 1,
        "kernel": kernel,
        "stride": stride,
        "padding": 1,
    }
    _assert_agrees(check_agreement("conv2d", shapes, "bfloat16", seed=0, runners=runners))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", SWEPT)
@given(data=st.data())
def test_sides_agree_on_random_shapes(name, dtype, data, runners):
    shapes = data.draw(shapes_for(name), label="shapes")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    _assert_agrees(check_agreement(name, shapes, dtype, seed, runners=runners))
