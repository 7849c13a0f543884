"""schedule_static: a deterministic, cycle-level list schedule of every op on its functional unit (LPU).

The LPU has no caches, no arbiters and no kernel launches: the compiler decides the cycle on
which every instruction issues. Each op is tiled into 320-element vectors and given to one unit:

    MXM  contractions: padded MACs / MACs per cycle, with n and k padded to the 320 x 320 weight
         tile; one layer's matmuls are split over the `tensor_parallel` chips that share it
    VXM  elementwise, transcendental and reductions: elements / 5120 ALUs per cycle
    SXM  switch and permute (transpose, broadcast, reverse, sort...): vectors / vectors per cycle
    MEM  addressing (slice, concatenate, pad, gather, scatter, dynamic slices): its bytes at the
         SRAM bandwidth
    HOST an op the chip cannot run
and its operands stream from and to SRAM at sram_bytes_per_s (the op can go no faster than its
feed). Ops are taken in program order (ties cannot arise: one order, one result). An op starts
when its unit is free and its inputs are ready: after the producer finishes plus the consumer's
latency (unit + memory latency), except that an elementwise or data-movement consumer chains
onto its producer's stream, starting as the producer's first vectors arrive and finishing no
sooner than its last. Each op's `increment` is how far it pushes the instance's makespan.
"""

from __future__ import annotations

import math

from hardware_models.plan import Plan, Slot, gemm_shape, group_outputs, group_work, round_up
from hardware_models.target import Target
from reference.ir import Module, category

UNITS = {
    "contraction": "MXM",
    "elementwise": "VXM",
    "transcendental": "VXM",
    "reduction": "VXM",
    "data_movement": "SXM",
}
# Data movement that is addressing, done by the memory slices as they stream, not by the switch.
MEMORY_OPS = {
    "slice",
    "concatenate",
    "pad",
    "gather",
    "scatter",
    "dynamic_slice",
    "dynamic_update_slice",
    "iota",
    "dynamic_iota",
}
CHAINED = {"elementwise", "transcendental", "data_movement"}


def mxm_macs_per_cycle(target: Target, dtype: str) -> float:
    """int8 at the four planes' full rate; 16-bit types at fp16_flop_per_s / (2 * clock)."""
    if dtype == "i8":
        return target["chip.mxm_macs_per_cycle"]
    return target["peak.fp16_flop_per_s"] / (2 * target["chip.clock_hz"])


def op_cycles(plan: Plan, module: Module, group, target: Target) -> tuple[str, int, int, int]:
    """(unit, busy cycles, feed cycles, padded FLOPs) of one op."""
    op = plan.ops[group.members[0]].op
    work = group_work(plan, module, group)
    flops, transcendentals, moved = work.flops, work.transcendentals, work.bytes
    feed = math.ceil(moved / (target.main_memory_bytes_per_s / target["chip.clock_hz"]))
    if group.kind == "fallback":
        return "HOST", 0, feed, flops
    kind = category(op)
    unit = "MEM" if op.short_name in MEMORY_OPS else UNITS.get(kind, "SXM")
    if unit == "MEM":
        return unit, feed, feed, flops
    if unit == "MXM":
        shape = gemm_shape(op, plan.runs_as(op.operand_types[0].dtype))
        tile = int(target["chip.mxm_rows"])
        padded_macs = shape.batch * shape.m * round_up(shape.n, tile) * round_up(shape.k, tile)
        tp = plan.partition.tensor_parallel if plan.partition else 1
        busy = math.ceil(padded_macs / tp / mxm_macs_per_cycle(target, shape.dtype))
        return unit, busy, feed, 2 * padded_macs
    elements = (
        op.operand_types[0].elements if kind == "reduction" else (op.result_types[0].elements if op.result_types else 0)
    )
    if unit == "VXM":
        busy = math.ceil(max(elements, flops + transcendentals) / target["chip.vector_alus"])
    else:
        busy = math.ceil(math.ceil(elements / target["chip.vector_lanes"]) / target["chip.sxm_vectors_per_cycle"])
    return unit, busy, feed, flops


def latency(target: Target, unit: str) -> int:
    own = {"MXM": "mxm", "VXM": "vxm", "SXM": "sxm"}.get(unit)  # MEM pays the memory latency alone
    return int(target["schedule.mem_latency_cycles"] + (target[f"schedule.{own}_latency_cycles"] if own else 0))


def schedule_static(module: Module, plan: Plan, target: Target) -> Plan:
    graph = plan.value_graph()
    owner = {i: g.id for g in plan.groups for i in g.members}
    slots: dict[int, Slot] = {}
    unit_free: dict[tuple[str, str], int] = {}
    makespan: dict[str, int] = {}
    # what each op reads as the value graph sees it: through views, and the buffer an update in
    # place wrote (a decode step's attention reads the cache after this token's update lands)
    reads: dict[int, set[str]] = {}
    for g in plan.groups:
        for value in group_outputs(plan, graph, g):
            for user in graph.users(value):
                reads.setdefault(user, set()).add(value)
    for group in plan.groups:
        if group.kind == "transfer":
            continue
        unit, busy, feed, padded = op_cycles(plan, module, group, target)
        own_latency = latency(target, unit)
        duration = max(busy, feed)
        chained = category(plan.ops[group.members[0]].op) in CHAINED
        ready = finish_floor = 0
        first = group.members[0]
        for value in (*plan.ops[first].operands, *sorted(reads.get(first, ()))):
            producer = owner.get(graph.producer.get(value, graph.producer.get(graph.root(value))))
            if producer is None or producer not in slots:
                continue
            p = slots[producer]
            if chained:
                ready = max(ready, p.start + latency(target, p.unit) + own_latency)
                finish_floor = max(finish_floor, p.finish + own_latency)
            else:
                ready = max(ready, p.finish + own_latency)
        timeline = plan.timeline(group.instance)  # an inlined call's ops run on their caller's units
        start = max(ready, unit_free.get((timeline, unit), 0))
        finish = max(start + duration, finish_floor)
        unit_free[(timeline, unit)] = finish
        before = makespan.get(timeline, 0)
        makespan[timeline] = max(before, finish)
        slots[group.id] = Slot(unit, start, finish, busy, feed, makespan[timeline] - before, padded)
    return plan.with_(schedule=slots)
