"""Shape and type verification at the IR's boundaries (after import, after every pass)."""

from __future__ import annotations

from reference.errors import MalformedIR
from reference.ir.from_stablehlo import ELEMENTWISE, TRANSCENDENTAL
from reference.ir.graph import Block, Function, Module, Op
from reference.ir.limits import check_calls, nested_ops


def _dot_result_shape(op: Op) -> tuple[int, ...]:
    d = op.attr("dot_dimension_numbers")
    lhs, rhs = op.operand_types[0].shape, op.operand_types[1].shape
    batch = tuple(lhs[i] for i in d.lhs_batch)
    lhs_free = tuple(s for i, s in enumerate(lhs) if i not in d.lhs_batch + d.lhs_contracting)
    rhs_free = tuple(s for i, s in enumerate(rhs) if i not in d.rhs_batch + d.rhs_contracting)
    return batch + lhs_free + rhs_free


def _check_op(op: Op, defined: set[str], where: str) -> None:
    for operand in op.operands:
        if operand not in defined:
            raise MalformedIR(f"{where}: {op.name} uses {operand} before it is defined")
    short = op.short_name if op.known else ""  # an opaque op's rules are unknown
    if short in ELEMENTWISE | TRANSCENDENTAL and short not in ("select", "clamp", "compare", "convert"):
        shapes = {t.shape for t in op.operand_types} | {t.shape for t in op.result_types}
        if len(shapes) > 1:
            raise MalformedIR(f"{where}: {op.name} mixes shapes {sorted(shapes)}")
    if short == "dot_general":
        d = op.attr("dot_dimension_numbers")
        lhs, rhs = op.operand_types[0].shape, op.operand_types[1].shape
        for a, b in zip(d.lhs_contracting + d.lhs_batch, d.rhs_contracting + d.rhs_batch):
            if lhs[a] != rhs[b]:
                raise MalformedIR(f"{where}: dot_general contracts {lhs[a]} against {rhs[b]}")
        if _dot_result_shape(op) != op.result_types[0].shape:
            raise MalformedIR(f"{where}: dot_general result {op.result_types[0].shape} != {_dot_result_shape(op)}")
    for result in op.results:
        if result in defined:
            raise MalformedIR(f"{where}: {result} defined twice")
        defined.add(result)
    for region in op.regions:
        _check_block(region, set(defined), where)


def _check_block(block: Block | Function, defined: set[str], where: str) -> None:
    defined |= {a for a, _ in block.args}
    for op in block.ops:
        _check_op(op, defined, where)


def verify(module: Module) -> Module:
    """Check definition before use, unique definitions, elementwise and dot_general shapes, callees,
    and that calls neither recurse nor nest (with regions) past `limits.MAX_NESTING`.

    Returns the module unchanged, so it can sit in a pipeline.

    Raises:
        MalformedIR: naming the function, the op and the rule broken.
    """
    names = {f.name for f in module.functions}
    if module.entry not in names:
        raise MalformedIR(f"entry function {module.entry!r} is missing")
    check_calls(module)  # first: it bounds the nesting that the checks below recurse on
    for fn in module.functions:
        _check_block(fn, set(), f"func {fn.name}")
        for op, _ in nested_ops(fn):
            if op.callee and op.callee not in names:
                raise MalformedIR(f"func {fn.name}: call to unknown function @{op.callee}")
    return module
