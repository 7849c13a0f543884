"""The LPU's own plan records: where each statically scheduled value lives in SRAM, held as the
plan's `LpuState` (Plan.state). allocate_sram decides them; the schedule itself (Plan.schedule)
is what every statically scheduled family's plan holds. The slots' layout (first fit by address,
`sram_slots`) is here, beside the records, so that the state can lay them out again for the
executor's planted fault (`executor_sram`); allocate_sram is the pass that calls it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from hardware_models.plan import FamilyState, Group, Plan, group_outputs


@dataclass(frozen=True)
class SramSlot:
    """Where a statically scheduled value lives in SRAM (allocate_sram): bytes [offset, offset +
    size) of one chip's SRAM, from the cycle its producer starts writing it (`written`) until the
    cycle its last reader finishes (`freed`), on its function instance's timeline."""

    timeline: str
    offset: int
    size: int
    written: int
    freed: int


@dataclass(frozen=True)
class LpuState(FamilyState):
    """value -> its SRAM slot, from allocate_sram."""

    sram: dict[str, SramSlot] = field(default_factory=dict)

    def problems(self, plan: Plan, target) -> Iterable[str]:
        """Each slot lives forwards, at a real address; two slots of one timeline that are live
        at once do not share a byte. (A peak above the usable SRAM is not broken, but said:
        allocate_sram's note, as partition_chips sizes the chips by the arguments alone.)"""
        by_timeline: dict[str, list[tuple[str, SramSlot]]] = {}
        for value, s in self.sram.items():
            if s.offset < 0 or s.size < 0:
                yield f"{value}'s SRAM slot [{s.offset:,}, {s.offset + s.size:,}) is no range of bytes"
            if s.freed < s.written:
                yield f"{value}'s SRAM slot is freed at cycle {s.freed}, before it is written at {s.written}"
            by_timeline.setdefault(s.timeline, []).append((value, s))
        for slots in by_timeline.values():
            slots.sort(key=lambda vs: vs[1].offset)
            for i, (a, sa) in enumerate(slots):
                for b, sb in slots[i + 1 :]:
                    if sb.offset >= sa.offset + sa.size:
                        break
                    if sa.size and sb.size and sa.written < sb.freed and sb.written < sa.freed:
                        yield f"{a} and {b} share SRAM bytes from {sb.offset:,} while both are live"

    def padded_unit(self, plan: Plan, target, value: str, shape: tuple[int, ...]) -> tuple[int, int] | None:
        """A scheduled value lies in the chip's vectors (chip.vector_lanes elements along its last
        dimension), padded to whole vectors."""
        lanes = target.get("chip.vector_lanes")
        return (int(lanes), len(shape) - 1) if lanes and plan.schedule and shape else None

    def executor_sram(self, plan: Plan, free_at_first_use: bool = False) -> dict:
        """The slots allocate_sram placed (with the debugger's fault, laid out again with each value
        freed at its first reader)."""
        if free_at_first_use and self.sram:
            return sram_slots(plan, freed_at=min)[0]
        return dict(self.sram)

    def render_group(self, plan: Plan, group: Group) -> list[str]:
        lines = []
        for value in plan.written_by.get(group.id, ()) if self.sram else ():
            s = self.sram.get(value)
            if s:
                lines.append(
                    f"      writes {value} to SRAM [{s.offset:,}, {s.offset + s.size:,}) live cycles {s.written}-{s.freed}"
                )
        return lines


def first_fit(live: list[tuple[int, int]], size: int) -> int:
    """The lowest offset where `size` bytes fit between the live (offset, size) slots."""
    offset = 0
    for start, length in sorted(live):
        if offset + size <= start:
            return offset
        offset = max(offset, start + length)
    return offset


def sram_slots(plan: Plan, freed_at=max) -> tuple[dict[str, SramSlot], int]:
    """(value -> its slot, peak bytes): each value live from its producer's start until its readers
    finish, combined by `freed_at` (max: the last reader; the debugger's planted fault passes min,
    a buffer freed at its first use)."""
    graph = plan.value_graph()
    owner = {i: g.id for g in plan.groups for i in g.members}
    requests: dict[str, list[tuple[int, int, str, int]]] = {}  # timeline -> (written, order, value, size)
    ends: dict[str, int] = {}
    for g in plan.groups:
        slot = plan.schedule.get(g.id)
        if slot is None:
            continue
        timeline = plan.timeline(g.instance)
        ends[timeline] = max(ends.get(timeline, 0), slot.finish)
        for value in group_outputs(plan, graph, g):
            requests.setdefault(timeline, []).append(
                (slot.start, len(requests.get(timeline, ())), value, graph.nbytes(value))
            )
    sram: dict[str, SramSlot] = {}
    peak = 0
    for timeline, wanted in requests.items():
        live: list[tuple[int, int, int]] = []  # (offset, size, freed)
        for written, _, value, size in sorted(wanted):
            freed = None
            for user in graph.users(value):
                reader = plan.schedule.get(owner.get(user, -1))
                if user < 0 or reader is None or plan.timeline(plan.groups[owner[user]].instance) != timeline:
                    end = ends[timeline]  # returned, or read on another timeline: live to the end
                else:
                    end = reader.finish
                freed = end if freed is None else freed_at(freed, end)
            freed = written if freed is None else freed
            live = [entry for entry in live if entry[2] > written]  # space whose value has died is free
            offset = first_fit([(o, s) for o, s, _ in live], size)
            live.append((offset, size, freed))
            sram[value] = SramSlot(timeline, offset, size, written, freed)
            peak = max(peak, offset + size)
    return sram, peak
