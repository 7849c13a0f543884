"""quantize_weights: a graph pass that runs a 16-bit program's matmuls in 8 bits (W8A8) or in
4 (W4A4: NVFP4, MXFP4).

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
`cache`: another type for the KV cache, the arguments of rank 4 and more ([B, K, S, H] a layer,
[L, B, K, S, H] flat; weights are of rank 2, or 3 for stacked experts): fp4 serving keeps its
cache in fp8 (TensorRT-LLM's and vLLM's NVFP4 recipes), so attention's contractions read fp8 K
and V, and fp4 weights.
"""

from __future__ import annotations

from dataclasses import replace

from reference.ir import Function, Module, TensorType, category

SIXTEEN_BIT = ("bf16", "f16")


CACHE_RANK = 4  # an argument of this rank or more is a KV cache, never a weight


def _narrow(t: TensorType, element: str) -> TensorType:
    return TensorType(t.shape, element) if t.dtype in SIXTEEN_BIT else t


def _function(
    fn: Function, element: str, cache: str, quantized: dict[str, str]
) -> tuple[Function, dict[str, dict[int, str]]]:
    """The function with its quantized values narrowed (`quantized`: argument -> the type it is
    stored in); and, per callee, the type each argument position receives. A contraction reads
    both operands in `element` when one is a weight (or a view of one), else in `cache` (attention's,
    over the cache and activations)."""
    narrowed = dict(quantized)
    args = tuple((name, _narrow(t, narrowed[name]) if name in narrowed else t) for name, t in fn.args)
    bound: dict[str, dict[int, str]] = {}
    ops = []
    for op in fn.ops:
        operand_types = tuple(
            _narrow(t, narrowed[v]) if v in narrowed else t for v, t in zip(op.operands, op.operand_types)
        )
        result_types = op.result_types
        kind = category(op)
        if kind == "contraction":
            reads_weight = any(narrowed.get(v) == element for v in op.operands)
            operand_types = tuple(_narrow(t, element if reads_weight else cache) for t in operand_types)
        elif kind == "data_movement" and op.operands and op.operands[0] in narrowed:
            result_types = tuple(_narrow(t, narrowed[op.operands[0]]) for t in result_types)
            narrowed.update(dict.fromkeys(op.results, narrowed[op.operands[0]]))
        if op.short_name == "call" and op.callee:
            bound.setdefault(op.callee, {}).update({i: narrowed[v] for i, v in enumerate(op.operands) if v in narrowed})
        ops.append(replace(op, operand_types=operand_types, result_types=result_types))
    return replace(fn, args=args, ops=tuple(ops)), bound


def quantize_weights(module: Module, element: str, cache: str | None = None) -> Module:
    """`module` with weights, KV cache and matmul operands in `element` ("f8E4M3FN", "i8" or
    "f4E2M1FN"), the KV cache and attention's contractions in `cache` where given (module doc)."""
    cache = cache or element
    main = module.main
    stored = {
        name: (cache if len(t.shape) >= CACHE_RANK else element)
        for name, t in main.args
        if t.dtype in SIXTEEN_BIT and len(t.shape) >= 2
    }
    new_main, bound = _function(main, element, cache, stored)
    functions = {new_main.name: new_main}
    for fn in module.functions:
        if fn.name in functions:
            continue
        positions = bound.get(fn.name, {})
        functions[fn.name] = _function(fn, element, cache, {fn.args[i][0]: e for i, e in positions.items()})[0]
    return Module(tuple(functions[f.name] for f in module.functions), module.entry)
