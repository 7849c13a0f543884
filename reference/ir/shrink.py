"""Shrink a StableHLO program to a repro: main cut after the op that computes one value, which
becomes main's only result (the debugger's originating op). Done with MLIR's bindings: the
module is parsed, the ops after that one are erased, and the return and the function's type
rewritten; the arguments stay, so the original's inputs still fit.
"""

from __future__ import annotations

from reference.errors import MalformedIR


def truncate_at(text: str, value: str) -> str:
    """The program of `text` with main returning `value` (an IR id of main, "%7") and nothing after it.

    Raises:
        MalformedIR: the text does not parse, or `value` is not a result of an op of main.
    """
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import func

    from reference.ir.from_stablehlo import _Reader
    from reference.ir.mlir_context import make_context

    ctx = make_context()
    reader = _Reader(ctx)
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        functions = [op for op in module.body.operations if op.operation.name == "func.func"]
        for fn in functions:
            reader.function(fn)  # names every value as parse_stablehlo does
        main = next((f for f in functions if f.operation.attributes["sym_name"].value == "main"), functions[0])
        target = next((v for v, name in reader.ids.items() if name == value), None)
        block = main.regions[0].blocks[0]
        ops = list(block.operations)
        owner = next(
            (i for i, op in enumerate(ops) if target is not None and any(r == target for r in op.results)), None
        )
        if owner is None:
            raise MalformedIR(f"{value} is not computed by an op of main; cannot cut the program there")
        for op in reversed(ops[owner + 1 :]):
            op.erase()
        with ir.InsertionPoint(block):
            func.ReturnOp([target])
        arg_types = [a.type for a in block.arguments]
        main.operation.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, [target.type]))
        if "res_attrs" in main.operation.attributes:
            del main.operation.attributes["res_attrs"]
        return str(module)
