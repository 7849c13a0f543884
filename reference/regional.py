"""The shapes of a regional lowering's three parts, shared by both sides."""

from __future__ import annotations

from dataclasses import dataclass

from reference.catalogue.transformer import config_for, new_tokens
from reference.models import ModelConfig


@dataclass(frozen=True)
class RegionalPlan:
    """Prologue, one block called `layers` times, epilogue (see reference/ir/compose.py)."""

    cfg: ModelConfig
    batch: int
    tokens: int  # processed now: seq in prefill, 1 in decode
    past: int  # cached positions before them

    @property
    def layers(self) -> int:
        return self.cfg.n_layers

    def cache_shape(self) -> tuple[int, ...] | None:
        """One layer's KV cache buffer [B, K, past + tokens, H] in decode (the whole sequence, the new
        tokens' slots last, written in place by the block); None in prefill."""
        if self.past == 0 and self.tokens > 1:
            return None
        return (self.batch, self.cfg.n_kv_heads, self.past + self.tokens, self.cfg.head_dim)


def regional_plan(name: str, shapes: dict) -> RegionalPlan:
    decode = shapes["mode"] == "decode"
    return RegionalPlan(
        config_for(name, shapes), shapes["batch"], new_tokens(shapes), shapes["seq"] - 1 if decode else 0
    )
