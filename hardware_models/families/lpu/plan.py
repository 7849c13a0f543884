"""The LPU's own plan records: where each statically scheduled value lives in SRAM, held as the
plan's `LpuState` (Plan.state). allocate_sram decides them; the schedule itself (Plan.schedule)
is what every statically scheduled family's plan holds."""

from __future__ import annotations

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

    def render_group(self, plan: Plan, group: Group) -> list[str]:
        lines = []
        for value in plan.written_by.get(group.id, ()) if self.sram else ():
            s = self.sram.get(value)
            if s:
                lines.append(
                    f"      writes {value} to SRAM [{s.offset:,}, {s.offset + s.size:,}) live cycles {s.written}-{s.freed}"
                )
        return lines
