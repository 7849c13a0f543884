"""The iteration-level scheduler: which requests run in the next engine step, and how many tokens
each (in-flight, or continuous, batching: a request joins and leaves between any two steps).

    chunked        (vLLM v1, Sarathi; TensorRT-LLM's in-flight batching with chunked context)
                   running requests first, in admission order: a decoding one takes 1 token, a
                   prompt still being prefilled takes min(what is left, the budget left); then
                   waiting requests in arrival order while the budget, the batch cap and the cache
                   allow, each with a chunk of its prompt: decodes and prompt chunks share a step
    prefill-first  (vLLM v0's default) a step of whole waiting prompts, as many as fit the budget
                   (the first always), whenever one can be admitted; otherwise a step of every
                   running request's decode: a prefill step stalls the decodes

The token budget is the engine's max_num_batched_tokens (vLLM) or max_num_tokens (TensorRT-LLM),
the batch cap its max_num_seqs or max_batch_size. When a decode needs a cache block and none is
free (the paged policy), the youngest running request is preempted: its blocks are freed, and it
waits at the head of the queue to prefill its prompt and the tokens it had made again (vLLM's
recompute preemption). With preemption off such a decode skips the step, and only a step that
could run nothing preempts.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from hardware_models.serving.kv_cache import BlockPool

SCHEDULERS = ("chunked", "prefill-first")


class Request:
    """One request's state in a simulation."""

    __slots__ = (
        "index",
        "input_len",
        "output_len",
        "arrival",
        "to_prefill",
        "cached",
        "generated",
        "blocks",
        "first_s",
        "last_s",
        "finish_s",
        "preempted",
    )

    def __init__(self, index: int, input_len: int, output_len: int, arrival: float):
        self.index, self.input_len, self.output_len, self.arrival = index, input_len, output_len, arrival
        self.to_prefill = input_len  # prompt tokens (and, after a preemption, made tokens) still to prefill
        self.cached = 0  # tokens whose keys and values are in the cache
        self.generated = 0
        self.blocks = 0
        self.first_s = self.last_s = self.finish_s = -1.0
        self.preempted = 0


@dataclass
class Step:
    chunks: list = field(default_factory=list)  # (request, tokens)
    decodes: list = field(default_factory=list)  # requests
    preempted: int = 0

    @property
    def tokens(self) -> int:
        return len(self.decodes) + sum(c for _, c in self.chunks)


@dataclass
class Scheduler:
    kind: str
    token_budget: int
    max_batch: int
    pool: BlockPool
    reserved: bool  # the reserved cache policy (kv_cache module doc)
    preempt: bool = True
    running: list = field(default_factory=list)
    waiting: deque = field(default_factory=deque)

    def admit_blocks(self, r: Request, chunk: int) -> int:
        return self.pool.blocks(r.input_len + r.output_len) if self.reserved else self.pool.blocks(r.cached + chunk)

    def _preempt_youngest(self, step: Step) -> Request:
        victim = self.running.pop()
        self.pool.give(victim.blocks)
        victim.blocks, victim.cached = 0, 0
        victim.to_prefill = victim.input_len + victim.generated  # every token it knows, made ones too
        victim.preempted += 1
        self.waiting.appendleft(victim)
        step.preempted += 1
        return victim

    def _grow(self, r: Request, tokens: int, step: Step) -> bool:
        """Blocks for r to hold `tokens` more; preempts the youngest others when needed (paged)."""
        if self.reserved:
            return True
        need = self.pool.blocks(r.cached + tokens) - r.blocks
        while need > 0 and not self.pool.take(need):
            if not self.preempt or self.running[-1] is r:
                if self.preempt:  # r is the youngest: it yields its own blocks
                    self._preempt_youngest(step)
                return False
            self._preempt_youngest(step)
        r.blocks += max(need, 0)
        return True

    def _admit(self, step: Step, budget: int, whole: bool) -> int:
        while self.waiting and budget > 0 and len(self.running) < self.max_batch:
            r = self.waiting[0]
            chunk = r.to_prefill if whole else min(r.to_prefill, budget)
            if whole and step.chunks and chunk > budget:
                break
            need = self.admit_blocks(r, chunk)
            if not self.pool.take(need):
                break
            self.waiting.popleft()
            r.blocks = need
            self.running.append(r)
            step.chunks.append((r, chunk))
            budget -= chunk
        return budget

    def next_step(self) -> Step:
        step = Step()
        if self.kind == "prefill-first":
            self._admit(step, self.token_budget, whole=True)
            if step.chunks:
                return step
        budget = self.token_budget
        i = 0
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            tokens = min(r.to_prefill, budget) if r.to_prefill else 1
            if self._grow(r, tokens, step):
                (step.chunks.append((r, tokens)) if r.to_prefill else step.decodes.append(r))
                budget -= tokens
            if i < len(self.running) and self.running[i] is r:
                i += 1
        if self.kind == "chunked":
            self._admit(step, budget, whole=False)
        if not step.chunks and not step.decodes and self.running:  # every running request waits on a block
            self._preempt_youngest(step)
        return step
