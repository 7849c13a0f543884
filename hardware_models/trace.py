"""chrome_trace: a statically scheduled plan as a Chrome trace (Perfetto, chrome://tracing).

One complete ("X") event per op with its cycles in `args`, one thread per functional unit.
Timestamps are microseconds, as the trace-event format requires (`ts` and `dur` are always µs):
an event that starts `c` cycles into the trace has `ts = c / clock_hz * 1e6`, and
`displayTimeUnit` is "ms", the format's default, which shows those µs as they are.

One chip (no partition, or a partition of one chip): one process per function instance (main,
and the block a regional model calls per layer; the block's schedule is that of one layer),
times from the instance's first cycle, as the plan's schedule has them.

Several chips (partition_chips): one process per chip ("chip 0", "chip 1", ...), and the
program laid out as one pass of the hidden state (a token, a micro-batch) takes through the
pipeline. The layers (the block main calls `layers` times) go to the pipeline stages in order,
as evenly as whole layers allow: layer i on stage i * stages // layers, so 7 layers over 3
stages are 3, 2 and 2. A stage's `tensor_parallel` chips all run its layers (each with its
share of every matmul, as schedule_static costs it). The ops of main before the layer call run
on stage 0, those after it on the last stage. With more stages than layers a stage may hold no
layer: llama-2-7b's 32 layers on 33 stages leave the last only the LM head, and 3 of its layers
on 5 stages leave stage 2 to forward the hidden state. Each layer is a copy of the block's
schedule placed after the one before it; crossing to the next stage adds a "stage hop" on the
sending stage's first chip, and with tensor_parallel > 1 each layer ends with its two
all-reduces on every chip of its stage, both on a "C2C" thread and each as long as
families/lpu/cost.py's transfer time, rounded up to whole cycles. So chip k starts after chip k-1 has
finished and the hidden state has crossed, and the trace shows all stages - 1 hops the cost
counts. A program without a layer call (a flat lowering, a single kernel) is split over the
stages in program order, scheduled kernel j of n on stage j * stages // n (layer boundaries are
not in the plan); its all-reduces close each stage's part. Each event keeps its instance's own
`start_cycle` and `finish_cycle` and adds `trace_cycle`, the cycle on the trace's clock it
starts at (`ts = trace_cycle / clock_hz * 1e6`).

The output is a pure function of the plan: the same program gives the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hardware_models.plan import Group, Plan, Slot
from hardware_models.target import Target, load_targets
from reference.errors import UnknownName

C2C = "C2C"  # the thread of a chip's chip-to-chip transfers


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
    """The Chrome trace-event JSON of a scheduled plan: per function instance on one chip, per
    chip with the pipeline laid out when the plan is partitioned over several (module docstring).

    Raises:
        UnknownName: the target's compiler does not schedule statically (no cycles to draw).
    """
    check_traceable(target)
    clock = target["chip.clock_hz"]
    partition = plan.partition
    events = _per_chip(plan, target) if partition and partition.chips > 1 else _per_instance(plan, clock)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"target": target.name, "clock_hz": clock, "ts_unit": "us"},
    }


def _us(cycles: float, clock: float) -> float:
    return cycles / clock * 1e6


def _drawn(slot: Slot) -> int:
    """Cycles an op's event lasts: at least one, so an op that adds nothing still shows."""
    return max(slot.finish - slot.start, 1)


def _op_event(plan: Plan, group: Group, slot: Slot, pid: int, tid: int, at: int, clock: float, **extra) -> dict:
    return {
        "ph": "X",
        "name": "+".join(plan.ops[i].op.short_name for i in group.members),
        "cat": group.kind,
        "pid": pid,
        "tid": tid,
        "ts": _us(at, clock),
        "dur": _us(_drawn(slot), clock),
        "args": {
            "group": group.id,
            "start_cycle": slot.start,
            "finish_cycle": slot.finish,
            "busy_cycles": slot.busy,
            "repeats": group.repeats,
            "trace_cycle": at,
            **extra,
        },
    }


def _metadata(pid: int, name: str, threads: list[str]) -> list[dict]:
    events = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}},
    ]
    events += [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": unit}}
        for tid, unit in enumerate(threads)
    ]
    return events


def _per_instance(plan: Plan, clock: float) -> list[dict]:
    """One chip: a process per function instance, times from the instance's first cycle."""
    instances = sorted({plan.timeline(g.instance) for g in plan.groups if g.id in plan.schedule})
    units = sorted({slot.unit for slot in plan.schedule.values()})
    events = [e for pid, instance in enumerate(instances) for e in _metadata(pid, instance, units)]
    for group in plan.groups:
        slot = plan.schedule.get(group.id)
        if slot is not None:
            pid, tid = instances.index(plan.timeline(group.instance)), units.index(slot.unit)
            events.append(_op_event(plan, group, slot, pid, tid, slot.start, clock))
    return events


@dataclass(frozen=True)
class _Segment:
    """Part of one pass through the pipeline, run on one stage: its pieces (the groups of one
    timeline each, laid out one after the other), the layer it is (or None) and its all-reduces."""

    stage: int
    label: str
    pieces: tuple[tuple[Group, ...], ...]
    layer: int | None = None
    all_reduces: int = 0


def _pieces(plan: Plan, groups: list[Group]) -> tuple[tuple[Group, ...], ...]:
    """The groups split by the timeline they run on, in order of their first op."""
    by_timeline: dict[str, list[Group]] = {}
    for g in groups:
        by_timeline.setdefault(plan.timeline(g.instance), []).append(g)
    return tuple(tuple(gs) for gs in sorted(by_timeline.values(), key=lambda gs: min(gs[0].members)))


def _layer_call(plan: Plan) -> tuple[int, str] | None:
    """(op index, instance) of main's call of the layer block (the first call with a trip count,
    as workload.program_footprint reads the layers), or None for a program without one."""
    position = 0
    for p in plan.ops:
        if p.instance != "main":
            continue
        if p.op.short_name == "call" and p.op.trip_count and p.op.callee:
            return p.index, f"main/{position}:{p.op.callee}"
        position += 1
    return None


def _share(total: int, i: int, n: int) -> int:
    """Part i of `total` split over n parts as evenly as integers allow."""
    return total * (i + 1) // n - total * i // n


def _segments(plan: Plan, all_reduces: int) -> list[_Segment]:
    """The pass through the pipeline, segment by segment in the order the hidden state takes."""
    p = plan.partition
    stages = p.stages
    groups = [g for g in plan.groups if g.id in plan.schedule]
    call = _layer_call(plan)
    if call is None:  # no layer call: the scheduled kernels in program order, split over the stages
        parts = (
            [[g for j, g in enumerate(groups) if j * stages // len(groups) == s] for s in range(stages)]
            if groups
            else []
        )
        return [
            _Segment(s, f"groups {part[0].id}-{part[-1].id}", _pieces(plan, part), None, _share(all_reduces, s, stages))
            for s, part in enumerate(parts)
            if part
        ]
    index, block = call

    def in_block(g: Group) -> bool:
        return g.instance == block or g.instance.startswith(block + "/")

    inside = [g for g in groups if in_block(g)]
    before = [g for g in groups if not in_block(g) and min(g.members) < index]
    after = [g for g in groups if not in_block(g) and min(g.members) > index]
    layers = max(p.layers, 1)
    segments = [_Segment(0, "main", _pieces(plan, before))] if before else []
    pieces = _pieces(plan, inside)
    segments += [
        _Segment(i * stages // layers, block, pieces, i, _share(all_reduces, i, layers)) for i in range(layers)
    ]
    segments += [_Segment(stages - 1, "main", _pieces(plan, after))] if after else []
    return segments


def _transfer_cycles(plan: Plan, label: str, target: Target) -> tuple[Group | None, int]:
    """The partition's transfer group with this label and its time in whole cycles (families/lpu/cost.py)."""
    from hardware_models.families.lpu.cost import transfer_seconds

    group = next((g for g in plan.groups if g.kind == "transfer" and g.label == label), None)
    if group is None:
        return None, 0
    return group, math.ceil(round(transfer_seconds(plan, group, target) * target["chip.clock_hz"], 6))


def _holds(segments: list[_Segment]) -> dict[int, str]:
    """Stage -> what it runs, for its chips' process names: "main, main/1:block layers 0-2"."""
    parts: dict[int, list[list]] = {}
    for seg in segments:
        held = parts.setdefault(seg.stage, [])
        if seg.layer is not None and held and held[-1][0] == seg.label and held[-1][2] == seg.layer - 1:
            held[-1][2] = seg.layer
        else:
            held.append([seg.label, seg.layer, seg.layer])

    def text(label, first, last) -> str:
        if first is None:
            return label
        return f"{label} layer {first}" if first == last else f"{label} layers {first}-{last}"

    return {stage: ", ".join(text(*h) for h in held) for stage, held in parts.items()}


def _per_chip(plan: Plan, target: Target) -> list[dict]:
    """Several chips: a process per chip, one pass of the hidden state laid out through the pipeline."""
    clock = target["chip.clock_hz"]
    p = plan.partition
    tp, stages = p.tensor_parallel, p.stages
    hop_group, hop = _transfer_cycles(plan, "stage hop", target)
    reduce_group, reduce = _transfer_cycles(plan, "all-reduce", target)
    segments = _segments(plan, reduce_group.repeats if reduce_group else 0)

    def chips_of(stage: int) -> range:
        return range(stage * tp, min((stage + 1) * tp, p.chips))

    units = sorted({slot.unit for slot in plan.schedule.values()})
    threads = units + ([C2C] if hop_group or reduce_group else [])
    holds = _holds(segments)
    events = []
    for stage in range(stages):
        for chip in chips_of(stage):
            what = holds.get(stage, "no layers: forwards the hidden state")
            share = f", {tp} chips per layer" if tp > 1 else ""
            events += _metadata(chip, f"chip {chip} (stage {stage}{share}): {what}", threads)

    def transfer(group: Group, pid: int, at: int, cycles: int, **extra) -> dict:
        return {
            "ph": "X",
            "name": group.label,
            "cat": "transfer",
            "pid": pid,
            "tid": threads.index(C2C),
            "ts": _us(at, clock),
            "dur": _us(max(cycles, 1), clock),
            "args": {
                "group": group.id,
                "cycles": cycles,
                "bytes": p.hidden_bytes,
                "repeats": group.repeats,
                "trace_cycle": at,
                **extra,
            },
        }

    cursor, stage = 0, 0

    def hop_to(target_stage: int) -> None:
        nonlocal cursor, stage
        while stage < target_stage:
            if hop_group is not None:
                events.append(transfer(hop_group, chips_of(stage)[0], cursor, hop, to_chip=chips_of(stage + 1)[0]))
            cursor += hop
            stage += 1

    for seg in segments:
        hop_to(seg.stage)
        for piece in seg.pieces:
            slots = [plan.schedule[g.id] for g in piece]
            offset = cursor - min(s.start for s in slots)
            for chip in chips_of(stage):
                for g, slot in zip(piece, slots):
                    extra = {"chip": chip, "stage": stage, **({"layer": seg.layer} if seg.layer is not None else {})}
                    events.append(
                        _op_event(plan, g, slot, chip, units.index(slot.unit), offset + slot.start, clock, **extra)
                    )
            cursor = offset + max(s.start + _drawn(s) for s in slots)
        for _ in range(seg.all_reduces):
            for chip in chips_of(stage):
                events.append(
                    transfer(
                        reduce_group,
                        chip,
                        cursor,
                        reduce,
                        chip=chip,
                        stage=stage,
                        **({"layer": seg.layer} if seg.layer is not None else {}),
                    )
                )
            cursor += reduce
    hop_to(stages - 1)  # the cost counts a hop at every stage boundary: the pass ends on the last stage
    return events
