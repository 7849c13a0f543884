"""A paged KV cache: fixed blocks of `block_tokens` tokens, allocated as tokens appear, freed when
a request finishes (vLLM's PagedAttention block manager, TensorRT-LLM's KV cache manager).

    blocks(tokens)  = ceil(tokens / block_tokens)          (a request's last block is partly empty)
    capacity        = floor(cache bytes a replica holds / (block_tokens x bytes per token))

Two admission policies (the simulator's `cache`):
    paged     a request holds the blocks of the tokens it has; when a decode needs a block and none
              is free, the youngest running request is preempted and recomputed later (vLLM)
    reserved  a request is admitted only when the blocks of its whole prompt + output are free,
              and holds them until it ends: nothing is ever preempted (TensorRT-LLM's
              GUARANTEED_NO_EVICT, `predict`'s static cache, and the SRAM targets, whose compiler
              places every buffer before the program runs)
Worked number: blocks of 16, a 1000-token prompt takes 63 blocks (1008 slots); its 9th output
token makes 1009 tokens and a 64th block.

A sliding window of W tokens (a model whose every layer attends to its last W positions) needs
only those: a request holds at most the blocks of W + block_tokens tokens (its window and the
block its oldest key sits in), as vLLM's sliding-window manager frees the blocks behind it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardware_models.plan import ceil_div

POLICIES = ("paged", "reserved")


@dataclass
class BlockPool:
    capacity: int  # blocks
    block_tokens: int
    used: int = 0
    window: int = 0  # the model's sliding window (0: none): the tokens a request's cache holds at most

    @property
    def free(self) -> int:
        return self.capacity - self.used

    def held(self, tokens: int) -> int:
        """The tokens of `tokens` the cache keeps: all, or a sliding window's and its oldest block's."""
        return min(tokens, self.window + self.block_tokens) if self.window else tokens

    def blocks(self, tokens: int) -> int:
        return ceil_div(self.held(tokens), self.block_tokens)

    def take(self, n: int) -> bool:
        """Take n blocks if that many are free."""
        if n > self.free:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used -= n
        assert self.used >= 0, "freed more blocks than were taken"
