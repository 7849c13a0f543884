"""compare_programs: one program's compilation paths (PyTorch, JAX, and PyTorch through torch-xla)
on several targets; compare_lowerings: any two StableHLO programs (`sides` names them: two files,
two compilers, two versions). With three paths, every pair is diffed and costed.

For every target and side: the predicted time, its bottleneck, bytes per memory level, kernels,
padding waste and host fallbacks, or why the target refused the program (too few chips; a type
it lacks, under --strict-dtypes). What the compiler took away from a side's lowering is reported
too (`artifacts`): the upcasts fold_upcasts folded into contractions and what they would have
cost (the side costed again without that pass), and the types the target lacks and emulates.
Then what differs between the paths: the IR diff (reference.ir.diff: op histogram, divergent
segments with their reasons) and, per target, what it costs there, split by kind of kernel:

    contraction      matmuls and convolutions, with their fused epilogues
    data movement    kernels that only move data (a transpose, a copy, a concatenation)
    other            elementwise and reduction kernels
    fallback, transfer  host fallbacks; chip-to-chip traffic
    delta(kind) = jax time - torch time spent in kernels of that kind (the second side's time
                  - the first's, for any two programs)

The comparison also records what was compared (`workload`: the caller's description of the
entry, dtype, shapes, phase and compilers) and what each target is (`target_details`: its
family's vendor and noun, its description and its main memory), so a report can say both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hardware_models.cost.model import Estimate
from hardware_models.estimate import estimate
from hardware_models.families import get_family
from hardware_models.pipelines import compile_plan
from hardware_models.plan import Plan
from hardware_models.target import Target, get_target
from reference.errors import LandscapeError
from reference.ir import category
from reference.ir.diff import diff_modules
from reference.lowering import Lowering

KINDS = ("contraction", "data movement", "other", "fallback", "transfer")


@dataclass(frozen=True)
class SideResult:
    """One side's program on one target: the plan and estimate, or why the target refused it."""

    side: str
    target: str
    main_level: str = ""  # the target's main memory as a level ("hbm", "lpddr5", "sram")
    plan: Plan | None = None
    estimate: Estimate | None = None
    refused: str = ""
    unfolded_s: float | None = None  # the time without fold_upcasts, when it folded anything

    def artifacts(self) -> dict:
        """What the compiler took away from this side's lowering: the upcasts fold_upcasts folded
        (each with its op, source line, types and bytes), what the program would have cost with
        them (unfolded time - time), and the notes on types the target lacks and emulates."""
        if self.plan is None:
            return {}
        folds = [f.to_dict() for f in self.plan.folds]
        emulated = [n for n in self.plan.notes if "--strict-dtypes" in n]
        if not folds and not emulated:
            return {}
        cost = self.unfolded_s - self.estimate.total.time_s if self.unfolded_s is not None else 0.0
        return {
            "upcasts_folded": len(folds),
            "would_have_cost_s": cost,
            "saved_bytes": sum(f["saved_bytes"] for f in folds),
            "folds": folds,
            "emulated": emulated,
        }

    def top_kernel(self) -> dict:
        """The kernel that takes the most time (time x repeats): its ops, kind, scope, time, share of
        the program's time, bound and arithmetic intensity on main memory (FLOPs / main-memory
        bytes; None without main-memory bytes). {} for an empty or refused program."""
        if self.estimate is None or not self.estimate.groups:
            return {}
        g = max(self.estimate.groups, key=lambda g: (g.cost.time_s * g.repeats, -g.group))
        total = self.estimate.total.time_s
        main = g.cost.bytes_at(self.main_level)
        return {
            "group": g.group,
            "op": "+".join(g.ops),
            "kind": g.kind,
            "scope": g.scope,
            "time_s": g.cost.time_s * g.repeats,
            "share": g.cost.time_s * g.repeats / total if total else 0.0,
            "bound": g.cost.bottleneck,
            "intensity": g.cost.flops / main if main else None,
        }

    def time_by_kind(self) -> dict[str, float]:
        out = dict.fromkeys(KINDS, 0.0)
        for g in self.estimate.groups if self.estimate else ():
            kind = g.kind if g.kind in ("contraction", "fallback", "transfer") else "other"
            if kind == "other" and self.plan is not None:
                members = self.plan.groups[g.group].members
                if members and all(category(self.plan.ops[i].op) == "data_movement" for i in members):
                    kind = "data movement"
            out[kind] += g.cost.time_s * g.repeats
        return out

    def summary(self) -> dict:
        if self.estimate is None:
            return {"side": self.side, "target": self.target, "refused": self.refused}
        d = self.estimate.to_dict()
        total = self.estimate.total
        fallbacks = sorted({op for g in self.estimate.groups if g.kind == "fallback" for op in g.ops})
        return {
            "side": self.side,
            "target": self.target,
            "time_s": d["total_time_s"],
            "bottleneck": d["bottleneck"],
            "bytes": d["bytes"],
            "main_memory_bytes": d["bytes"].get(self.main_level, 0),
            "kernels": d["kernels"],
            "fused_groups": sum(1 for g in self.estimate.groups if len(g.ops) > 1),
            "padding_waste": 1 - total.flops / total.padded_flops if total.padded_flops else 0.0,
            "main_memory_level": self.main_level,
            "fallbacks": fallbacks,
            "chips": self.plan.partition.chips if self.plan and self.plan.partition else 1,
            "time_by_kind_s": self.time_by_kind(),
            "notes": d["notes"],
            "bottleneck_counts": d["bottleneck_counts"],
            "top_kernel": self.top_kernel(),
            **({"artifacts": self.artifacts()} if self.artifacts() else {}),
        }


def describe_target(target: Target) -> dict:
    """What a target is, for a reader: {"family", "vendor", "noun", "kind", "description",
    "main_memory_level", "main_memory_bytes"}; kind is e.g. "NVIDIA GPU"."""
    family = get_family(target.family)
    return {
        "family": target.family,
        "vendor": family.vendor,
        "noun": family.noun,
        "kind": family.describe(),
        "description": target.description,
        "main_memory_level": target.main_memory_level,
        "main_memory_bytes": target.main_memory_bytes,
    }


def side_pairs(sides) -> list[tuple[str, str]]:
    """Every pair of sides, the first pair first: (torch, jax), then (torch, torch-xla), (jax, torch-xla)."""
    return [(a, b) for i, a in enumerate(sides) for b in sides[i + 1 :]]


@dataclass(frozen=True)
class Comparison:
    name: str
    targets: tuple[str, ...]
    results: dict[tuple[str, str], SideResult]  # (target, side) -> result
    diff: dict = field(default_factory=dict)  # the first two sides' IR diff
    workload: dict = field(default_factory=dict)  # what was compared, as the caller describes it
    target_details: dict = field(default_factory=dict)  # target -> describe_target(target)
    sides: tuple[str, ...] = ("torch", "jax")  # the programs' names, in order (two, or three paths)
    more_diffs: dict = field(default_factory=dict)  # (a, b) -> IR diff, every pair of sides after the first pair

    def pairs(self) -> list[tuple[str, str]]:
        return side_pairs(self.sides)

    def difference_cost(self, target: str, first: str | None = None, second: str | None = None) -> dict[str, float]:
        """second - first (jax - torch) time per kind of kernel on one target (empty if either side was
        refused); the first two sides unless named."""
        a_side, b_side = (first, second) if first is not None else self.sides[:2]
        a_res, b_res = self.results[(target, a_side)], self.results[(target, b_side)]
        if a_res.estimate is None or b_res.estimate is None:
            return {}
        a, b = a_res.time_by_kind(), b_res.time_by_kind()
        return {kind: b[kind] - a[kind] for kind in KINDS if a[kind] or b[kind]}

    def to_dict(self) -> dict:
        out = {
            "name": self.name,
            "targets": list(self.targets),
            "workload": self.workload,
            "target_details": self.target_details,
            "sides": list(self.sides),
            "results": [self.results[(t, s)].summary() for t in self.targets for s in self.sides],
            "difference_cost_s": {t: self.difference_cost(t) for t in self.targets},
            "diff": self.diff,
        }
        if self.more_diffs:  # three paths: the other pairs, each as the first pair is given
            out["more_pairs"] = [
                {
                    "sides": [a, b],
                    "difference_cost_s": {t: self.difference_cost(t, a, b) for t in self.targets},
                    "diff": self.more_diffs[(a, b)],
                }
                for a, b in self.pairs()[1:]
            ]
        return out


def unfolded_time(
    module,
    target: Target,
    plan: Plan,
    chips: int | None = None,
    strict_dtypes: bool = False,
    without: tuple[str, ...] = (),
) -> float | None:
    """The program's time compiled without fold_upcasts (and `without`), when the plan folded
    anything (else None): what the folded upcasts would have cost is this minus the plan's time."""
    if not plan.folds:
        return None
    unfolded = compile_plan(
        module,
        target,
        chips=chips,
        strict_dtypes=strict_dtypes,
        without=(*without, "fold_upcasts"),
        compiler=plan.compiler or None,
    )
    return estimate(module, target, "", unfolded).total.time_s


def compare_lowerings(
    torch_lowering: Lowering,
    jax_lowering: Lowering,
    targets: list[Target | str],
    name: str = "",
    chips: int | None = None,
    progress=None,
    workload: dict | None = None,
    strict_dtypes: bool = False,
    sides: tuple[str, str] = ("torch", "jax"),
    without: tuple[str, ...] = (),
) -> Comparison:
    """Two lowerings: `compare_programs` with {sides[0]: torch_lowering, sides[1]: jax_lowering}."""
    return compare_programs(
        dict(zip(sides, (torch_lowering, jax_lowering))),
        targets,
        name,
        chips,
        progress,
        workload,
        strict_dtypes,
        without,
    )


def compare_programs(
    lowerings: dict[str, Lowering],
    targets: list[Target | str],
    name: str = "",
    chips: int | None = None,
    progress=None,
    workload: dict | None = None,
    strict_dtypes: bool = False,
    without: tuple[str, ...] = (),
) -> Comparison:
    """Compile and cost both lowerings of one program on every target, and diff the two paths.

    Args:
        lowerings: side name -> Lowering, in order, two or more: {"torch": ..., "jax": ...} from
            `pytorch_side.lower.lower_module` and `jax_side.lower.lower_function` (or the
            catalogue's `lower_entry`), and "torch-xla" from `torchxla_side`.
        targets: target names ("h100") or loaded targets (`hardware_models.target.get_target`).
        chips: force a chip count on every target.
        progress: called with a short label after each (target, side), for a progress bar.
        workload: what was compared (entry, dtype, shapes, phase, compilers), kept as given.
        strict_dtypes: refuse a type a target lacks (f64 on a TPU) instead of costing its
            emulation (`--strict-dtypes`).
        without: passes left out on every target whose pipeline has them (`--without`: a
            what-if, pipelines.LEAVABLE).

    A target that refuses a side (too few chips; with strict_dtypes, a type it lacks) is recorded
    with its reason; nothing already computed is lost. A side whose upcasts were folded
    (fold_upcasts) is also costed without the fold, to say what those artifacts would have cost.

    Raises:
        UnknownName: a target name that no target file has (before anything is compiled).
    """
    targets = [get_target(t) if isinstance(t, str) else t for t in targets]
    sides = tuple(lowerings)
    results = {}
    for target in targets:
        for side, lowering in lowerings.items():
            try:
                plan = compile_plan(lowering.module, target, chips=chips, strict_dtypes=strict_dtypes, without=without)
                est = estimate(lowering.module, target, name, plan)
                unfolded = unfolded_time(lowering.module, target, plan, chips, strict_dtypes, without)
                results[(target.name, side)] = SideResult(
                    side, target.name, target.main_memory_level, plan, est, unfolded_s=unfolded
                )
            except LandscapeError as err:
                results[(target.name, side)] = SideResult(side, target.name, target.main_memory_level, refused=str(err))
            if progress:
                progress(f"{target.name} {side}")
    pairs = side_pairs(sides)
    diffs = {(a, b): diff_modules(lowerings[a].module, lowerings[b].module, (a, b)).to_dict() for a, b in pairs}
    details = {t.name: describe_target(t) for t in targets}
    return Comparison(
        name,
        tuple(t.name for t in targets),
        results,
        diffs.pop(pairs[0]),
        dict(workload or {}),
        details,
        sides,
        more_diffs=diffs,
    )
