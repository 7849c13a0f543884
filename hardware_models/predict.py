"""predict_inference: how fast a lowered LLM serves on a target, from its prefill and decode graphs.

Every graph is compiled and costed by the target's own pipeline (`estimate`), not by a closed
form. The serving timeline of one static batch (every sequence `input_len` tokens in,
`output_len` out, as TensorRT-LLM's static-batch benchmarks run it):

    prefill              the prompt's graph; it writes the cache and produces the first token
    decode step j        j = 1 .. output_len - 1: one new token per sequence against a cache
                         buffer of L_j = input_len + j tokens (the step reads all of it)
    step time t(L)       costed at a few cache lengths (decode_lengths: the first, middle and
                         last step's) and interpolated linearly between them: a step's bytes and
                         FLOPs grow linearly in L (the cache read and attention), and a GEMM's tiles
                         do not depend on L
    decode_total_s       = sum over j of t(L_j)

    ttft_s                   = the prefill's time
    decode_step_s            = decode_total_s / (output_len - 1), the mean step (for
                               output_len = 1, the one step t(input_len + 1) that would follow)
    tokens_per_s_per_user    = 1 / decode_step_s, one user's rate after the first token
    throughput_tokens_per_s  = batch * output_len / (ttft_s + decode_total_s), the static-batch
                               throughput TensorRT-LLM reports (out tokens / end-to-end time)
    e2e_latency_s            = ttft_s + decode_total_s
    bottleneck               = the largest of the last step's compute, memory and schedule time

The chips are those the last (largest) decode graph needs, or `chips`; prefill and every step
run on the same ones.

Worked number (a check by hand): input 128, output 129, t(L) = 1 ms + L x 1 us: the steps see
L = 129 .. 256, sum = 128 x 1 ms + (129 + ... + 256) x 1 us = 128 ms + 24.64 ms = 152.64 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hardware_models.cost.model import Estimate
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import Target
from reference.ir import Module


def decode_lengths(input_len: int, output_len: int) -> tuple[int, ...]:
    """Cache lengths at which a decode step is costed: the first, middle and last step's
    (input_len + 1, the middle, input_len + output_len - 1), without repeats; input_len + 1 alone
    when there is at most one step."""
    first, last = input_len + 1, input_len + max(output_len - 1, 1)
    return tuple(sorted({first, (first + last) // 2, last}))


def integrate_steps(points: Sequence[tuple[int, float]], first: int, last: int) -> float:
    """Sum over every cache length L in first..last of t(L), t linear between the costed points
    (and constant beyond the outer ones)."""
    points = sorted(points)
    total = 0.0
    for length in range(first, last + 1):
        total += _interpolate(points, length)
    return total


def _interpolate(points: Sequence[tuple[int, float]], length: int) -> float:
    if length <= points[0][0]:
        return points[0][1]
    for (a, ta), (b, tb) in zip(points, points[1:]):
        if length <= b:
            return ta + (tb - ta) * (length - a) / (b - a)
    return points[-1][1]


@dataclass(frozen=True)
class Prediction:
    model: str
    target: str
    batch: int
    input_len: int
    output_len: int
    chips: int
    ttft_s: float
    decode_total_s: float
    steps: tuple[tuple[int, float], ...]  # (cache length, step time) at each costed length
    kv_cache_bytes: int
    kv_cache_location: str
    bottleneck: str
    prefill: Estimate
    decode: Estimate  # the last step's
    batch_note: str = ""  # how --batch max chose the batch
    chip_unit: str = "chip"  # what `chips` counts (wafers on Cerebras)

    @property
    def decode_steps(self) -> int:
        return self.output_len - 1

    @property
    def decode_step_s(self) -> float:
        return self.decode_total_s / self.decode_steps if self.decode_steps else self.steps[0][1]

    @property
    def tokens_per_s_per_user(self) -> float:
        return 1 / self.decode_step_s

    @property
    def e2e_latency_s(self) -> float:
        return self.ttft_s + self.decode_total_s

    @property
    def throughput_tokens_per_s(self) -> float:
        return self.batch * self.output_len / self.e2e_latency_s

    def to_dict(self) -> dict:
        def summary(est: Estimate) -> dict:
            d = est.to_dict()
            return {
                k: d[k]
                for k in (
                    "total_time_s",
                    "compute_s",
                    "memory_s",
                    "schedule_s",
                    "bytes",
                    "bottleneck_counts",
                    "kernels",
                    "notes",
                )
            }

        return {
            "model": self.model,
            "target": self.target,
            "batch": self.batch,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "chips": self.chips,
            "chip_unit": self.chip_unit,
            "ttft_s": self.ttft_s,
            "decode_step_s": self.decode_step_s,
            "decode_total_s": self.decode_total_s,
            "decode_steps": self.decode_steps,
            "e2e_latency_s": self.e2e_latency_s,
            "decode_step_at": [{"cache_len": n, "step_s": t} for n, t in self.steps],
            "tokens_per_s_per_user": self.tokens_per_s_per_user,
            "throughput_tokens_per_s": self.throughput_tokens_per_s,
            "kv_cache_bytes": self.kv_cache_bytes,
            "kv_cache_location": self.kv_cache_location,
            "bottleneck": self.bottleneck,
            **({"batch_note": self.batch_note} if self.batch_note else {}),
            "prefill": summary(self.prefill),
            "decode": summary(self.decode),
        }


def predict_inference(
    prefill: Module,
    decode: Module | Sequence[tuple[int, Module]],
    target: Target,
    *,
    model: str,
    batch: int,
    input_len: int,
    output_len: int,
    kv_cache_bytes: int,
    chips: int | None = None,
    batch_note: str = "",
) -> Prediction:
    """Serve-time prediction from the lowered graphs of one model (see module doc).

    Args:
        prefill: the model lowered for `input_len` tokens (mode prefill), e.g. a `Lowering.module`.
        decode: (cache length, the model lowered for one token against a cache buffer of that
            length) at the lengths `decode_lengths` gives; or one decode graph, costed as every step.
        target: a loaded target; `chips` forces the chip (wafer) count.
        kv_cache_bytes: the cache at its full length (`ModelConfig.kv_cache_bytes`).

    Raises:
        UnsupportedDtype, InvalidShape: a type the target lacks; fewer chips than the model needs.
    """
    graphs = [(input_len + output_len, decode)] if isinstance(decode, Module) else sorted(decode, key=lambda p: p[0])
    last_len, last = graphs[-1]
    last_plan = compile_plan(last, target, chips=chips)
    used = last_plan.partition.chips if last_plan.partition else 1
    same = used if last_plan.partition else chips
    last_est = estimate(last, target, f"{model} decode", last_plan)
    steps = [
        (length, estimate(module, target, "", compile_plan(module, target, chips=same, shared_chips=True)).total.time_s)
        for length, module in graphs[:-1]
    ] + [(last_len, last_est.total.time_s)]
    prefill_est = estimate(
        prefill, target, f"{model} prefill", compile_plan(prefill, target, chips=same, shared_chips=True)
    )
    total = integrate_steps(steps, input_len + 1, input_len + output_len - 1) if output_len > 1 else 0.0
    unit = target.family_record.chip_unit  # what --chips counts
    location = target.main_memory_level + (f" across {used} {unit}s" if used > 1 else "")
    return Prediction(
        model,
        target.name,
        batch,
        input_len,
        output_len,
        used,
        prefill_est.total.time_s,
        total,
        tuple(steps),
        kv_cache_bytes,
        location,
        last_est.bottleneck,
        prefill_est,
        last_est,
        batch_note,
        unit,
    )


# A serving engine's largest batch, a runtime choice: TensorRT-LLM's default max_batch_size (its
# BuildConfig, 2048); in-flight batching servers run up to it when memory allows.
ENGINE_MAX_BATCH = 2048


def max_batch(target: Target, chips: int, weight_bytes: int, sequence_bytes: int, kv_heads: int) -> tuple[int, str]:
    """The largest batch whose weights and KV cache fit `chips` chips' usable main memory, as
    in-flight-batching servers fill memory with cache at "max load". A chip holds 1/chips of the
    weights and its KV heads' share of the cache (shard_tensor_parallel.kv_share: ceil(K/chips)/K,
    1/K once the heads are replicated):

        batch = min(ENGINE_MAX_BATCH, floor((usable main memory - weights / chips)
                                            / (one sequence's cache x the chip's share)))

    Returns (batch, a note saying how it was chosen). Raises InvalidShape when not even one
    sequence fits, or when the target's main memory is its on-chip SRAM (the LPU, the wafer),
    where the partition adds chips as the batch grows instead.
    """
    from hardware_models.passes.shard_tensor_parallel import kv_share
    from hardware_models.plan import ceil_div
    from reference.errors import InvalidShape
    from reference.units import format_bytes, plural

    unit = target.family_record.chip_unit
    if target.level("main").on_chip:
        raise InvalidShape(
            target.name,
            "batch",
            "max",
            f"{target.name} holds weights and cache in on-chip SRAM, where the "
            f"partition is sized to the batch ({unit}s are added as it grows), so no batch is the "
            "largest; give --batch N, an integer >= 1",
        )
    top, bottom = kv_share(chips, kv_heads)
    room = int(target.usable_main_memory_bytes) - ceil_div(weight_bytes, chips)
    per_sequence = max(1, ceil_div(sequence_bytes * top, bottom))
    fits = room // per_sequence if room > 0 else 0
    if fits < 1:
        raise InvalidShape(
            target.name,
            "batch",
            "max",
            f"the weights ({format_bytes(weight_bytes)}) leave "
            f"{format_bytes(max(room, 0))} a chip on {plural(chips, unit)}, less than one sequence's "
            f"cache share ({format_bytes(per_sequence)}); give more --chips",
        )
    batch = min(ENGINE_MAX_BATCH, fits)
    share = "all of it on each chip" if top == bottom else f"{top}/{bottom} of it a chip"
    why = (
        f"--batch max: {fits:,} sequences' caches ({format_bytes(sequence_bytes)} each, {share}) fit "
        f"beside the weights ({format_bytes(weight_bytes)}) on {plural(chips, unit)}"
        + (f"; capped at the engine maximum {ENGINE_MAX_BATCH}" if fits > ENGINE_MAX_BATCH else "")
    )
    return batch, why


def fewest_chips(target: Target, weight_bytes: int, sequence_bytes: int, kv_heads: int) -> int:
    """The fewest chips, a power of two as tensor parallelism takes them, that hold the weights and
    one sequence's cache (with its KV heads' share per chip): shard_tensor_parallel's own rule.

    Raises InvalidShape when one KV head's share of that sequence's cache fills a chip alone."""
    from hardware_models.passes.shard_tensor_parallel import fewest_chips as fewest
    from reference.errors import InvalidShape
    from reference.units import format_bytes

    chips = fewest(
        weight_bytes + sequence_bytes, sequence_bytes, kv_heads, max(1, int(target.usable_main_memory_bytes))
    )
    if chips is None:
        raise InvalidShape(
            target.name,
            "batch",
            "max",
            f"one sequence's cache ({format_bytes(sequence_bytes)}) does not fit "
            f"over its {kv_heads} KV heads; give shorter --input-len and --output-len",
        )
    return chips
