"""The Cerebras model: every kernel on its own region of PEs, weights in their SRAM, a pipeline.

With P PEs on a wafer, a peak of R FLOP/s and an efficiency e, a kernel on a region of r PEs
(place_layers) takes

    compute_s = FLOPs / (r * e * R / P)
    memory_s  = {sram:    its operand and result bytes / (SRAM bandwidth * r / P),
                 fabric:  what it sends on / (fabric bandwidth * r / P),
                 memoryx: in streaming mode, its weights / system I/O bandwidth}
    time_s    = max(compute_s, memory_s) + region_latency_s

and a token crosses every region in turn, so at batch 1 the time is the pipeline's depth times
the per-region latency far more than the wafer's peak. Weights that need W wafers
(place_layers chooses the cheapest way per pass):
    a pipeline of wafers, whole layers on each: (W - 1) hops of latency + hidden state / system I/O
    each layer split over the W wafers (all of them work on every layer, so every kernel has W
      wafers' PEs either way): 2 exchanges a layer (after attention, after the MLP), each a ring
      all-reduce of 2 (W - 1) steps of latency + hidden / W / system I/O
    weight streaming from MemoryX into one wafer: weight bytes / system I/O
Worked number: 4 wafers, 80 layers, a 16 kB hidden state, 5 us hops, 150 GB/s: a pipeline pays
3 x (5 us + 0.1 us) = 15.3 us; a layer split 160 x 6 x (5 us + 0.03 us) = 4.8 ms. A pipeline is
impossible where one layer's weights exceed a wafer, or for more wafers than layers.

Rows in a pipeline (place_layers: a pass of token rows in R > 1 chunks, R chosen by cost). Every
region (and every wafer hop) is a stage. One chunk keeps a stage busy for its share of the
pass's compute and traffic, except that the weights the region's PEs hold are read from their
SRAM again for every chunk (its matrix products read the whole weight tile once):

    busy = max(compute_s / R, (SRAM bytes - weights) / R + weights) / region SRAM rate, ...)

and the first chunk also pays each stage's latency, and waits for weights streamed from MemoryX
(once a pass: the link is shared by every chunk, so the steady state does not re-stream them). The chunks flow through the stages one
behind the other, so

    pass = sum over stages of (max(busy, streamed) + latency)  +  (R - 1) x max over stages of busy

place_layers tries R = 1, 2, 4, ... up to the rows and keeps the fastest: few chunks reuse the
weights, many overlap the stages.

Each kernel is charged its busy + latency (time_s, its share of the pass; span_s keeps its
whole-pass time t, what the roofline draws) and the "row pipeline" group the second term, with
the slowest stage's compute and memory. Worked number (no weights, latency 0): 3 stages of
t = 1, 2, 4 ms over R = 100 rows: 0.07 ms + 99 x 0.04 ms = 4.03 ms, against 7 ms one stage
after another.
Worked number: a kernel of 1 GFLOP on 1% of a WSE-3 (9,000 PEs) at e = 0.5:
1e9 / (9000 * 0.5 * 125e15 / 900000) = 1.6 us, plus the region latency (0.5 us).
"""

from __future__ import annotations

from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.families.wafer.plan import WaferState
from hardware_models.plan import Group, Plan, ceil_div, group_work
from hardware_models.target import Target
from reference.ir import Module


def wafer_group_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    chunks = plan.partition.chunks if plan.partition else 1  # place_layers' chunks of the pass's rows
    if group.label == "row pipeline":
        return _pipeline_cost(module, plan, target, chunks)
    full = _pass_cost(module, plan, group, target)
    if chunks <= 1:
        return full
    row = _one_row(plan, group, target, full, chunks)
    latency = _latency(group, target, plan)
    return Cost(
        full.flops,
        full.padded_flops,
        row.compute_s,
        row.schedule_s + latency,
        _first_chunk_s(row) + latency,
        full.bytes,
        row.memory_s,
        full.time_s,
    )


def _first_chunk_s(row: Cost) -> float:
    """The first chunk's busy time at a stage: its share, or the stage's weights streamed in from
    MemoryX (once a pass, shared by every chunk), whichever is longer."""
    return max(row.time_s, dict(row.memory_s).get("memoryx", 0.0))


def _transfer(target: Target, label: str, wafers: int, hidden: int) -> tuple[float, int]:
    """(latency, bytes each wafer sends) of one transfer: a pipeline's hop sends the hidden state
    to the next wafer; a layer split's exchange is a ring all-reduce among the W wafers, 2 (W - 1)
    steps of a hop's latency and 1/W of the hidden state each."""
    hop = target["schedule.wafer_hop_latency_s"]
    if label == "layer exchange":
        steps = 2 * (wafers - 1)
        return steps * hop, steps * ceil_div(hidden, wafers)
    return hop, hidden


def hop_seconds(target: Target, hidden: int) -> float:
    """One hop of a pipeline of wafers: the hidden state to the next wafer."""
    latency, sent = _transfer(target, "wafer hop", 2, hidden)
    return latency + sent / target["interconnect.system_io_bytes_per_s"]


def exchange_seconds(target: Target, wafers: int, hidden: int) -> float:
    """One all-reduce of the hidden state among the W wafers a layer is split over (_transfer)."""
    return wafer_allreduce(target, hidden, wafers).time_s


def wafer_allreduce(target: Target, nbytes: int, wafers: int, span: int | None = None) -> Cost:
    """A ring all-reduce of `nbytes` among `wafers` systems over their system I/O, as a layer
    split's exchange (_transfer): 2 (W - 1) hops of latency, each wafer sending 1/W a step."""
    latency, sent = _transfer(target, "layer exchange", wafers, nbytes)
    link_s = sent / target["interconnect.system_io_bytes_per_s"]
    return Cost(0, 0, 0.0, latency, latency + link_s, (("system_io", sent),), (("system_io", link_s),))


def _latency(group: Group, target: Target, plan: Plan) -> float:
    """A kernel's region latency, or a transfer's (its hops, _transfer)."""
    if group.kind != "transfer":
        return target["schedule.region_latency_s"]
    return _transfer(target, group.label, plan.partition.chips, 0)[0]


def _one_row(plan: Plan, group: Group, target: Target, full: Cost, chunks: int) -> Cost:
    """How long one chunk keeps a stage busy (latency aside): its share of the pass's compute and
    traffic, except that the weights the region's PEs hold are read from their SRAM again for
    every chunk (its matrix products read the whole weight tile)."""
    region = WaferState.of(plan).regions.get(group.id)
    weights = region.weight_bytes if region else 0
    main = target.main_memory_level
    memory_s = []
    for level, seconds in full.memory_s:
        moved = dict(full.bytes).get(level, 0)
        if level == main and moved:
            seconds = seconds * ((moved - weights) / chunks + weights) / moved
        elif level != "memoryx":  # weights streamed in once a pass, not once a chunk (_first_chunk_s)
            seconds = seconds / chunks
        memory_s.append((level, seconds))
    compute_s = full.compute_s / chunks
    busy = max(compute_s, max((t for lv, t in memory_s if lv != "memoryx"), default=0.0))
    return Cost(0, 0, compute_s, 0.0, busy, (), tuple(memory_s))


def _stages(module: Module, plan: Plan, target: Target, chunks: int) -> tuple[float, Cost]:
    """(sum over stages of (busy + latency) x repeats, the slowest stage's busy Cost) of a pass in
    `chunks` chunks; one chunk is the whole pass, busy its time less its latency."""
    total, slowest = 0.0, Cost()
    for g in plan.groups:
        if g.label == "row pipeline":
            continue
        full = _pass_cost(module, plan, g, target)
        latency = _latency(g, target, plan)
        busy = _one_row(plan, g, target, full, chunks) if chunks > 1 else Cost(time_s=full.time_s - latency)
        total += ((_first_chunk_s(busy) if chunks > 1 else busy.time_s) + latency) * g.repeats
        slowest = max(slowest, busy, key=lambda c: c.time_s)
    return total, slowest


def pipeline_seconds(module: Module, plan: Plan, target: Target, chunks: int) -> float:
    """The pass's time with its rows in `chunks` chunks (the module doc's formula); place_layers
    chooses the chunks by it."""
    total, slowest = _stages(module, plan, target, chunks)
    return total + (chunks - 1) * slowest.time_s


def _pipeline_cost(module: Module, plan: Plan, target: Target, chunks: int) -> Cost:
    """(chunks - 1) x the slowest stage's busy time, with that stage's compute and memory."""
    _, slowest = _stages(module, plan, target, chunks)
    k = chunks - 1
    return Cost(
        0, 0, slowest.compute_s * k, 0.0, slowest.time_s * k, (), tuple((lv, t * k) for lv, t in slowest.memory_s)
    )


def _pass_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    """A kernel's (or a wafer hop's) time for the whole pass, one region after another."""
    io = target["interconnect.system_io_bytes_per_s"]
    if group.kind == "transfer":  # a pipeline's hop, or an exchange of a layer split over wafers
        latency, sent = _transfer(target, group.label, plan.partition.chips, plan.partition.hidden_bytes)
        link = sent / io
        return Cost(0, 0, 0.0, latency, latency + link, (("system_io", sent),), (("system_io", link),))
    placement = plan.placements[group.id]
    latency_s = target["schedule.region_latency_s"]
    flops = group_work(plan, module, group).flops
    pes = target["chip.pes"]
    share = WaferState.of(plan).regions[group.id].pes / pes
    compute_s = flops / (share * pes * target["fitted.compute_efficiency"] * target["peak.fp16_flop_per_s"] / pes)
    memory_s = {
        target.main_memory_level: placement.at(target.main_memory_level) / (target.main_memory_bytes_per_s * share),
        "fabric": placement.at("fabric") / (target["interconnect.fabric_bytes_per_s"] * share),
    }
    if placement.at("memoryx"):
        memory_s["memoryx"] = placement.at("memoryx") / io
    return roofline_cost(flops, flops, compute_s, dict(placement.bytes), memory_s, compute_s, latency_s)
