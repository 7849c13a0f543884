"""The wafer's own plan records: the region of PEs each kernel gets (place_layers), held as the
plan's `WaferState` (Plan.state)."""

from __future__ import annotations

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

    def render_group(self, plan: Plan, group: Group) -> list[str]:
        region = self.regions.get(group.id)
        return [f"      region of {region.pes:,} PEs"] if region else []
