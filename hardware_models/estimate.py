"""estimate: workload (IR) x architecture (target) x mapping (the compiled plan) -> cost."""

from __future__ import annotations

from hardware_models.cost.model import Estimate, GroupCost
from hardware_models.pipelines import COST_MODELS, compile_plan
from hardware_models.plan import Plan, scope_of
from hardware_models.target import Target
from reference.ir import Module


def estimate(module: Module, target: Target, name: str = "", plan: Plan | None = None) -> Estimate:
    """Predict the cost of running `module` on `target`, kernel by kernel.

    Args:
        module: the IR of a program (a `Lowering.module`, or `parse_stablehlo(text)`).
        target: a loaded target; `target.with_overrides({...})` turns its knobs.
        name: a label for the report.
        plan: a plan compiled earlier by `compile_plan(module, target)`; compiled here if None.

    Returns:
        An Estimate: per group (kernel) its ops, FLOPs, bytes per level, compute, memory and
        schedule time and bottleneck; totals over the program with `.total` and `.to_dict()`.

    Raises:
        UnsupportedDtype: a floating type the target neither runs nor emulates.
    """
    plan = plan if plan is not None else compile_plan(module, target)
    group_cost = COST_MODELS[target.family]
    groups = tuple(
        GroupCost(g.id, g.kind, tuple(plan.ops[i].op.short_name for i in g.members), scope_of(plan, g), g.repeats,
                  group_cost(module, plan, g, target))
        for g in plan.groups
    )
    return Estimate(target.name, name, groups, plan.notes)
