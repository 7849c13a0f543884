"""The wafer's own plan records: the region of PEs each kernel gets (place_layers), held as the
plan's `WaferState` (Plan.state)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from hardware_models.plan import FamilyState, Group, Plan


@dataclass(frozen=True)
class Region:
    """The PEs a kernel gets on a wafer (place_layers): its own region, weights in their SRAM."""

    pes: int
    weight_bytes: int = 0  # the weights its PEs hold, read from their SRAM for every row that passes


@dataclass(frozen=True)
class WaferState(FamilyState):
    """group id -> its region, from place_layers."""

    regions: dict[int, Region] = field(default_factory=dict)

    def problems(self, plan: Plan, target) -> Iterable[str]:
        """Each region is a kernel's, of at least one PE and no more than the wafers have (a kernel
        larger than one wafer spans several)."""
        wafers = plan.partition.chips if plan.partition else 1
        pes = target["chip.pes"] * wafers
        for gid, region in self.regions.items():
            if not 0 <= gid < len(plan.groups):
                yield f"a region is placed for g{gid}, and the plan has {len(plan.groups)} groups"
            if not 1 <= region.pes <= pes:
                yield f"g{gid}'s region of {region.pes:,} PEs is outside [1, {pes:,.0f}], the PEs of {wafers} wafer{'s' if wafers > 1 else ''}"

    def render_group(self, plan: Plan, group: Group) -> list[str]:
        region = self.regions.get(group.id)
        return [f"      region of {region.pes:,} PEs"] if region else []
