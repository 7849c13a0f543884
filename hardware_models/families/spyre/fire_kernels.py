"""fire_kernels: the dataflow graph between Spyre's kernels, and when each may fetch its inputs.

Nodes are kernels, edges the tensors between them with their sticks and where they wait (LX or
LPDDR5). The firing rule: the runtime launches kernels in program order on one stream, and a
kernel fires when every input is in its cores' scratchpads. Inputs already in LX are there;
inputs in LPDDR5 are loaded by DMA. A load whose tensor does not come from the kernel just
before (weights, arguments, a tensor spilled earlier) may start while that kernel computes: the
back end double-buffers the LPDDR5 -> LX sequence. Its bytes are recorded per kernel as
`prefetchable` (in the placement's split); the cost model hides them behind the previous
kernel's compute time that its own memory traffic leaves idle.
"""

from __future__ import annotations

from dataclasses import replace

from hardware_models.families.spyre.plan import Edge, SpyreState
from hardware_models.plan import Plan, group_inputs, group_outputs
from hardware_models.target import Target
from reference.ir import Module


def fire_kernels(module: Module, plan: Plan, target: Target) -> Plan:
    graph = plan.value_graph()
    producer_group = {v: g.id for g in plan.groups for v in group_outputs(plan, graph, g)}
    edges = []
    placements = dict(plan.placements)
    for g in plan.groups:
        if g.kind == "transfer" or g.id not in placements:
            continue
        placement = placements[g.id]
        prefetchable = 0
        for value in group_inputs(plan, graph, g):
            source = producer_group.get(value, -1)
            in_lx = value in placement.resident_inputs
            where = target.level("on-chip").name if in_lx else target.main_memory_level
            edges.append(
                Edge(
                    source,
                    g.id,
                    value,
                    SpyreState.of(plan).layouts[value].sticks if value in SpyreState.of(plan).layouts else 0,
                    where,
                )
            )
            if not in_lx and source != g.id - 1 and value in SpyreState.of(plan).layouts:
                prefetchable += SpyreState.of(plan).layouts[value].padded_bytes
        placements[g.id] = replace(placement, split=placement.split + (("prefetchable", prefetchable),))
    return plan.with_(placements=placements).with_state(SpyreState, dataflow=tuple(edges))
