"""divide_work: split each kernel over the cores, in equal shares of whole units (Spyre).

torch-spyre's work division gives each core an equal number of output sticks. A unit here:
    matmul  one 8-row pass of M (chip.matmul_row_pass) by one output stick of n, per batch
    other   one output stick
cores = min(chip.cores, units); each core runs ceil(units / cores) units, so a kernel with 33
units on 32 cores takes two rounds at 52% balance.
"""

from __future__ import annotations

from hardware_models.families.spyre.plan import SpyreState, WorkDivision
from hardware_models.plan import Plan, group_outputs
from hardware_models.target import Target
from reference.ir import Module


def divide_work(module: Module, plan: Plan, target: Target) -> Plan:
    graph = plan.value_graph()
    cores = int(target["chip.cores"])
    divisions = {}
    for group in plan.groups:
        if group.kind in ("fallback", "transfer"):
            continue
        if group.kind == "contraction":
            units = plan.tilings[group.id].units  # pad_to_tiles: 8-row passes x output sticks
        else:
            units = max((SpyreState.of(plan).layouts[v].sticks for v in group_outputs(plan, graph, group)), default=1)
        divisions[group.id] = WorkDivision(units, max(1, min(cores, units)))
    return plan.with_state(SpyreState, divisions=divisions)
