"""compare_lowerings: both paths on every family, refusals recorded, the difference costed by kind."""

from __future__ import annotations

import pytest

from hardware_models.comparison import KINDS, compare_lowerings
from hardware_models.target import get_target

pytestmark = [pytest.mark.torch, pytest.mark.jax]

FAMILIES = ("h100", "tpu-v5e", "wse-3", "groq-lpu", "spyre")


def _block():
    from jax_side.lower import lower_entry as lower_jax
    from pytorch_side.lower import lower_entry as lower_torch
    from reference.catalogue import CATALOGUE

    shapes = CATALOGUE["block"].resolve({})
    return lower_torch("block", shapes, "bfloat16"), lower_jax("block", shapes, "bfloat16")


def test_the_block_runs_on_all_five_families_and_the_difference_adds_up():
    torch_lowering, jax_lowering = _block()
    result = compare_lowerings(torch_lowering, jax_lowering, [get_target(t) for t in FAMILIES], "block")
    for target in FAMILIES:
        torch_side, jax_side = result.results[(target, "torch")], result.results[(target, "jax")]
        assert torch_side.estimate and jax_side.estimate
        delta = sum(result.difference_cost(target).values())
        assert delta == pytest.approx(jax_side.estimate.total.time_s - torch_side.estimate.total.time_s)
        assert set(torch_side.time_by_kind()) == set(KINDS)
    assert result.diff["divergences"]  # the two paths do differ


def test_a_layernorm_in_f64_is_costed_on_both_sides_and_refused_only_under_strict_dtypes():
    """torch-mlir computes LayerNorm's statistics in f64: a TPU costs that side as double-f32 and
    says so, so the comparison keeps both sides; with strict_dtypes the side is refused (with what
    to do), the refusal is recorded and the rest kept."""
    import jax
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from jax_side.lower import lower_function
    from pytorch_side.lower import lower_module

    with FakeTensorMode():
        norm = torch.nn.LayerNorm(64)  # torch-mlir computes its statistics in f64
        torch_lowering = lower_module(norm, torch.empty(8, 64))
    jax_lowering = lower_function(
        lambda x: jax.nn.standardize(x, axis=-1), jax.ShapeDtypeStruct((8, 64), jax.numpy.float32)
    )
    targets = [get_target("tpu-v5e"), get_target("h100")]
    result = compare_lowerings(torch_lowering, jax_lowering, targets, "norm")
    tpu_torch = result.results[("tpu-v5e", "torch")]
    assert tpu_torch.estimate is not None and result.difference_cost("tpu-v5e")
    assert any("tpu-v5e has no f64" in n for n in tpu_torch.artifacts()["emulated"])
    assert "artifacts" in tpu_torch.summary() and "artifacts" not in result.results[("h100", "torch")].summary()
    strict = compare_lowerings(torch_lowering, jax_lowering, targets, "norm", strict_dtypes=True)
    assert "drop --strict-dtypes" in strict.results[("tpu-v5e", "torch")].refused
    assert strict.results[("tpu-v5e", "jax")].estimate is not None
    assert strict.results[("h100", "torch")].estimate is not None
    assert strict.difference_cost("tpu-v5e") == {}


def test_the_gpt2_block_is_costed_on_both_sides_on_all_five_families_and_its_artifacts_reported():
    """style=gpt2 has LayerNorms (f64 statistics on the torch side) and bf16 linears with biases
    (f32 dots over upcasts): every family costs both sides; on the GPU and TPU the torch side's
    upcasts are folded and what they would have cost (the side compiled without the fold) is > 0."""
    from jax_side.lower import lower_entry as lower_jax
    from pytorch_side.lower import lower_entry as lower_torch
    from reference.catalogue import CATALOGUE

    shapes = CATALOGUE["block"].resolve({"style": "gpt2"})
    result = compare_lowerings(
        lower_torch("block", shapes, "bfloat16"),
        lower_jax("block", shapes, "bfloat16"),
        [get_target(t) for t in FAMILIES],
        "block",
    )
    assert all(result.results[(t, s)].estimate is not None for t in FAMILIES for s in ("torch", "jax"))
    for target in ("h100", "tpu-v5e"):
        artifacts = result.results[(target, "torch")].artifacts()
        assert artifacts["upcasts_folded"] > 0 and artifacts["would_have_cost_s"] > 0
        assert {(f["from"], f["to"]) for f in artifacts["folds"]} == {("bf16", "f32")}


def _small_lowerings():
    from reference.lowering import Lowering
    from tests.hardware_models.programs import linear_gelu

    torch_lowering = Lowering("torch", "gemm", {"stablehlo": ""}, linear_gelu(64, 128, 256))
    return torch_lowering, Lowering("jax", "gemm", {"stablehlo": ""}, linear_gelu(64, 128, 256))


def test_targets_may_be_given_by_name_as_well_as_loaded():
    # It used to fail with AttributeError: 'str' object has no attribute 'family'.
    result = compare_lowerings(*_small_lowerings(), ["h100", get_target("spyre")], "gemm")
    assert result.targets == ("h100", "spyre")
    assert (
        result.results[("h100", "torch")].estimate is not None and result.results[("spyre", "jax")].estimate is not None
    )
    assert (
        result.target_details["h100"]["kind"] == "NVIDIA GPU"
        and result.target_details["spyre"]["main_memory_level"] == "lpddr5"
    )


def test_an_unknown_target_name_is_one_error_with_a_close_match():
    from reference.errors import UnknownName

    with pytest.raises(UnknownName, match="did you mean 'h100'"):
        compare_lowerings(*_small_lowerings(), ["h10"])
