"""chrome_trace: a statically scheduled plan as a Chrome trace (Perfetto, chrome://tracing).

One process per function instance (main, and the block a regional model calls per layer; the
block's schedule is that of one layer), one thread per functional unit, one complete ("X")
event per op with its cycles in `args`. Times are microseconds from the instance's first
cycle. The output is a pure function of the plan: the same program gives the same bytes.
"""

from __future__ import annotations

from hardware_models.plan import Plan
from hardware_models.target import Target, load_targets
from reference.errors import UnknownName


def scheduled(family: str) -> bool:
    """Whether the family's compiler fixes every op's cycle (its Family record says so)."""
    from hardware_models.families import get_family

    return get_family(family).scheduled


def check_traceable(target: Target) -> None:
    """Raises UnknownName unless the target's compiler schedules statically (cycles to draw)."""
    if not scheduled(target.family):
        valid = [t.name for t in load_targets().values() if scheduled(t.family)]
        raise UnknownName("target with a static schedule (--trace)", target.name, valid)


def chrome_trace(plan: Plan, target: Target) -> dict:
    """The Chrome trace-event JSON of a scheduled plan.

    Raises:
        UnknownName: the target's compiler does not schedule statically (no cycles to draw).
    """
    check_traceable(target)
    clock = target["chip.clock_hz"]
    instances = sorted({plan.timeline(g.instance) for g in plan.groups if g.id in plan.schedule})
    units = sorted({slot.unit for slot in plan.schedule.values()})
    events = []
    for pid, instance in enumerate(instances):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": instance}})
        for tid, unit in enumerate(units):
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": unit}})
    for group in plan.groups:
        slot = plan.schedule.get(group.id)
        if slot is None:
            continue
        name = "+".join(plan.ops[i].op.short_name for i in group.members)
        events.append({
            "ph": "X", "name": name, "cat": group.kind, "pid": instances.index(plan.timeline(group.instance)), "tid": units.index(slot.unit),
            "ts": slot.start / clock * 1e6, "dur": max(slot.finish - slot.start, 1) / clock * 1e6,
            "args": {"group": group.id, "start_cycle": slot.start, "finish_cycle": slot.finish, "busy_cycles": slot.busy,
                     "repeats": group.repeats},
        })
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"target": target.name}}
