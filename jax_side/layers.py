"""Idiomatic Flax NNX modules for the transformer entries, over pure jax.numpy functions.

Attribute names match pytorch_side/layers.py, so both module trees have the same paths and
the converter in jax_side/params.py maps canonical names one to one.
"""

from __future__ import annotations

import contextvars

import jax
import jax.numpy as jnp
from flax import nnx

from reference.catalogue.attention import rope_inv_freq
from reference.catalogue.mlp import MOE_DISPATCH, expert_capacity, routed_moe  # noqa: F401 (routed_moe: for the lowering)
from reference.models import ModelConfig


def rotate_half(x):
    x1, x2 = jnp.split(x, 2, axis=-1)
    return jnp.concatenate([-x2, x1], axis=-1)


def apply_rope(x_bnth, inv_freq, offset: int = 0):
    """Llama half-split RoPE on [..., T, H]: angles in float32, cos/sin cast to x's dtype."""
    t = x_bnth.shape[-2]
    positions = jnp.arange(offset, offset + t, dtype=jnp.float32)
    angles_th = jnp.outer(positions, inv_freq)
    angles_th = jnp.concatenate([angles_th, angles_th], axis=-1)
    lead = (1,) * (x_bnth.ndim - 2)  # broadcast over batch and heads explicitly
    cos = jnp.cos(angles_th).astype(x_bnth.dtype).reshape(*lead, t, -1)
    sin = jnp.sin(angles_th).astype(x_bnth.dtype).reshape(*lead, t, -1)
    return x_bnth * cos + rotate_half(x_bnth) * sin


def rope_frequencies(head_dim: int, theta: float, scaling: dict | None = None):
    return jnp.asarray(rope_inv_freq(head_dim, theta, scaling), dtype=jnp.float32)


def dot_product_attention(q_btnh, k_bskh, v_bskh, causal: bool, window: int = 0):
    """softmax(q k^T / sqrt(H)) v on [B, T, N, H], query head n reading kv head n // G.

    Logits and softmax in float32, as jax.nn.dot_product_attention's XLA path does; written
    out because that function asks for a float16 x float16 -> float32 dot that XLA's CPU
    backend rejects ("precision F16_F16_F32 is not supported").
    """
    b, t, n, h = q_btnh.shape
    kv = k_bskh.shape[2]
    q_btkgh = q_btnh.reshape(b, t, kv, n // kv, h)
    logits_bkgts = jnp.einsum("btkgh,bskh->bkgts", q_btkgh, k_bskh).astype(jnp.float32) / jnp.sqrt(h)
    if causal:
        s = k_bskh.shape[1]
        allowed_ts = jnp.arange(s)[None, :] <= jnp.arange(t)[:, None] + (s - t)
        if window:  # a sliding window also hides the keys window or more positions back
            allowed_ts &= jnp.arange(s)[None, :] > jnp.arange(t)[:, None] + (s - t) - window
        logits_bkgts = jnp.where(allowed_ts[None, None, None], logits_bkgts, -jnp.inf)
    probs_bkgts = jax.nn.softmax(logits_bkgts, axis=-1).astype(q_btnh.dtype)
    o_btkgh = jnp.einsum("bkgts,bskh->btkgh", probs_bkgts, v_bskh)
    return o_btkgh.reshape(b, t, n, h)


# Set while a training step is traced (jax_side/train.py): the attention core is wrapped in
# jax.checkpoint saving nothing, so its backward recomputes the scores from q, k and v, as
# FlashAttention's backward does, and no [T, S] activation is kept (reference/training.py).
RECOMPUTE_ATTENTION: contextvars.ContextVar[bool] = contextvars.ContextVar("recompute_attention", default=False)


def sdpa_bnth(q_bnth, k_bksh, v_bksh, causal: bool, window: int = 0):
    """dot_product_attention on the [B, N, T, H] layout that the KV cache shares with PyTorch."""
    core = dot_product_attention
    if RECOMPUTE_ATTENTION.get():
        core = jax.checkpoint(core, static_argnums=(3, 4), policy=jax.checkpoint_policies.nothing_saveable)
    o_btnh = core(
        q_bnth.transpose(0, 2, 1, 3), k_bksh.transpose(0, 2, 1, 3), v_bksh.transpose(0, 2, 1, 3), causal, window
    )
    return o_btnh.transpose(0, 2, 1, 3)


def linear(d_in, d_out, use_bias, dtype, rngs):
    return nnx.Linear(d_in, d_out, use_bias=use_bias, dtype=dtype, param_dtype=dtype, rngs=rngs)


class Attention(nnx.Module):
    """Multi-head or grouped-query self-attention with an optional KV cache ([B, K, S, H])."""

    def __init__(self, cfg: ModelConfig, dtype, rngs: nnx.Rngs):
        d, h = cfg.d_model, cfg.head_dim
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, h
        qkv_bias = cfg.style == "gpt2" or cfg.qkv_bias
        self.q_proj = linear(d, cfg.n_heads * h, qkv_bias, dtype, rngs)
        self.k_proj = linear(d, cfg.n_kv_heads * h, qkv_bias, dtype, rngs)
        self.v_proj = linear(d, cfg.n_kv_heads * h, qkv_bias, dtype, rngs)
        self.o_proj = linear(cfg.n_heads * h, d, cfg.style == "gpt2", dtype, rngs)
        if cfg.qk_norm:  # Qwen3: each head's query and key RMS-normalized over head_dim, before RoPE
            kw = dict(epsilon=cfg.norm_eps, dtype=dtype, param_dtype=dtype, rngs=rngs)
            self.q_norm, self.k_norm = nnx.RMSNorm(h, **kw), nnx.RMSNorm(h, **kw)
        self.cfg = cfg  # static: the RoPE constants are computed at trace time, not stored as state

    def __call__(self, x_btd, k_cache=None, v_cache=None):
        """k_cache, v_cache (decode): [B, K, S, H] buffers of the whole sequence, the new tokens' slots
        last; the new keys and values are written into them with dynamic_update_slice (in place when
        the caller donates the buffers, jax.jit's donate_argnums) and attention reads them once."""
        b, t, _ = x_btd.shape
        past = 0 if k_cache is None else k_cache.shape[2] - t
        with jax.named_scope("q_proj"):
            q = self.q_proj(x_btd).reshape(b, t, self.n_heads, self.head_dim).transpose(0, 2, 1, 3)  # [B, N, T, H]
        with jax.named_scope("k_proj"):
            k = self.k_proj(x_btd).reshape(b, t, self.n_kv_heads, self.head_dim).transpose(0, 2, 1, 3)  # [B, K, T, H]
        with jax.named_scope("v_proj"):
            v = self.v_proj(x_btd).reshape(b, t, self.n_kv_heads, self.head_dim).transpose(0, 2, 1, 3)
        if self.cfg.qk_norm:
            with jax.named_scope("qk_norm"):
                q, k = self.q_norm(q), self.k_norm(k)
        if self.cfg.uses_rope:
            inv_freq = rope_frequencies(self.head_dim, self.cfg.rope_theta, self.cfg.rope_scaling)
            q, k = apply_rope(q, inv_freq, past), apply_rope(k, inv_freq, past)
        if k_cache is not None:
            k = jax.lax.dynamic_update_slice(k_cache, k, (0, 0, past, 0))
            v = jax.lax.dynamic_update_slice(v_cache, v, (0, 0, past, 0))
        window = self.cfg.sliding_window
        k_seen, v_seen = k, v
        if k_cache is not None and window and k.shape[2] > window:  # decode reads only its window of cache
            k_seen, v_seen = k[:, :, -window:], v[:, :, -window:]
        with jax.named_scope("sdpa"):
            o = sdpa_bnth(q, k_seen, v_seen, causal=k_cache is None, window=window if k_cache is None else 0)
        o = o.transpose(0, 2, 1, 3).reshape(b, t, self.n_heads * self.head_dim)  # [B, T, N*H]
        with jax.named_scope("o_proj"):
            return self.o_proj(o), k, v


class SwiGLU(nnx.Module):
    def __init__(self, d_model: int, d_ff: int, dtype, rngs: nnx.Rngs):
        self.gate_proj = linear(d_model, d_ff, False, dtype, rngs)
        self.up_proj = linear(d_model, d_ff, False, dtype, rngs)
        self.down_proj = linear(d_ff, d_model, False, dtype, rngs)

    def __call__(self, x):
        return self.down_proj(jax.nn.silu(self.gate_proj(x)) * self.up_proj(x))


class GeluMLP(nnx.Module):
    def __init__(self, d_model: int, d_ff: int, dtype, rngs: nnx.Rngs):
        self.fc = linear(d_model, d_ff, True, dtype, rngs)
        self.proj = linear(d_ff, d_model, True, dtype, rngs)

    def __call__(self, x):
        return self.proj(jax.nn.gelu(self.fc(x), approximate=True))


class MoE(nnx.Module):
    """Mixtral routing (softmax in float32, top-k, renormalize) over SwiGLU experts, dense dispatch."""

    def __init__(self, d_model: int, d_ff: int, n_experts: int, top_k: int, dtype, rngs: nnx.Rngs):
        self.top_k = top_k
        self.router = linear(d_model, n_experts, False, dtype, rngs)
        self.experts = nnx.List([SwiGLU(d_model, d_ff, dtype, rngs) for _ in range(n_experts)])

    def __call__(self, x):
        x_td = x.reshape(-1, x.shape[-1])
        probs_te = jax.nn.softmax(self.router(x_td).astype(jnp.float32), axis=-1)
        top_p, top_i = jax.lax.top_k(probs_te, self.top_k)
        top_p = top_p / top_p.sum(axis=-1, keepdims=True)
        weights_te = (jax.nn.one_hot(top_i, probs_te.shape[-1]) * top_p[..., None]).sum(axis=1).astype(x.dtype)
        out = jnp.zeros_like(x_td)
        dispatch = MOE_DISPATCH.get()
        if dispatch is None:  # dense: every expert on every token
            for e, expert in enumerate(self.experts):
                out = out + weights_te[:, e : e + 1] * expert(x_td)
            return out.reshape(x.shape)
        tokens, n = weights_te.shape
        active, capacity = (n, tokens) if dispatch == "full" else expert_capacity(tokens, n, self.top_k)
        for e in range(active):  # routed: gather the expert's rows, run it, scatter-add its output
            weight_c, rows = jax.lax.top_k(weights_te[:, e], capacity)
            out = out.at[rows].add(weight_c[:, None] * self.experts[e](jnp.take(x_td, rows, axis=0)))
        return out.reshape(x.shape)


def make_mlp(cfg: ModelConfig, dtype, rngs):
    if cfg.n_experts:
        return MoE(cfg.d_model, cfg.d_ff, cfg.n_experts, cfg.top_k, dtype, rngs)
    if cfg.mlp_kind == "gelu":
        return GeluMLP(cfg.d_model, cfg.d_ff, dtype, rngs)
    return SwiGLU(cfg.d_model, cfg.d_ff, dtype, rngs)


# Flax's LayerNorm defaults to the one-pass variance E[x^2] - E[x]^2, which cancels catastrophically
# when the mean is large against the spread (float32, d=2: 1e-4 relative off the float64 reference).
# PyTorch and the reference take the mean first, then the mean of squared deviations; so does this side.
NORM_OPTIONS: dict[type, dict] = {nnx.LayerNorm: {"use_fast_variance": False}}


def make_norm(cfg: ModelConfig, dtype, rngs):
    kw = dict(epsilon=cfg.norm_eps, dtype=dtype, param_dtype=dtype, rngs=rngs)
    if cfg.norm == "layernorm":
        return nnx.LayerNorm(cfg.d_model, **kw, **NORM_OPTIONS[nnx.LayerNorm])
    return nnx.RMSNorm(cfg.d_model, **kw)


class Block(nnx.Module):
    """Pre-norm block: x + attn(norm(x)), then + mlp(norm(x)). Returns (y, k_cache, v_cache)."""

    def __init__(self, cfg: ModelConfig, dtype, rngs: nnx.Rngs):
        self.attn_norm = make_norm(cfg, dtype, rngs)
        self.attn = Attention(cfg, dtype, rngs)
        self.mlp_norm = make_norm(cfg, dtype, rngs)
        self.mlp = make_mlp(cfg, dtype, rngs)

    def __call__(self, x_btd, k_cache=None, v_cache=None):
        # Scopes named after the PyTorch module paths, so both sides' provenance lines up.
        with jax.named_scope("attn_norm"):
            h = self.attn_norm(x_btd)
        with jax.named_scope("attn"):
            attn, k, v = self.attn(h, k_cache, v_cache)
        x_btd = x_btd + attn
        with jax.named_scope("mlp_norm"):
            h = self.mlp_norm(x_btd)
        with jax.named_scope("mlp"):
            return x_btd + self.mlp(h), k, v


def embed_tokens(embed: nnx.Embed, pos_embed: nnx.Embed | None, ids_bt, past: int = 0):
    """Token embedding, plus learned positions past..past+T-1 when the model has them (GPT-2)."""
    x = embed(ids_bt)
    if pos_embed is not None:
        x = x + pos_embed(jnp.arange(past, past + ids_bt.shape[1]))[None]  # [1, T, D]
    return x


def project_logits(norm, lm_head, embed, x):
    """Final norm, then the LM head, or the embedding table's transpose when tied."""
    x = norm(x)
    return lm_head(x) if lm_head is not None else embed.attend(x)


class Decoder(nnx.Module):
    """Token embedding (+ learned positions for GPT-2), blocks, final norm, LM head -> logits."""

    def __init__(self, cfg: ModelConfig, dtype, rngs: nnx.Rngs):
        embed = dict(dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.embed = nnx.Embed(cfg.vocab, cfg.d_model, **embed)
        self.pos_embed = nnx.Embed(cfg.max_positions, cfg.d_model, **embed) if cfg.style == "gpt2" else None
        self.layers = nnx.List([Block(cfg, dtype, rngs) for _ in range(cfg.n_layers)])
        self.norm = make_norm(cfg, dtype, rngs)
        self.lm_head = None if cfg.tie_embeddings else linear(cfg.d_model, cfg.vocab, False, dtype, rngs)

    def __call__(self, ids_bt, k_cache=None, v_cache=None):
        """k_cache, v_cache: [L, B, K, S, H] in decode (the new token's slot last), None in prefill."""
        past = 0 if k_cache is None else k_cache.shape[3] - ids_bt.shape[1]
        x = embed_tokens(self.embed, self.pos_embed, ids_bt, past)
        for i, layer in enumerate(self.layers):
            caches = (None, None) if k_cache is None else (k_cache[i], v_cache[i])
            with jax.named_scope(f"layers.{i}"):
                x, _, _ = layer(x, *caches)
        return project_logits(self.norm, self.lm_head, self.embed, x)


class Prologue(nnx.Module):
    """The decoder before its blocks (regional lowering): ids -> embeddings."""

    def __init__(self, cfg: ModelConfig, dtype, rngs: nnx.Rngs, past: int = 0):
        self.past = past
        embed = dict(dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.embed = nnx.Embed(cfg.vocab, cfg.d_model, **embed)
        self.pos_embed = nnx.Embed(cfg.max_positions, cfg.d_model, **embed) if cfg.style == "gpt2" else None

    def __call__(self, ids_bt):
        return embed_tokens(self.embed, self.pos_embed, ids_bt, self.past)


class Epilogue(nnx.Module):
    """The decoder after its blocks (regional lowering): final norm and LM head -> logits.

    With tied embeddings the table is `tied_embed`, which sorts after `norm` in NNX state,
    so it is the last weight argument and the composer can tell it is the prologue's table.
    """

    def __init__(self, cfg: ModelConfig, dtype, rngs: nnx.Rngs):
        self.norm = make_norm(cfg, dtype, rngs)
        self.lm_head = None if cfg.tie_embeddings else linear(cfg.d_model, cfg.vocab, False, dtype, rngs)
        tied = dict(dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.tied_embed = nnx.Embed(cfg.vocab, cfg.d_model, **tied) if cfg.tie_embeddings else None

    def __call__(self, x):
        return project_logits(self.norm, self.lm_head, self.tied_embed, x)
