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
    time_s    = max(busy_s, memory_s) + launch_overhead_s

Worked number: a 65-element fp16 negate reads 2 sticks and writes 2 sticks (512 bytes, of which
260 are data): (512 / 150e9 + 256 * (2 / 105e9 - 2 / 150e9)) = 4.9 ns of memory, far below the
assumed 5 us per kernel.
"""

from __future__ import annotations

from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.plan import Group, Plan, group_work
from hardware_models.target import Target
from reference.ir import Module


def matmul_rate(target: Target, batch: int) -> float:
    """Sustained MAC/s per core for a matmul of this batch (S03, S04, S05)."""
    if batch == 1:
        return target["fitted.matmul_mac_per_s_per_core"]
    return target["fitted.bmm_mac_per_s_per_core"] if batch >= 4 else target["fitted.bmm_small_batch_mac_per_s_per_core"]


def lpddr5_seconds(read: int, write: int, target: Target) -> float:
    one_way, balanced = target["fitted.lpddr5_one_way_bytes_per_s"], target["fitted.lpddr5_read_write_bytes_per_s"]
    return (read + write) / one_way + min(read, write) * (2 / balanced - 2 / one_way)


def spyre_group_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    placement = plan.placements[group.id]
    launch_s = target["schedule.launch_overhead_s"]
    flops, transcendentals, _ = group_work(plan, module, group)
    split = dict(placement.split)
    ops = [plan.ops[i].op.short_name for i in group.members]
    restick = split["restickify"] + (split["read"] + split["write"] if "transpose" in ops else 0)
    moved = (0, 0) if "transpose" in ops else (split["read"], split["write"])
    memory_s = {"lpddr5": lpddr5_seconds(*moved, target) + restick / target["fitted.restickify_bytes_per_s"]}
    division = plan.divisions[group.id]
    cores = target["chip.cores"]
    if group.kind == "contraction":
        tiling = plan.tilings[group.id]
        rate = matmul_rate(target, tiling.shape.batch)
        compute_s = tiling.shape.flops / 2 / (cores * rate)
        busy_s = tiling.padded_flops / 2 / division.units * division.per_core / rate
        return roofline_cost(flops, tiling.padded_flops, compute_s, dict(placement.bytes), memory_s, busy_s, launch_s)
    vector_rate = target["chip.vector_ops_per_s_per_core"]
    compute_s = (flops + transcendentals) / (cores * vector_rate)
    busy_s = (flops + transcendentals) / division.units * division.per_core / vector_rate
    return roofline_cost(flops, flops, compute_s, dict(placement.bytes), memory_s, busy_s, launch_s)
