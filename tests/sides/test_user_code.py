"""Users check their own nn.Module and JAX function, not only the catalogue."""

from __future__ import annotations

import numpy as np
import pytest

from reference.agreement import compare_outputs

pytestmark = [pytest.mark.torch, pytest.mark.jax]


def test_a_user_module_and_function_are_compared_against_a_user_reference():
    import jax.numpy as jnp
    import jax_side
    import pytorch_side
    import torch

    x = np.random.default_rng(0).standard_normal((5, 63)).astype(np.float32)
    torch_out = pytorch_side.run_module(torch.nn.Tanh(), x)
    jax_out = jax_side.run_module(jnp.tanh, x)
    result = compare_outputs("tanh", "float32", (np.tanh(x.astype(np.float64)),), {"torch": torch_out, "jax": jax_out})
    assert result.ok
    wrong = compare_outputs("tanh", "float32", (np.sin(x.astype(np.float64)),), {"torch": torch_out})
    assert not wrong.ok
