"""One converter moves weights between the PyTorch state dict and the Flax NNX tree.

Canonical names are defined once (the catalogue's weight specs); both module trees carry
exactly those names and shapes, and a round trip torch -> numpy -> JAX -> numpy is bit-exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from reference.catalogue import CATALOGUE
from reference.dtypes import FLOAT_DTYPES

pytestmark = [pytest.mark.torch, pytest.mark.jax]

WEIGHTED = [name for name, e in CATALOGUE.items() if e.kind == "kernel" and e.weights(e.resolve())] + ["tiny"]
VARIANTS = {"mlp": [{"kind": "gelu"}], "block": [{"style": "gpt2"}], "decoder": [{"style": "gpt2"}]}
CASES = [(n, {}) for n in WEIGHTED] + [(n, v) for n, vs in VARIANTS.items() for v in vs]


def _shapes(name, overrides):
    return CATALOGUE[name].resolve(overrides)


@pytest.mark.parametrize("name,overrides", CASES, ids=lambda x: str(x))
def test_both_module_trees_carry_exactly_the_canonical_names_and_shapes(name, overrides):
    import jax_side
    import pytorch_side

    shapes = _shapes(name, overrides)
    spec = {k: s.shape for k, s in CATALOGUE[name].weights(shapes).items()}
    torch_weights = pytorch_side.export_weights(pytorch_side.build(name, shapes, "float32"))
    assert {k: v.shape for k, v in torch_weights.items()} == spec
    assert jax_side.canonical_names(jax_side.build(name, shapes, "float32")) == sorted(spec)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name,overrides", CASES, ids=lambda x: str(x))
def test_round_trip_through_jax_is_bit_exact(name, overrides, dtype):
    import torch

    import jax_side
    import pytorch_side

    torch.manual_seed(0)
    shapes = _shapes(name, overrides)
    original = pytorch_side.export_weights(pytorch_side.build(name, shapes, dtype))
    module = jax_side.load_weights(jax_side.build(name, shapes, dtype), original)
    back = jax_side.export_weights(module)
    assert sorted(back) == sorted(original)
    for key, value in original.items():
        assert back[key].dtype == value.dtype, key
        assert np.array_equal(back[key].view(np.uint8), value.view(np.uint8)), key


def test_loading_a_wrong_key_names_it():
    import jax_side
    from reference.errors import WeightMismatch

    module = jax_side.build("linear", _shapes("linear", {}), "float32")
    with pytest.raises(WeightMismatch, match=r"missing \['weight'\], unexpected \['wieght'\]"):
        jax_side.load_weights(module, {"wieght": np.zeros((64, 64), np.float32), "bias": np.zeros(64, np.float32)})


def test_a_known_non_symmetric_weight_gives_the_element_it_must_on_both_sides():
    """linear with W = [[1, 2], [3, 4]] ([out, in], PyTorch's layout) and b = [10, 20]: x = [1, 0]
    gives y = x W^T + b = [11, 23]. A round trip cannot see a transposition that both directions
    make consistently; y[1] is 23 only if JAX's kernel is W^T (22 if W were loaded untransposed)."""
    import jax.numpy as jnp
    import torch

    import jax_side
    import pytorch_side

    shapes = _shapes("linear", {"m": 1, "k": 2, "n": 2})
    weights = {"weight": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), "bias": np.array([10.0, 20.0], np.float32)}
    x = np.array([[1.0, 0.0]], np.float32)
    torch_module = pytorch_side.load_weights(pytorch_side.build("linear", shapes, "float32"), weights)
    jax_module = jax_side.load_weights(jax_side.build("linear", shapes, "float32"), weights)
    with torch.no_grad():
        torch_y = torch_module(torch.from_numpy(x)).numpy()
    jax_y = np.asarray(jax_module(jnp.asarray(x)))
    assert torch_y[0, 1] == 23.0 and jax_y[0, 1] == 23.0
    np.testing.assert_array_equal(torch_y, [[11.0, 23.0]])
    np.testing.assert_array_equal(jax_y, [[11.0, 23.0]])
