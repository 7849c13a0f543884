"""The serving simulation: requests through the scheduler, the paged cache and the costed steps,
one engine iteration at a time (as Vidur and the engines' own schedulers step).

    loop:  requests that have arrived join the queue; the scheduler picks the step (scheduler.py);
           the clock advances by its time (step_cost.py); a prompt whose last chunk ran makes its
           first token, every decode one token; a request that has made output_len tokens leaves
           and frees its blocks; in a closed loop its replacement arrives at that moment
           (while fewer than `requests` have been issued). With nothing to run, the clock jumps to
           the next arrival.

Per request: TTFT = first token - arrival (queueing included); TPOT = (last token - first token)
/ (output_len - 1); ITL, every gap between two of its tokens; end-to-end = last token - arrival.
Statistics cover every request but the first `warmup` to arrive; throughput is their output
tokens / (their last token - their first arrival); mean in flight is the time average of the
requests in the system (queued or running) over that span (Little's law: rate x mean latency).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hardware_models.serving.kv_cache import POLICIES, BlockPool
from hardware_models.serving.requests import RequestSpec
from hardware_models.serving.scheduler import SCHEDULERS, Request, Scheduler
from hardware_models.serving.step_cost import StepCosts
from reference.errors import InvalidShape

PERCENTILES = (50, 90, 99)
TIMELINE_POINTS = 1000  # iterations kept in the JSON timeline (evenly spaced); --out keeps every one


@dataclass(frozen=True)
class EngineConfig:
    """The serving engine's knobs (the defaults: vLLM's and TensorRT-LLM's own)."""

    scheduler: str = "chunked"
    token_budget: int = 8192  # vLLM v1's max_num_batched_tokens on >= 70 GiB GPUs; TensorRT-LLM's max_num_tokens
    max_batch: int = 256  # vLLM's max_num_seqs default
    cache: str = "paged"
    block_tokens: int = 16  # vLLM's default block size
    preempt: bool = True

    def __post_init__(self):
        if self.scheduler not in SCHEDULERS:
            raise InvalidShape("serve", "scheduler", self.scheduler, f"valid: {', '.join(SCHEDULERS)}")
        if self.cache not in POLICIES:
            raise InvalidShape("serve", "cache", self.cache, f"valid: {', '.join(POLICIES)}")
        for name in ("token_budget", "max_batch", "block_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise InvalidShape("serve", name.replace("_", "-"), value, "an integer >= 1")

    def to_dict(self) -> dict:
        return {
            "scheduler": self.scheduler,
            "token_budget": self.token_budget,
            "max_batch": self.max_batch,
            "cache": self.cache,
            "block_tokens": self.block_tokens,
            "preempt": self.preempt,
        }


@dataclass
class Timeline:
    """One row per iteration."""

    end_s: list = field(default_factory=list)
    running: list = field(default_factory=list)
    waiting: list = field(default_factory=list)
    prefill_tokens: list = field(default_factory=list)
    decode_tokens: list = field(default_factory=list)
    cache_blocks: list = field(default_factory=list)

    def add(self, end, running, waiting, prefill, decode, blocks) -> None:
        self.end_s.append(end)
        self.running.append(running)
        self.waiting.append(waiting)
        self.prefill_tokens.append(prefill)
        self.decode_tokens.append(decode)
        self.cache_blocks.append(blocks)

    def rows(self, every: int = 1) -> list[dict]:
        keys = ("end_s", "running", "waiting", "prefill_tokens", "decode_tokens", "cache_blocks")
        columns = [getattr(self, k) for k in keys]
        return [dict(zip(keys, (c[i] for c in columns))) for i in range(0, len(self.end_s), every)]


def stats(values: Sequence[float]) -> dict:
    """mean, p50, p90, p99 (numpy's linear percentiles, as vLLM's benchmark reports them)."""
    if not len(values):
        return {"mean": math.nan, **{f"p{q}": math.nan for q in PERCENTILES}}
    array = np.asarray(values, dtype=float)
    return {"mean": float(array.mean()), **{f"p{q}": float(np.percentile(array, q)) for q in PERCENTILES}}


@dataclass(frozen=True)
class ServingResult:
    """What one simulated run measured (to_dict: every field)."""

    summary: dict
    requests: tuple  # per request: (arrival, input, output, ttft, tpot, e2e, preemptions)
    timeline: Timeline

    def to_dict(self, timeline_points: int = TIMELINE_POINTS) -> dict:
        every = max(1, -(-len(self.timeline.end_s) // timeline_points))
        return {**self.summary, "timeline": self.timeline.rows(every), "timeline_every": every}


def simulate(
    specs: Sequence[RequestSpec],
    costs: StepCosts,
    engine: EngineConfig,
    *,
    cache_blocks: int,
    concurrency: int | None = None,
    warmup: int = 0,
    stagger: bool = False,
    progress: Callable[[int, int], None] | None = None,
    window: int = 0,
) -> ServingResult:
    """Run the requests (module doc). Closed loop when `concurrency` is given (the specs' arrival
    times are ignored: the first `concurrency` arrive at 0, each later one when another ends),
    else at the specs' arrival times. `window`: the model's sliding window (0: none): a request's
    cache holds at most its blocks (kv_cache), and a step reads at most that many of its keys.

    Raises:
        InvalidShape: the cache cannot hold the longest request's prompt (paged) or whole length
            (reserved), so it could never run.
    """
    pool = BlockPool(cache_blocks, engine.block_tokens, window=window)
    seen = (lambda n: min(n, window)) if window else (lambda n: n)  # the keys a query reads
    need = max(
        (pool.blocks(s.input_len + (s.output_len if engine.cache == "reserved" else 0)) for s in specs), default=0
    )
    if need > cache_blocks:
        raise InvalidShape(
            "serve",
            "KV cache",
            f"{cache_blocks * engine.block_tokens:,} tokens",
            f"one request needs {need * engine.block_tokens:,}; give more --chips or shorter requests",
        )
    sched = Scheduler(
        engine.scheduler, engine.token_budget, engine.max_batch, pool, engine.cache == "reserved", engine.preempt
    )
    total = len(specs)
    closed = concurrency is not None
    issued = min(concurrency, total) if closed else total
    gap = lifetime_s(specs[0], costs, concurrency) / concurrency if closed and stagger else 0.0
    pending = [
        Request(i, s.input_len, s.output_len, i * gap if closed else float(s.arrival_s))
        for i, s in enumerate(specs[:issued])
    ]
    pending.reverse()  # a stack: the next arrival last
    done: list[Request] = []
    gaps: list[float] = []
    gap_owner: list[int] = []
    timeline = Timeline()
    preemptions = 0
    now = 0.0
    while len(done) < total:
        while pending and pending[-1].arrival <= now:
            sched.waiting.append(pending.pop())
        if not sched.running and not sched.waiting:
            now = pending[-1].arrival
            continue
        step = sched.next_step()
        preemptions += step.preempted
        cached = sum(seen(r.cached + 1) for r in step.decodes)
        now += costs.step_s([(c, seen(r.cached)) for r, c in step.chunks], len(step.decodes), cached)
        made = []
        for r, c in step.chunks:
            r.cached += c
            r.to_prefill -= c
            if not r.to_prefill:
                made.append(r)
        for r in step.decodes:
            r.cached += 1
        made.extend(step.decodes)
        finished = False
        for r in made:
            r.generated += 1
            if r.first_s < 0:
                r.first_s = now
            else:
                gaps.append(now - r.last_s)
                gap_owner.append(r.index)
            r.last_s = now
            if r.generated >= r.output_len:
                r.finish_s = now
                finished = True
                done.append(r)
                pool.give(r.blocks)
                r.blocks = 0
                if closed and issued < total:
                    s = specs[issued]
                    pending.append(Request(issued, s.input_len, s.output_len, now))
                    issued += 1
        if finished:
            sched.running = [r for r in sched.running if r.finish_s < 0]
            if progress:
                progress(len(done), total)
        timeline.add(
            now, len(sched.running), len(sched.waiting), step.tokens - len(step.decodes), len(step.decodes), pool.used
        )
    return _result(done, gaps, gap_owner, timeline, preemptions, warmup, costs, pool)


def lifetime_s(spec: RequestSpec, costs: StepCosts, in_flight: int) -> float:
    """A request's life among `in_flight` others at mid-output: its prefill alone, then its decode
    steps with every request in flight at input + output / 2 tokens."""
    context = spec.input_len + spec.output_len // 2
    return costs.step_s([(spec.input_len, 0)], 0, 0) + (spec.output_len - 1) * costs.step_s(
        [], in_flight, in_flight * context
    )


def _result(done, gaps, gap_owner, timeline, preemptions, warmup, costs, pool) -> ServingResult:
    done = sorted(done, key=lambda r: (r.arrival, r.index))
    measured = done[warmup:] if warmup < len(done) else done
    keep = {r.index for r in measured}
    ttft = [r.first_s - r.arrival for r in measured]
    tpot = [(r.finish_s - r.first_s) / (r.output_len - 1) for r in measured if r.output_len > 1]
    e2e = [r.finish_s - r.arrival for r in measured]
    itl = [g for g, owner in zip(gaps, gap_owner) if owner in keep]
    start, end = min(r.arrival for r in measured), max(r.finish_s for r in measured)
    span = max(end - start, 1e-12)
    tokens = sum(r.output_len for r in measured)
    in_flight = sum(
        min(r.finish_s, end) - max(r.arrival, start) for r in done if r.finish_s > start and r.arrival < end
    )
    times = np.asarray(timeline.end_s)
    durations = np.diff(np.concatenate(([0.0], times)))
    blocks = np.asarray(timeline.cache_blocks, dtype=float)
    busy = durations.sum() if len(durations) else 0.0
    summary = {
        "requests": len(measured),
        "warmup": len(done) - len(measured),
        "duration_s": span,
        "ttft_s": stats(ttft),
        "tpot_s": stats(tpot),
        "itl_s": stats(itl),
        "e2e_s": stats(e2e),
        "output_tokens_per_s": tokens / span,
        "output_tokens_per_s_per_chip": tokens / span / costs.chips,
        "requests_per_s": len(measured) / span,
        "mean_in_flight": in_flight / span,
        "iterations": len(timeline.end_s),
        "preemptions": preemptions,
        "chips": costs.chips,
        "kv_cache": {
            "blocks": pool.capacity,
            "block_tokens": pool.block_tokens,
            "peak_occupancy": float(blocks.max() / pool.capacity) if len(blocks) else 0.0,
            "mean_occupancy": float((blocks * durations).sum() / busy / pool.capacity) if busy else 0.0,
        },
    }
    rows = tuple(
        (
            r.arrival,
            r.input_len,
            r.output_len,
            r.first_s - r.arrival,
            (r.finish_s - r.first_s) / (r.output_len - 1) if r.output_len > 1 else math.nan,
            r.finish_s - r.arrival,
            r.preempted,
        )
        for r in done
    )
    return ServingResult(summary, rows, timeline)
