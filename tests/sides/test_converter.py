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
    import jax_side
    import pytorch_side
    import torch

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
