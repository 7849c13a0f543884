"""Shape and type verification at the IR's boundaries (after import, after every pass)."""

from __future__ import annotations

from reference.errors import MalformedIR
from reference.ir.from_stablehlo import ELEMENTWISE, TRANSCENDENTAL
from reference.ir.graph import Block, Function, Module, Op, TensorType
from reference.ir.limits import check_calls, nested_ops


def _dot_result_shape(op: Op) -> tuple[int, ...]:
    d = op.attr("dot_dimension_numbers")
    lhs, rhs = op.operand_types[0].shape, op.operand_types[1].shape
    batch = tuple(lhs[i] for i in d.lhs_batch)
    lhs_free = tuple(s for i, s in enumerate(lhs) if i not in d.lhs_batch + d.lhs_contracting)
    rhs_free = tuple(s for i, s in enumerate(rhs) if i not in d.rhs_batch + d.rhs_contracting)
    return batch + lhs_free + rhs_free


def _check_call(op: Op, types: dict[str, TensorType], callee: Function, where: str) -> None:
    """A call passes as many values as its callee takes, each of the type the callee declares,
    and declares the callee's result types."""
    if len(op.operands) != len(callee.args):
        raise MalformedIR(
            f"{where}: call @{callee.name} passes {len(op.operands)} arguments, and @{callee.name} takes {len(callee.args)}"
        )
    for i, (value, (param, expected)) in enumerate(zip(op.operands, callee.args)):
        given = types.get(value)
        if given is not None and given != expected:
            raise MalformedIR(
                f"{where}: call @{callee.name} passes {value} : {given} as argument {i} ({param}), which is {expected}"
            )
    if tuple(op.result_types) != tuple(callee.results):
        shown = ", ".join(map(str, op.result_types))
        raise MalformedIR(
            f"{where}: call @{callee.name} declares results ({shown}), and @{callee.name} returns ({', '.join(map(str, callee.results))})"
        )


def _check_op(op: Op, defined: dict[str, TensorType | None], where: str, functions: dict[str, Function]) -> None:
    for operand in op.operands:
        if operand not in defined:
            raise MalformedIR(f"{where}: {op.name} uses {operand} before it is defined")
    if op.callee and op.callee in functions and op.short_name == "call":
        _check_call(op, defined, functions[op.callee], where)
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
    for i, result in enumerate(op.results):
        if result in defined:
            raise MalformedIR(f"{where}: {result} defined twice")
        defined[result] = op.result_types[i] if i < len(op.result_types) else None
    for region in op.regions:
        _check_block(region, dict(defined), where, functions)


def _check_block(
    block: Block | Function, defined: dict[str, TensorType | None], where: str, functions: dict[str, Function]
) -> None:
    defined.update(dict(block.args))
    for op in block.ops:
        _check_op(op, defined, where, functions)


def verify(module: Module) -> Module:
    """Check definition before use, unique definitions, elementwise and dot_general shapes, callees,
    that every call passes its callee's argument types and declares its result types, and that
    calls neither recurse nor nest (with regions) past `limits.MAX_NESTING`.

    Returns the module unchanged, so it can sit in a pipeline.

    Raises:
        MalformedIR: naming the function, the op and the rule broken.
    """
    names = {f.name for f in module.functions}
    functions = {f.name: f for f in module.functions}
    if module.entry not in names:
        raise MalformedIR(f"entry function {module.entry!r} is missing")
    check_calls(module)  # first: it bounds the nesting that the checks below recurse on
    for fn in module.functions:
        _check_block(fn, {}, f"func {fn.name}", functions)
        for op, _ in nested_ops(fn):
            if op.callee and op.callee not in names:
                raise MalformedIR(f"func {fn.name}: call to unknown function @{op.callee}")
    return module
