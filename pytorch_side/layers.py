"""Idiomatic PyTorch modules for the transformer entries.

Attribute names are the canonical weight names (see reference.catalogue.transformer), so a
module's `state_dict()` keys are exactly the catalogue's weight keys.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from reference.catalogue.attention import rope_inv_freq
from reference.catalogue.mlp import MOE_DISPATCH, expert_capacity, routed_moe  # noqa: F401 (routed_moe: for the lowering)
from reference.models import ModelConfig


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    """RoPE, Llama half-split convention: angles in float32, cos/sin cast to the activation dtype."""

    def __init__(self, head_dim: int, theta: float, scaling: dict | None = None):
        super().__init__()
        inv_freq = torch.tensor(rope_inv_freq(head_dim, theta, scaling), dtype=torch.float32)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x_bnth: torch.Tensor, offset: int = 0) -> torch.Tensor:
        t = x_bnth.shape[-2]
        positions = torch.arange(
            offset, offset + t, dtype=torch.float32, device=x_bnth.device
        )  # on the input's device (torch-xla's too)
        angles_th = torch.outer(positions, self.inv_freq)
        angles_th = torch.cat((angles_th, angles_th), dim=-1)
        cos, sin = angles_th.cos().to(x_bnth.dtype), angles_th.sin().to(x_bnth.dtype)
        return x_bnth * cos + rotate_half(x_bnth) * sin


class Attention(nn.Module):
    """Multi-head or grouped-query self-attention with an optional KV cache."""

    def __init__(self, cfg: ModelConfig, dtype: torch.dtype):
        super().__init__()
        d, h = cfg.d_model, cfg.head_dim
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, h
        qkv_bias = cfg.style == "gpt2" or cfg.qkv_bias
        self.q_proj = nn.Linear(d, cfg.n_heads * h, bias=qkv_bias, dtype=dtype)
        self.k_proj = nn.Linear(d, cfg.n_kv_heads * h, bias=qkv_bias, dtype=dtype)
        self.v_proj = nn.Linear(d, cfg.n_kv_heads * h, bias=qkv_bias, dtype=dtype)
        self.o_proj = nn.Linear(cfg.n_heads * h, d, bias=cfg.style == "gpt2", dtype=dtype)
        self.rotary = Rotary(h, cfg.rope_theta, cfg.rope_scaling) if cfg.uses_rope else None
        if cfg.qk_norm:  # Qwen3: each head's query and key RMS-normalized over head_dim, before RoPE
            self.q_norm = nn.RMSNorm(h, eps=cfg.norm_eps, dtype=dtype)
            self.k_norm = nn.RMSNorm(h, eps=cfg.norm_eps, dtype=dtype)
        self.qk_norm = cfg.qk_norm
        self.sliding_window = cfg.sliding_window

    def forward(self, x_btd, k_cache=None, v_cache=None):
        """k_cache, v_cache (decode): [B, K, S, H] buffers of the whole sequence, the new tokens' slots
        last. The new keys and values are written into those slots (`slice_scatter`, which torch-mlir
        lowers to a scatter at a constant index: an update in place of a donated buffer, as XLA and
        TensorRT-LLM run it), and attention reads the buffer once. Returns (o, k, v): the updated buffers."""
        b, t, _ = x_btd.shape
        past = 0 if k_cache is None else k_cache.shape[2] - t
        q = self.q_proj(x_btd).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)  # [B, N, T, H]
        k = self.k_proj(x_btd).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)  # [B, K, T, H]
        v = self.v_proj(x_btd).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        if self.rotary is not None:
            q, k = self.rotary(q, past), self.rotary(k, past)
        if k_cache is not None:
            k = torch.slice_scatter(k_cache, k, dim=2, start=past, end=past + t)  # [B, K, S, H]
            v = torch.slice_scatter(v_cache, v, dim=2, start=past, end=past + t)
        # Prefill: causal over equal-length q and k. Decode: one query sees the whole cache, or with a
        # sliding window its last `window` positions, the only ones read.
        window = self.sliding_window
        if window and k_cache is None:
            pos = torch.arange(t)
            band = (pos[None, :] <= pos[:, None]) & (pos[None, :] > pos[:, None] - window)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=band, enable_gqa=True)
        elif window and k.shape[2] > window:
            o = F.scaled_dot_product_attention(q, k[:, :, -window:], v[:, :, -window:], enable_gqa=True)
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=k_cache is None, enable_gqa=True)
        o = o.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim)  # [B, T, N*H]
        return self.o_proj(o), k, v


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)), Llama's MLP."""

    def __init__(self, d_model: int, d_ff: int, dtype: torch.dtype):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False, dtype=dtype)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False, dtype=dtype)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False, dtype=dtype)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class GeluMLP(nn.Module):
    """proj(gelu_tanh(fc(x))), GPT-2's MLP."""

    def __init__(self, d_model: int, d_ff: int, dtype: torch.dtype):
        super().__init__()
        self.fc = nn.Linear(d_model, d_ff, dtype=dtype)
        self.proj = nn.Linear(d_ff, d_model, dtype=dtype)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class MoE(nn.Module):
    """Mixtral routing (softmax in float32, top-k, renormalize) over SwiGLU experts, dense dispatch."""

    def __init__(self, d_model: int, d_ff: int, n_experts: int, top_k: int, dtype: torch.dtype):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(d_model, n_experts, bias=False, dtype=dtype)
        self.experts = nn.ModuleList(SwiGLU(d_model, d_ff, dtype) for _ in range(n_experts))

    def forward(self, x):
        shape = x.shape
        x_td = x.reshape(-1, shape[-1])
        probs_te = F.softmax(self.router(x_td).float(), dim=-1)
        top_p, top_i = torch.topk(probs_te, self.top_k, dim=-1)
        top_p = top_p / top_p.sum(dim=-1, keepdim=True)
        weights_te = torch.zeros_like(probs_te).scatter(1, top_i, top_p).to(x.dtype)
        out = torch.zeros_like(x_td)
        dispatch = MOE_DISPATCH.get()
        if dispatch is None:  # dense: every expert on every token
            for e, expert in enumerate(self.experts):
                out = out + weights_te[:, e : e + 1] * expert(x_td)
            return out.reshape(shape)
        tokens, n = weights_te.shape
        active, capacity = (n, tokens) if dispatch == "full" else expert_capacity(tokens, n, self.top_k)
        for e in range(active):  # routed: gather the expert's rows, run it, scatter-add its output
            weight_c, rows = torch.topk(weights_te[:, e], capacity)
            out = out.index_add(0, rows, weight_c[:, None] * self.experts[e](x_td.index_select(0, rows)))
        return out.reshape(shape)


def make_mlp(cfg: ModelConfig, dtype: torch.dtype) -> nn.Module:
    if cfg.n_experts:
        return MoE(cfg.d_model, cfg.d_ff, cfg.n_experts, cfg.top_k, dtype)
    if cfg.mlp_kind == "gelu":
        return GeluMLP(cfg.d_model, cfg.d_ff, dtype)
    return SwiGLU(cfg.d_model, cfg.d_ff, dtype)


def make_norm(cfg: ModelConfig, dtype: torch.dtype) -> nn.Module:
    if cfg.norm == "layernorm":
        return nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps, dtype=dtype)
    return nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps, dtype=dtype)


class Block(nn.Module):
    """Pre-norm block: x + attn(norm(x)), then + mlp(norm(x)). Returns (y, k_cache, v_cache)."""

    def __init__(self, cfg: ModelConfig, dtype: torch.dtype):
        super().__init__()
        self.attn_norm = make_norm(cfg, dtype)
        self.attn = Attention(cfg, dtype)
        self.mlp_norm = make_norm(cfg, dtype)
        self.mlp = make_mlp(cfg, dtype)

    def forward(self, x_btd, k_cache=None, v_cache=None):
        attn, k, v = self.attn(self.attn_norm(x_btd), k_cache, v_cache)
        x_btd = x_btd + attn
        return x_btd + self.mlp(self.mlp_norm(x_btd)), k, v


def embed_tokens(embed: nn.Embedding, pos_embed: nn.Embedding | None, ids_bt, past: int = 0):
    """Token embedding, plus learned positions past..past+T-1 when the model has them (GPT-2)."""
    x = embed(ids_bt)
    if pos_embed is not None:
        x = x + pos_embed(torch.arange(past, past + ids_bt.shape[1], device=ids_bt.device))
    return x


def project_logits(norm: nn.Module, lm_head: nn.Linear | None, embed: nn.Embedding | None, x):
    """Final norm, then the LM head, or the embedding table's transpose when tied."""
    x = norm(x)
    return lm_head(x) if lm_head is not None else F.linear(x, embed.weight)


class Decoder(nn.Module):
    """Token embedding (+ learned positions for GPT-2), blocks, final norm, LM head -> logits."""

    def __init__(self, cfg: ModelConfig, dtype: torch.dtype):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model, dtype=dtype)
        self.pos_embed = nn.Embedding(cfg.max_positions, cfg.d_model, dtype=dtype) if cfg.style == "gpt2" else None
        self.layers = nn.ModuleList(Block(cfg, dtype) for _ in range(cfg.n_layers))
        self.norm = make_norm(cfg, dtype)
        self.lm_head = None if cfg.tie_embeddings else nn.Linear(cfg.d_model, cfg.vocab, bias=False, dtype=dtype)

    def forward(self, ids_bt, k_cache=None, v_cache=None):
        """k_cache, v_cache: [L, B, K, S, H] in decode (the new token's slot last), None in prefill."""
        past = 0 if k_cache is None else k_cache.shape[3] - ids_bt.shape[1]
        x = embed_tokens(self.embed, self.pos_embed, ids_bt, past)
        for i, layer in enumerate(self.layers):
            caches = (None, None) if k_cache is None else (k_cache[i], v_cache[i])
            x, _, _ = layer(x, *caches)
        return project_logits(self.norm, self.lm_head, self.embed, x)


class Prologue(nn.Module):
    """The decoder before its blocks (regional lowering): ids -> embeddings."""

    def __init__(self, cfg: ModelConfig, dtype: torch.dtype, past: int = 0):
        super().__init__()
        self.past = past
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model, dtype=dtype)
        self.pos_embed = nn.Embedding(cfg.max_positions, cfg.d_model, dtype=dtype) if cfg.style == "gpt2" else None

    def forward(self, ids_bt):
        return embed_tokens(self.embed, self.pos_embed, ids_bt, self.past)


class Epilogue(nn.Module):
    """The decoder after its blocks (regional lowering): final norm and LM head -> logits.

    With tied embeddings the table is registered last, as `tied_embed`, so the regional
    composer can tell it is the prologue's table again.
    """

    def __init__(self, cfg: ModelConfig, dtype: torch.dtype):
        super().__init__()
        self.norm = make_norm(cfg, dtype)
        self.lm_head = None if cfg.tie_embeddings else nn.Linear(cfg.d_model, cfg.vocab, bias=False, dtype=dtype)
        self.tied_embed = nn.Embedding(cfg.vocab, cfg.d_model, dtype=dtype) if cfg.tie_embeddings else None

    def forward(self, x):
        return project_logits(self.norm, self.lm_head, self.tied_embed, x)
