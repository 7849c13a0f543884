"""plan_scratchpad: keep tensors in each core's scratchpad (LX) while they are live, and count
the LPDDR5 traffic that remains, in sticks (Spyre).

Walking the kernels in order, every tensor a kernel reads or writes passes through LX (the
`lx` level: its stick-padded bytes); the back end streams a kernel's operands through it in
double-buffered chunks, so a kernel larger than LX still runs. A kernel's output that a later
kernel reads stays in LX if, per core, it fits beside what is already kept there within the
usable scratchpad less its buffer_fraction (the streaming buffers; levels.lx.buffer_fraction in
the target file, an assumption of 0.5); it leaves LX after its last
reader. An output that a later kernel reads but that does not fit is spilled: written to LPDDR5
and read back. Everything else moves between LPDDR5 and LX:

    lpddr5 = stick-padded bytes of inputs not in LX + outputs not kept (a program's results
             always cross; its arguments start there) + 2 x restickified bytes

Split accounts for the cost model: read, write, spilled and restickified bytes.
"""

from __future__ import annotations

from hardware_models.families.spyre.plan import SpyreState
from hardware_models.plan import (
    Placement,
    Plan,
    ceil_div,
    group_inputs,
    group_outputs,
    read_bytes,
    shard_factor,
)
from hardware_models.target import Target
from reference.ir import Module


def plan_scratchpad(module: Module, plan: Plan, target: Target) -> Plan:
    graph = plan.value_graph()
    lx = target.level("on-chip")
    keep_limit = target.level_value(lx, "usable_bytes") * (1 - target.level_value(lx, "buffer_fraction"))  # per core
    io = {g.id: (group_inputs(plan, graph, g), group_outputs(plan, graph, g)) for g in plan.groups}
    last_reader = {}
    for g in plan.groups:
        for value in io[g.id][0]:
            last_reader[value] = g.id
    returned = {v for g in plan.groups for v in io[g.id][1] if -1 in graph.users(v)}
    restick = {}
    for r in SpyreState.of(plan).restickify:
        if r.kind == "operand":
            restick[r.group] = restick.get(r.group, 0) + SpyreState.of(plan).layouts[r.value].padded_bytes
    kept: dict[str, float] = {}  # value -> bytes per core held in LX
    placements = {}
    for g in plan.groups:
        if g.kind == "transfer":  # chip-to-chip traffic: costed from the partition
            continue
        inputs, outputs = io[g.id]
        cores = SpyreState.of(plan).divisions[g.id].cores if g.id in SpyreState.of(plan).divisions else 1
        padded = {v: SpyreState.of(plan).layouts[v].padded_bytes for v in inputs + outputs}
        for v in inputs:  # a slice or gather reads its part of the value (values.read_bytes)
            part = read_bytes(plan, graph, g, v)
            if part < graph.nbytes(v):
                padded[v] = ceil_div(padded[v] * part, graph.nbytes(v))
        shards = shard_factor(plan, g)
        if shards > 1:  # tensor parallel: this card's weight columns and output
            weight = graph.root(plan.ops[g.members[0]].operands[1])
            for v in [weight, *outputs]:
                padded[v] = ceil_div(padded[v], shards)
        resident = tuple(v for v in inputs if v in kept)
        read = sum(padded[v] for v in inputs if v not in kept)
        for value in inputs:
            if last_reader.get(value) == g.id:
                kept.pop(value, None)
        write = spilled = 0
        for value in outputs:
            share = padded[value] / cores
            if value not in returned and value in last_reader and sum(kept.values()) + share <= keep_limit:
                kept[value] = share
            else:
                write += padded[value]
                spilled += padded[value] if value in last_reader else 0
        restickified = 2 * restick.get(g.id, 0)
        lpddr5 = read + write + restickified
        if g.kind == "fallback":  # to the host over PCIe and back, through LPDDR5
            placements[g.id] = Placement(
                (("host", sum(padded.values())), (target.main_memory_level, lpddr5)), resident, ()
            )
            continue
        split = (("read", read), ("write", write), ("spilled", spilled), ("restickify", restickified))
        placements[g.id] = Placement(
            ((target.main_memory_level, lpddr5), (lx.name, sum(padded.values()))), resident, split
        )
    return plan.with_(placements=placements)
