"""The workload as it executes: the IR's ops with calls inlined per call site and loop bodies
kept once with their repeats, and what a program asks of memory (its footprint), for the passes
that spread it over chips.

Values are named per expanded function instance: an op of the block that `main` calls at its
third op is "main/2:block" and its value "%7" is "main/2:block%7", so every id is unique.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hardware_models.plan import PlannedOp, gemm_shape
from reference.ir import Module, Op, module_stats

if TYPE_CHECKING:
    from hardware_models.plan import Plan


def expand_workload(module: Module) -> tuple[tuple[PlannedOp, ...], tuple[str, ...]]:
    """Every op as it executes: calls inlined per call site, loop bodies kept once with repeats.

    Returns the ops and notes (loops whose trip count could not be read count once).
    """
    planned: list[PlannedOp] = []
    notes: list[str] = []

    def walk(ops, instance: str, repeats: int) -> None:
        for position, op in enumerate(ops):
            short = op.short_name
            if short == "call" and op.known and op.callee:  # an unknown dialect's "foo.call" stays opaque
                child = f"{instance}/{position}:{op.callee}"
                binds = (
                    ()
                    if op.trip_count
                    else tuple(
                        (f"{child}{name}", f"{instance}{operand}")
                        for (name, _), operand in zip(module.function(op.callee).args, op.operands)
                    )
                )
                planned.append(
                    PlannedOp(len(planned), op, instance, repeats, child if not op.trip_count else "", binds)
                )
                walk(module.function(op.callee).ops, child, repeats * (op.trip_count or 1))
            elif short == "while" and op.known:
                planned.append(PlannedOp(len(planned), op, instance, repeats))
                if op.trip_count is None:
                    notes.append(f"a while loop in {instance} has no static trip count; its body counts once")
                body = [o for region in op.regions for o in region.ops]
                walk(body, f"{instance}/{position}:while", repeats * (op.trip_count or 1))
            else:
                planned.append(PlannedOp(len(planned), op, instance, repeats))

    walk(module.main.ops, "main", 1)
    return materialize_returned_arguments(module, tuple(planned), tuple(notes))


def materialize_returned_arguments(module: Module, planned: tuple[PlannedOp, ...], notes: tuple[str, ...]):
    """A program output that is one of its arguments (a clone, which XLA and torch-mlir lower to
    returning the argument itself) becomes a copy kernel: the output is a new buffer the program
    writes, as a runtime that does not donate the input must (XLA copies an undonated parameter
    it returns). The copy is added right before main's return, which then returns it."""
    arguments = {name for name, _ in module.main.args}
    last = planned[-1] if planned else None
    if last is None or last.instance != "main" or last.op.short_name != "return":
        return planned, notes
    returned = [v for v in last.op.operands if v in arguments]
    if not returned:
        return planned, notes
    copies, renamed = [], {}
    for i, value in enumerate(dict.fromkeys(returned)):
        typ = dict(module.main.args)[value]
        result = f"%landscape.copy{i}"
        copies.append(
            PlannedOp(
                last.index + i,
                Op("stablehlo.copy", (result,), (typ,), (value,), (typ,), origin=last.op.origin),
                "main",
                1,
            )
        )
        renamed[value] = result
    ret = dataclasses.replace(last.op, operands=tuple(renamed.get(v, v) for v in last.op.operands))
    tail = PlannedOp(last.index + len(copies), ret, "main", 1)
    note = (
        f"{len(copies)} returned argument{'s' if len(copies) > 1 else ''} ({', '.join(renamed)}) written out as a copy: "
        "the program's output is a new buffer"
    )
    return (*planned[:-1], *copies, tail), (*notes, note)


@dataclass(frozen=True)
class Footprint:
    """What a program asks of memory, for the passes that spread it over chips.

    needed_bytes: every argument (weights, buffers, inputs, caches), each once (a tied embedding is
        one argument), a regional block's once per layer;
    layer_bytes: one layer's own arguments (all of them for a program without layers);
    hidden_bytes: what passes from layer to layer (the block call's result; a program without
        layers: its results);
    layers: how many identical layers the program runs (1 for a program without layers);
    regional: the program is a stack of `layers` identical layers, whether lowered regionally (a
        block called `layers` times) or flat with its weights named per layer (`layer_structure`),
        so that both lowerings of one model are partitioned by the same rules.
    """

    needed_bytes: int
    layer_bytes: int
    hidden_bytes: int
    layers: int
    regional: bool


def program_footprint(module: Module) -> Footprint:
    main = module.main
    needed = module_stats(module, tuple(range(len(main.args)))).param_bytes
    calls = [op for op in main.ops if op.short_name == "call" and op.trip_count]
    if not calls:
        flat = layer_structure(module)
        if flat is None:
            return Footprint(needed, needed, sum(t.nbytes for t in main.results), 1, False)
        return Footprint(needed, flat.layer_bytes, flat.hidden_bytes, flat.layers, True)
    arg_bytes = {name: typ.nbytes for name, typ in main.args}
    layer_bytes = sum(arg_bytes.get(v, 0) for v in calls[0].operands)
    return Footprint(needed, layer_bytes, calls[0].result_types[0].nbytes, calls[0].trip_count, True)


@dataclass(frozen=True)
class LayerStructure:
    """The layers of a flat program: how many, one layer's argument bytes, the hidden state's bytes."""

    layers: int
    layer_bytes: int
    hidden_bytes: int
    hidden_shape: tuple[int, ...] = ()  # the residual stream's shape, [batch, tokens, d_model]


_NAME_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9]+")


def _list_position(name: str) -> tuple[tuple[str, ...], int, tuple[str, ...]] | None:
    """(list path, index, path inside the item) of an argument named inside a list of modules:
    "layers.3.attn.q_proj.weight" (torch) and "st['layers'][3]['attn']['q_proj']['kernel']" (JAX)
    give (("layers",), 3, ("attn", "q_proj", "weight"...)); None for a name with no index."""
    tokens = _NAME_TOKEN.findall(name)
    for i, token in enumerate(tokens):
        if token.isdigit() and i > 0:
            return tuple(tokens[:i]), int(token), tuple(tokens[i + 1 :])
    return None


def layer_structure(module: Module) -> LayerStructure | None:
    """The layers of a flat program, read from its argument names (the parameter paths that both
    sides record): the list of modules with the most items, at least 2, whose items have the same
    arguments (names inside the item and types) is the stack of layers.

        layers       = items in that list
        layer_bytes  = item 0's arguments + 1/layers of every other argument stacked over layers
                       (leading extent = layers: a flat decoder's [L, B, K, S, H] KV cache)
        hidden_bytes = the smallest value that layer 0 computes and layer 1 reads (the residual
                       stream): an op belongs to the highest layer whose arguments it depends on

    Worked number: flat llama-3.2-1b prefill of 2048 tokens in bf16: 16 layers of 121.6 MB
    (4 projections, 3 MLP matrices, 2 norm scales), hidden state 1 x 2048 x 2048 x 2 B = 8.4 MB,
    as its regional lowering's block call. None when no such list is named (a user's program).
    """
    main = module.main
    if not main.arg_names or len(main.arg_names) != len(main.args):
        return None
    lists: dict[tuple[str, ...], dict[int, list[tuple[tuple[str, ...], object, str]]]] = {}
    for (value, typ), name in zip(main.args, main.arg_names):
        position = _list_position(name) if name else None
        if position:
            path, index, inside = position
            lists.setdefault(path, {}).setdefault(index, []).append((inside, typ, value))
    best = None
    for path, items in lists.items():
        signatures = {tuple(sorted((inside, str(typ)) for inside, typ, _ in members)) for members in items.values()}
        if len(items) >= 2 and len(signatures) == 1 and sorted(items) == list(range(len(items))):
            if best is None or len(items) > len(lists[best]):
                best = path
    if best is None:
        return None
    items = lists[best]
    layers = len(items)
    layer_of = {value: index for index, members in items.items() for _, _, value in members}
    stacked = sum(
        typ.nbytes
        for value, typ in main.args
        if value not in layer_of and len(typ.shape) >= 2 and typ.shape[0] == layers
    )
    layer_bytes = sum(typ.nbytes for _, typ, _ in items[0]) + stacked // layers
    # Which layer each value belongs to: the highest layer whose arguments it depends on.
    depth = dict(layer_of)
    crossing: list[tuple[int, tuple[int, ...]]] = []
    types = dict(main.args)
    for op in main.ops:
        if op.short_name == "return":
            continue
        inputs = [depth[v] for v in op.operands if v in depth]
        level = max(inputs, default=-1)
        if level >= 1:
            crossing += [
                (types[v].nbytes, types[v].shape)
                for v in op.operands
                if depth.get(v) == 0 and v not in layer_of and v in types
            ]
        for value, typ in zip(op.results, op.result_types):
            types[value] = typ
            if level >= 0:
                depth[value] = level
    hidden, shape = min(crossing, default=(sum(t.nbytes for t in main.results), ()))
    return LayerStructure(layers, layer_bytes, hidden, shape)


def program_arguments(plan: Plan, module: Module) -> frozenset[str]:
    """Qualified values that are the program's own arguments (weights, inputs, caches): main's
    arguments, and a called function's arguments bound to them (a regional block's weights)."""
    params = {f"main{name}" for name, _ in module.main.args}
    for p in plan.ops:
        if p.op.short_name != "call" or not p.op.callee or p.index + 1 >= len(plan.ops):
            continue
        child = plan.ops[p.index + 1].instance  # expand_workload puts the callee's ops right after the call
        for (name, _), operand in zip(module.function(p.op.callee).args, p.operands):
            if operand in params:
                params.add(f"{child}{name}")
    return frozenset(params)


def weight_matmul_widths(module: Module, plan: Plan) -> list[int]:
    """Output widths (n) of the contractions that multiply by a weight matrix: no batch dimension
    and an operand that is one of the program's arguments (a projection, an MLP matrix, the LM
    head). Attention's dots (batched over heads, against activations or the KV cache) are not
    split by columns, so they do not bound the chip count."""
    arguments = program_arguments(plan, module)
    graph = plan.value_graph()
    widths = []
    for g in plan.groups:
        if g.kind != "contraction":
            continue
        p = plan.ops[g.members[0]]
        shape = gemm_shape(p.op, "")
        if shape.batch == 1 and any(graph.root(v) in arguments for v in p.operands[:2]):
            widths.append(shape.n)
    return widths
