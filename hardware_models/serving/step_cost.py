"""The time of one engine iteration, from the target's own compiled plans, costed once on a grid.

An iteration (an engine step) runs P prompt tokens, in chunks c_i of prompts that already have
k_i tokens cached, and D decoding requests whose caches hold S tokens in all. Its time is split
the way the work is (the cost model's groups: `attention` kernels apart from the rest):

    step_s = dense(P + D)  +  sum_i prefill_attention(c_i, k_i)  +  a(D) + b(D) x S

    dense(T)              every kernel but attention of the model over T tokens: a prefill graph of
                          T tokens (batch 1); GEMMs, norms, the head and any all-reduce depend on the
                          tokens alone, whichever request they belong to (a decode graph of batch D
                          and a prefill of D tokens give the same dense time: tested)
    prefill_attention(c)  the attention kernels of a prefill graph of c tokens, priced on the scores
                          they compute: c^2 x share(c), where share is the plan's computed_share (a
                          causal flash kernel skips the tiles its mask hides: about 1/2 of a long
                          prompt's square; 1 where the kernel computes them all); a chunk of c
                          tokens with k tokens before it computes c x k + c^2 x share(c) scores (it
                          sees all k), so it costs what a prefill of as many computed scores does.
                          (Scaling the chunk's own time by (k + c) / c instead multiplies its fixed
                          part, the launches, too: a 3-token chunk after 8,189 cost 275 ms on the h200.)
    a(D) + b(D) x S       the attention kernels of decode graphs of batch D: affine in the cached
                          tokens S = D x L (each request reads its own cache), a and b from two
                          cache lengths at each grid D, linear in D between grid points

The grids: dense and prefill attention at T = 1, 4, 16, 64, 96, then powers of two and the
points halfway between them (128, 192, 256, 384 ...) up to the largest step, plus the prompt lengths given (so one request's prefill is costed exactly);
decode graphs at D = 1, 8, 64, 512 ... up to the batch cap, each at two cache lengths within the
cache's capacity. Between grid points dense and a, b are linear in their argument, prefill
attention linear in the computed scores (exact for fixed + quadratic) and the share linear in c; past the last point, the last segment's
line. Off the grid a GEMM's tiles make dense(T) a staircase (on a GPU, 128-row tiles: 700 tokens
run as 768), which the line cuts: up to about 10% between grid points on the h100, under 3% for
decode steps (tests/landscape/test_serve_cli.py holds both to direct costing).
Worked number (llama-3.1-8b on h100, bf16): dense(8) = 6.70 ms, a(8) + b(8) x 8 x 1088 = 0.46 ms,
a decode step of 8 requests at 1088 tokens 7.17 ms, as `predict --batch 8` costs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import Target
from reference.errors import InvalidShape
from reference.ir import Module

Lower = Callable[[dict], Module]  # shapes {"batch", "seq", "mode"?} -> the model's IR


def _line(points: Sequence[tuple[float, float]], x: float) -> float:
    """Piecewise-linear through sorted points; the end segments extended (one point: constant)."""
    if len(points) == 1:
        return points[0][1]
    i = 1
    while i < len(points) - 1 and x > points[i][0]:
        i += 1
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def token_grid(largest: int, extra: Iterable[int] = ()) -> tuple[int, ...]:
    """1, 4, 16, 64, then powers of two and the points halfway between them (128, 192, 256, 384 ...)
    up to `largest` (and `largest`), plus `extra` within it."""
    points = {1, 4, 16, 64, 96, largest}
    n = 128
    while n < largest:
        points.update((n, n + n // 2))
        n *= 2
    return tuple(sorted(p for p in points | set(extra) if 1 <= p <= largest))


def batch_grid(largest: int) -> tuple[int, ...]:
    """1, 8, 64, 512 ... below `largest`, and `largest`."""
    points, n = {largest}, 1
    while n < largest:
        points.add(n)
        n *= 8
    return tuple(sorted(points))


@dataclass(frozen=True)
class StepCosts:
    """The costed grid of one model on one target and chip count (see module doc)."""

    dense: tuple[tuple[int, float], ...]  # (tokens, seconds)
    prefill_attention: tuple[tuple[int, float, float], ...]  # (chunk tokens, seconds, computed share)
    decode_attention: tuple[tuple[int, float, float], ...]  # (requests D, a seconds, b seconds per cached token)
    chips: int

    def dense_s(self, tokens: int) -> float:
        return max(0.0, _line(self.dense, tokens))

    def prefill_attention_s(self, chunk: int, before: int = 0) -> float:
        computed = [(c * c * share, t) for c, t, share in self.prefill_attention]
        share = min(1.0, max(0.0, _line([(c, share) for c, _, share in self.prefill_attention], chunk)))
        return max(0.0, _line(computed, chunk * before + chunk * chunk * share))

    def decode_attention_s(self, requests: int, cached: int) -> float:
        if not requests:
            return 0.0
        a = _line([(d, a) for d, a, _ in self.decode_attention], requests)
        b = _line([(d, b) for d, _, b in self.decode_attention], requests)
        return max(0.0, a + b * cached)

    def step_s(self, chunks: Sequence[tuple[int, int]], decodes: int, cached: int) -> float:
        """One iteration: prompt chunks (tokens, tokens cached before it), `decodes` requests
        holding `cached` tokens in all."""
        tokens = decodes + sum(c for c, _ in chunks)
        if not tokens:
            return 0.0
        return (
            self.dense_s(tokens)
            + sum(self.prefill_attention_s(c, k) for c, k in chunks)
            + self.decode_attention_s(decodes, cached)
        )

    def to_dict(self) -> dict:
        return {
            "chips": self.chips,
            "dense": [{"tokens": n, "s": t} for n, t in self.dense],
            "prefill_attention": [{"tokens": n, "s": t, "computed_share": f} for n, t, f in self.prefill_attention],
            "decode_attention": [{"requests": d, "a_s": a, "b_s_per_token": b} for d, a, b in self.decode_attention],
        }


def split_attention(
    module: Module, target: Target, chips: int | None, shared: bool = False
) -> tuple[float, float, int, float]:
    """(seconds outside attention kernels, seconds in them, chips used, the share of the scores
    they compute: the first kernel's AttentionShape.computed_share, 1 without one) of one graph;
    `shared`: `chips` is the deployment's, which a smaller graph of the grid runs on too."""
    plan = compile_plan(module, target, chips=chips, shared_chips=shared)
    est = estimate(module, target, "", plan)
    attention = sum(g.cost.time_s * g.repeats for g in est.groups if g.kind == "attention")
    share = next((shape.computed_share for shape in plan.attention.values()), 1.0)
    return est.total.time_s - attention, attention, plan.partition.chips if plan.partition else 1, share


def build_step_costs(
    lower: Lower,
    target: Target,
    *,
    chips: int | None,
    largest_step: int,
    max_batch: int,
    max_positions: int,
    cache_tokens: int,
    longest: int,
    prompts: Iterable[int] = (),
) -> StepCosts:
    """Cost the grid (module doc). `cache_tokens`: the tokens the cache holds in all; `longest`: the
    longest request (prompt + output); `prompts`: prompt lengths to cost exactly."""
    dense, prefill = [], []
    for tokens in token_grid(largest_step, prompts):
        batch = -(-tokens // max_positions)
        seq = -(-tokens // batch)
        rest, attention, _, share = split_attention(lower({"batch": batch, "seq": seq}), target, chips, shared=True)
        dense.append((batch * seq, rest))
        if batch == 1:
            prefill.append((seq, attention, share))
    decode = []
    for requests in batch_grid(max_batch):
        high = min(longest, max_positions, cache_tokens // (2 * requests))
        low = max(1, high // 8)
        if high <= low:
            continue
        times = []
        for length in (low, high):
            try:
                times.append(
                    split_attention(
                        lower({"batch": requests, "seq": length, "mode": "decode"}), target, chips, shared=True
                    )[1]
                )
            except InvalidShape:
                break
        if len(times) < 2:
            continue
        b = (times[1] - times[0]) / (requests * (high - low))
        decode.append((requests, times[0] - b * requests * low, b))
    if not decode:
        raise InvalidShape(
            target.name,
            "KV cache",
            f"{cache_tokens} tokens",
            "too small to cost even one decoding request; give more --chips or shorter requests",
        )
    return StepCosts(tuple(dense), tuple(prefill), tuple(decode), chips or 1)
