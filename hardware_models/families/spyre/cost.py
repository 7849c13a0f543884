"""The Spyre model: 32 cores of two 8 x 8 systolic corelets, a scratchpad per core, LPDDR5, sticks.

Every byte is counted on the stick-padded layout (stickify), and a kernel's time is
max(compute, memory) as in torch-spyre's own cost model, plus the runtime's per-kernel cost:

    matmul    compute_s = MACs / (cores * rate);  busy_s = padded MACs / units * per-core units / rate
              padded MACs = b * (m to 8-row passes) * (n to sticks) * (k to sticks: B's k zero-filled)
              rate per core: 2D 1140 MAC/ns (S03); batched, b >= 4: 160 (S04); b < 4: 705 (S05)
    other     compute_s = ops / (cores * vector rate)   (an assumed rate: Spyre's clock is unpublished)
    memory    LPDDR5: (R + W) / 150 GB/s + min(R, W) * (2 / 105 - 2 / 150) s/GB
              (one-way traffic at the S01 rate, a balanced read-and-write kernel at the S02 rate),
              + restickified bytes / 116 GB/s (S06); a transpose kernel is a restickify
    time_s    = max(busy_s, memory_s - hidden) + launch_overhead_s
              hidden = min(prefetchable bytes / 150 GB/s, the previous kernel's busy_s minus its
                       memory_s): the loads fire_kernels lets start while the kernel before computes

Worked number: a 65-element fp16 negate reads 2 sticks and writes 2 sticks (512 bytes, of which
260 are data): (512 / 150e9 + 256 * (2 / 105e9 - 2 / 150e9)) = 4.9 ns of memory, far below the
assumed 5 us per kernel.
"""

from __future__ import annotations

from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.families.spyre.plan import SpyreState
from hardware_models.plan import Group, Plan, group_work
from hardware_models.target import Target
from reference.ir import Module


def matmul_rate(target: Target, batch: int) -> float:
    """Sustained MAC/s per core for a matmul of this batch (S03, S04, S05)."""
    if batch == 1:
        return target["fitted.matmul_mac_per_s_per_core"]
    return (
        target["fitted.bmm_mac_per_s_per_core"] if batch >= 4 else target["fitted.bmm_small_batch_mac_per_s_per_core"]
    )


def lpddr5_seconds(read: int, write: int, target: Target) -> float:
    one_way, balanced = target["fitted.lpddr5_one_way_bytes_per_s"], target["fitted.lpddr5_read_write_bytes_per_s"]
    return (read + write) / one_way + min(read, write) * (2 / balanced - 2 / one_way)


def kernel_times(module: Module, plan: Plan, group: Group, target: Target) -> tuple[float, float, float, int]:
    """(compute_s, busy_s, LPDDR5 seconds, padded FLOPs) of one kernel, on its own."""
    split = dict(plan.placements[group.id].split)
    is_restickify = any(
        r.group == group.id and r.kind == "kernel" for r in SpyreState.of(plan).restickify
    )  # insert_restickify
    restick = split["restickify"] + (split["read"] + split["write"] if is_restickify else 0)
    moved = (0, 0) if is_restickify else (split["read"], split["write"])
    memory_s = lpddr5_seconds(*moved, target) + restick / target["fitted.restickify_bytes_per_s"]
    work = group_work(plan, module, group)
    flops, transcendentals = work.flops, work.transcendentals
    division = SpyreState.of(plan).divisions[group.id]
    cores = target["chip.cores"]
    if group.kind == "contraction":
        tiling = plan.tilings[group.id]
        rate = matmul_rate(target, tiling.shape.batch)
        busy_s = tiling.padded_flops / 2 / division.units * division.per_core / rate
        return tiling.shape.flops / 2 / (cores * rate), busy_s, memory_s, tiling.padded_flops
    vector_rate = target["chip.vector_ops_per_s_per_core"]
    work = flops + transcendentals
    return work / (cores * vector_rate), work / division.units * division.per_core / vector_rate, memory_s, flops


def spyre_group_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    compute_s, busy_s, memory_s, padded = kernel_times(module, plan, group, target)
    previous = plan.groups[group.id - 1] if group.id > 0 else None
    hidden_s = 0.0
    if previous is not None and previous.instance == group.instance and previous.id in SpyreState.of(plan).divisions:
        _, prev_busy, prev_memory, _ = kernel_times(module, plan, previous, target)
        prefetch_s = (
            dict(plan.placements[group.id].split).get("prefetchable", 0) / target["fitted.lpddr5_one_way_bytes_per_s"]
        )
        hidden_s = min(prefetch_s, max(0.0, prev_busy - prev_memory), memory_s)  # fire_kernels: loaded meanwhile
    flops = group_work(plan, module, group).flops
    placement = plan.placements[group.id]
    return roofline_cost(
        flops,
        padded,
        compute_s,
        dict(placement.bytes),
        {target.main_memory_level: memory_s - hidden_s},
        busy_s,
        target["schedule.launch_overhead_s"],
    )
