"""fuse_elementwise: merge each op into its producer's kernel where the target's compiler would.

Producer-consumer fusion over one function instance, in program order. An op joins the group
that produces its operands when:
  - it is elementwise, a transcendental, data movement or a reduction (a contraction always
    starts its own group: cuBLAS on a GPU, the MXU fusion on a TPU);
  - the producing group is a fusion, or a contraction whose compiler fuses epilogues into it
    (`FusionRules.epilogue_into_contraction`: XLA's output fusion on a TPU, not Inductor's
    extern matmul on a GPU);
  - a reduction joins a group with fewer than `max_reductions` reductions (Inductor keeps a
    softmax's max and sum in one kernel; XLA on a TPU splits them);
  - an op reading a reduction's result joins the reduction's group only where the compiler fuses
    past a reduction (`fuse_after_reduction`: not XLA:CPU, whose reductions are kernels of their
    own, YNNPACK's in jax 0.10: a LayerNorm's optimized HLO holds five kernels); a reduction over
    dimensions of one element only is a reshape to every compiler (XLA's simplifier rewrites it:
    jnp.take's bounds check, all() over [n, 1], fuses into its gather's loop), not a reduction;
  - joining makes no cycle between groups (no other producer of the op depends on that group).
Operands from several groups join the latest of them; the rest become the kernel's inputs. An op
that reads only arguments (a block's input, which its norm converts twice: once for the
statistics, once to scale) joins the first group that reads the same argument, under the same
rules: XLA's sibling (multi-output) fusion and Inductor's, which read a shared input once.
Values that leave a group are written to memory; the rest stay in registers or VMEM.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardware_models.plan import Group, Plan
from hardware_models.target import Target
from reference.ir import Module, category


@dataclass(frozen=True)
class FusionRules:
    name: str
    epilogue_into_contraction: bool
    max_reductions: int
    fuse_after_reduction: bool = True


# Compiler behaviour, not hardware: Inductor keeps a softmax or a norm (2-3 reductions over one
# row) in one kernel; XLA's TPU fusion takes one reduction each.
INDUCTOR = FusionRules("inductor-like", epilogue_into_contraction=False, max_reductions=4)
XLA_TPU = FusionRules("xla-like", epilogue_into_contraction=True, max_reductions=1)
# XLA:CPU (jax.jit on the host): one reduction per kernel, its consumers in the next; GEMMs to a library.
XLA_CPU = FusionRules("xla-cpu", epilogue_into_contraction=False, max_reductions=1, fuse_after_reduction=False)


def trivial_reduction(op) -> bool:
    """A reduce whose reduced dimensions all have one element: it moves nothing, a reshape."""
    if op.short_name != "reduce" or not op.operand_types:
        return False
    shape = op.operand_types[0].shape
    return all(shape[d] == 1 for d in (op.attr("dimensions") or ()) if d < len(shape))


def fuse_elementwise(module: Module, plan: Plan, target: Target, rules: FusionRules = INDUCTOR) -> Plan:
    """Merge the one-op groups of assign_groups; a plan already fused comes back unchanged."""
    if any(len(g.members) > 1 for g in plan.groups):
        return plan
    graph = plan.value_graph()
    owner: dict[int, int] = {}  # op index -> merged group position
    readers: dict[str, int] = {}  # an argument -> the first merged group that reads it
    merged: list[dict] = []  # {"kind", "members", "instance", "repeats", "reductions", "deps"}

    def reaches(start: int, goal: int) -> bool:
        stack, seen = [start], set()
        while stack:
            g = stack.pop()
            if g == goal:
                return True
            if g not in seen:
                seen.add(g)
                stack.extend(merged[g]["deps"])
        return False

    for group in plan.groups:
        (index,) = group.members  # assign_groups makes one op per group
        op = plan.ops[index].op
        roots = [
            graph.root(v)
            for v in plan.ops[index].operands
            if graph.root(v) not in graph.producer and graph.root(v) not in graph.splat
        ]
        producers = {
            owner[graph.producer[graph.root(v)]]
            for v in plan.ops[index].operands
            if graph.producer.get(graph.root(v)) in owner
        }
        is_reduction = category(op) == "reduction" and not trivial_reduction(op)
        target_group = max(producers) if producers else None
        if target_group is None and group.kind == "fusion":  # reads only arguments: a sibling (module doc)
            target_group = max((readers[r] for r in roots if r in readers), default=None)
        if target_group is not None and group.kind == "fusion":
            host = merged[target_group]
            legal = host["kind"] == "fusion" or (
                host["kind"] == "contraction" and rules.epilogue_into_contraction and not is_reduction
            )
            legal = legal and not (is_reduction and host["reductions"] >= rules.max_reductions)
            legal = legal and (
                rules.fuse_after_reduction
                or not any(
                    owner.get(graph.producer.get(graph.root(v))) == target_group
                    and category(producer := plan.ops[graph.producer[graph.root(v)]].op) == "reduction"
                    and not trivial_reduction(producer)
                    for v in plan.ops[index].operands
                )
            )
            legal = legal and not any(reaches(p, target_group) for p in producers - {target_group})
            if legal:
                host["members"].append(index)
                host["reductions"] += is_reduction
                host["deps"] |= producers - {target_group}
                owner[index] = target_group
                for r in roots:
                    readers.setdefault(r, target_group)
                continue
        owner[index] = len(merged)
        for r in roots:
            readers.setdefault(r, len(merged))
        merged.append(
            {
                "kind": group.kind,
                "members": [index],
                "instance": group.instance,
                "repeats": group.repeats,
                "reductions": int(is_reduction),
                "deps": set(producers),
            }
        )
    groups = tuple(Group(i, g["kind"], tuple(g["members"]), g["instance"], g["repeats"]) for i, g in enumerate(merged))
    return plan if len(groups) == len(plan.groups) else plan.with_(groups=groups)
