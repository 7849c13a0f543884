"""The plan records of the stick-based device (Spyre): a tensor's stick layout, a kernel's work over
the cores, a re-layout the compiler inserts, and a tensor between two kernels of the dataflow
graph, held together as the plan's `SpyreState` (Plan.state); the Spyre passes decide them."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from hardware_models.plan import FamilyState, Group, Plan
from hardware_models.tiles import ceil_div


@dataclass(frozen=True)
class StickLayout:
    """A tensor on a stick-based device (Spyre): the stick dimension padded to whole sticks.

    The stick dimension's extent is rounded up to whole sticks here, once (ceil_div), and every
    byte count reads `sticks` and `padded_bytes`: fp16 (65,) occupies 2 sticks of 64.
    """

    shape: tuple[int, ...]
    stick_dim: int
    elements_per_stick: int
    stick_bytes: int

    @property
    def sticks_along(self) -> int:
        return ceil_div(self.shape[self.stick_dim], self.elements_per_stick) if self.shape else 1

    @property
    def sticks(self) -> int:
        outer = math.prod(s for d, s in enumerate(self.shape) if d != self.stick_dim)
        return outer * self.sticks_along

    @property
    def device_shape(self) -> tuple[int, ...]:
        """(other dims..., sticks along the stick dim, elements per stick); the device's order of
        the outer dims is not modelled, their product is."""
        outer = tuple(s for d, s in enumerate(self.shape) if d != self.stick_dim)
        return (*outer, self.sticks_along, self.elements_per_stick)

    @property
    def padded_bytes(self) -> int:
        return self.sticks * self.stick_bytes

    @property
    def data_bytes(self) -> int:
        """The elements themselves, at the width they run as on the device."""
        return math.prod(self.shape) * (self.stick_bytes // self.elements_per_stick)


@dataclass(frozen=True)
class WorkDivision:
    """A kernel's work split over cores: `units` (row passes x output sticks) over `cores`."""

    units: int
    cores: int

    @property
    def per_core(self) -> int:
        return ceil_div(self.units, self.cores)

    @property
    def balance(self) -> float:
        """units / (cores x per_core): below 1 when the last round leaves cores idle."""
        return self.units / (self.cores * self.per_core)


@dataclass(frozen=True)
class Restickify:
    """A stick re-layout on a stick-based device (insert_restickify): `value` is re-laid out
    before group `group` reads it ("operand": a matmul operand sticked on the wrong dimension,
    2 x its bytes through LPDDR5 at the restickify rate), or the whole kernel is one ("kernel":
    a transpose, which the hardware runs as a restickify)."""

    group: int
    value: str
    kind: str = "operand"


@dataclass(frozen=True)
class Edge:
    """A tensor between two kernels of a dataflow graph (fire_kernels): `producer` is a group id,
    or -1 for a program argument; `where` it waits for the consumer ("lx" or "lpddr5")."""

    producer: int
    consumer: int
    value: str
    sticks: int
    where: str


@dataclass(frozen=True)
class SpyreState(FamilyState):
    """What Spyre's passes decide (Plan.state): each value's stick layout (stickify), the
    re-layouts inserted (insert_restickify), each kernel's work over the cores (divide_work) and
    the tensors between kernels of its dataflow graph (fire_kernels)."""

    layouts: dict[str, StickLayout] = field(default_factory=dict)
    restickify: tuple[Restickify, ...] = ()
    dataflow: tuple[Edge, ...] = ()
    divisions: dict[int, WorkDivision] = field(default_factory=dict)

    def problems(self, plan: Plan, target) -> Iterable[str]:
        """A layout's sticks are whole (its stick dimension within its rank, its width dividing a
        stick); a division spreads at least one unit over the chip's cores, no more; a re-layout
        and an edge name groups of the plan."""
        cores, groups = target["chip.cores"], len(plan.groups)
        for value, lay in self.layouts.items():
            if lay.shape and not 0 <= lay.stick_dim < len(lay.shape):
                yield f"{value}'s stick dimension {lay.stick_dim} is outside its shape {lay.shape}"
            if lay.elements_per_stick < 1 or lay.stick_bytes % lay.elements_per_stick:
                yield f"{value}'s {lay.elements_per_stick} elements do not fill a {lay.stick_bytes}-byte stick evenly"
        for gid, d in self.divisions.items():
            if d.units < 1 or not 1 <= d.cores <= cores:
                yield f"g{gid} divides {d.units} units over {d.cores} cores, and the chip has {cores:.0f}"
        for r in self.restickify:
            if not 0 <= r.group < groups:
                yield f"a restickify of {r.value} is for g{r.group}, and the plan has {groups} groups"
        for e in self.dataflow:
            if not (-1 <= e.producer < groups and 0 <= e.consumer < groups):
                yield f"the edge {e.value} joins g{e.producer} to g{e.consumer}, and the plan has {groups} groups"

    def padded_unit(self, plan: Plan, target, value: str, shape: tuple[int, ...]) -> tuple[int, int] | None:
        """A value with a stick layout (stickify) lies in 128-byte sticks along its stick dimension."""
        layout = self.layouts.get(value)
        return (layout.elements_per_stick, layout.stick_dim) if layout is not None and layout.shape else None

    def render_group(self, plan: Plan, group: Group) -> list[str]:
        lines = []
        d = self.divisions.get(group.id)
        if d:
            lines.append(f"      {d.units} units over {d.cores} cores, {d.per_core} each ({d.balance:.0%} balanced)")
        for r in self.restickify:
            if r.group == group.id:
                lines.append(
                    f"      restickify {r.value} to the layout this kernel reads"
                    if r.kind == "operand"
                    else "      the kernel is a restickify (a transpose of sticks)"
                )
        inputs = [
            f"{'g' + str(e.producer) if e.producer >= 0 else 'argument'} {e.sticks} sticks in {e.where}"
            for e in self.dataflow
            if e.consumer == group.id
        ]
        if inputs:
            lines.append(f"      fires on: {'; '.join(inputs)}")
        return lines
