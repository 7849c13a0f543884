"""The cost record every target's model returns, and the estimate of a whole program.

A `Cost` is frozen and addable (tinygrad's Estimates): FLOPs, bytes per memory level, and time
split three ways:
    compute_s   the work at the sustained peak of the unit that runs it (MXU, tensor cores,
                CUDA cores or VPU), useful FLOPs only
    memory_s    per level, bytes / sustained bandwidth
    schedule_s  everything above the roofline bound max(compute_s, max(memory_s)): launch and
                per-kernel fixed cost, pipeline fill and drain, padding and wave quantization
    time_s      = max(compute_s, max(memory_s)) + schedule_s
The bottleneck is the largest of compute_s, max(memory_s) and schedule_s; utilization is
compute_s / time_s. A program's cost is the sum over its groups of cost x repeats (layers,
loop trips).
"""

from __future__ import annotations

from dataclasses import dataclass, field

BOUNDS = ("compute", "memory", "schedule")


def dominant(compute_s: float, memory_s: float, schedule_s: float) -> str:
    """The bottleneck: which of compute, memory (the slowest level) and schedule time is largest
    (ties go to the first of compute, memory, schedule). The one place it is decided."""
    parts = dict(zip(BOUNDS, (compute_s, memory_s, schedule_s)))
    return max(parts, key=parts.get)


def _merge(a: tuple, b: tuple) -> tuple:
    out = dict(a)
    for key, value in b:
        out[key] = out.get(key, 0) + value
    return tuple(out.items())


@dataclass(frozen=True)
class Cost:
    flops: int = 0
    padded_flops: int = 0
    compute_s: float = 0.0
    schedule_s: float = 0.0
    time_s: float = 0.0
    bytes: tuple[tuple[str, int], ...] = ()
    memory_s: tuple[tuple[str, float], ...] = ()
    # Where a kernel overlaps others (a wafer's pipelined rows), time_s is its share of the
    # program's time and span_s how long it runs itself (what the roofline draws); 0: time_s.
    span_s: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.flops + other.flops,
            self.padded_flops + other.padded_flops,
            self.compute_s + other.compute_s,
            self.schedule_s + other.schedule_s,
            self.time_s + other.time_s,
            _merge(self.bytes, other.bytes),
            _merge(self.memory_s, other.memory_s),
            (self.span_s or self.time_s) + (other.span_s or other.time_s) if self.span_s or other.span_s else 0.0,
        )

    def __mul__(self, k: int) -> Cost:
        return Cost(
            self.flops * k,
            self.padded_flops * k,
            self.compute_s * k,
            self.schedule_s * k,
            self.time_s * k,
            tuple((n, b * k) for n, b in self.bytes),
            tuple((n, s * k) for n, s in self.memory_s),
            self.span_s * k,
        )

    @property
    def memory_bound_s(self) -> float:
        return max((s for _, s in self.memory_s), default=0.0)

    @property
    def bottleneck(self) -> str:
        return dominant(self.compute_s, self.memory_bound_s, self.schedule_s)

    def bytes_at(self, level: str) -> int:
        return dict(self.bytes).get(level, 0)

    @property
    def utilization(self) -> float:
        """compute_s / time_s: the share of the time the units do useful work at their sustained rate."""
        return self.compute_s / self.time_s if self.time_s else 0.0


def roofline_cost(
    flops: int, padded_flops: int, compute_s: float, bytes_: dict, memory_s: dict, busy_s: float, fixed_s: float
) -> Cost:
    """A Cost from its parts: `busy_s` is how long the units are busy (padding, quantization and
    fill included), `fixed_s` the per-kernel fixed cost; the schedule time is what that adds
    above max(compute_s, memory)."""
    bound = max(compute_s, max(memory_s.values(), default=0.0))
    time_s = max(busy_s, bound) + fixed_s
    return Cost(flops, padded_flops, compute_s, time_s - bound, time_s, tuple(bytes_.items()), tuple(memory_s.items()))


def host_fallback_cost(flops: int, bytes_: dict, target) -> Cost:
    """An op the target cannot run: its operands cross the host link, the host computes it, the
    results cross back: time_s = host bytes / host_bytes_per_s + FLOPs / host.flop_per_s + the
    fixed cost of a kernel on the device."""
    link_s = bytes_["host"] / target["interconnect.host_bytes_per_s"]
    compute_s = flops / target["host.flop_per_s"]
    fixed_s = target.get("schedule.launch_overhead_s", 0.0) or 0.0
    return Cost(
        flops, flops, compute_s, fixed_s, link_s + compute_s + fixed_s, tuple(bytes_.items()), (("host", link_s),)
    )


def allreduce_cost(hidden_bytes: int, chips: int, bus_bytes_per_s: float, latency_s: float) -> Cost:
    """A ring all-reduce of `hidden_bytes` over `chips`: latency + 2 (N - 1) / N * bytes / bus bandwidth
    (NCCL's "bus bandwidth" is defined so that this holds)."""
    moved = 2 * (chips - 1) / chips * hidden_bytes
    link_s = moved / bus_bytes_per_s
    return Cost(0, 0, 0.0, latency_s, latency_s + link_s, (("interconnect", int(moved)),), (("interconnect", link_s),))


def bus_allreduce(target, nbytes: int, chips: int, span: int | None = None) -> Cost:
    """A ring all-reduce of `nbytes` among `chips` chips on a target with an all-reduce bus
    (GPU, CDNA, TPU, Spyre: `interconnect.allreduce_bus_bytes_per_s`, the [fitted] one first, and
    `schedule.collective_latency_s`), as allreduce_cost. A group whose chips `span` more consecutive
    chips than one scale-up domain (`interconnect.scale_up_chips`: an NVLink node, a TPU pod)
    crosses the scale-out network instead (`interconnect.scale_out_bytes_per_s`, one NIC a chip),
    where the file gives both."""
    bus = target.get("fitted.allreduce_bus_bytes_per_s") or target["interconnect.allreduce_bus_bytes_per_s"]
    domain, out = target.get("interconnect.scale_up_chips"), target.get("interconnect.scale_out_bytes_per_s")
    if domain and out and (span or chips) > domain:
        bus = out
    return allreduce_cost(nbytes, chips, bus, target["schedule.collective_latency_s"])


def transfer_cost(plan, target) -> Cost:
    """The all-reduce a tensor-parallel partition adds (shard_tensor_parallel), on any target
    with `allreduce_bus_bytes_per_s` (measured on GPUs, in [fitted]; from the links elsewhere)."""
    bus = target.get("fitted.allreduce_bus_bytes_per_s") or target["interconnect.allreduce_bus_bytes_per_s"]
    return allreduce_cost(
        plan.partition.hidden_bytes, plan.partition.chips, bus, target["schedule.collective_latency_s"]
    )


@dataclass(frozen=True)
class GroupCost:
    """One kernel (fused group) of the plan and the cost of one execution of it."""

    group: int
    kind: str
    ops: tuple[str, ...]
    scope: str
    repeats: int
    cost: Cost

    def to_dict(self) -> dict:
        c = self.cost
        return {
            "group": self.group,
            "kind": self.kind,
            "op": "+".join(self.ops),
            "scope": self.scope,
            "repeats": self.repeats,
            "flops": c.flops,
            "padded_flops": c.padded_flops,
            "bytes": dict(c.bytes),
            "compute_s": c.compute_s,
            "memory_s": dict(c.memory_s),
            "schedule_s": c.schedule_s,
            "time_s": c.time_s,
            "bottleneck": c.bottleneck,
            "utilization": c.utilization,
        }


@dataclass(frozen=True)
class Estimate:
    """A program's predicted cost on one target: per group, and totals (cost x repeats summed)."""

    target: str
    name: str
    groups: tuple[GroupCost, ...]
    notes: tuple[str, ...] = ()
    peaks: dict = field(default_factory=dict)  # ceilings for a roofline: name -> value
    compiler: str = ""  # the family's compiler whose plan was costed (Plan.compiler)

    @property
    def total(self) -> Cost:
        total = Cost()
        for g in self.groups:
            total = total + g.cost * g.repeats
        return total

    @property
    def memory_bound_s(self) -> float:
        """Each kernel's slowest memory level, summed (kernels run one after another)."""
        return sum(g.cost.memory_bound_s * g.repeats for g in self.groups)

    @property
    def bottleneck(self) -> str:
        """The program's: the largest of its total compute, memory and schedule time."""
        total = self.total
        return dominant(total.compute_s, self.memory_bound_s, total.schedule_s)

    @property
    def bottleneck_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(BOUNDS, 0)
        for g in self.groups:
            counts[g.cost.bottleneck] += g.repeats
        return counts

    def to_dict(self) -> dict:
        total = self.total
        return {
            "target": self.target,
            "compiler": self.compiler,
            "name": self.name,
            "total_time_s": total.time_s,
            "compute_s": total.compute_s,
            "memory_s": self.memory_bound_s,
            "bottleneck": self.bottleneck,
            "memory_s_by_level": dict(total.memory_s),
            "schedule_s": total.schedule_s,
            "flops": total.flops,
            "bytes": dict(total.bytes),
            "bottleneck_counts": self.bottleneck_counts,
            "kernels": sum(g.repeats for g in self.groups),
            "utilization": total.utilization,
            "notes": list(self.notes),
            "ops": [g.to_dict() for g in self.groups],
        }
