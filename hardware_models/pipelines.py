"""compile_plan: run one of the target family's compilers over the IR, timing and verifying each pass.

Each family declares its compilers once, each an ordered pipeline of passes with the "after X
because Y" reason for each, in its module under hardware_models/families/. A pass is `verb(module, plan, target) -> Plan`
(one module each in hardware_models/passes/). After every pass the plan verifier
(hardware_models/verify_plan.py) checks the plan; a pass that breaks it is named in the error.
The plan records each pass's name, the groups after it and its wall time (`Plan.passes`).
"""

from __future__ import annotations

import time
from functools import partial

from hardware_models.plan import PassRecord, Plan
from hardware_models.target import Target
from hardware_models.verify_plan import verify_plan
from hardware_models.workload import expand_workload
from reference.errors import MalformedInput, UnknownName
from reference.ir import Module


def pass_name(step) -> str:
    return step.func.__name__ if isinstance(step, partial) else step.__name__


def pass_names(target: Target, compiler: str | None = None) -> list[str]:
    """The passes of the target family's compiler `compiler` (its usual one when None), in order."""
    return [pass_name(step) for step in target.family_record.compiler(compiler).pipeline]


# The passes a what-if may leave out (`--without`): each makes a choice the program also runs
# without (a fusion, a fold, a sharding, a re-layout), so the plan is whole and costed without it.
# The rest build what costing reads (the groups, dtypes, layouts, tiles, placement, schedule,
# chips): without them there is no plan to cost, not a slower one.
LEAVABLE = ("fold_upcasts", "fuse_elementwise", "fuse_attention", "shard_tensor_parallel", "insert_restickify")


def leavable_passes(targets: list[Target], compiler: str | None = None) -> list[str]:
    """The passes `--without` takes on these targets (compiled by `compiler`, else each family's
    usual one): LEAVABLE ones in any of their pipelines, in pipeline order."""
    names = [n for t in targets for n in pass_names(t, compiler)]
    return [n for n in dict.fromkeys(names) if n in LEAVABLE]


def check_without(without: tuple[str, ...], targets: list[Target], compiler: str | None = None) -> None:
    """Raises UnknownName for a pass `--without` cannot leave out on these targets, compiled by
    `compiler` (else each family's usual one), naming those it can; MalformedInput for a pass
    given twice."""
    valid = leavable_passes(targets, compiler)
    structural = {n for t in targets for n in pass_names(t, compiler)} - set(valid)
    twice = sorted({name for name in without if without.count(name) > 1})
    if twice:
        raise MalformedInput(
            f"--without {twice[0]} is given twice; give each pass to leave out once; valid: {', '.join(valid)}"
        )
    for name in without:
        if name in structural:
            raise UnknownName(
                f"pass to leave out (--without; {name} builds what costing reads, so there is no plan "
                f"without it) on {', '.join(t.name for t in targets)}",
                name,
                valid,
            )
        if name not in valid:
            raise UnknownName(f"pass to leave out (--without) on {', '.join(t.name for t in targets)}", name, valid)


def compile_plan(
    module: Module,
    target: Target,
    stop_after: str | None = None,
    chips: int | None = None,
    strict_dtypes: bool = False,
    without: tuple[str, ...] = (),
    compiler: str | None = None,
    shared_chips: bool = False,
) -> Plan:
    """Run one of the target family's compilers over the IR: the compiled result, as data.

    Args:
        module: the IR (from either side, or a StableHLO file); a `Lowering` is taken too.
        target: a loaded target (`hardware_models.target.get_target`).
        stop_after: the name of a pass to stop after (to inspect an intermediate plan).
        chips: how many chips (wafers on Cerebras) to use, instead of the fewest that hold the
            program's arguments.
        strict_dtypes: refuse a floating type the target lacks (f64 on a TPU) instead of
            costing its emulation (`--strict-dtypes`; resolve_dtypes).
        without: passes to leave out (LEAVABLE ones), to cost what one of them decided (compare
            costs a plan without fold_upcasts to say what the folded upcasts would have cost);
            one this family's pipeline lacks has nothing to leave out here.
        compiler: the name of one of the family's compilers (the host CPU's "inductor" or
            "xla"); its usual one (the first) when None. The plan records it (`Plan.compiler`)
            and `estimate` costs the plan with that compiler's cost model.
        shared_chips: `chips` is the count another graph of the same model needs (predict's prefill
            and steps run on its last decode step's chips): more chips than this program alone
            could fill are taken, idle ones included, instead of refused.

    Raises:
        UnsupportedDtype: the program uses a floating type the target lacks and cannot emulate
            (any it lacks, with strict_dtypes).
        UnknownName: an unknown pass or compiler name, or one in `without` that the plan
            cannot do without.
        InvalidShape: fewer chips than the program needs.
        InvalidPlan: a pass left the plan inconsistent (a bug in that pass; the error names it).
    """
    module = getattr(module, "module", module)  # a Lowering: its IR
    chosen = target.family_record.compiler(compiler)
    pipeline = chosen.pipeline
    names = [pass_name(step) for step in pipeline]
    if stop_after is not None and stop_after not in names:
        raise UnknownName("pass", stop_after, names)
    for name in without:
        if name not in LEAVABLE:
            raise UnknownName("pass that can be left out", name, [n for n in names if n in LEAVABLE])
    ops, notes = expand_workload(module)
    plan = Plan(
        target.name,
        ops,
        compiler=chosen.name,
        notes=notes,
        requested_chips=chips,
        chips_shared=shared_chips and chips is not None,
        strict_dtypes=strict_dtypes,
    )
    for step, name in zip(pipeline, names):
        if name in without:
            continue
        start = time.perf_counter()
        before, plan = plan, step(module, plan, target)
        seconds = time.perf_counter() - start
        verify_plan(plan, target, name, before)
        plan = plan.with_(passes=plan.passes + (PassRecord(name, len(plan.groups), seconds),))
        if name == stop_after:
            break
    return plan
