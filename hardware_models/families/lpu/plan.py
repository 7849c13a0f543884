"""The LPU's own plan records: where each statically scheduled value lives in SRAM, held as the
plan's `LpuState` (Plan.state). allocate_sram decides them; the schedule itself (Plan.schedule)
is what every statically scheduled family's plan holds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from hardware_models.plan import FamilyState, Group, Plan


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

    def render_group(self, plan: Plan, group: Group) -> list[str]:
        lines = []
        for value in plan.written_by.get(group.id, ()) if self.sram else ():
            s = self.sram.get(value)
            if s:
                lines.append(
                    f"      writes {value} to SRAM [{s.offset:,}, {s.offset + s.size:,}) live cycles {s.written}-{s.freed}"
                )
        return lines
