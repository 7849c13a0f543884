"""The workload as it executes: the IR's ops with calls inlined per call site and loop bodies
kept once with their repeats, and what a program asks of memory (its footprint), for the passes
that spread it over chips.

Values are named per expanded function instance: an op of the block that `main` calls at its
third op is "main/2:block" and its value "%7" is "main/2:block%7", so every id is unique.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hardware_models.plan import PlannedOp
from reference.ir import Module, module_stats

if TYPE_CHECKING:
    from hardware_models.plan import Plan


def expand_workload(module: Module) -> tuple[tuple[PlannedOp, ...], tuple[str, ...]]:
    """Every op as it executes: calls inlined per call site, loop bodies kept once with repeats.

    Returns the ops and notes (loops whose trip count could not be read count once).
    """
    planned: list[PlannedOp] = []
    notes: list[str] = []

    def walk(ops, instance: str, repeats: int) -> None:
        for position, op in enumerate(ops):
            short = op.short_name
            if short == "call":
                planned.append(PlannedOp(len(planned), op, instance, repeats))
                walk(module.function(op.callee).ops, f"{instance}/{position}:{op.callee}", repeats * (op.trip_count or 1))
            elif short == "while":
                planned.append(PlannedOp(len(planned), op, instance, repeats))
                if op.trip_count is None:
                    notes.append(f"a while loop in {instance} has no static trip count; its body counts once")
                body = [o for region in op.regions for o in region.ops]
                walk(body, f"{instance}/{position}:while", repeats * (op.trip_count or 1))
            else:
                planned.append(PlannedOp(len(planned), op, instance, repeats))

    walk(module.main.ops, "main", 1)
    return tuple(planned), tuple(notes)


@dataclass(frozen=True)
class Footprint:
    """What a program asks of memory, for the passes that spread it over chips.

    needed_bytes: every argument (weights, inputs, caches), a regional block's weights once per layer;
    layer_bytes: one layer's own arguments (all of them for a flat program);
    hidden_bytes: what passes from layer to layer (the block call's result; a flat program's results);
    layers: how often the block runs (1 for a flat program).
    """

    needed_bytes: int
    layer_bytes: int
    hidden_bytes: int
    layers: int
    regional: bool


def program_footprint(module: Module) -> Footprint:
    main = module.main
    needed = module_stats(module, tuple(range(len(main.args)))).param_bytes
    calls = [op for op in main.ops if op.short_name == "call" and op.trip_count]
    if not calls:
        return Footprint(needed, needed, sum(t.nbytes for t in main.results), 1, False)
    arg_bytes = {name: typ.nbytes for name, typ in main.args}
    layer_bytes = sum(arg_bytes.get(v, 0) for v in calls[0].operands)
    return Footprint(needed, layer_bytes, calls[0].result_types[0].nbytes, calls[0].trip_count, True)


def program_arguments(plan: "Plan", module: Module) -> frozenset[str]:
    """Qualified values that are the program's own arguments (weights, inputs, caches): main's
    arguments, and a called function's arguments bound to them (a regional block's weights)."""
    params = {f"main{name}" for name, _ in module.main.args}
    for p in plan.ops:
        if p.op.short_name != "call" or p.index + 1 >= len(plan.ops):
            continue
        child = plan.ops[p.index + 1].instance  # expand_workload puts the callee's ops right after the call
        for (name, _), operand in zip(module.function(p.op.callee).args, p.operands):
            if operand in params:
                params.add(f"{child}{name}")
    return frozenset(params)
