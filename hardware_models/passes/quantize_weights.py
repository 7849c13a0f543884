"""quantize_weights: a graph pass that runs a 16-bit program's matmuls in 8 bits (W8A8).

Returns a new module in which
  - the program's 16-bit floating arguments of rank 2 and more (weights, and a decode step's
    KV cache; a published model's other inputs are token ids) are stored in the 8-bit type, and
    so are a called block's arguments bound to them;
  - views and data movement of such values (reshape, transpose, slices, cache updates) carry the
    8-bit type on;
  - every contraction reads both operands in the 8-bit type (activations are quantized on the
    way in), so the target's 8-bit peak applies.
Norm scales and biases (rank 1), activations and accumulation stay 16-bit. The quantize and
dequantize arithmetic itself is not added (it is one elementwise pass per matmul input).
"""

from __future__ import annotations

from dataclasses import replace

from reference.ir import Function, Module, TensorType, category

SIXTEEN_BIT = ("bf16", "f16")


def _narrow(t: TensorType, element: str) -> TensorType:
    return TensorType(t.shape, element) if t.dtype in SIXTEEN_BIT else t


def _function(fn: Function, element: str, quantized_args: set[str]) -> tuple[Function, dict[str, set[int]]]:
    """The function with its quantized values narrowed; and, per callee, which argument
    positions receive a quantized value."""
    narrowed = set(quantized_args)
    args = tuple((name, _narrow(t, element) if name in narrowed else t) for name, t in fn.args)
    bound: dict[str, set[int]] = {}
    ops = []
    for op in fn.ops:
        operand_types = tuple(
            _narrow(t, element) if v in narrowed else t for v, t in zip(op.operands, op.operand_types)
        )
        result_types = op.result_types
        kind = category(op)
        if kind == "contraction":
            operand_types = tuple(_narrow(t, element) for t in operand_types)
        elif kind == "data_movement" and op.operands and op.operands[0] in narrowed:
            result_types = tuple(_narrow(t, element) for t in result_types)
            narrowed.update(op.results)
        if op.short_name == "call" and op.callee:
            bound.setdefault(op.callee, set()).update(i for i, v in enumerate(op.operands) if v in narrowed)
        ops.append(replace(op, operand_types=operand_types, result_types=result_types))
    return replace(fn, args=args, ops=tuple(ops)), bound


def quantize_weights(module: Module, element: str) -> Module:
    """`module` with weights, KV cache and matmul operands in `element` ("f8E4M3FN" or "i8")."""
    main = module.main
    weights = {name for name, t in main.args if t.dtype in SIXTEEN_BIT and len(t.shape) >= 2}
    new_main, bound = _function(main, element, weights)
    functions = {new_main.name: new_main}
    for fn in module.functions:
        if fn.name in functions:
            continue
        positions = bound.get(fn.name, set())
        functions[fn.name] = _function(fn, element, {fn.args[i][0] for i in positions})[0]
    return Module(tuple(functions[f.name] for f in module.functions), module.entry)
