"""insert_restickify: re-lay out a matmul operand that arrives sticked on the wrong dimension.

A Spyre matmul reads A sticked on k and B (and writes C) sticked on n (torch-spyre layout rules).
An operand computed by an earlier kernel keeps its producer's stick dimension (its last), so
K read as K^T in attention arrives sticked on k, not n: a restickify (a hardware transpose of
sticks, costed at the fitted restickify bandwidth) runs first. Weights and inputs are laid out
for their consumer when they are copied to the device, so they never need one.

A kernel that is itself a transpose (one not folded into a matmul as a layout view) moves its
sticks through the hardware's restickify path: it is recorded as a restickify of kind "kernel",
and the cost model charges its bytes at the restickify rate instead of the LPDDR5 rates.
"""

from __future__ import annotations

from hardware_models.families.spyre.plan import Restickify, SpyreState
from hardware_models.plan import Plan, ValueGraph
from hardware_models.target import Target
from reference.ir import Module


def physical_stick_dim(graph: ValueGraph, plan: Plan, value: str) -> int:
    """Which dimension of `value` is its stick dimension, following transposes that only re-view it."""
    rank = len(graph.types[value].shape)
    producer = graph.producer.get(value)
    if producer is None or value not in graph.alias:
        return rank - 1
    op = plan.ops[producer].op
    if op.short_name == "transpose":
        return tuple(op.attr("permutation")).index(physical_stick_dim(graph, plan, graph.alias[value]))
    # Any other view (a reshape, a call's argument) keeps the last dimension: only a transpose
    # moves the stick, and a transpose is a view only where contractions alone read it
    # (ValueGraph.layout_views), so no other view's source is sticked elsewhere.
    return rank - 1


def required_stick_dims(op) -> tuple[int, int]:
    """(A's, B's) stick dimension for a dot_general: A on its (last) contracting dimension, B on
    its (last) free dimension."""
    dims = op.attr("dot_dimension_numbers")
    rhs_rank = len(op.operand_types[1].shape)
    lhs_k = dims.lhs_contracting[-1] if dims else len(op.operand_types[0].shape) - 1
    rhs_skip = set(dims.rhs_batch + dims.rhs_contracting) if dims else {0}
    rhs_n = max(d for d in range(rhs_rank) if d not in rhs_skip) if rhs_rank > len(rhs_skip) else rhs_rank - 1
    return lhs_k, rhs_n


def insert_restickify(module: Module, plan: Plan, target: Target) -> Plan:
    graph = plan.value_graph()
    found = []
    for group in plan.groups:
        transposes = [plan.ops[i] for i in group.members if plan.ops[i].op.short_name == "transpose"]
        if group.kind == "fusion" and transposes:
            found.append(Restickify(group.id, transposes[0].results[0], "kernel"))
        if group.kind != "contraction" or plan.ops[group.members[0]].op.short_name not in ("dot_general", "dot"):
            continue
        first = plan.ops[group.members[0]]
        for operand, wanted in zip(first.operands[:2], required_stick_dims(first.op)):
            root = graph.root(operand)
            if root not in graph.producer:
                continue  # an argument: laid out for this consumer when copied to the device
            if physical_stick_dim(graph, plan, operand) != wanted:
                found.append(Restickify(group.id, root))
    return plan.with_state(SpyreState, restickify=tuple(found)) if found else plan
