"""assign_groups: the unfused starting point, one group (one kernel) per op that does work.

Views (reshape, broadcast, a transpose or a contiguous slice that only feeds contractions), constants, returns, calls and loops form no kernel, and neither
does an op whose operands are all compile-time constants (an iota, the scalar arithmetic
torch-mlir emits for Python floats): both XLA and Inductor fold those while compiling, except
that a family may say (`fold_iota=False`, the CPU's) that an iota and what follows from it run
inside the loops that read them, as XLA:CPU's and Inductor's generated loops compute them. An op the
target cannot run (one the importer kept opaque, a custom_call) becomes a fallback group: it
runs on the host, is reported, and is costed, never dropped. An op on an empty tensor (an
extent of 0: no elements to read, write or compute) forms no kernel either, and the plan notes it.
"""

from __future__ import annotations

from hardware_models.plan import Group, Plan, is_fallback_op, is_kernel_op
from hardware_models.target import Target
from hardware_models.values import constant_values
from reference.ir import Module, category


def assign_groups(module: Module, plan: Plan, target: Target, fold_iota: bool = True) -> Plan:
    """`fold_iota`: whether the compiler folds iotas and their arithmetic (values.constant_values)."""
    graph = plan.value_graph()
    groups = []
    fallbacks = []
    empty = []
    constant = constant_values(plan.ops, fold_iota)
    for p in plan.ops:
        if p.results and all(r in constant for r in p.results):  # folded at compile time
            continue
        if not is_kernel_op(p, graph):
            continue
        if any(t.elements == 0 for t in (*p.op.operand_types, *p.op.result_types)):
            empty.append(p.op.name)
            continue
        if is_fallback_op(p):
            kind = "fallback"
            fallbacks.append(p.op.name)
        elif category(p.op) == "contraction":
            kind = "contraction"
        else:
            kind = "fusion"
        groups.append(Group(len(groups), kind, (p.index,), p.instance, p.repeats))
    notes = tuple(
        f"{name} is not supported on {target.name}: it falls back to the host" for name in sorted(set(fallbacks))
    )
    if empty:
        notes += (
            f"{len(empty)} ops on empty tensors (an extent of 0: {', '.join(sorted(set(empty)))}) do no work and form no kernel",
        )
    return plan.with_(groups=tuple(groups), notes=plan.notes + notes)
