"""place_layers: lay the whole program out across the wafer, one region of PEs per kernel (Cerebras).

Weights stay resident in the SRAM of the PEs that use them and activations flow over the fabric
from region to region, layer after layer, as a pipeline. Every kernel first gets the PEs whose
SRAM holds its weights (and caches); the PEs left are shared out by each kernel's share of the
program's work, where a kernel's work is the slowest of its arithmetic and its traffic at
whole-wafer rates (so a softmax over a long sequence, light in FLOPs and heavy in bytes, is not
starved):

    work(g)   = max(FLOPs / (e * peak), SRAM bytes / SRAM bandwidth, sent bytes / fabric bandwidth)
    region(g) = ceil(weight bytes(g) / usable SRAM per PE) + PEs left * work(g) / total work

A token crosses the regions one after another. The rows of a pass (a prefill's tokens, a batch's
sequences: batch x tokens of a regional block's hidden state) stream through the regions as a
pipeline, each region working on one row while the next works on the row before (a "row
pipeline" group carries the steady state, families/wafer/cost.py); a program without layers is costed as
one pass through every region in turn.

When the program's arguments (weights, inputs, caches) exceed one wafer's usable SRAM, the
compiler chooses the cheapest of three ways, per pass through the program, and says which with
all three costs (families/wafer/cost.py has the formulas; W = ceil(bytes / usable SRAM)):
    a pipeline of W wafers, whole layers on each (not where one layer's weights exceed a wafer,
      nor for more wafers than layers, or kernels of a program without layers)
    each layer split over the W wafers: 2 all-reduces of the hidden state a layer (1 for a
      program without layers), which adds no PEs a pipeline lacks but lets a layer span wafers
    weight streaming from MemoryX into one wafer
--chips N forces N wafers (1: streaming), at most the narrowest weight matrix's columns.
Bytes per level: sram (each kernel's operands and results), fabric (what it sends on), memoryx
(weights streamed in, in streaming mode).
"""

from __future__ import annotations

import math

from hardware_models.families.wafer.cost import exchange_seconds, hop_seconds
from hardware_models.families.wafer.plan import Region, WaferState
from hardware_models.plan import (
    Group,
    Partition,
    Placement,
    Plan,
    ceil_div,
    group_inputs,
    group_outputs,
    group_work,
)
from hardware_models.target import Target
from hardware_models.workload import (
    layer_structure,
    program_arguments,
    program_footprint,
    weight_matmul_widths,
)
from reference.errors import InvalidShape
from reference.ir import Module
from reference.units import format_bytes, format_seconds, plural

STRATEGY_WORDS = {"streamed": "streamed", "pipeline": "in a pipeline of wafers", "layer split": "with each layer split"}


def choose_chunks(module: Module, plan: Plan, target: Target, rows: int) -> tuple[int, int]:
    """(chunks, candidates costed): how many chunks the pass's rows flow through the regions in,
    the powers of two up to `rows` (and `rows` itself), by the pass time families/wafer/cost.py gives each;
    the first of equals (the fewest chunks) wins."""
    from hardware_models.families.wafer.cost import pipeline_seconds

    candidates = sorted({1 << k for k in range(rows.bit_length()) if 1 << k <= rows} | {rows})
    best = min(candidates, key=lambda c: (pipeline_seconds(module, plan, target, c), c))
    return best, len(candidates)


def stream_rows(module: Module, footprint) -> int:
    """Token rows a pass streams through the layers: batch x tokens of the hidden state one layer
    passes the next (a regional block's result, or a flat stack's residual stream); 1 for a program
    without layers, whose rows are not known."""
    if not footprint.regional:
        return 1
    calls = [op for op in module.main.ops if op.short_name == "call" and op.trip_count]
    if calls:
        shape = calls[0].result_types[0].shape
    else:
        flat = layer_structure(module)
        shape = flat.hidden_shape if flat else ()
    return max(1, math.prod(shape[:-1])) if len(shape) >= 2 else 1


def place_layers(module: Module, plan: Plan, target: Target) -> Plan:
    graph = plan.value_graph()
    footprint = program_footprint(module)
    needed, hidden, layers = footprint.needed_bytes, footprint.hidden_bytes, footprint.layers
    capacity = target.usable_main_memory_bytes
    whole = max(1, int(capacity))  # whole bytes a wafer holds: the wafer count is an exact integer ceiling
    io_of = {g.id: (group_inputs(plan, graph, g), group_outputs(plan, graph, g)) for g in plan.groups}
    arguments = program_arguments(plan, module)  # weights and caches; not activations passed to a block
    weights_of = {g.id: sum(graph.nbytes(v) for v in io_of[g.id][0] if v in arguments) for g in plan.groups}
    wafers = max(1, ceil_div(needed, whole))
    # A pipeline puts whole layers (whole kernels, for a program without layers) on each wafer.
    pipeline_most = layers if footprint.regional else max(1, len(plan.groups))
    largest = max([footprint.layer_bytes if footprint.regional else 0, *weights_of.values()])
    exchanges = 2 * layers if footprint.regional else 1  # per pass, each layer split: after attention and the MLP
    split_most = max(wafers, min(weight_matmul_widths(module, plan), default=wafers))

    def pipeline_s(n: int) -> float | None:
        fits = largest <= whole and n <= pipeline_most
        return (n - 1) * hop_seconds(target, hidden) if fits else None

    def layer_split_s(n: int) -> float:
        return exchanges * exchange_seconds(target, n, hidden)

    stream_s = needed / target["interconnect.system_io_bytes_per_s"]
    n = plan.requested_chips  # --chips: the user's wafer count
    if n is not None:
        if 1 < n < wafers:
            raise InvalidShape(
                target.name, "chips", n, f"the arguments need {wafers} wafers split, or 1 with weights streamed"
            )
        if n > split_most:
            raise InvalidShape(
                target.name,
                "chips",
                n,
                f"at most {split_most}: each layer split over wafers gives a wafer one column of its narrowest "
                "weight matrix at the least",
            )
    unit = "layer" if footprint.regional else "kernel"
    no_pipeline = (
        f"one {unit}'s weights ({format_bytes(largest)}) exceed a wafer"
        if largest > whole
        else f"more wafers than {unit}s ({pipeline_most})"
    )
    streamable = wafers > 1 and n in (None, 1)
    if n is not None and n > 1:
        wafers = n
    choices: dict[str, float] = {}  # the ways of holding the weights on several wafers, by cost per pass
    if wafers > 1 and n != 1:
        if pipeline_s(wafers) is not None:
            choices["pipeline"] = pipeline_s(wafers)
        choices["layer split"] = layer_split_s(wafers)
    if streamable:
        choices["streamed"] = stream_s
    strategy = (
        min(choices, key=choices.get) if choices else "resident"
    )  # the first of equals: pipeline, layer split, streamed
    streaming = strategy == "streamed"
    if strategy == "resident":
        mode = "resident on one wafer"
    elif streaming:
        mode = "streamed from MemoryX"
    elif strategy == "pipeline":
        mode = f"split over {wafers} wafers, whole {unit}s on each"
    else:
        mode = f"split over {wafers} wafers, each {unit} across all of them"
    used = 1 if streaming else wafers
    pes = target["chip.pes"] * used
    sram_per_pe = capacity / target["chip.pes"]
    sram = target.level("main")
    work = {g.id: group_work(plan, module, g) for g in plan.groups}
    rate = target["fitted.compute_efficiency"] * target["peak.fp16_flop_per_s"]
    sent = {g.id: sum(graph.nbytes(v) for v in group_outputs(plan, graph, g)) for g in plan.groups}
    demand = {
        g.id: max(
            work[g.id].flops / rate,
            work[g.id].bytes / target.level_value(sram, "bytes_per_s"),
            sent[g.id] / target["interconnect.fabric_bytes_per_s"],
        )
        for g in plan.groups
    }
    total_demand = sum(demand[g.id] * g.repeats for g in plan.groups) or 1
    holding = {g.id: 0 if streaming else math.ceil(weights_of[g.id] / sram_per_pe) for g in plan.groups}
    left = max(0, pes - sum(holding[g.id] * g.repeats for g in plan.groups))
    regions, placements = {}, {}
    for g in plan.groups:
        inputs, outputs = io_of[g.id]
        weights = weights_of[g.id]
        region = max(1, holding[g.id] + math.floor(left * demand[g.id] / total_demand))
        regions[g.id] = Region(region, 0 if streaming else weights)
        levels = [(sram.name, work[g.id].bytes), ("fabric", sent[g.id])]
        if streaming:
            levels.append(("memoryx", weights))
        if g.kind == "fallback":
            levels = [("host", sum(graph.nbytes(v) for v in inputs + outputs)), *levels]
        placements[g.id] = Placement(tuple(levels))
    groups = plan.groups
    if wafers > 1 and strategy == "pipeline":
        groups += (Group(len(groups), "transfer", (), "main", wafers - 1, "wafer hop"),)
    elif wafers > 1 and strategy == "layer split":
        groups += (Group(len(groups), "transfer", (), "main", exchanges, "layer exchange"),)
    rows = stream_rows(module, footprint)
    if rows > 1:  # the rows of a pass may flow through the regions as a pipeline (families/wafer/cost.py)
        groups += (Group(len(groups), "transfer", (), "main", 1, "row pipeline"),)
    holding_share = sum(holding[g.id] * g.repeats for g in plan.groups) / pes
    notes = (
        f"weights {mode}: {format_bytes(needed)} against {format_bytes(capacity)} of usable SRAM a wafer"
        + (
            "; a pass costs "
            + ", ".join(f"{format_seconds(t)} {STRATEGY_WORDS[k]}" for k, t in choices.items())
            + f" (chosen: {STRATEGY_WORDS[strategy]})"
            if len(choices) > 1
            else ""
        )
        + (f"; no pipeline: {no_pipeline}" if wafers > 1 and n != 1 and "pipeline" not in choices else ""),
        f"{holding_share:.1%} of the PEs are sized by the weights they hold, the rest by work",
    )
    chunks = 1
    if rows > 1:
        chunks, candidates = choose_chunks(
            module,
            plan.with_(
                groups=groups,
                placements=placements,
                partition=Partition(used, 1, needed, whole, hidden, layers, mode),
            ).with_state(WaferState, regions=regions),
            target,
            rows,
        )
        notes += (
            f"{rows:,} token rows stream through the regions in {plural(chunks, 'chunk')} of "
            f"{plural(ceil_div(rows, chunks), 'row')} as a pipeline (chosen by cost of {candidates}: a chunk reads each "
            f"region's weights once, so fewer chunks reuse them and more overlap the regions)",
        )
    partition = Partition(used, 1, needed, whole, hidden, layers, mode, chunks)
    return plan.with_(groups=groups, placements=placements, partition=partition, notes=plan.notes + notes).with_state(
        WaferState, regions=regions
    )
