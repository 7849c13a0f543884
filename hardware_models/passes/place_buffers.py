"""place_buffers: decide where each group's inputs and outputs live, and count bytes per level.

A group reads its inputs (weights, activations produced by other groups) and writes the values
that leave it; values inside a group stay in registers, shared memory or VMEM. The levels are
the target file's: `main` is its main-memory level (HBM) and `cache` its outermost on-chip
level (L2 on a GPU, VMEM on a TPU). Per execution:

    fusion       main = inputs + outputs (each root value once; a broadcast is read at its size)
    contraction  main = A * ceil(np / bn) + B * ceil(mp / bm) + other inputs + outputs,
                 with (bm, bn) the reuse block from pad_to_tiles (A and B read once when the
                 whole problem fits on chip)
    fallback     host link = inputs + outputs (they cross to the host and back)

On the cache level:
    keeps_producer_output (a GPU's L2): every tile load passes through it, so a contraction
             moves A * (np / tn) + B * (mp / tm) + the rest there; a fusion moves what main
             memory moves. An input produced by the group just before, at most
             resident_fraction of the level in size, is still there: read from it, not main.
    otherwise (a TPU's VMEM): a contraction moves A * (np / C) + B + the rest (A re-streamed
             per column of arrays); a fusion moves every member op's operands and results
             (each op reads and writes VMEM). XLA writes every fusion's outputs back to HBM,
             so nothing stays across groups.
    A chip whose tiles load through a level of their own, under that cache (AMD: each XCD's L2
    under the Infinity Cache; `Simt.tile_feed`), counts the tile loads there and, at the cache,
    what main memory moves plus the inputs it keeps.
Bytes count at the width each type runs as (plan.value_graph(): an emulated f16 moves 4 bytes).
"""

from __future__ import annotations

from hardware_models.passes.fuse_attention import attention_placement
from hardware_models.plan import (
    Placement,
    Plan,
    ceil_div,
    group_inputs,
    group_outputs,
    group_work,
    read_bytes,
    shard_factor,
)
from hardware_models.target import Target
from reference.ir import Module


def place_buffers(module: Module, plan: Plan, target: Target) -> Plan:
    graph = plan.value_graph()
    main, cache = target.level("main"), target.level("on-chip")
    feed = _tile_feed(target, cache)
    keeps = cache.keeps_producer_output
    resident_limit = target.level_capacity(cache) * target.level_value(cache, "resident_fraction") if keeps else 0
    placements = {}
    produced_by: dict[str, int] = {}
    for group in plan.groups:
        for value in group_outputs(plan, graph, group):
            produced_by[value] = group.id
    for group in plan.groups:
        if group.kind == "transfer":  # chip-to-chip traffic: costed from the partition
            continue
        if group.kind == "attention":  # fuse_attention: Q, K, V and O; the scores stay on chip
            placements[group.id] = attention_placement(plan, graph, group, main.name, cache.name, keeps)
            continue
        inputs = group_inputs(plan, graph, group)
        outputs = group_outputs(plan, graph, group)
        out_bytes = sum(graph.nbytes(v) for v in outputs)
        resident = tuple(
            v
            for v in inputs
            if keeps
            and group.kind != "fallback"
            and produced_by.get(v) == group.id - 1
            and graph.nbytes(v) <= resident_limit
        )
        in_bytes = {v: read_bytes(plan, graph, group, v) for v in inputs}  # a slice or gather reads its part
        shards = shard_factor(plan, group)  # tensor parallel: this chip's weight columns and output
        if group.kind == "fallback":
            total = sum(in_bytes.values()) + out_bytes
            placements[group.id] = Placement((("host", total), (main.name, total)))
            continue
        reads = dict.fromkeys(in_bytes, 1)  # main-memory reads of each input per execution
        if group.kind == "contraction":
            first = plan.ops[group.members[0]]
            a, b = (graph.root(v) for v in first.operands[:2])
            in_bytes[b] = ceil_div(in_bytes[b], shards)
            out_bytes = ceil_div(out_bytes, shards)
            tiling = plan.tilings[group.id]
            mp, np_, _ = tiling.padded
            bm, bn = tiling.block
            reads[a], reads[b] = ceil_div(np_, bn), ceil_div(mp, bm)
            rest = sum(n for v, n in in_bytes.items() if v not in (a, b)) + out_bytes
            tm, tn, _ = tiling.tile
            if keeps:
                on_chip = in_bytes[a] * (np_ // tn) + in_bytes[b] * (mp // tm) + rest
            else:
                on_chip = in_bytes[a] * ceil_div(np_, tn) + in_bytes[b] + rest
        hbm = sum(n * reads[v] for v, n in in_bytes.items() if v not in resident) + out_bytes
        if group.kind != "contraction":
            on_chip = hbm + sum(in_bytes[v] for v in resident)
            if not keeps:
                on_chip = max(on_chip, group_work(plan, module, group).bytes)
        if feed != cache:  # the tiles load through their own level; the cache in front of HBM sees its traffic
            near = hbm + sum(in_bytes[v] for v in resident)
            placements[group.id] = Placement(((main.name, hbm), (cache.name, near), (feed.name, on_chip)), resident)
            continue
        placements[group.id] = Placement(((main.name, hbm), (cache.name, on_chip)), resident)
    return plan.with_(placements=placements)


def _tile_feed(target: Target, cache):
    """The level that feeds a SIMT chip's tiles (its view's `tile_feed`: each XCD's L2 on AMD, under
    the Infinity Cache), else the outermost on-chip level, which then counts the tile loads too."""
    if target.family_record.view is None:
        return cache
    return getattr(target.view, "tile_feed", cache)
