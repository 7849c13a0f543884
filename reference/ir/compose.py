"""Regional lowering: a decoder as prologue, one block called once per layer, and epilogue.

Each part is lowered once by its framework. The composed entry function runs the prologue's
ops, then `call @block` with trip_count = layers (the IR keeps the call count, and the
counters multiply by it), then the epilogue's ops. A weight argument passed to that call
stands for `layers` distinct weights, one per layer, and its bytes count that many times.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from reference.errors import MalformedIR
from reference.ir.graph import Function, Module, Op, Origin, TensorType


def _rename(op: Op, mapping: dict[str, str]) -> Op:
    """The op with every value id (results, operands, region arguments) passed through mapping."""
    regions = tuple(
        dataclasses.replace(
            r, args=tuple((mapping.get(a, a), t) for a, t in r.args), ops=tuple(_rename(o, mapping) for o in r.ops)
        )
        for r in op.regions
    )
    return dataclasses.replace(
        op,
        results=tuple(mapping.get(x, x) for x in op.results),
        operands=tuple(mapping.get(x, x) for x in op.operands),
        regions=regions,
    )


class _Prefixer(dict):
    """value id -> id tagged with the part's name, so parts never collide."""

    def __init__(self, prefix: str):
        super().__init__()
        self.prefix = prefix

    def __missing__(self, key: str) -> str:
        return f"%{self.prefix}.{key.lstrip('%')}"

    def get(self, key, default=None):  # noqa: D401 - every id is renamed
        return self[key]


def _tag(module: Module, prefix: str) -> Module:
    """Rename the part's value ids and its private functions (closed_call ...) with prefix."""
    names = {f.name: (f.name if f.name == module.entry else f"{prefix}.{f.name}") for f in module.functions}
    values = _Prefixer(prefix)

    def fix(op: Op) -> Op:
        op = dataclasses.replace(op, callee=names.get(op.callee, op.callee) if op.callee else None)
        op = dataclasses.replace(
            op, regions=tuple(dataclasses.replace(r, ops=tuple(fix(o) for o in r.ops)) for r in op.regions)
        )
        return op

    functions = tuple(
        dataclasses.replace(
            f,
            name=names[f.name],
            args=tuple((values[a], t) for a, t in f.args),
            ops=tuple(_rename(fix(o), values) for o in f.ops),
        )
        for f in module.functions
    )
    return Module(functions, module.entry)


def compose_regional(
    prologue: Module,
    block: Module,
    epilogue: Module,
    layers: int,
    n_params: tuple[int, int, int],
    shared_epilogue_params: int = 0,
    n_state: tuple[int, int, int] | None = None,
) -> tuple[Module, tuple[int, ...], tuple[int, ...]]:
    """Compose three lowered parts into one IR module, its weight-argument and buffer-argument indices.

    Contract of the parts (both sides lower them this way):
      prologue(state..., ids) -> x
      block(state..., x, *caches) -> (y, ...)   the first result feeds the next layer
      epilogue(state..., x) -> logits
    where a part's state is its weights, then its buffers (constants the module holds, such as
    Rotary's `inv_freq`): the arguments that are the module's own, never activations.

    Args:
        n_params: weight arguments of the prologue, the block and the epilogue (the leading ones).
        shared_epilogue_params: trailing epilogue weights that are the prologue's leading weights
            (tied embeddings): the epilogue reads the prologue's argument, so the table is one
            argument of the program, counted once.
        n_state: state arguments (weights, then buffers) of each part; n_params when None.

    Raises:
        MalformedIR: a part does not follow the contract (an argument count or a type differs).
    """
    pro_m, blk_m, epi_m = _tag(prologue, "prologue"), _tag(block, "block"), _tag(epilogue, "epilogue")
    pro, blk, epi = pro_m.main, blk_m.main, epi_m.main
    n_pro, n_blk, n_epi = n_params
    s_pro, s_blk, s_epi = n_state or n_params
    shared = shared_epilogue_params
    if (
        len(pro.args) != s_pro + 1
        or len(blk.args) <= s_blk
        or len(epi.args) != s_epi + 1
        or pro.ops[-1].short_name != "return"
        or not (0 <= shared <= min(n_pro, n_epi))
        or not all(0 <= n <= s for n, s in zip(n_params, (s_pro, s_blk, s_epi)))
    ):
        raise MalformedIR(
            f"regional parts do not follow the prologue/block/epilogue contract: arguments "
            f"{len(pro.args)}/{len(blk.args)}/{len(epi.args)} for state {s_pro}/{s_blk}/{s_epi}"
        )
    x_id = pro.ops[-1].operands[0]
    x_type = dict(pro.args).get(x_id) or next(
        (t for o in pro.ops for r, t in zip(o.results, o.result_types) if r == x_id), None
    )
    blk_x, blk_x_type = blk.args[s_blk]
    if x_type != blk_x_type or epi.args[s_epi][1] != blk.results[0]:
        raise MalformedIR(
            f"regional parts do not chain: the prologue returns {x_type}, the block's x (argument {s_blk}) "
            f"is {blk_x_type}, the block returns {blk.results[0]} and the epilogue's x is {epi.args[s_epi][1]}"
        )
    block_own = blk.args[:s_blk] + blk.args[s_blk + 1 :]  # the block's weights, buffers and caches, not x
    call = Op(
        name="func.call",
        results=tuple(f"%layers.{i}" for i in range(len(blk.results))),
        result_types=blk.results,
        operands=tuple(a for a, _ in blk.args[:s_blk]) + (x_id,) + tuple(a for a, _ in blk.args[s_blk + 1 :]),
        operand_types=tuple(t for _, t in blk.args),
        callee="block",
        trip_count=layers,
        origin=Origin(scope=f"layers (x{layers})"),
    )
    # Tied weights: the epilogue's last `shared` weights are read from the prologue's first ones.
    tied = {}
    for (epi_arg, epi_t), (pro_arg, pro_t) in zip(epi.args[n_epi - shared : n_epi], pro.args[:shared]):
        if epi_t != pro_t:
            raise MalformedIR(f"tied weight {epi_arg} is {epi_t}, and the prologue's {pro_arg} is {pro_t}")
        tied[epi_arg] = pro_arg
    epi_x = epi.args[s_epi][0]
    epi_ops = tuple(_rename(o, {**tied, epi_x: call.results[0]}) for o in epi.ops)
    epi_own = epi.args[: n_epi - shared] + epi.args[n_epi:s_epi]

    def names(fn: Function, count: int, start: int = 0) -> tuple[str, ...]:
        given = fn.arg_names or ("",) * len(fn.args)
        return tuple(given[start : start + count]) + ("",) * max(0, count - len(given[start : start + count]))

    blk_names = names(blk, s_blk) + names(blk, len(blk.args) - s_blk - 1, s_blk + 1)
    main = Function(
        name="main",
        args=pro.args + block_own + epi_own,
        results=epi.results,
        ops=pro.ops[:-1] + (call,) + epi_ops,
        arg_names=names(pro, len(pro.args)) + blk_names + names(epi, len(epi_own)),
    )
    others = tuple(f for part in (pro_m, blk_m, epi_m) for f in part.functions if f.name != part.entry)
    first_blk, first_epi = len(pro.args), len(pro.args) + len(block_own)
    params = (
        tuple(range(n_pro))
        + tuple(range(first_blk, first_blk + n_blk))
        + tuple(range(first_epi, first_epi + n_epi - shared))
    )
    buffers = (
        tuple(range(n_pro, s_pro))
        + tuple(range(first_blk + n_blk, first_blk + s_blk))
        + tuple(range(first_epi + n_epi - shared, first_epi + len(epi_own)))
    )
    return Module((main, dataclasses.replace(blk, name="block"), *others), "main"), params, buffers


@dataclass(frozen=True)
class Wire:
    """Where a value of the composed program comes from: the program's argument `index`
    (part None), or result `index` of part `part`."""

    index: int
    part: int | None = None


def compose_stack(
    args: tuple[TensorType, ...],
    arg_names: tuple[str, ...],
    parts: tuple[Module, ...],
    block: int,
    wiring: tuple[tuple[Wire, ...], ...],
    outputs: tuple[Wire, ...],
    layers: int,
) -> Module:
    """Compose the parts a module's graph was cut into around its stack of identical layers (any
    module, not only our decoders: pytorch_side/regional.py cuts it) into one IR module.

    Part `block` is one layer; the entry function runs every other part's ops inline, in order,
    and that one as `call @block` with trip_count = layers (a weight passed to the call stands
    for `layers` distinct weights, as in compose_regional). `wiring[i][j]` says where part i's
    argument j comes from; `outputs`, the program's results.

    Raises:
        MalformedIR: the wiring does not match the parts (a count or a type differs).
    """
    tagged = [_tag(p, f"part{i}" if i != block else "block") for i, p in enumerate(parts)]
    arg_ids = tuple(f"%arg{i}" for i in range(len(args)))
    produced: dict[int, tuple[tuple[str, TensorType], ...]] = {}

    def source(w: Wire) -> tuple[str, TensorType]:
        if w.part is None:
            return arg_ids[w.index], args[w.index]
        if w.part not in produced or w.index >= len(produced[w.part]):
            raise MalformedIR(f"stack composition: result {w.index} of part {w.part} is read before it is made")
        return produced[w.part][w.index]

    ops: list[Op] = []
    for i, (part, wires) in enumerate(zip(tagged, wiring)):
        fn = part.main
        inputs = [source(w) for w in wires]
        if len(inputs) != len(fn.args) or any(t != ft for (_, t), (_, ft) in zip(inputs, fn.args)):
            raise MalformedIR(
                f"stack composition: part {i} takes {[t for _, t in fn.args]}, and is given {[t for _, t in inputs]}"
            )
        if i == block:
            results = tuple(f"%layers.{k}" for k in range(len(fn.results)))
            ops.append(
                Op(
                    name="func.call",
                    results=results,
                    result_types=fn.results,
                    operands=tuple(v for v, _ in inputs),
                    operand_types=tuple(t for _, t in inputs),
                    callee="block",
                    trip_count=layers,
                    origin=Origin(scope=f"layers (x{layers})"),
                )
            )
            produced[i] = tuple(zip(results, fn.results))
            continue
        if not fn.ops or fn.ops[-1].short_name != "return":
            raise MalformedIR(f"stack composition: part {i} does not end in a return")
        mapping = {a: v for (a, _), (v, _) in zip(fn.args, inputs)}
        body = [_rename(o, mapping) for o in fn.ops]
        ops.extend(body[:-1])
        produced[i] = tuple(zip(body[-1].operands, body[-1].operand_types))
    results = [source(w) for w in outputs]
    ops.append(
        Op(
            name="func.return",
            results=(),
            result_types=(),
            operands=tuple(v for v, _ in results),
            operand_types=tuple(t for _, t in results),
        )
    )
    main = Function("main", tuple(zip(arg_ids, args)), tuple(t for _, t in results), tuple(ops), tuple(arg_names))
    blk = tagged[block]
    others = tuple(f for part in tagged for f in part.functions if f.name != part.entry)
    return Module((main, dataclasses.replace(blk.main, name="block"), *others), "main")
