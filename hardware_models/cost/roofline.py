"""Roofline: each kernel as a point (arithmetic intensity, attained FLOP/s) under the target's ceilings.

    intensity = FLOPs / HBM bytes            attained = FLOPs / time_s
    ceiling(I) = min(compute peak, I * bandwidth) for each memory level with a bandwidth
A point far below both ceilings is schedule-bound: its time is launch, fill and drain, padding
or wave quantization, which no roofline of compute and memory shows; those points are marked.
On a statically scheduled target (the LPU) an op's time in the estimate is what it adds to the
makespan; the roofline uses its own span on its unit instead (`spans`), so overlap does not
make it look faster than the hardware.
Under tensor parallelism a sharded kernel's FLOPs are the whole op's, while its time and bytes
are one chip's share; the roofline is one chip's, so its FLOPs are divided by the chips that
share it (`shares`, from `chip_shares(plan)`) and no point sits above one chip's ceilings.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardware_models.cost.model import Estimate
from hardware_models.target import Target


@dataclass(frozen=True)
class Point:
    group: int
    label: str
    intensity: float  # FLOP per HBM byte
    attained_flop_per_s: float
    bottleneck: str


def roofline_points(
    est: Estimate, level: str, spans: dict[int, float] | None = None, shares: dict[int, int] | None = None
) -> list[Point]:
    """One point per kernel that does arithmetic and touches the main memory `level`, for one
    chip; `spans` (group -> seconds) replaces a kernel's time where given; `shares` (group ->
    chips) divides a sharded kernel's FLOPs to one chip's."""
    points = []
    for g in est.groups:
        c = g.cost
        hbm = c.bytes_at(level)
        seconds = (spans or {}).get(g.group, c.span_s or c.time_s)  # its own span where it overlaps others
        flops = c.flops / (shares or {}).get(g.group, 1)
        if flops and hbm and seconds:
            points.append(Point(g.group, "+".join(g.ops), flops / hbm, flops / seconds, c.bottleneck))
    return points


def chip_shares(plan) -> dict[int, int]:
    """Group -> the chips that split it: a contraction over the partition's tensor-parallel
    chips (GPU/TPU/Spyre columns, an LPU layer's matmuls); groups run whole are left out."""
    p = plan.partition
    tp = p.tensor_parallel if p else 1
    return {g.id: tp for g in plan.groups if g.kind == "contraction"} if tp > 1 else {}


def schedule_spans(plan, target: Target) -> dict[int, float]:
    """Each statically scheduled op's own span in seconds (empty for targets without a schedule)."""
    if not plan.schedule:
        return {}
    clock = target["chip.clock_hz"]
    return {g: max(slot.finish - slot.start, 1) / clock for g, slot in plan.schedule.items()}


def ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    """(compute ceilings in FLOP/s, memory ceilings in bytes/s) to draw, each sustained (fitted
    where a fitted efficiency exists): the target family's own (hardware_models/families/)."""
    return target.family_record.ceilings(target)
