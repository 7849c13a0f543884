"""Routed MoE: the graph that is costed sends each token only to its experts (gather, expert,
scatter-add), so its FLOPs are top_k / n_experts of dense dispatch and a decode step reads only
the experts it is expected to choose; numerical runs keep dense dispatch, and routed dispatch over
every expert and token computes the same outputs (tested on both sides and the reference)."""

from __future__ import annotations

import numpy as np
import pytest

from reference.catalogue import CATALOGUE, get_entry
from reference.catalogue.mlp import expert_capacity, moe, moe_routed
from reference.inputs import make_case
from reference.ir import dot_and_conv_flops
from reference.tolerance import tolerance_for

pytestmark = [pytest.mark.torch, pytest.mark.jax]


@pytest.mark.parametrize("tokens, expected", [(1, (2, 1)), (2, (4, 1)), (8, (8, 2)), (2048, (8, 512))])
def test_expected_distinct_experts_and_capacity_for_mixtral_routing(tokens, expected):
    """n (1 - (1 - k/n)^tokens) distinct experts for n = 8, k = 2 (1: 2; 2: 3.5 -> 4; 8: 7.2 -> 8)."""
    assert expert_capacity(tokens, 8, 2) == expected


def _case(dtype="float32", m=65):
    entry = get_entry("moe")
    return make_case(entry, entry.resolve({"m": m}), dtype, 0)


def test_the_reference_routed_over_everything_equals_dense_dispatch():
    case = _case()
    x, w = case.float64_inputs()["x"], case.float64_weights()
    np.testing.assert_allclose(moe_routed(x, w, 8, 2, 8, 65), moe(x, w, 8, 2), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("side", ["torch", "jax"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_routed_dispatch_over_every_expert_and_token_computes_what_dense_does(side, dtype):
    if side == "torch":
        from pytorch_side.layers import routed_moe
        from pytorch_side.run import run_case
    else:
        from jax_side.layers import routed_moe
        from jax_side.run import run_case
    case = _case(dtype)
    dense = run_case(case)[0]
    with routed_moe("full"):
        routed = run_case(case)[0]
    reference = moe(case.float64_inputs()["x"], case.float64_weights(), 8, 2)
    bound = tolerance_for(dtype).bound(np.abs(reference).max())
    assert np.abs(routed - reference).max() <= bound
    assert np.abs(routed - dense).max() <= 2 * bound


@pytest.mark.parametrize("side", ["torch", "jax"])
@pytest.mark.parametrize("tokens", [1, 8, 64])
def test_the_costed_graph_runs_top_k_of_n_experts_per_token(side, tokens):
    """Expert FLOPs = active experts x capacity rows x 2 x 3 x d_model x d_ff: at 1 token, 2 of
    the 8 experts (a quarter of dense); at 64 tokens 8 x 16 = 128 = 64 x 2 rows."""
    if side == "torch":
        from pytorch_side.lower import lower_entry
    else:
        from jax_side.lower import lower_entry
    shapes = CATALOGUE["moe"].resolve({"m": tokens})
    d, ff, n, k = shapes["d_model"], shapes["d_ff"], shapes["n_experts"], shapes["top_k"]
    active, capacity = expert_capacity(tokens, n, k)
    router = 2 * tokens * d * n
    assert dot_and_conv_flops(lower_entry("moe", shapes, "bfloat16").module) == router + active * capacity * 6 * d * ff


@pytest.mark.parametrize("side", ["torch", "jax"])
def test_a_decode_step_reads_only_the_experts_it_is_expected_to_choose(side):
    """One token routes to 2 of Mixtral's 8 experts: the step's main-memory bytes hold 2 experts'
    weights (and the router's), not 8."""
    from hardware_models.estimate import estimate
    from hardware_models.target import get_target

    if side == "torch":
        from pytorch_side.lower import lower_entry
    else:
        from jax_side.lower import lower_entry
    shapes = CATALOGUE["moe"].resolve({"m": 1, "d_model": 256, "d_ff": 512})
    expert_bytes = 3 * 256 * 512 * 2
    moved = estimate(lower_entry("moe", shapes, "bfloat16").module, get_target("h100")).total.bytes_at("hbm")
    assert 2 * expert_bytes <= moved < 3 * expert_bytes
