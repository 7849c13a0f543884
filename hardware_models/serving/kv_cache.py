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

    @property
    def free(self) -> int:
        return self.capacity - self.used

    def blocks(self, tokens: int) -> int:
        return ceil_div(tokens, self.block_tokens)

    def take(self, n: int) -> bool:
        """Take n blocks if that many are free."""
        if n > self.free:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used -= n
        assert self.used >= 0, "freed more blocks than were taken"
