"""allocate_sram: place every value a statically scheduled program computes in SRAM, for the
cycles it is live (LPU).

The LPU has no caches and no allocator at run time: its compiler decides where in SRAM each
tensor lives and for which cycles, as it decides the cycle each op issues. Per function
instance's timeline (schedule_static), a value holds its bytes from the cycle its producer starts
writing it (`written`) to the cycle its last reader finishes (`freed`); to the timeline's end
where the program returns it or another timeline reads it. Values are placed first fit by
address, in the order they are written, and the space of a value that has died is reused. The
program's arguments (weights, inputs, caches) stay where partition_chips placed them: offsets
count from the end of a chip's share of them.

Rules, checked by tests/hardware_models/passes/test_allocate_sram.py:
    written <= the start of every reader                  never read before it is written
    slots that share an address never share a cycle     never overwritten while still live
Sizes are whole values (a matmul's output split over tensor-parallel chips is counted whole, an
upper bound). The note gives the peak beside the arguments and the usable SRAM, and says so
where the two exceed it: partition_chips sizes the chip count by the arguments alone.
"""

from __future__ import annotations

from hardware_models.families.lpu.plan import LpuState, SramSlot
from hardware_models.plan import Plan, group_outputs
from hardware_models.target import Target
from reference.ir import Module
from reference.units import format_bytes


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


def allocate_sram(module: Module, plan: Plan, target: Target) -> Plan:
    sram, peak = sram_slots(plan)
    if not sram:
        return plan
    p = plan.partition
    arguments = p.needed_bytes // max(1, p.chips) if p else 0
    usable = target.usable_main_memory_bytes
    note = (
        f"SRAM: at most {format_bytes(peak)} of computed values live at once, beside {format_bytes(arguments)} of "
        f"arguments, of {format_bytes(usable)} usable a chip"
        + (
            "; together more than a chip holds (the chip count is sized by the arguments alone)"
            if peak + arguments > usable
            else ""
        )
    )
    return plan.with_state(LpuState, sram=sram).with_(notes=plan.notes + (note,))
