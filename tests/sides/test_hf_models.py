"""Hugging Face models imported into both sides: logits equal HF's, in float32, within the tolerance table.

Each model is a small random-initialized `transformers` model built from a config (no download).
Every parameter is redrawn, norms and biases included (HF initializes those to ones and zeros,
which would leave a misplaced bias unseen). The chain under test is the user's: HF config ->
reference/hf_config.py; HF state dict (or a safetensors folder) -> reference/hf_weights.py ->
pytorch_side.decoder and jax_side.decoder; prefill and a decode step fed HF's own KV cache.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", reason="the [hf] extra (transformers) is not installed")

import jax_side  # noqa: E402
import pytorch_side  # noqa: E402
from pytorch_side.params import to_numpy  # noqa: E402
from reference.agreement import compare_outputs  # noqa: E402
from reference.catalogue.transformer import decoder_forward  # noqa: E402
from reference.hf_config import config_from_hf  # noqa: E402
from reference.hf_weights import BadCheckpoint, canonical_weights, load_checkpoint  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.jax]

SMALL = dict(vocab_size=96, max_position_embeddings=64)
LLAMA = dict(
    hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, **SMALL
)
LLAMA3_SCALING = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 16,
}
CONFIGS = {
    "gpt2": lambda: transformers.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, vocab_size=96, n_positions=64, bos_token_id=0, eos_token_id=0
    ),
    # llama3-scaled RoPE, untied head, GQA
    "llama": lambda: transformers.LlamaConfig(**LLAMA, rope_theta=500000.0, rope_scaling=LLAMA3_SCALING),
    "mistral": lambda: transformers.MistralConfig(**LLAMA, sliding_window=None),
    # a sliding window shorter than the prompt (7 tokens) and the decode step's cache (8)
    "mistral-window": lambda: transformers.MistralConfig(**LLAMA, sliding_window=4),
    # q, k and v biases, tied embeddings
    "qwen2": lambda: transformers.Qwen2Config(**LLAMA, tie_word_embeddings=True),
    # QK-norm (an RMSNorm over each head's q and k before RoPE), head_dim apart from the width
    "qwen3": lambda: transformers.Qwen3Config(**LLAMA, head_dim=24, sliding_window=None, rope_theta=1000000.0),
    "mixtral": lambda: transformers.MixtralConfig(
        **LLAMA, num_local_experts=4, num_experts_per_tok=2, sliding_window=None
    ),
}
CLASSES = {
    "gpt2": "GPT2LMHeadModel",
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "mistral-window": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "mixtral": "MixtralForCausalLM",
}
BATCH, PROMPT = 2, 7


def hf_model(kind: str, seed: int = 0):
    """A random HF model in eval mode, float32, every parameter redrawn."""
    torch.manual_seed(seed)
    model = getattr(transformers, CLASSES[kind])(CONFIGS[kind]()).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:  # norm gains around one, biases around zero
                base = 1.0 if ("norm" in name or "ln_" in name) and name.endswith("weight") else 0.0
                p.copy_(base + 0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) * 0.5 / p.shape[-1] ** 0.5)
    return model


def ours(model):
    """(our config, canonical float32 weights) from an HF model object."""
    cfg = config_from_hf(model.config.to_dict(), f"hf-{model.config.model_type}")
    return cfg, canonical_weights(cfg, {k: to_numpy(v) for k, v in model.state_dict().items()})


def judge(cfg, weights, hf_logits, torch_logits, jax_logits, ids, k_cache=None, v_cache=None):
    """Each side, HF's too, against the float64 reference; every pair of them within twice the bound."""
    w64 = {k: v.astype(np.float64) for k, v in weights.items()}
    caches = () if k_cache is None else (k_cache.astype(np.float64), v_cache.astype(np.float64))
    ref = decoder_forward(cfg, ids, w64, *caches)
    result = compare_outputs(
        cfg.name, "float32", (ref,), {"hf": (hf_logits,), "torch": (torch_logits,), "jax": (jax_logits,)}
    )
    assert result.ok, {k: e.to_dict() for k, e in result.errors.items()}
    return result


def hf_cache_arrays(cache, layers: int) -> tuple[np.ndarray, np.ndarray]:
    """HF's DynamicCache as our [L, B, K, S+1, H] buffers, the new token's slot (zeros) last."""

    def stacked(attr):
        per_layer = [to_numpy(getattr(cache.layers[i], attr)) for i in range(layers)]
        arr = np.stack(per_layer)
        return np.concatenate([arr, np.zeros_like(arr[:, :, :, :1])], axis=3)

    return stacked("keys"), stacked("values")


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_prefill_logits_equal_hf(kind):
    """Prefill: our two sides' logits equal HF's (and the float64 reference's) within the float32 row."""
    model = hf_model(kind)
    cfg, weights = ours(model)
    ids = np.random.default_rng(1).integers(0, cfg.vocab, (BATCH, PROMPT))
    with torch.no_grad():
        hf = to_numpy(model(torch.from_numpy(ids), use_cache=False).logits).astype(np.float64)
    (t,) = pytorch_side.run_module(pytorch_side.decoder(cfg, weights), ids)
    (j,) = jax_side.run_module(jax_side.decoder(cfg, weights), ids)
    judge(cfg, weights, hf, t, j, ids)


@pytest.mark.parametrize("kind", ["gpt2", "llama", "qwen2", "qwen3", "mistral-window", "mixtral"])
def test_decode_step_fed_hf_cache(kind):
    """Decode: HF fills its cache over the prompt; that cache, moved into our buffers, gives our
    sides the next token's logits HF computes from it. (A sliding window's cache is given whole, a
    DynamicCache without the config, which HF would otherwise trim to the window; our decode step
    reads only the window of it.)"""
    model = hf_model(kind, seed=2)
    cfg, weights = ours(model)
    rng = np.random.default_rng(3)
    prompt, nxt = rng.integers(0, cfg.vocab, (BATCH, PROMPT)), rng.integers(0, cfg.vocab, (BATCH, 1))
    whole = {"cache": transformers.DynamicCache()} if cfg.sliding_window else {}
    with torch.no_grad():
        cache = model(
            torch.from_numpy(prompt), use_cache=True, **whole
        ).cache  # transformers >= 5.24 ("past_key_values" before)
        k, v = hf_cache_arrays(cache, cfg.n_layers)  # before the decode step appends to it
        hf = to_numpy(model(torch.from_numpy(nxt), cache=cache, use_cache=True).logits).astype(np.float64)
    assert k.shape == (cfg.n_layers, BATCH, cfg.n_kv_heads, PROMPT + 1, cfg.head_dim)
    (t,) = pytorch_side.run_module(pytorch_side.decoder(cfg, weights), nxt, k, v)
    (j,) = jax_side.run_module(jax_side.decoder(cfg, weights), nxt, k, v)
    judge(cfg, weights, hf, t, j, nxt, k, v)


@pytest.mark.parametrize("kind", ["gpt2", "mixtral"])
def test_safetensors_folder_round_trip(kind, tmp_path):
    """`save_pretrained` writes the folder a user downloads; load_checkpoint reads it back to the
    same canonical weights as the in-memory state dict (GPT-2's tied head left out of the file)."""
    model = hf_model(kind, seed=4)
    model.save_pretrained(tmp_path)
    cfg, weights = load_checkpoint(tmp_path)
    _, expected = ours(model)
    assert set(weights) == set(expected)
    for name in expected:
        np.testing.assert_array_equal(weights[name], expected[name], err_msg=name)
    assert cfg.n_experts == (4 if kind == "mixtral" else 0)


def test_mixtral_hub_layout_matches_fused_layout():
    """Mixtral's hub files keep one w1/w2/w3 per expert (block_sparse_moe); transformers 5 fuses them.
    Both layouts give the same canonical weights."""
    model = hf_model("mixtral", seed=5)
    cfg, fused = ours(model)
    hub = {}
    for name, value in model.state_dict().items():
        arr = to_numpy(value)
        if name.endswith("mlp.experts.gate_up_proj"):
            for e in range(cfg.n_experts):
                hub[name.replace("mlp.experts.gate_up_proj", f"block_sparse_moe.experts.{e}.w1.weight")] = arr[
                    e, : cfg.d_ff
                ]
                hub[name.replace("mlp.experts.gate_up_proj", f"block_sparse_moe.experts.{e}.w3.weight")] = arr[
                    e, cfg.d_ff :
                ]
        elif name.endswith("mlp.experts.down_proj"):
            for e in range(cfg.n_experts):
                hub[name.replace("mlp.experts.down_proj", f"block_sparse_moe.experts.{e}.w2.weight")] = arr[e]
        else:
            hub[name.replace("mlp.gate.weight", "block_sparse_moe.gate.weight")] = arr
    from_hub = canonical_weights(cfg, hub)
    assert set(from_hub) == set(fused)
    for name in fused:
        np.testing.assert_array_equal(from_hub[name], fused[name], err_msg=name)


def test_first_layers_only():
    """layers=1 keeps the first block and everything around the stack, the weights of a shorter model."""
    model = hf_model("llama", seed=6)
    cfg, _ = ours(model)
    state = {k: to_numpy(v) for k, v in model.state_dict().items()}
    one = canonical_weights(cfg, state, layers=1)
    assert not [k for k in one if k.startswith("layers.1.")]
    assert {"embed.weight", "norm.weight", "lm_head.weight", "layers.0.attn.q_proj.weight"} <= set(one)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s.pop("model.layers.1.mlp.up_proj.weight"), "lacks layers.1.mlp.up_proj.weight (1 of 21 weights)"),
        (
            lambda s: s.update({"model.layers.0.mlp.surprise.weight": np.zeros(3, np.float32)}),
            "do not place: model.layers.0.mlp.surprise",
        ),
        (
            lambda s: s.update({"model.norm.weight": np.zeros(5, np.float32)}),
            "norm.weight (5,) (the config needs (64,))",
        ),
    ],
)
def test_bad_checkpoint_names_the_tensor(change, message):
    """A missing, unplaced or ill-shaped tensor is refused by its name, with what the config needs."""
    model = hf_model("llama", seed=7)
    cfg, _ = ours(model)
    state = {k: to_numpy(v) for k, v in model.state_dict().items()}
    change(state)
    with pytest.raises(BadCheckpoint) as err:
        canonical_weights(cfg, state)
    assert message in str(err.value)


def test_folder_without_safetensors(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIGS["llama"]().to_dict()))
    with pytest.raises(BadCheckpoint, match="no safetensors file"):
        load_checkpoint(tmp_path)
