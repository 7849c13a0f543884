"""Regional lowering: a decoder as prologue, one block called once per layer, and epilogue.

Each part is lowered once by its framework. The composed entry function runs the prologue's
ops, then `call @block` with trip_count = layers (the IR keeps the call count, and the
counters multiply by it), then the epilogue's ops. A weight argument passed to that call
stands for `layers` distinct weights, one per layer, and its bytes count that many times.
"""

from __future__ import annotations

import dataclasses

from reference.errors import MalformedIR
from reference.ir.graph import Function, Module, Op, Origin


def _rename(op: Op, mapping: dict[str, str]) -> Op:
    """The op with every value id (results, operands, region arguments) passed through mapping."""
    regions = tuple(
        dataclasses.replace(r, args=tuple((mapping.get(a, a), t) for a, t in r.args), ops=tuple(_rename(o, mapping) for o in r.ops))
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
        op = dataclasses.replace(op, regions=tuple(dataclasses.replace(r, ops=tuple(fix(o) for o in r.ops)) for r in op.regions))
        return op

    functions = tuple(
        dataclasses.replace(
            f, name=names[f.name], args=tuple((values[a], t) for a, t in f.args),
            ops=tuple(_rename(fix(o), values) for o in f.ops),
        )
        for f in module.functions
    )
    return Module(functions, module.entry)


def compose_regional(
    prologue: Module, block: Module, epilogue: Module, layers: int,
    n_params: tuple[int, int, int], shared_epilogue_params: int = 0,
) -> tuple[Module, tuple[int, ...]]:
    """Compose three lowered parts into one IR module and its weight-argument indices.

    Contract of the parts (both sides lower them this way):
      prologue(params..., ids) -> x
      block(params..., x, *caches) -> (y, ...)   the first result feeds the next layer
      epilogue(params..., x) -> logits

    Args:
        n_params: weight arguments of the prologue, the block and the epilogue.
        shared_epilogue_params: trailing epilogue weights that are prologue weights too
            (tied embeddings); they are arguments but not counted again as weights.

    Raises:
        MalformedIR: a part does not follow the contract.
    """
    pro_m, blk_m, epi_m = _tag(prologue, "prologue"), _tag(block, "block"), _tag(epilogue, "epilogue")
    pro, blk, epi = pro_m.main, blk_m.main, epi_m.main
    n_pro, n_blk, n_epi = n_params
    if len(blk.args) <= n_blk or len(epi.args) != n_epi + 1 or pro.ops[-1].short_name != "return":
        raise MalformedIR("regional parts do not follow the prologue/block/epilogue contract")
    x_id = pro.ops[-1].operands[0]
    block_own = blk.args[:n_blk] + blk.args[n_blk + 1 :]  # the block's weights and caches, not x
    call = Op(
        name="func.call",
        results=tuple(f"%layers.{i}" for i in range(len(blk.results))),
        result_types=blk.results,
        operands=tuple(a for a, _ in blk.args[:n_blk]) + (x_id,) + tuple(a for a, _ in blk.args[n_blk + 1 :]),
        operand_types=tuple(t for _, t in blk.args),
        callee="block",
        trip_count=layers,
        origin=Origin(scope=f"layers (x{layers})"),
    )
    epi_x = epi.args[n_epi][0]
    epi_ops = tuple(_rename(o, {epi_x: call.results[0]}) for o in epi.ops)
    main = Function(
        name="main",
        args=pro.args + block_own + epi.args[:n_epi],
        results=epi.results,
        ops=pro.ops[:-1] + (call,) + epi_ops,
        arg_names=(pro.arg_names or ("",) * len(pro.args)) + ("",) * (len(block_own) + n_epi),
    )
    others = tuple(f for part in (pro_m, blk_m, epi_m) for f in part.functions if f.name != part.entry)
    first_blk, first_epi = len(pro.args), len(pro.args) + len(block_own)
    params = (
        tuple(range(n_pro))
        + tuple(range(first_blk, first_blk + n_blk))
        + tuple(range(first_epi, first_epi + n_epi - shared_epilogue_params))
    )
    return Module((main, dataclasses.replace(blk, name="block"), *others), "main"), params
