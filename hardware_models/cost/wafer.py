"""The Cerebras model: every kernel on its own region of PEs, weights in their SRAM, a pipeline.

With P PEs on a wafer, a peak of R FLOP/s and an efficiency e, a kernel on a region of r PEs
(place_layers) takes

    compute_s = FLOPs / (r * e * R / P)
    memory_s  = {sram:    its operand and result bytes / (SRAM bandwidth * r / P),
                 fabric:  what it sends on / (fabric bandwidth * r / P),
                 memoryx: in streaming mode, its weights / system I/O bandwidth}
    time_s    = max(compute_s, memory_s) + region_latency_s

and a token crosses every region in turn, so at batch 1 the time is the pipeline's depth times
the per-region latency far more than the wafer's peak. A split over wafers adds
`wafer_hop_latency_s + hidden state / system I/O` per hop.
Worked number: a kernel of 1 GFLOP on 1% of a WSE-3 (9,000 PEs) at e = 0.5:
1e9 / (9000 * 0.5 * 125e15 / 900000) = 1.6 us, plus the region latency (0.5 us).
"""

from __future__ import annotations

from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.plan import Group, Plan, group_work
from hardware_models.target import Target
from reference.ir import Module


def wafer_group_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    io = target["interconnect.system_io_bytes_per_s"]
    if group.kind == "transfer":
        seconds = target["schedule.wafer_hop_latency_s"] + plan.partition.hidden_bytes / io
        return Cost(0, 0, 0.0, seconds, seconds, (("system_io", plan.partition.hidden_bytes),), (("system_io", 0.0),))
    placement = plan.placements[group.id]
    latency_s = target["schedule.region_latency_s"]
    flops = group_work(plan, module, group).flops
    pes = target["chip.pes"]
    share = plan.regions[group.id].pes / pes
    compute_s = flops / (share * pes * target["fitted.compute_efficiency"] * target["peak.fp16_flop_per_s"] / pes)
    memory_s = {
        target.main_memory_level: placement.at(target.main_memory_level) / (target.main_memory_bytes_per_s * share),
        "fabric": placement.at("fabric") / (target["interconnect.fabric_bytes_per_s"] * share),
    }
    if placement.at("memoryx"):
        memory_s["memoryx"] = placement.at("memoryx") / io
    return roofline_cost(flops, flops, compute_s, dict(placement.bytes), memory_s, compute_s, latency_s)
