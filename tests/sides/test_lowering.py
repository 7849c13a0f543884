"""Both sides lower through their real compilers into the IR, and the IR's counts agree with
the compilers' own counters: XLA's cost_analysis (JAX path) and torch's FlopCounterMode
(PyTorch path), and the two paths' contraction FLOPs agree with each other.
"""

from __future__ import annotations

import pytest

from reference.catalogue import CATALOGUE, KERNELS
from reference.ir import dot_and_conv_flops

pytestmark = [pytest.mark.torch, pytest.mark.jax]

CASES = (
    [(n, {}) for n in [*KERNELS, "tiny"]]
    + [(n, {"mode": "decode"}) for n in ("attention", "block", "decoder", "tiny")]
    + [
        ("block", {"style": "gpt2"}),
        ("gelu", {"approximate": "tanh"}),
        ("mlp", {"kind": "gelu"}),
        ("conv2d", {"stride": 2}),
    ]
)
IDS = [f"{n}-{'-'.join(map(str, o.values())) or 'default'}" for n, o in CASES]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name,overrides", CASES, ids=IDS)
def test_jax_ir_counts_equal_xla_cost_analysis(name, overrides, dtype):
    """Exact equality under the four stated rules (reference/ir/counters.py)."""
    from jax_side.lower import lower_entry

    lowering = lower_entry(name, CATALOGUE[name].resolve(overrides), dtype)
    stats = lowering.stats(policy="xla")
    assert stats.flops == lowering.xla_cost.get("flops", 0.0)
    assert stats.transcendentals == lowering.xla_cost.get("transcendentals", 0.0)
    assert not stats.unknown_ops


@pytest.mark.parametrize("name,overrides", CASES, ids=IDS)
def test_torch_contraction_flops_equal_flop_counter_and_the_jax_path(name, overrides):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    import pytorch_side
    from jax_side.lower import lower_entry as lower_jax
    from pytorch_side.lower import lower_entry as lower_torch
    from reference.inputs import make_case

    entry = CATALOGUE[name]
    shapes = entry.resolve(overrides)
    torch_ir = lower_torch(name, shapes, "float32").module
    case = make_case(entry, shapes, "float32")
    module = pytorch_side.load_weights(pytorch_side.build(name, shapes, "float32"), dict(case.weights))
    # The math backend runs SDPA as matmuls; PyTorch registers no FLOP formula for its CPU flash kernel.
    from pytorch_side.layers import routed_moe

    # routed_moe: the eager run takes the routed dispatch the lowering traces (an MoE's tokens go
    # to their experts only), so both count the same expert matmuls.
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter, routed_moe():
        pytorch_side.run_module(module, *case.inputs.values())
    assert dot_and_conv_flops(torch_ir) == counter.get_total_flops()
    assert dot_and_conv_flops(torch_ir) == dot_and_conv_flops(lower_jax(name, shapes, "float32").module)


@pytest.mark.parametrize("dtype,element", [("float32", "f32"), ("bfloat16", "bf16"), ("float16", "f16")])
def test_chlo_erfc_expansion_table_matches_xla(dtype, element):
    """Rule 4's table is XLA's own per-element count of its erfc expansion."""
    import jax
    import jax.numpy as jnp

    from reference.ir.counters import XLA_CHLO_EXPANSION

    cost = jax.jit(jax.lax.erfc).lower(jax.ShapeDtypeStruct((7,), getattr(jnp, dtype))).cost_analysis()
    assert (cost["flops"] / 7, cost["transcendentals"] / 7) == XLA_CHLO_EXPANSION[("erfc", element)]


def test_users_lower_their_own_module_and_function():
    import jax
    import jax.numpy as jnp
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from jax_side.lower import lower_function
    from pytorch_side.lower import lower_module

    with FakeTensorMode():
        model = torch.nn.Sequential(torch.nn.Linear(63, 129), torch.nn.GELU(), torch.nn.Linear(129, 65))
        torch_lowering = lower_module(model, torch.empty(5, 63), name="mine")
    jax_lowering = lower_function(
        lambda w1, w2, x: jnp.tanh(x @ w1) @ w2,
        jax.ShapeDtypeStruct((63, 129), jnp.float32),
        jax.ShapeDtypeStruct((129, 65), jnp.float32),
        jax.ShapeDtypeStruct((5, 63), jnp.float32),
        n_params=2,
        compile_xla=True,
    )
    expected = 2 * 5 * (63 * 129 + 129 * 65)
    assert dot_and_conv_flops(torch_lowering.module) == dot_and_conv_flops(jax_lowering.module) == expected
    assert torch_lowering.stats().param_bytes == 4 * (63 * 129 + 129 + 129 * 65 + 65)
    assert jax_lowering.stats().param_bytes == 4 * (63 * 129 + 129 * 65)
    assert "HloModule" in jax_lowering.stage("xla") and "aten" in torch_lowering.stage("fx")


def test_a_405b_layer_lowers_on_both_sides_without_weights():
    """Fake and abstract weights: 2.1e9 embedding parameters cost no memory to lower."""
    from jax_side.lower import lower_entry as lower_jax
    from pytorch_side.lower import lower_entry as lower_torch

    entry = CATALOGUE["llama-3.1-405b"]
    shapes = entry.resolve({"layers": 1, "seq": 8})
    expected_bytes = 2 * entry.n_weights(shapes)
    for lowering in (
        lower_torch("llama-3.1-405b", shapes, "bfloat16"),
        lower_jax("llama-3.1-405b", shapes, "bfloat16"),
    ):
        assert lowering.stats().param_bytes == expected_bytes


def test_provenance_names_the_layer_on_jax_and_the_source_line_on_torch():
    from jax_side.lower import lower_entry as lower_jax
    from pytorch_side.lower import lower_entry as lower_torch
    from reference.ir.counters import all_ops

    shapes = CATALOGUE["tiny"].resolve({"seq": 4})
    jax_scopes = {
        op.origin.scope for op in all_ops(lower_jax("tiny", shapes, "float32").module) if op.short_name == "dot_general"
    }
    assert any("layers.1/attn/q_proj/dot_general" in s for s in jax_scopes)
    assert any("layers.0/mlp" in s for s in jax_scopes)
    torch_sources = {
        op.origin.source
        for op in all_ops(lower_torch("tiny", shapes, "float32").module)
        if op.short_name == "dot_general"
    }
    assert any(s.startswith("layers.py:") for s in torch_sources)  # pytorch_side/layers.py, the calling line
