"""shard_tensor_parallel: split a model over chips when one cannot hold it (GPU, TPU, Spyre).

Megatron-style tensor parallelism over N chips: every contraction's output columns are split,
so each chip computes ceil(n / N) of them and holds 1 / N of the weights (pad_to_tiles and the
placement passes read the factor through `shard_factor`); elementwise work and norms are
replicated (an upper bound: attention's per-head work would split too). Each layer then ends
its attention and its MLP with an all-reduce of the hidden state, added as transfer groups:

    chips      = --chips N, or the smallest power of two with N * usable memory >= the program's
                 arguments (weights, inputs, KV cache); --chips N above the narrowest
                 contraction's output columns is refused (a chip would get no column of it)
    all-reduce = collective_latency_s + 2 (N - 1) / N * hidden bytes / all-reduce bus bandwidth
                 (ring; the bus bandwidth is NCCL's measured figure on GPUs, G33-G35)
                 2 per layer for a regional model, 1 for a flat program
    KV heads   a fused attention kernel's K and V (the KV cache) split by KV heads over the chips,
               replicated when there are fewer KV heads than chips (shard_kv_heads)
"""

from __future__ import annotations

from dataclasses import replace

from hardware_models.plan import Group, Partition, Plan, ceil_div
from hardware_models.target import Target
from hardware_models.workload import (
    program_arguments,
    program_footprint,
    weight_matmul_widths,
)
from reference.errors import InvalidShape
from reference.ir import Module
from reference.units import format_bytes


def kv_share(chips: int, kv_heads: int) -> tuple[int, int]:
    """The share of a KV cache one chip holds, as (numerator, denominator): its ceil(K / chips) of
    the K KV heads (shard_kv_heads), so 1/K once there are more chips than KV heads (replicated)."""
    return ceil_div(kv_heads, chips), kv_heads


def per_chip_bytes(needed: int, cache: int, kv_heads: int, chips: int) -> int:
    """What one chip holds: its share of the arguments other than the KV cache (split evenly over
    the chips) plus its share of the cache (kv_share; the whole cache split evenly without heads)."""
    if not kv_heads:
        return ceil_div(needed, chips)
    top, bottom = kv_share(chips, kv_heads)
    return ceil_div(needed - cache, chips) + ceil_div(cache * top, bottom)


def fewest_chips(needed: int, cache: int, kv_heads: int, whole: int) -> int | None:
    """The fewest chips, a power of two, each of which holds its share (per_chip_bytes) in `whole`
    bytes; None when no count can, because one KV head's share of the cache alone fills a chip."""
    chips = 1 << (max(1, ceil_div(needed, whole)) - 1).bit_length()
    while per_chip_bytes(needed, cache, kv_heads, chips) > whole:
        if kv_heads and chips >= kv_heads and ceil_div(cache, kv_heads) >= whole:  # more chips cannot help
            return None
        chips *= 2
    return chips


def fused_kv_cache(module: Module, plan: Plan) -> tuple[int, int]:
    """(bytes, KV heads per sequence) of the KV cache that fused attention kernels read from the
    program's arguments (a decode step's cache; each layer's once), or (0, 0)."""
    arguments = program_arguments(plan, module)
    graph = plan.value_graph()
    cache, heads = 0, 0
    for gid, shape in plan.attention.items():
        group = plan.groups[gid]
        cache += group.repeats * sum(graph.nbytes(v) for v in shape.kv if v in arguments)
        heads = heads or shape.kv_heads_per_sequence
    return (cache, heads) if cache else (0, 0)


def shard_tensor_parallel(module: Module, plan: Plan, target: Target) -> Plan:
    footprint = program_footprint(module)
    needed, hidden, layers = footprint.needed_bytes, footprint.hidden_bytes, footprint.layers
    usable = target.usable_main_memory_bytes
    whole = max(1, int(usable))  # whole bytes a chip holds: the chip counts are exact integer ceilings
    cache, kv_heads = fused_kv_cache(module, plan)
    least = max(1, ceil_div(needed, whole))
    default = fewest_chips(needed, cache, kv_heads, whole)  # a replicated cache may need more than the bytes say
    if default is None:
        raise InvalidShape(
            target.name,
            "KV cache",
            format_bytes(cache),
            f"one KV head's cache ({format_bytes(ceil_div(cache, kv_heads))}) exceeds a chip's "
            f"{format_bytes(usable)} usable; give a smaller batch or shorter sequences",
        )
    if not plan.requested_chips and default > 1:
        _check_splittable(module, plan, target, default, needed, usable, kv_heads)
    chips = plan.requested_chips or default
    holds = per_chip_bytes(needed, cache, kv_heads, chips)
    if chips < least or holds > whole:
        raise InvalidShape(
            target.name,
            "chips",
            chips,
            f"the arguments need {format_bytes(needed)}"
            + (
                f" ({format_bytes(holds)} a chip with the KV cache split by its {kv_heads} KV heads)"
                if kv_heads
                else ""
            )
            + f": at least {default} chips of {format_bytes(usable)} usable",
        )
    if plan.requested_chips:
        widths = weight_matmul_widths(module, plan)
        most = max(default, min(widths, default=1))
        if chips > most:
            raise InvalidShape(
                target.name,
                "chips",
                chips,
                f"at most {most}: tensor parallelism splits every weight matrix's output "
                f"columns over the chips, and the narrowest has {min(widths)}"
                if widths
                else f"at most {most}: the program has no weight matmul for tensor parallelism to split",
            )
    partition = Partition(chips, chips, needed, whole, hidden, layers, "tensor parallel" if chips > 1 else "")
    if chips == 1:
        return plan.with_(partition=partition)
    attention, kv_notes = shard_kv_heads(plan, chips)
    reduces = Group(len(plan.groups), "transfer", (), "main", 2 * layers if footprint.regional else 1, "all-reduce")
    note = (
        f"{format_bytes(needed)} of arguments over {format_bytes(usable)} usable per chip: tensor parallel over "
        f"{chips} chips, {reduces.repeats} all-reduces of {format_bytes(hidden)}"
    )
    return plan.with_(
        groups=plan.groups + (reduces,), partition=partition, attention=attention, notes=plan.notes + (note,) + kv_notes
    )


def _check_splittable(
    module: Module, plan: Plan, target: Target, chips: int, needed: int, usable: float, kv_heads: int
):
    """The fewest chips that hold the arguments must be a count tensor parallelism can split the
    program over: no more than its narrowest weight matrix's output columns (or its KV heads).

    Raises:
        InvalidShape: more chips than that (`--set levels.hbm.bytes=1` asks for 2^30 H100s).
    """
    widths = weight_matmul_widths(module, plan)
    most = max(min(widths, default=1), kv_heads or 1)
    if chips > most:
        split = f"the narrowest weight matrix has {min(widths)} output columns" if widths else "it has no weight matmul"
        raise InvalidShape(
            target.name,
            "chips",
            chips,
            f"the arguments need {format_bytes(needed)}, {chips} chips of {format_bytes(usable)} usable, but tensor "
            f"parallelism splits this program over at most {most} ({split}); give a target with more memory",
        )


def shard_kv_heads(plan: Plan, chips: int) -> tuple[dict, tuple[str, ...]]:
    """Each fused attention kernel's K and V (a KV cache in decode) split by KV heads over the
    chips, as Megatron and vLLM shard them: shards = min(chips, KV heads); with fewer KV heads than
    chips each chip holds one KV head, replicated chips / KV heads times (said in a note).
    Worked number: llama-2-70b (8 KV heads) on 8 chips: one KV head each, 1/8 of the cache; on 16
    chips: still 1/8 each, every KV head held twice."""
    attention, notes = {}, set()
    for gid, shape in plan.attention.items():
        kv = shape.kv_heads_per_sequence
        attention[gid] = replace(shape, shards=min(chips, kv))
        if kv < chips:
            notes.add(
                f"KV cache replicated: {kv} KV heads over {chips} chips, each chip holds one KV head's keys and values "
                f"(each KV head on {ceil_div(chips, kv)} chips), 1/{kv} of the cache"
            )
        else:
            notes.add(f"KV cache sharded by KV heads: {kv} KV heads over {chips} chips, {ceil_div(kv, chips)} per chip")
    return attention, tuple(sorted(notes))
