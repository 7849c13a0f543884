"""verify_plan: the invariants every plan keeps after every pass, checked as the pipeline runs.

compile_plan calls it after each pass with the plan before that pass; a violation is a bug in
the pass that just ran, and `InvalidPlan` names it. The invariants:
  - groups: ids are their positions; no op is in two groups; a member is a real op index; once
    ops are grouped, a later pass may merge groups but never drops an op or adds one;
  - tiles cover their shapes: each padded extent is at least the extent it pads (n: this chip's
    share), every tile and unit count is positive, and only contraction groups are tiled;
  - placements fit: what a group reads from an on-chip level (its resident inputs; a chip's share
    of a tensor-parallel kernel's output) fits in the on-chip levels' capacity; a target with no on-chip level keeps nothing resident; no byte count is
    negative; a partition's chips hold its arguments unless the weights stream (MemoryX);
  - a static schedule's ops finish no earlier than they start;
  - and the family's own state keeps its own rules (`FamilyState.problems`: Spyre's layouts and
    work division, the LPU's SRAM slots, the wafer's regions).
"""

from __future__ import annotations

from hardware_models.plan import Plan, ceil_div, group_outputs, shard_factor
from hardware_models.target import Target


class InvalidPlan(Exception):
    """A pass produced an inconsistent plan: a bug in that pass, so it keeps its traceback."""

    def __init__(self, pass_name: str, problem: str):
        super().__init__(f"after pass {pass_name}: {problem}")
        self.pass_name = pass_name
        self.problem = problem


def verify_plan(plan: Plan, target: Target, pass_name: str, before: Plan | None = None) -> None:
    """Raise InvalidPlan(pass_name, problem) at the first broken invariant."""
    for problem in _problems(plan, target, before):
        raise InvalidPlan(pass_name, problem)


def _problems(plan: Plan, target: Target, before: Plan | None):
    seen: dict[int, int] = {}
    for position, group in enumerate(plan.groups):
        if group.id != position:
            yield f"group at position {position} has id {group.id}"
        for i in group.members:
            if not 0 <= i < len(plan.ops):
                yield f"g{group.id} names op {i}, and the program has {len(plan.ops)}"
            elif i in seen:
                yield f"op {i} ({plan.ops[i].op.short_name}) is in g{seen[i]} and g{group.id}"
            seen[i] = group.id
    if before is not None and before.groups:
        grouped_before = {i for g in before.groups for i in g.members}
        if grouped_before != set(seen):
            lost, added = sorted(grouped_before - set(seen)), sorted(set(seen) - grouped_before)
            yield f"the grouped ops changed: {len(lost)} dropped {lost[:5]}, {len(added)} added {added[:5]}"
    kinds = {g.id: g.kind for g in plan.groups}
    for gid, t in plan.tilings.items():
        if kinds.get(gid) != "contraction":
            yield f"g{gid} is tiled but is a {kinds.get(gid, 'missing group')}"
            continue
        s = t.shape
        extents = (s.m, s.n, s.k)
        if any(p < e for p, e in zip(t.padded, extents)):
            yield f"g{gid}'s padded extents {t.padded} do not cover m, n, k = {extents}"
        if min(t.tile) < 1 or t.units < 1 or t.steps < 1:
            yield f"g{gid} has an empty tile {t.tile} or no units ({t.units}) or steps ({t.steps})"
        if t.padded_flops < s.flops:
            yield f"g{gid}'s padded FLOPs {t.padded_flops} are below its FLOPs {s.flops}"
    on_chip = [lv for lv in target.levels if lv.role == "on-chip"]
    capacity = sum(target.level_capacity(lv) for lv in on_chip)
    graph = None
    for gid, placement in plan.placements.items():
        if any(n < 0 for _, n in placement.bytes):
            yield f"g{gid} moves a negative byte count: {placement.bytes}"
        if placement.resident_inputs:
            if not on_chip:
                yield f"g{gid} keeps {placement.resident_inputs[0]} on chip, and {target.name} has no on-chip level"
                continue
            if graph is None:
                graph = plan.value_graph()
                producer = {v: g for g in plan.groups for v in group_outputs(plan, graph, g)}
            # a chip of a tensor-parallel partition holds its share of a sharded kernel's output
            kept = sum(
                ceil_div(graph.nbytes(v), shard_factor(plan, producer[v]) if v in producer else 1)
                for v in placement.resident_inputs
            )
            if kept > capacity:
                yield f"g{gid} keeps {kept:,} B on chip, over the {capacity:,.0f} B of {', '.join(lv.name for lv in on_chip)}"
    p = plan.partition
    if p is not None and "stream" not in p.mode and p.needed_bytes > p.chips * p.chip_bytes * (1 + 1e-9):
        yield f"{p.chips} chips of {p.chip_bytes:,.0f} B hold less than the {p.needed_bytes:,} B of arguments"
    for gid, slot in plan.schedule.items():
        if slot.finish < slot.start:
            yield f"g{gid} finishes at cycle {slot.finish}, before it starts at {slot.start}"
    if plan.state is not None:  # the family's own decisions, by its own rules (FamilyState.problems)
        yield from plan.state.problems(plan, target)
