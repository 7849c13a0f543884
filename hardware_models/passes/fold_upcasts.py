"""fold_upcasts: run a contraction whose operands are upcasts in the narrow type, accumulating wide.

torch-mlir lowers a bf16 `nn.Linear` with a bias to converts of both operands to f32 and an f32
dot; XLA's algebraic simplifier (and cuBLAS's mixed-precision GEMMs under Inductor) compile that
pattern away: dot(convert(a: bf16 -> f32), convert(b: bf16 -> f32)) -> f32 is the same product as
dot(a, b) with bf16 operands and f32 accumulation (XLA's preferred_element_type), because an
exact widening changes no value. This pass makes that rewrite in the plan's ops:

  - a contraction operand qualifies when it is, through views that only it reads (reshape,
    transpose, broadcast), a `convert` from a float type N whose every value the wide type holds
    exactly (exponent and significand bits both no wider: bf16, f16, fp8 -> f32; f32 -> f64);
  - a contraction folds when, afterwards, both its operands are N (both upcast from N, or one
    upcast and the other already N); a convert that changes values (a downcast such as
    f32 -> bf16, or f16 -> bf16, which loses significand bits) is never folded;
  - the contraction then reads N (its result type, the accumulation, is kept), the views between
    are retyped to N, and a convert no one else reads becomes a `folded_convert`, a view that forms
    no kernel (plan.VIEWS).

Each fold is recorded in the plan (`Plan.folds`: the contraction, its source line, N -> wide and
the op-boundary bytes the upcast moved: a convert kernel that read N and wrote the wide type,
and the contraction's wider read). `compare` and `estimate --plan` cost the program without this
pass too, to say what the folded upcasts would have cost.

Worked number: a bf16 linear layer x[2048, 768] @ w[768, 3072] + b lowered by torch-mlir; on an
H100 the f32 dot runs on the CUDA cores at 2 * 132 SMs * 128 lanes * 1.83e9 = 61.8 TFLOP/s and
the folded bf16 dot on the tensor cores at 989 TFLOP/s (both times the fitted gemm efficiency):
its 9.66 GFLOP take 156 us unfolded against 9.8 us folded at efficiency 1, 16x. The two
converts (x: 1.57 M elements, w: 2.36 M) each moved 8 bytes an element at op boundaries (read
2, write 4, and the dot read 4 instead of 2): 31.5 MB that no longer move.
"""

from __future__ import annotations

from dataclasses import replace

from hardware_models.plan import VIEWS, Fold, Plan, PlannedOp, ValueGraph
from hardware_models.target import Target
from reference.ir import Module, TensorType, category

# (exponent bits, significand bits) of each float type: a conversion A -> B is exact when B has
# at least A's of both (IEEE 754 and the OCP 8-bit float formats).
FLOAT_BITS = {"f64": (11, 52), "f32": (8, 23), "bf16": (8, 7), "f16": (5, 10), "f8E4M3FN": (4, 3), "f8E5M2": (5, 2)}
THROUGH = VIEWS | {"transpose"}  # ops that only move or re-view values: a fold may pass through them


def widens_exactly(narrow: str, wide: str) -> bool:
    """True when every value of `narrow` is a value of `wide` (and the two differ)."""
    if narrow == wide or narrow not in FLOAT_BITS or wide not in FLOAT_BITS:
        return False
    (e1, m1), (e2, m2) = FLOAT_BITS[narrow], FLOAT_BITS[wide]
    return e2 >= e1 and m2 >= m1


def _retype(t: TensorType, dtype: str) -> TensorType:
    return TensorType(t.shape, dtype)


def _trace(ops: tuple[PlannedOp, ...], graph: ValueGraph, consumer: PlannedOp, position: int):
    """For one operand of a contraction: (the convert, the view chain from it to the consumer,
    the narrow type), or None when the operand is not an exact upcast through private views."""
    value, chain = consumer.operands[position], []
    for _ in range(len(ops)):  # a chain is no longer than the program
        index = graph.producer.get(value)
        if index is None:
            return None
        op = ops[index]
        if op.instance != consumer.instance:
            return None
        readers = graph.consumers.get(value, [])
        if op.op.short_name == "convert":
            narrow, wide = op.op.operand_types[0].dtype, op.op.result_types[0].dtype
            return (op, chain, narrow) if widens_exactly(narrow, wide) else None
        if (
            op.op.short_name not in THROUGH
            or len(op.operands) != 1
            or readers != [chain[-1].index if chain else consumer.index]
        ):
            return None
        chain.append(op)
        value = op.operands[0]
    return None  # pragma: no mutate (not reached: every chain ends inside the loop)


def fold_upcasts(module: Module, plan: Plan, target: Target) -> Plan:
    """The plan with each contraction over exact upcasts reading the narrow type (see the module)."""
    ops = list(plan.ops)
    graph = ValueGraph(plan.ops)
    folds = []
    readers = {value: set(users) for value, users in graph.consumers.items()}  # -1: returned
    for p in plan.ops:
        if category(p.op) != "contraction" or len(p.op.operands) < 2:
            continue
        traced = [_trace(plan.ops, graph, p, i) for i in range(2)]
        narrow = {t[2] for t in traced if t} | {p.op.operand_types[i].dtype for i in range(2) if not traced[i]}
        if not any(traced) or len(narrow) != 1:
            continue  # not an upcast, or the operands would end up in different types
        (dtype,) = narrow
        operand_types = list(p.op.operand_types)
        for i, found in enumerate(traced):
            if not found:
                continue
            convert, chain, _ = found
            wide = convert.op.result_types[0]
            source = convert.op.operands[0]
            # the op that read the convert's result now reads its operand; the views between carry N
            first = chain[-1] if chain else p
            for view in chain:
                ops[view.index] = replace(
                    view,
                    op=replace(
                        ops[view.index].op,
                        operand_types=tuple(_retype(t, dtype) for t in ops[view.index].op.operand_types),
                        result_types=tuple(_retype(t, dtype) for t in ops[view.index].op.result_types),
                    ),
                )
            target_op = ops[first.index].op if first is not p else None
            if target_op is not None:
                ops[first.index] = replace(
                    ops[first.index],
                    op=replace(
                        target_op,
                        operands=tuple(source if v == convert.op.results[0] else v for v in target_op.operands),
                    ),
                )
            else:
                p_operands = list(p.op.operands)
                p_operands[i] = source
                p = replace(p, op=replace(p.op, operands=tuple(p_operands)))
            operand_types[i] = _retype(operand_types[i], dtype)
            left = readers.get(convert.results[0], set())
            left.discard(first.index)
            removed = not left
            if removed:  # nothing else reads the upcast: no convert kernel runs
                ops[convert.index] = replace(convert, op=replace(convert.op, name="landscape.folded_convert"))
            narrow_bytes = TensorType(wide.shape, dtype).nbytes
            moved = wide.nbytes - narrow_bytes + (narrow_bytes + wide.nbytes if removed else 0)
            folds.append(
                Fold(
                    p.op.short_name,
                    p.op.origin.source or p.op.origin.scope or p.instance,
                    dtype,
                    wide.dtype,
                    moved,
                    removed,
                )
            )
        ops[p.index] = replace(p, op=replace(p.op, operand_types=tuple(operand_types)))
    if not folds:
        return plan
    return plan.with_(ops=tuple(ops), folds=plan.folds + tuple(folds))
