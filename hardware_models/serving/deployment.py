"""Where a served model lives: its chips, the KV cache they hold beside the weights, and the grid
of step costs on them (step_cost.py).

HBM targets (GPU, TPU, Spyre): the chips are --chips, or the fewest (a power of two, as tensor
parallelism takes them) that hold the weights and the longest request's cache (predict's rule).
Each chip holds 1/chips of the weights and its KV heads' share of every request's cache
(shard_tensor_parallel.kv_share), so the cache holds

    tokens = floor((usable main memory - weights / chips) / (bytes per token x kv share))

where bytes per token = 2 x layers x kv heads x head dim x element bytes (ModelConfig), and
usable main memory is the target file's usable_fraction of it (0.9 on the GPUs: TensorRT-LLM's
free_gpu_memory_fraction and vLLM's gpu_memory_utilization default). Worked number:
llama-3.1-8b in bf16 on one h100: 0.9 x 80 GB - 16.06 GB = 55.94 GB, / 131,072 B = 426,798 tokens.

SRAM targets (Groq's LPU, Cerebras' wafer): the compiler places every buffer before the program
runs, so nothing is paged: the cache policy is `reserved` (each request's whole prompt + output
held from admission), in blocks of one token, and the chips are --chips or those the partition
gives a decode graph of the batch cap's requests at the longest length (predict's rule for a
batch of that size); the cache holds the SRAM those chips have beyond the weights.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hardware_models.passes.shard_tensor_parallel import fewest_chips, kv_share
from hardware_models.plan import ceil_div
from hardware_models.serving.simulate import EngineConfig
from hardware_models.serving.step_cost import (
    Lower,
    StepCosts,
    build_step_costs,
    split_attention,
)
from hardware_models.target import Target
from reference.errors import InvalidShape
from reference.units import format_bytes, plural


@dataclass(frozen=True)
class Deployment:
    model: str
    target: str
    chips: int
    chip_unit: str
    weight_bytes: int
    token_bytes: int  # one token's keys and values, all layers
    cache_tokens: int  # the tokens the cache holds (the replica's)
    engine: EngineConfig
    costs: StepCosts
    notes: tuple[str, ...] = ()
    window: int = 0  # the model's sliding window (0: none): what a request's cache holds at most

    @property
    def cache_blocks(self) -> int:
        return self.cache_tokens // self.engine.block_tokens

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "target": self.target,
            "chips": self.chips,
            "chip_unit": self.chip_unit,
            "weight_bytes": self.weight_bytes,
            "kv_bytes_per_token": self.token_bytes,
            "cache_tokens": self.cache_tokens,
            "engine": self.engine.to_dict(),
            "sliding_window": self.window,
            "notes": list(self.notes),
        }


def deploy(
    lower: Lower,
    target: Target,
    *,
    model: str,
    weight_bytes: int,
    token_bytes: int,
    kv_heads: int,
    max_positions: int,
    engine: EngineConfig,
    longest: int,
    prompts: tuple[int, ...] = (),
    chips: int | None = None,
    window: int = 0,
) -> Deployment:
    """Chips, cache and step costs of one model on `target` (module doc).

    Args:
        lower: shapes -> the model's IR (the application lowers; hardware_models imports no framework).
        longest: the longest request (prompt + output tokens); prompts: lengths to cost exactly.
        window: the model's sliding window (0: none): a request's cache holds at most its window
            and one block (kv_cache), which sizes the chips and the cache's smallest request.

    Raises:
        InvalidShape: the weights leave no room for one request's cache on the chips.
    """
    unit = target.family_record.chip_unit
    notes = []
    usable = int(target.usable_main_memory_bytes)
    reads = longest  # the longest request's keys a decode step reads (its window's, with one)
    if window:
        reads = min(longest, window)
        held = min(longest, window + engine.block_tokens)
        if held < longest:
            notes.append(
                f"a sliding window of {window:,} tokens: a request's cache holds at most {held:,} of its "
                f"{longest:,} tokens, and a decode step reads at most {window:,} keys"
            )
        longest = held
    if target.level("main").on_chip:
        if engine.cache != "reserved" or engine.block_tokens != 1:
            notes.append(
                f"{target.name} keeps the KV cache in SRAM, placed by the compiler before the program runs: "
                "each request's whole prompt + output is reserved at admission (no paging, no preemption)"
            )
            engine = replace(engine, cache="reserved", block_tokens=1, preempt=False)
        probe = lower({"batch": engine.max_batch, "seq": min(longest, max_positions), "mode": "decode"})
        chips = split_attention(probe, target, chips)[2]  # the fewest the largest step needs, or the user's, checked
        cache_tokens = (chips * usable - weight_bytes) // token_bytes
    else:
        if chips is None:
            chips = fewest_chips(weight_bytes + token_bytes * longest, token_bytes * longest, kv_heads, max(1, usable))
            if chips is None:
                raise InvalidShape(
                    target.name,
                    "KV cache",
                    format_bytes(token_bytes * longest),
                    f"one KV head's share of the longest request's cache fills a {unit}; give shorter requests",
                )
        top, bottom = kv_share(chips, kv_heads)
        room = usable - ceil_div(weight_bytes, chips)
        cache_tokens = room * bottom // (token_bytes * top) if room > 0 else 0
    least = longest if engine.cache == "reserved" else engine.block_tokens  # one request's whole length, or one block
    if cache_tokens < least:
        raise InvalidShape(
            target.name,
            "chips",
            chips,
            f"the weights ({format_bytes(weight_bytes)}) leave room for {cache_tokens:,} tokens of cache on "
            f"{plural(chips, unit)}, less than one request of {longest:,}; give more --chips",
        )
    largest = (
        engine.token_budget if engine.scheduler == "chunked" else max(engine.token_budget, max(prompts, default=1))
    )
    costs = build_step_costs(
        lower,
        target,
        chips=chips,
        largest_step=largest,
        max_batch=engine.max_batch,
        max_positions=max_positions,
        cache_tokens=cache_tokens,
        longest=reads,
        prompts=prompts if len(prompts) <= 4 else (),
    )
    return Deployment(
        model, target.name, chips, unit, weight_bytes, token_bytes, cache_tokens, engine, costs, tuple(notes), window
    )
