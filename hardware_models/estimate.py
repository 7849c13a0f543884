"""estimate: workload (IR) x architecture (target) x mapping (the compiled plan) -> cost."""

from __future__ import annotations

from hardware_models.cost.model import (
    Cost,
    Estimate,
    GroupCost,
    host_fallback_cost,
    transfer_cost,
)
from hardware_models.pipelines import compile_plan
from hardware_models.plan import Group, Plan, group_work, scope_of
from hardware_models.target import Target
from reference.errors import LandscapeError
from reference.ir import Module


class PlanMismatch(LandscapeError):
    """A plan handed to `estimate` that was compiled for another target."""


def group_cost(module: Module, plan: Plan, group: Group, target: Target) -> Cost:
    """One group's cost: a host fallback or a tensor-parallel all-reduce the same way on every
    target that places them; everything else by the cost model of the compiler that made the plan
    (its family's `Compiler.group_cost`; `Plan.compiler`)."""
    if group.kind == "fallback" and group.id in plan.placements:
        return host_fallback_cost(group_work(plan, module, group).flops, dict(plan.placements[group.id].bytes), target)
    if group.kind == "transfer" and plan.partition.mode == "tensor parallel":
        return transfer_cost(plan, target)
    return target.family_record.compiler(plan.compiler or None).group_cost(module, plan, group, target)


def estimate(module: Module, target: Target, name: str = "", plan: Plan | None = None) -> Estimate:
    """Predict the cost of running `module` on `target`, kernel by kernel.

    Args:
        module: the IR of a program (a `Lowering`, its `.module`, or `parse_stablehlo(text)`).
        target: a loaded target, or its name; `target.with_overrides({...})` turns its knobs.
        name: a label for the report.
        plan: a plan compiled earlier by `compile_plan(module, target)`; compiled here if None.

    Returns:
        An Estimate: per group (kernel) its ops, FLOPs, bytes per level, compute, memory and
        schedule time and bottleneck; totals over the program with `.total` and `.to_dict()`.

    Raises:
        UnsupportedDtype: a floating type the target neither runs nor emulates.
        PlanMismatch: a `plan` compiled for another target.
    """
    if isinstance(target, str):
        from hardware_models.target import get_target

        target = get_target(target)
    name = name or getattr(module, "name", "")
    module = getattr(module, "module", module)  # a Lowering: its IR
    plan = plan if plan is not None else compile_plan(module, target)
    if plan.target != target.name:
        raise PlanMismatch(f"the plan was compiled for {plan.target}, not {target.name}: compile it for {target.name}")
    groups = tuple(
        GroupCost(
            g.id,
            g.kind,
            tuple(plan.ops[i].op.short_name for i in g.members),
            scope_of(plan, g),
            g.repeats,
            group_cost(module, plan, g, target),
        )
        for g in plan.groups
    )
    notes = plan.notes
    if not groups:
        notes += (
            "the program has no kernels, so nothing runs on the target and its time is 0: it returns "
            "constants or works on empty tensors only (a returned argument would be a copy kernel)",
        )
    fallbacks = [g for g in groups if g.kind == "fallback"]
    if fallbacks:
        spent = sum(g.cost.time_s * g.repeats for g in fallbacks)
        total = sum(g.cost.time_s * g.repeats for g in groups)
        names = sorted({op for g in fallbacks for op in g.ops})
        share = f"{spent / total:.1%} of the total" if total else "the whole of a program that takes no time"
        notes += (f"host fallbacks ({', '.join(names)}) take {spent * 1e3:.3f} ms, {share}",)
    return Estimate(target.name, name, groups, notes, compiler=plan.compiler)
