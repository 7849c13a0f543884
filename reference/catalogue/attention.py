"""Rotary embedding (Llama convention) and scaled dot-product attention (MHA, GQA; prefill, decode)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from reference.catalogue.elementwise import softmax
from reference.spec import Entry, Param, TensorSpec, no_weights, require_divisible

ROPE_THETA = 10000.0  # the kernel entry's base; model configs carry their own


def rope_inv_freq(head_dim: int, theta: float, scaling: Mapping | None = None) -> np.ndarray:
    """Inverse frequencies theta^(-2i/H) for i in [0, H/2), float64.

    With `scaling` of type "llama3" (Llama 3.1 and 3.2 configs), wavelengths longer than
    original_max_position_embeddings / low_freq_factor are divided by `factor`, shorter than
    .../high_freq_factor are kept, and those between are interpolated smoothly.
    Shared by every side so that the constant is defined once.
    """
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    if not scaling:
        return inv_freq
    factor = scaling["factor"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    context = scaling["original_max_position_embeddings"]
    wavelen = 2 * np.pi / inv_freq
    scaled = np.where(wavelen > context / low, inv_freq / factor, inv_freq)
    smooth = (context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= context / high) & (wavelen <= context / low)
    return np.where(medium, smoothed, scaled)


def rope_cos_sin(positions: np.ndarray, inv_freq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of shape [T, H]: each angle appears twice (half-split convention)."""
    angles_th = np.outer(positions, inv_freq)
    angles_th = np.concatenate([angles_th, angles_th], axis=-1)
    return np.cos(angles_th), np.sin(angles_th)


def apply_rope(x_bnth: np.ndarray, cos_th: np.ndarray, sin_th: np.ndarray) -> np.ndarray:
    """x * cos + rotate_half(x) * sin, rotate_half([x1, x2]) = [-x2, x1] (HF Llama convention)."""
    half = x_bnth.shape[-1] // 2
    rotated = np.concatenate([-x_bnth[..., half:], x_bnth[..., :half]], axis=-1)
    return x_bnth * cos_th + rotated * sin_th


def attention(q_bnth: np.ndarray, k_bksh: np.ndarray, v_bksh: np.ndarray, causal: bool, window: int = 0) -> np.ndarray:
    """softmax(q k^T / sqrt(H) + mask) v, query head n reading kv head n // G.

    The causal mask is aligned bottom-right: query t (of T) sees keys s <= t + S - T, so a
    single decode token sees the whole cache. A sliding `window` (0: none) also hides the keys
    more than window - 1 positions before the query: s > t + S - T - window (Mistral's, as
    transformers masks it).
    """
    n_heads, n_kv = q_bnth.shape[1], k_bksh.shape[1]
    group = n_heads // n_kv
    k_bnsh = np.repeat(k_bksh, group, axis=1)
    v_bnsh = np.repeat(v_bksh, group, axis=1)
    scores_bnts = q_bnth @ np.swapaxes(k_bnsh, -1, -2) / np.sqrt(q_bnth.shape[-1])
    t, s = scores_bnts.shape[-2:]
    if causal:
        allowed_ts = np.arange(s)[None, :] <= np.arange(t)[:, None] + (s - t)
        if window:
            allowed_ts &= np.arange(s)[None, :] > np.arange(t)[:, None] + (s - t) - window
        scores_bnts = np.where(allowed_ts, scores_bnts, -np.inf)
    return softmax(scores_bnts) @ v_bnsh


BATCH = Param("batch", 2, "sequences")
SEQ = Param("seq", 32, "tokens (prefill) or cache length including the new token (decode)")
N_HEADS = Param("n_heads", 8, "query heads")
N_KV_HEADS = Param("n_kv_heads", 2, "key/value heads; n_heads must be divisible by it")
HEAD_DIM = Param("head_dim", 16, "head dimension", multiple_of=2)
MODE = Param("mode", "prefill", "causal prefill, or one new token against a KV cache", choices=("prefill", "decode"))


def _rope_reference(s, x, w):
    cos, sin = rope_cos_sin(np.arange(s["seq"]), rope_inv_freq(s["head_dim"], ROPE_THETA))
    return apply_rope(x["x"], cos, sin)


def attention_scores_shape(s, n_heads: int) -> tuple[int, ...]:
    """[batch, heads, new tokens, seq]: the largest tensor attention holds (softmax of the scores)."""
    return (s["batch"], n_heads, s["seq"] if s["mode"] == "prefill" else 1, s["seq"])


def _attention_inputs(s):
    t = s["seq"] if s["mode"] == "prefill" else 1
    kv = (s["batch"], s["n_kv_heads"], s["seq"], s["head_dim"])
    return {
        "q": TensorSpec((s["batch"], s["n_heads"], t, s["head_dim"])),
        "k": TensorSpec(kv),
        "v": TensorSpec(kv),
    }


ENTRIES = (
    Entry(
        name="rope",
        description="rotary position embedding, Llama half-split convention, positions 0..seq-1, theta 1e4",
        params=(BATCH, SEQ, N_HEADS, HEAD_DIM),
        inputs=lambda s: {"x": TensorSpec((s["batch"], s["n_heads"], s["seq"], s["head_dim"]))},
        weights=no_weights,
        reference=_rope_reference,
    ),
    Entry(
        name="attention",
        description="causal scaled dot-product attention, multi-head or grouped-query, prefill or decode",
        params=(BATCH, SEQ, N_HEADS, N_KV_HEADS, HEAD_DIM, MODE),
        inputs=_attention_inputs,
        weights=no_weights,
        reference=lambda s, x, w: attention(x["q"], x["k"], x["v"], causal=s["mode"] == "prefill"),
        check=lambda s: require_divisible("attention", s, "n_heads", "n_kv_heads"),
        largest=lambda s: {"scores": attention_scores_shape(s, s["n_heads"])},
        reduction=lambda s: max(s["seq"], s["head_dim"]),  # scores over head_dim, softmax and values over seq
        layout=(
            "reference and PyTorch: [batch, heads, seq, head_dim]; JAX (jax.nn.dot_product_attention layout): "
            "[batch, seq, heads, head_dim] = x.transpose(0,2,1,3), output transposed back"
        ),
    ),
)
