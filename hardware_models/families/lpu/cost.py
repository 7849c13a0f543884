"""The LPU model: cost read off the static schedule, plus the chip-to-chip traffic of a partition.

Ops overlap on an LPU (MXM, VXM and SXM work at once, and streams chain), so an op's time is
what it adds to its instance's makespan (schedule_static's `increment`), and the ops' times
sum to the schedule's length. Per op, with `clock` the chip's clock:

    time_s     = increment / clock
    compute_s  = min(busy * FLOPs / padded FLOPs, increment) / clock
                                                    (its unit doing useful work on the critical path;
                                                    MACs on padding count as schedule, as elsewhere)
    memory_s   = {"sram": min(feed, increment) / clock}
    schedule_s = time_s - max(compute_s, memory_s)  (latencies: stream trips, weight installs)

Transfers (partition_chips), with the hidden state of H bytes, L links of B bytes/s each and a
hop latency h:
    stage hop   h + H / (L * B)                                    once per stage boundary
    all-reduce  2 (tp - 1) h + 2 (tp - 1) / tp * H / (L * B)       (a ring), twice per layer
Worked number: llama-2-7b in fp16 takes 65 chips, 2 per layer, in 33 stages; a decode step
moves its 4096 x 2-byte hidden state over 32 stage hops, 32 x (0.5 us + 8192 / (16 x 14e9) s) =
17.2 us, and through 64 all-reduces, 64 x (2 x 0.5 us + 8192 / (16 x 14e9) s) = 66.3 us,
before any compute.
"""

from __future__ import annotations

from hardware_models.cost.model import Cost, host_fallback_cost
from hardware_models.plan import Group, Plan, group_work
from hardware_models.target import Target
from reference.ir import Module


def _links(target: Target) -> float:
    return target["interconnect.c2c_links"] * target["interconnect.c2c_bytes_per_s_per_link"]


def lpu_allreduce(target: Target, nbytes: int, chips: int, span: int | None = None) -> Cost:
    """A ring all-reduce of `nbytes` among `chips` LPUs: 2 (N - 1) hops of latency and
    2 (N - 1) / N x bytes over a chip's links (module doc); the chips are one flat C2C network."""
    hop_s = 2 * (chips - 1) * target["schedule.c2c_hop_latency_s"]
    moved = 2 * (chips - 1) / chips * nbytes
    link_s = moved / _links(target)
    return Cost(0, 0, 0.0, hop_s, hop_s + link_s, (("c2c", int(moved)),), (("c2c", link_s),))


def transfer_seconds(plan: Plan, group: Group, target: Target) -> float:
    p = plan.partition
    if group.label == "stage hop":
        return target["schedule.c2c_hop_latency_s"] + p.hidden_bytes / _links(target)
    return lpu_allreduce(target, p.hidden_bytes, p.tensor_parallel).time_s


def lpu_group_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    if group.kind == "transfer":
        seconds = transfer_seconds(plan, group, target)
        moved = plan.partition.hidden_bytes
        return Cost(0, 0, 0.0, 0.0, seconds, (("c2c", moved),), (("c2c", seconds),))
    clock = target["chip.clock_hz"]
    slot = plan.schedule[group.id]
    work = group_work(plan, module, group)
    flops, moved = work.flops, work.bytes
    time_s = slot.increment / clock
    useful = flops / slot.padded_flops if slot.padded_flops > flops else 1.0  # padded MACs are busy, not useful
    compute_s = min(slot.busy * useful, slot.increment) / clock
    memory_s = min(slot.feed, slot.increment) / clock
    level = "host" if group.kind == "fallback" else target.main_memory_level
    if group.kind == "fallback":  # the host round trip is on the critical path, costed as on every family
        host = host_fallback_cost(flops, {"host": moved}, target)  # the LPU has no launch overhead
        memory_s, compute_s = dict(host.memory_s)["host"], host.compute_s
        time_s += host.time_s
    schedule_s = time_s - max(compute_s, memory_s)
    return Cost(
        flops, max(slot.padded_flops, flops), compute_s, schedule_s, time_s, ((level, moved),), ((level, memory_s),)
    )
