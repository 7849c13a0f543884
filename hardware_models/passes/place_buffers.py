"""place_buffers: decide where each group's inputs and outputs live, and count bytes per level.

A group reads its inputs (weights, activations produced by other groups) and writes the values
that leave it; values inside a group stay in registers, shared memory or VMEM. Per execution:

    fusion       HBM = inputs + outputs (each root value once; a broadcast is read at its size)
    contraction  HBM = A * ceil(np / bn) + B * ceil(mp / bm) + other inputs + outputs,
                 with (bm, bn) the reuse block from pad_to_tiles (A and B read once when the
                 whole problem fits on chip)
    fallback     host link = inputs + outputs (they cross to the host and back)

The on-chip level is L2 on a GPU and VMEM on a TPU:
    GPU L2   contraction: A * (np / tn) + B * (mp / tm) + the rest (every tile load passes L2);
             fusion: what HBM moves. An input produced by the group just before, at most half of
             L2 in size, is still in L2 (`keeps_producer_output`): read from L2, not HBM.
    TPU VMEM contraction: A * (np / C) + B + the rest (A re-streamed per column of arrays);
             fusion: every member op's operands and results (each op reads and writes VMEM).
             XLA writes every fusion's outputs back to HBM, so nothing stays across groups.
Capacity: when the program's arguments (weights, inputs, a KV cache; a block's weights once per
layer) exceed HBM, the plan says so: one chip cannot hold the model, and the time assumes it did.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardware_models.plan import Placement, Plan, ValueGraph, ceil_div, group_inputs, group_outputs, group_work, shard_factor
from hardware_models.target import Target
from reference.ir import Module


@dataclass(frozen=True)
class OnChipLevel:
    name: str
    capacity_key: str
    keeps_producer_output: bool


# An assumption, not a measured figure: the share of the on-chip level a producer's output may
# fill and still be there for the next kernel (the rest is other traffic's).
RESIDENT_FRACTION = 0.5

GPU_L2 = OnChipLevel("l2", "memory.l2_bytes", keeps_producer_output=True)
TPU_VMEM = OnChipLevel("vmem", "memory.vmem_bytes_per_tensorcore", keeps_producer_output=False)


def place_buffers(module: Module, plan: Plan, target: Target, level: OnChipLevel = GPU_L2) -> Plan:
    graph = ValueGraph(plan.ops)
    placements = {}
    produced_by: dict[str, int] = {}
    for group in plan.groups:
        for value in group_outputs(plan, graph, group):
            produced_by[value] = group.id
    for group in plan.groups:
        if group.kind == "transfer":  # chip-to-chip traffic: costed from the partition
            continue
        inputs = group_inputs(plan, graph, group)
        outputs = group_outputs(plan, graph, group)
        out_bytes = sum(graph.nbytes(v) for v in outputs)
        resident = tuple(
            v for v in inputs
            if level.keeps_producer_output and group.kind != "fallback" and produced_by.get(v) == group.id - 1
            and graph.nbytes(v) <= target[level.capacity_key] * RESIDENT_FRACTION
        )
        in_bytes = {v: graph.nbytes(v) for v in inputs}
        shards = shard_factor(plan, group)  # tensor parallel: this chip's weight columns and output
        if group.kind == "fallback":
            total = sum(in_bytes.values()) + out_bytes
            placements[group.id] = Placement((("host", total), ("hbm", total)))
            continue
        reads = dict.fromkeys(in_bytes, 1)  # HBM reads of each input per execution
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
            if level.name == "l2":
                tm, tn, _ = tiling.tile
                on_chip = in_bytes[a] * (np_ // tn) + in_bytes[b] * (mp // tm) + rest
            else:
                on_chip = in_bytes[a] * ceil_div(np_, tiling.tile[1]) + in_bytes[b] + rest
        hbm = sum(n * reads[v] for v, n in in_bytes.items() if v not in resident) + out_bytes
        if group.kind != "contraction":
            on_chip = hbm + sum(in_bytes[v] for v in resident)
            if level.name != "l2":
                on_chip = max(on_chip, group_work(plan, module, group)[2])
        placements[group.id] = Placement((("hbm", hbm), (level.name, on_chip)), resident)
    return plan.with_(placements=placements)
