"""The tiny decoder gives the same logits on both sides from the same weights.

Weights start as PyTorch's own initialization and cross to JAX through the converter, in the
three attention layouts (full multi-head, multi-query, grouped-query) and both styles.
"""

from __future__ import annotations

import pytest

from reference.agreement import compare_outputs
from reference.catalogue import CATALOGUE
from reference.dtypes import FLOAT_DTYPES
from reference.inputs import make_case

pytestmark = [pytest.mark.torch, pytest.mark.jax]

HEADS = {
    "full": {"n_heads": 4, "n_kv_heads": 4},
    "mqa": {"n_heads": 4, "n_kv_heads": 1},
    "gqa": {"n_heads": 4, "n_kv_heads": 2},
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("style", ["llama", "gpt2"])
@pytest.mark.parametrize("heads", HEADS)
def test_decoder_logits_match_with_weights_moved_by_the_converter(heads, style, dtype):
    import torch

    import jax_side
    import pytorch_side
    from reference.catalogue.transformer import config_for, decoder_forward

    torch.manual_seed(1)
    entry = CATALOGUE["decoder"]
    shapes = entry.resolve({**HEADS[heads], "style": style, "seq": 65})
    torch_module = pytorch_side.build("decoder", shapes, dtype)
    weights = pytorch_side.export_weights(torch_module)
    jax_module = jax_side.load_weights(jax_side.build("decoder", shapes, dtype), weights)
    ids = make_case(entry, shapes, dtype, seed=3).inputs["ids"]
    reference = decoder_forward(
        config_for("decoder", shapes), ids, {k: v.astype("float64") for k, v in weights.items()}
    )
    result = compare_outputs(
        "decoder",
        dtype,
        (reference,),
        {"torch": pytorch_side.run_module(torch_module, ids), "jax": jax_side.run_module(jax_module, ids)},
    )
    assert result.ok, {k: v.to_dict() for k, v in result.errors.items()}
