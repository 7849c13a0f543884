"""Transformer blocks (Llama-style, Qwen3's QK-norm, GPT-2-style) and decoders, prefill and decode
with a KV cache.

Canonical weight names are the PyTorch state-dict keys of `pytorch_side`'s modules:
`attn_norm`, `attn.{q,k,v,o}_proj`, `attn.{q,k}_norm` (QK-norm), `mlp_norm`, `mlp.*`, under `layers.{i}.` in a decoder,
with `embed`, `pos_embed` (GPT-2), `norm` and `lm_head` around them.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from reference.catalogue.attention import (
    apply_rope,
    attention,
    rope_cos_sin,
    rope_inv_freq,
)
from reference.catalogue.mlp import mlp, mlp_weights, moe, moe_weights, projection_terms
from reference.catalogue.norms import layernorm, rmsnorm
from reference.errors import InvalidShape
from reference.models import ModelConfig, get_model, load_models
from reference.spec import (
    Entry,
    Param,
    TensorSpec,
    bias,
    gain,
    require_divisible,
    weight,
)

STYLE = Param(
    "style",
    "llama",
    "llama: RMSNorm, GQA+RoPE, SwiGLU; qwen3: llama with an RMSNorm on each head's q and k (QK-norm); "
    "gpt2: LayerNorm, MHA, GELU MLP",
    choices=("llama", "qwen3", "gpt2"),
)
MODE = Param("mode", "prefill", "whole sequence, or one new token against a KV cache", choices=("prefill", "decode"))
BATCH = Param("batch", 2, "sequences")
SEQ = Param("seq", 16, "tokens (prefill) or cache length including the new token (decode)")


def new_tokens(s) -> int:
    """Tokens processed now: the whole sequence in prefill, one in decode."""
    return s["seq"] if s["mode"] == "prefill" else 1


# ---------------------------------------------------------------- weights


def block_weights(cfg: ModelConfig, prefix: str = "") -> dict[str, TensorSpec]:
    d, h = cfg.d_model, cfg.head_dim
    gpt2 = cfg.style == "gpt2"
    out: dict[str, TensorSpec] = {f"{prefix}attn_norm.weight": gain((d,))}
    if gpt2:
        out[f"{prefix}attn_norm.bias"] = bias((d,))
    for proj, heads in (("q", cfg.n_heads), ("k", cfg.n_kv_heads), ("v", cfg.n_kv_heads)):
        out[f"{prefix}attn.{proj}_proj.weight"] = weight((heads * h, d), d)
        if gpt2 or cfg.qkv_bias:
            out[f"{prefix}attn.{proj}_proj.bias"] = bias((heads * h,))
    if cfg.qk_norm:
        out[f"{prefix}attn.q_norm.weight"] = gain((h,))
        out[f"{prefix}attn.k_norm.weight"] = gain((h,))
    out[f"{prefix}attn.o_proj.weight"] = weight((d, cfg.n_heads * h), cfg.n_heads * h)
    if gpt2:
        out[f"{prefix}attn.o_proj.bias"] = bias((d,))
    out[f"{prefix}mlp_norm.weight"] = gain((d,))
    if gpt2:
        out[f"{prefix}mlp_norm.bias"] = bias((d,))
    if cfg.n_experts:
        out.update(moe_weights(d, cfg.d_ff, cfg.n_experts, f"{prefix}mlp."))
    else:
        out.update(mlp_weights(d, cfg.d_ff, cfg.mlp_kind, f"{prefix}mlp."))
    return out


def decoder_weights(cfg: ModelConfig) -> dict[str, TensorSpec]:
    d = cfg.d_model
    out = {"embed.weight": TensorSpec((cfg.vocab, d))}
    if cfg.style == "gpt2":
        out["pos_embed.weight"] = TensorSpec((cfg.max_positions, d), std=0.1)
    for i in range(cfg.n_layers):
        out.update(block_weights(cfg, f"layers.{i}."))
    out["norm.weight"] = gain((d,))
    if cfg.style == "gpt2":
        out["norm.bias"] = bias((d,))
    if not cfg.tie_embeddings:
        out["lm_head.weight"] = weight((cfg.vocab, d), d)
    return out


# ---------------------------------------------------------------- float64 forward

TINY = np.finfo(float).tiny  # a zero norm's divisor: its gain is then huge, never a division by zero


def _norm(cfg, x, w, name):
    if cfg.norm == "layernorm":
        return layernorm(x, w[f"{name}.weight"], w[f"{name}.bias"], cfg.norm_eps)
    return rmsnorm(x, w[f"{name}.weight"], cfg.norm_eps)


def _proj(x, w, name):
    y = x @ w[f"{name}.weight"].T
    return y + w[f"{name}.bias"] if f"{name}.bias" in w else y


def write_slots(cache_bksh: np.ndarray, new_bkth: np.ndarray, past: int) -> np.ndarray:
    """The cache buffer with positions past..past+T-1 replaced by the new tokens (a copy: the
    reference never mutates its inputs)."""
    out = cache_bksh.copy()
    out[:, :, past : past + new_bkth.shape[2]] = new_bkth
    return out


def block_forward(cfg: ModelConfig, x_btd, w, prefix="", k_cache=None, v_cache=None, parts=None, qk_gain=None):
    """One pre-norm block. Returns (y_btd, k_bksh, v_bksh), the cache including the new tokens.
    `parts`, a list: the block's two additions to the residual stream are appended to it
    (attention's output projection, then the MLP's), and with QK-norm, to `qk_gain` the largest
    root-sum-square of a head's projection terms over that head's norm, of the queries and of
    the keys (`residual_terms`).

    k_cache, v_cache (decode): [B, K, S, H] buffers of the whole sequence, the new tokens' slots
    last (their contents are ignored); the new keys and values are written into those slots, as
    the frameworks update a donated cache buffer in place, and attention reads the whole buffer.
    """
    b, t, _ = x_btd.shape
    n, kv, h = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    past = 0 if k_cache is None else k_cache.shape[2] - t
    hx = _norm(cfg, x_btd, w, f"{prefix}attn_norm")
    q_bnth = _proj(hx, w, f"{prefix}attn.q_proj").reshape(b, t, n, h).transpose(0, 2, 1, 3)
    k_bkth = _proj(hx, w, f"{prefix}attn.k_proj").reshape(b, t, kv, h).transpose(0, 2, 1, 3)
    v_bkth = _proj(hx, w, f"{prefix}attn.v_proj").reshape(b, t, kv, h).transpose(0, 2, 1, 3)
    if cfg.qk_norm:  # Qwen3: each head's query and key RMS-normalized over head_dim, before RoPE
        if qk_gain is not None:  # the heads' cancellation, as residual_terms reads it
            for proj, heads in (("q_proj", q_bnth), ("k_proj", k_bkth)):
                spread = projection_terms(hx, w[f"{prefix}attn.{proj}.weight"])
                spread = spread.reshape(b, t, -1, h).transpose(0, 2, 1, 3).sum(-1)
                qk_gain.append(float((np.sqrt(spread) / np.maximum(np.sqrt((heads**2).sum(-1)), TINY)).max()))
        q_bnth = rmsnorm(q_bnth, w[f"{prefix}attn.q_norm.weight"], cfg.norm_eps)
        k_bkth = rmsnorm(k_bkth, w[f"{prefix}attn.k_norm.weight"], cfg.norm_eps)
    if cfg.uses_rope:
        cos, sin = rope_cos_sin(np.arange(past, past + t), rope_inv_freq(h, cfg.rope_theta, cfg.rope_scaling))
        q_bnth, k_bkth = apply_rope(q_bnth, cos, sin), apply_rope(k_bkth, cos, sin)
    if k_cache is not None:
        k_bkth = write_slots(k_cache, k_bkth, past)
        v_bkth = write_slots(v_cache, v_bkth, past)
    attn_btd = (
        attention(q_bnth, k_bkth, v_bkth, causal=True, window=cfg.sliding_window)
        .transpose(0, 2, 1, 3)
        .reshape(b, t, n * h)
    )
    attn_out = _proj(attn_btd, w, f"{prefix}attn.o_proj")
    x_btd = x_btd + attn_out
    hx = _norm(cfg, x_btd, w, f"{prefix}mlp_norm")
    if cfg.n_experts:
        ff = moe(hx.reshape(b * t, -1), w, cfg.n_experts, cfg.top_k, f"{prefix}mlp.").reshape(hx.shape)
    else:
        ff = mlp(hx, w, cfg.mlp_kind, f"{prefix}mlp.")
    if parts is not None:
        parts += [attn_out, ff]
    return x_btd + ff, k_bkth, v_bkth


def decoder_forward(cfg: ModelConfig, ids_bt, w, k_cache=None, v_cache=None, parts=None, qk_gain=None):
    """Embedding, n_layers blocks, final norm, LM head. Returns logits [B, T, V].

    k_cache, v_cache (decode): [L, B, K, S, H], the new tokens' slots last (see block_forward).
    `parts`, a list: every addition to the residual stream is appended, the embedding first
    (and to `qk_gain`, each block's; see block_forward)."""
    past = 0 if k_cache is None else k_cache.shape[3] - ids_bt.shape[1]
    x = w["embed.weight"][ids_bt]
    added = [x]
    if cfg.style == "gpt2":
        added.append(np.broadcast_to(w["pos_embed.weight"][past : past + ids_bt.shape[1]], x.shape))
        x = x + added[-1]
    for i in range(cfg.n_layers):
        caches = (None, None) if k_cache is None else (k_cache[i], v_cache[i])
        x, _, _ = block_forward(cfg, x, w, f"layers.{i}.", *caches, parts=added, qk_gain=qk_gain)
    if parts is not None:
        parts += added
    x = _norm(cfg, x, w, "norm")
    head = w["embed.weight"] if cfg.tie_embeddings else w["lm_head.weight"]
    return x @ head.T


def residual_terms(cfg: ModelConfig, parts: list, out_bt: np.ndarray, first: int, qk_gain=()) -> float:
    """The bound's scale where the residual stream cancels before a norm reads it.

    The stream is a sum of its additions c_k (`parts`); each is stored rounded, so the stream's
    error is about u x R, R = the root-sum-square of the c_k, elementwise. Where the sum cancels
    (|S| << R) the norm that reads it, S / rms(S) (LayerNorm: S less its mean), divides that
    error by a small rms: its output's error is about u x a, a = ||R|| / ||S|| per row, against
    u x 1 where nothing cancels (a is about 1 for uncorrelated additions). Every partial sum from
    the `first`+1-th addition on is a norm's input (the next sub-block's, or the final norm's);
    per row, the largest a times that row's largest output. Worked case (d_model 2, seq 63, two
    layers, seed 1): row 22's stream has rms 0.064 where its additions are of order one, a about
    17, and float16's error there reaches 8.5 u of the output's maximum. QK-norm (Qwen3) divides
    a head's query or key, a projection's sum, by its norm the same way: the largest such gain of
    any head (`qk_gain`, at least 1) multiplies every row's a, as its error reaches every row
    through attention and then the stream.
    """
    total = np.zeros_like(parts[0], dtype=np.float64)
    squares = np.zeros_like(total)
    worst = np.zeros(total.shape[:-1])
    for k, c in enumerate(parts):
        total, squares = total + c, squares + c * c
        if k < first:
            continue
        s = total - total.mean(-1, keepdims=True) if cfg.norm == "layernorm" else total
        spread = np.sqrt(squares.sum(-1))
        worst = np.maximum(worst, spread / np.maximum(np.sqrt((s * s).sum(-1)), TINY))
    gain = max((1.0, *qk_gain))
    return float((gain * worst * np.abs(out_bt).max(-1)).max()) if worst.size else 0.0


def _decoder_terms(name):
    def terms(s, x, w):
        cfg, parts, gain = config_for(name, s), [], []
        logits = decoder_forward(cfg, x["ids"], w, x.get("k_cache"), x.get("v_cache"), parts=parts, qk_gain=gain)
        return residual_terms(cfg, parts, logits, 2 if cfg.style == "gpt2" else 1, gain)

    return terms


def _block_terms(s, x, w):
    cfg, parts, gain = config_for("block", s), [x["x"]], []
    y, _, _ = block_forward(cfg, x["x"], w, "", x.get("k_cache"), x.get("v_cache"), parts=parts, qk_gain=gain)
    return residual_terms(cfg, parts[:2], y, 1, gain)  # the MLP's norm reads x + attention; y itself is no norm's input


# ---------------------------------------------------------------- entries


def _cache_spec(cfg, s, layers=None):
    """The decode step's cache buffers: the whole sequence, the new token's slot (position seq-1) last."""
    shape = (s["batch"], cfg.n_kv_heads, s["seq"], cfg.head_dim)
    return TensorSpec(shape if layers is None else (layers, *shape))


def config_for(entry_name: str, s) -> ModelConfig:
    """The architecture an entry builds at the given shapes (both sides call this)."""
    if entry_name in ("block", "decoder"):
        base = get_model("tiny")
        style = s["style"]
        return dataclasses.replace(
            base,
            name=entry_name,
            style="llama" if style == "qwen3" else style,
            qk_norm=style == "qwen3",
            d_model=s["n_heads"] * s["head_dim"],
            n_layers=s.get("layers", 1),
            n_heads=s["n_heads"],
            n_kv_heads=s["n_kv_heads"],
            head_dim=s["head_dim"],
            d_ff=s["d_ff"],
            vocab=s.get("vocab", base.vocab),
            max_positions=max(s["seq"], 1),
        )
    return dataclasses.replace(get_model(entry_name), n_layers=s["layers"])


def _block_inputs(s):
    cfg = config_for("block", s)
    out = {"x": TensorSpec((s["batch"], new_tokens(s), cfg.d_model))}
    if s["mode"] == "decode":
        out["k_cache"] = out["v_cache"] = _cache_spec(cfg, s)
    return out


def _block_reference(s, x, w):
    cfg = config_for("block", s)
    return block_forward(cfg, x["x"], w, "", x.get("k_cache"), x.get("v_cache"))


def _decoder_inputs(name):
    def inputs(s):
        cfg = config_for(name, s)
        out = {"ids": TensorSpec((s["batch"], new_tokens(s)), kind="index", high=cfg.vocab)}
        if s["mode"] == "decode":
            out["k_cache"] = out["v_cache"] = _cache_spec(cfg, s, cfg.n_layers)
        return out

    return inputs


def _decoder_reference(name):
    def reference(s, x, w):
        return decoder_forward(config_for(name, s), x["ids"], w, x.get("k_cache"), x.get("v_cache"))

    return reference


def _reduction(name):
    """A block's or decoder's longest sum: a projection over d_model, the MLP's down-projection over
    d_ff, attention over head_dim and the sequence."""

    def reduction(s):
        cfg = config_for(name, s)
        return max(cfg.d_model, cfg.d_ff, cfg.head_dim or cfg.d_model // cfg.n_heads, s["seq"])

    return reduction


def _largest(name):
    """A block's or decoder's largest tensors: the attention scores, the K/V heads repeated to the
    query heads (grouped-query attention), the MLP's hidden layer, the caches it returns and, in a
    decoder, the logits."""

    def largest(s):
        cfg = config_for(name, s)
        t, layers = new_tokens(s), (cfg.n_layers if name != "block" else 1)
        out = {
            "scores": (s["batch"], cfg.n_heads, t, s["seq"]),
            "repeated kv": (s["batch"], cfg.n_heads, s["seq"], cfg.head_dim),
            "mlp hidden": (s["batch"], t, cfg.d_ff),
            "kv cache": (layers, s["batch"], cfg.n_kv_heads, s["seq"], cfg.head_dim),
        }
        if name != "block":
            out["logits"] = (s["batch"], t, cfg.vocab)
        return out

    return largest


def _check_heads(name):
    def check(s):
        require_divisible(name, s, "n_heads", "n_kv_heads")

    return check


def _check_positions(name):
    def check(s):
        cfg = get_model(name)
        if cfg.style == "gpt2" and s["seq"] > cfg.max_positions:
            raise InvalidShape(
                name,
                "seq",
                s["seq"],
                f"must be <= {cfg.max_positions}, its context: {name} has "
                f"{cfg.max_positions} learned positions (max_position_embeddings)",
            )

    return check


_TINY = get_model("tiny")
_ARCH = (
    Param("n_heads", _TINY.n_heads, "query heads"),
    Param("n_kv_heads", _TINY.n_kv_heads, "key/value heads (n_heads divisible by it)"),
    Param("head_dim", _TINY.head_dim, "head dimension; d_model = n_heads * head_dim", multiple_of=2),
    Param("d_ff", _TINY.d_ff, "MLP hidden width"),
)

BLOCK = Entry(
    name="block",
    description="pre-norm transformer block: Llama-style (RMSNorm, GQA+RoPE, SwiGLU) or GPT-2-style",
    params=(BATCH, SEQ, *_ARCH, STYLE, MODE),
    inputs=_block_inputs,
    weights=lambda s: block_weights(config_for("block", s)),
    reference=_block_reference,
    check=_check_heads("block"),
    largest=_largest("block"),
    reduction=_reduction("block"),
    terms=_block_terms,
    layout="returns (y, k_cache, v_cache): the cache after this step (prefill fills it, decode appends one token)",
    kind="kernel",
)

DECODER = Entry(
    name="decoder",
    description="token embedding, N blocks, final norm, LM head (defaults: the `tiny` config)",
    params=(
        BATCH,
        SEQ,
        Param("vocab", _TINY.vocab, "vocabulary"),
        Param("layers", _TINY.n_layers, "blocks"),
        *_ARCH,
        STYLE,
        MODE,
    ),
    inputs=_decoder_inputs("decoder"),
    weights=lambda s: decoder_weights(config_for("decoder", s)),
    reference=_decoder_reference("decoder"),
    check=_check_heads("decoder"),
    largest=_largest("decoder"),
    reduction=_reduction("decoder"),
    terms=_decoder_terms("decoder"),
)


def model_entry(cfg: ModelConfig) -> Entry:
    """A published model as a catalogue entry: a decoder with the config's architecture."""
    kind = f"{cfg.n_experts}-expert MoE " if cfg.n_experts else ""
    return Entry(
        name=cfg.name,
        description=(
            f"{cfg.style}-style {kind}decoder: d_model {cfg.d_model}, {cfg.n_layers} layers, "
            f"{cfg.n_heads} heads / {cfg.n_kv_heads} kv, d_ff {cfg.d_ff}, vocab {cfg.vocab}"
        ),
        params=(
            Param("batch", 1, "sequences"),
            SEQ,
            MODE,
            Param("layers", cfg.n_layers, "blocks (the published count by default)"),
        ),
        inputs=_decoder_inputs(cfg.name),
        weights=lambda s: decoder_weights(config_for(cfg.name, s)),
        reference=_decoder_reference(cfg.name),
        check=_check_positions(cfg.name),
        largest=_largest(cfg.name),
        reduction=_reduction(cfg.name),
        terms=_decoder_terms(cfg.name),
        kind="model",
    )


ENTRIES = (BLOCK, DECODER)
MODEL_ENTRIES = tuple(model_entry(cfg) for cfg in load_models().values())
