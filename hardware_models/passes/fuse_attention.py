"""fuse_attention: run attention as one kernel whose scores never reach main memory.

Every production stack does this: FlashAttention-2/3 or cuDNN's fused attention on GPUs, the
Pallas flash and splash attention kernels on TPUs. The kernel streams K and V tiles past a block
of queries, keeps the score tile, its running max and sum on chip, and writes only O, so its
main-memory bytes are Q, K, V and O (and a mask, when one is a tensor argument) and its FLOPs are
the two dots' plus the softmax's.

The pattern, recognized on the IR of both sides (torch-mlir and JAX lower it differently):

    D1 = dot(Q', K')                               the scores, any batch layout
    P  = softmax chain over D1 (elementwise, reductions, data movement, constants): it must hold
         an exponential and a reduction, and nothing outside it may read its values
    O  = D2 = dot(P, V')                           P on either side of the dot
    Q', K', V' = Q, K, V through layout and type ops (convert, transpose, reshape, broadcast: the
         GQA repeat; a multiply or divide by a constant: the softmax scale; a static slice: the
         keys a sliding window reads of a cache), each read only here
    O then through converts and transposes read only by the next op

A causal mask (an ordering compare of iota positions among the constants the softmax reads,
shaped [.., queries, kv_len]: causal_queries) is recorded with the share of the score square
the kernel computes (plan.causal_share, given the family's skip_tile: FlashAttention and the Pallas
flash kernel skip every key block a query block cannot see; a family without a skip_tile, the
CPU's ATen kernel, is costed on the whole square). Two compares (a sliding window's band): the
causal triangle's share, an upper bound. A mask passed in as an argument: the whole square.

The matched ops leave the groups fuse_elementwise made (a group left without its contraction
becomes a fusion) and form one group of kind "attention", placed in program order; its shape is
recorded in `plan.attention` (AttentionShape): query rows = the scores' elements / kv_len, where
kv_len is the extent the softmax reduces over; head_dim = D1's contracting extent; KV heads = V's
elements / (kv_len * head_dim), per sequence divided by V's leading (batch) extent.

Worked number: llama-2-70b prefill of 2048 tokens, one layer in bf16 (64 query heads, 8 KV heads,
head_dim 128): scores 64 x 2048 x 2048 = 268.4 M elements; unfused, each f32 softmax kernel
writes and reads them (about 1.07 GB per pass over them); fused, the kernel moves Q + O =
2 x 64 x 2048 x 128 x 2 B = 67.1 MB and K + V = 2 x 8 x 2048 x 128 x 2 B = 8.4 MB: 75.5 MB.
"""

from __future__ import annotations

from hardware_models.passes.fuse_attention_backward import match_backward
from hardware_models.plan import (
    AttentionShape,
    Group,
    Placement,
    Plan,
    ValueGraph,
    causal_share,
    ceil_div,
    gemm_shape,
    group_inputs,
    group_outputs,
    read_bytes,
)
from hardware_models.target import Target
from hardware_models.values import constant_values
from reference.ir import Module, category
from reference.units import plural

# Ops a flash kernel applies to a tile as it loads or stores it (compiler choice, as
# FlashAttention and the Pallas kernels do): a change of type or layout, the GQA repeat.
LAYOUT_OPS = {"convert", "transpose", "reshape", "broadcast_in_dim", "broadcast", "copy", "folded_convert"}
# A static slice of K or V is the range of keys the kernel loads (a sliding window's last keys of a
# cache): it joins the kernel, which then reads only the slice's bytes (values.read_bytes).
OPERAND_OPS = LAYOUT_OPS | {"slice"}
SCALE_OPS = {"multiply", "divide"}  # by a compile-time constant: the softmax scale
ORDERINGS = ("LE", "LT", "GE", "GT")  # a compare that orders positions (a causal mask), not EQ/NE
MAX_CHAIN = 400  # ops between the two dots beyond which the chain is not a softmax (compiler choice)


class _Matcher:
    def __init__(self, plan: Plan, graph: ValueGraph, grouped: set[int], skip_tile: tuple[int, int] | None):
        self.plan, self.graph, self.grouped, self.skip_tile = plan, graph, grouped, skip_tile
        self.constant = constant_values(plan.ops)  # folded at compile time, as assign_groups folds them

    def _read_only_by(self, index: int, allowed: set[int]) -> bool:
        """Every reader of the op's results (through views) is in `allowed`, and none is a return."""
        return all(u in allowed for v in self.plan.ops[index].results for u in self.graph.users(v))

    def softmax_chain(self, value: str, d2: int) -> tuple[set[int], int, int, set[str]] | None:
        """(the chain's ops, D1's index, kv_len, the compile-time constants it reads) when `value`
        is a softmax of a dot's result, else None."""
        ops, stack, d1, seen, constants = set(), [value], set(), set(), set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            if v in self.constant:
                constants.add(v)
                continue
            seen.add(v)
            index = self.graph.producer.get(v)
            if (index is None or self.plan.ops[index].callee) and v in self.graph.alias:
                stack.append(self.graph.alias[v])  # through an inlined call (values.py): JAX's `_where`
                continue
            if index is None:  # an argument (a mask passed in): read by the kernel
                continue
            op = self.plan.ops[index].op
            if category(op) == "contraction":
                d1.add(index)
                continue
            if op.short_name in ("call", "while") or len(ops) > MAX_CHAIN:
                return None
            ops.add(index)
            stack.extend(self.plan.ops[index].operands)
        names = {self.plan.ops[i].op.short_name for i in ops}
        if len(d1) != 1 or "exponential" not in names or "reduce" not in names:
            return None
        (d1_index,) = d1
        inside = ops | {d2}
        if not all(self._read_only_by(i, inside) for i in ops | d1):
            return None
        reduce = next(self.plan.ops[i].op for i in sorted(ops) if self.plan.ops[i].op.short_name == "reduce")
        extent = 1
        for d in reduce.attr("dimensions") or ():
            extent *= reduce.operand_types[0].shape[d]
        return ops, d1_index, extent, constants

    def causal_queries(self, constants: set[str], kv_len: int) -> int:
        """The new tokens of a causal mask among the constants a softmax reads, else 0: ordering
        compares (<=, <, >=, >) of positions computed from iotas, each shaped [.., queries, kv_len]
        (both sides' lowerings: JAX's `arange(s) <= arange(t) + s - t`, torch-mlir's is_causal as
        `key - query <= 0`). One is the causal triangle; two are a sliding window's band, which
        lies inside it, so the triangle's share is an upper bound on its tiles (the window's width
        is not read from the IR). Three or more, or none: 0, and the kernel computes every tile."""
        compares, stack, seen, iota = [], list(constants), set(), False
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            index = self.graph.producer.get(v)
            if index is None:
                if v in self.graph.alias:
                    stack.append(self.graph.alias[v])
                continue
            op = self.plan.ops[index].op
            if op.short_name == "compare" and op.attr("comparison_direction") in ORDERINGS:
                compares.append(op)
            iota = iota or op.short_name in ("iota", "dynamic_iota")
            stack.extend(self.plan.ops[index].operands)
        shapes = {c.result_types[0].shape for c in compares}
        if len(compares) not in (1, 2) or not iota or len(shapes) != 1:
            return 0
        (shape,) = shapes
        return shape[-2] if len(shape) >= 2 and shape[-1] == kv_len and shape[-2] <= kv_len else 0

    def operand_chain(self, value: str, inside: set[int]) -> tuple[set[int], str]:
        """Layout, type and scale ops that lead to `value`, each read only inside the kernel, and
        the value the chain starts from (Q, K or V as main memory holds it)."""
        ops: set[int] = set()
        for _ in range(len(self.plan.ops) + len(self.graph.alias) + 1):  # a chain is no longer than the program
            index = self.graph.producer.get(value)
            if (index is None or self.plan.ops[index].callee) and value in self.graph.alias:
                value = self.graph.alias[value]  # through an inlined call (values.py)
                continue
            if index is None:
                return ops, value
            p = self.plan.ops[index]
            short = p.op.short_name
            variable = [v for v in p.operands if v not in self.constant]
            cheap = short in OPERAND_OPS or (short in SCALE_OPS and len(variable) == 1 and len(p.operands) == 2)
            if not cheap or len(variable) != 1 or not self._read_only_by(index, inside | ops | {index}):
                return ops, value
            ops.add(index)
            value = variable[0]
        return ops, value  # pragma: no mutate (not reached: every chain ends inside the loop)

    def output_chain(self, d2: int, inside: set[int]) -> set[int]:
        """Converts and transposes after D2 that only pass O on (each the sole reader of the last)."""
        ops, last = set(), d2
        for _ in range(len(self.plan.ops)):  # a chain is no longer than the program
            readers = {u for v in self.plan.ops[last].results for u in self.graph.users(v)}
            if len(readers) != 1:
                return ops
            (reader,) = readers
            if reader < 0 or self.plan.ops[reader].op.short_name not in LAYOUT_OPS or reader in inside:
                return ops
            ops.add(reader)
            last = reader
        return ops  # pragma: no mutate (not reached: every chain ends inside the loop)

    def match(self, d2: int) -> tuple[set[int], dict] | None:
        p2 = self.plan.ops[d2]
        for position in range(min(2, len(p2.operands))):
            found = self.softmax_chain(p2.operands[position], d2)
            if found is None:
                continue
            chain, d1, kv_len, constants = found
            inside = chain | {d1, d2}
            v_ops, v_root = self.operand_chain(p2.operands[1 - position], inside)
            inside |= v_ops
            sides = []
            for value in self.plan.ops[d1].operands[:2]:
                side_ops, root = self.operand_chain(value, inside)
                inside |= side_ops
                sides.append(root)
            inside |= self.output_chain(d2, inside)
            v_type = self.graph.types[self.graph.root(v_root)]
            k_root = next(
                (r for r in reversed(sides) if self.graph.types[self.graph.root(r)].shape == v_type.shape), sides[-1]
            )
            head_dim = gemm_shape(self.plan.ops[d1].op, "").k
            rows = self.plan.ops[d1].op.result_types[0].elements // max(kv_len, 1)
            # a static slice of V in the chain (a sliding window's keys of a cache): its heads are the
            # slice's, and the buffer it is cut from holds more positions than the kernel reads
            sliced = [self.plan.ops[i].op.result_types[0] for i in v_ops if self.plan.ops[i].op.short_name == "slice"]
            read = min(sliced, key=lambda t: t.elements) if sliced else v_type
            kv_total = max(1, read.elements // max(kv_len * head_dim, 1))
            positions = v_type.elements // max(kv_total * head_dim, 1) if sliced else 0
            batch = v_type.shape[0] if v_type.shape else 1
            per_sequence = kv_total // batch if batch and kv_total % batch == 0 else kv_total
            causal = self.causal_queries(constants, kv_len)
            facts = dict(
                causal_queries=causal,
                computed_share=causal_share(causal, kv_len, self.skip_tile) if causal and self.skip_tile else 1.0,
                skip_tile=tuple(self.skip_tile or ()),
                query_rows=rows,
                kv_heads=kv_total,
                kv_heads_per_sequence=per_sequence,
                kv_len=kv_len,
                head_dim=head_dim,
                dtype=self.plan.runs_as(v_type.dtype),
                kv=(self.graph.root(k_root), self.graph.root(v_root)),
                kv_positions=positions if positions > kv_len else 0,
            )
            return {i for i in inside if i in self.grouped}, facts
        return None


def fuse_attention(
    module: Module,
    plan: Plan,
    target: Target,
    stack: str = "FlashAttention-2",
    skip_tile: tuple[int, int] | None = None,
) -> Plan:
    """Form one "attention" group per match (see module doc); `stack` names the kernel it stands
    for, `skip_tile` its (query rows, keys) block when it skips the blocks a causal mask hides
    (None: it computes every block)."""
    graph = plan.value_graph()
    owner = {i: g.id for g in plan.groups for i in g.members}
    matcher = _Matcher(plan, graph, set(owner), skip_tile)
    taken: set[int] = set()
    kernels: list[tuple[set[int], dict]] = []
    for p in plan.ops:
        if p.index in taken or p.index not in owner or category(p.op) != "contraction":
            continue
        found = matcher.match(p.index)
        if found is None or found[0] & taken:
            continue
        members, facts = found
        taken |= members
        kernels.append((members, facts))
    for p in plan.ops:  # a training step's backward: the scores recomputed, dQ, dK and dV out
        if p.index in taken or p.index not in owner or category(p.op) != "contraction":
            continue
        found = match_backward(matcher, p.index, taken)
        if found is None:
            continue
        members, facts = found
        taken |= members
        kernels.append((members, {**facts, "stack": f"{stack} backward"}))
    if not kernels:
        return plan
    rebuilt: list[tuple[int, Group, dict | None]] = []
    for g in plan.groups:
        left = tuple(i for i in g.members if i not in taken)
        if not left:
            continue
        kind = g.kind
        if kind == "contraction" and g.members[0] in taken:
            kind = "fusion"  # its dot went into the attention kernel; its epilogue stays a fusion
        rebuilt.append((left[0], Group(0, kind, left, g.instance, g.repeats, g.label), None))
    for members, facts in kernels:
        first = min(members)
        origin = plan.ops[first]
        rebuilt.append((first, Group(0, "attention", tuple(sorted(members)), origin.instance, origin.repeats), facts))
    rebuilt.sort(key=lambda item: item[0])
    groups, shapes = [], {}
    for position, (_, g, facts) in enumerate(rebuilt):
        groups.append(Group(position, g.kind, g.members, g.instance, g.repeats, g.label))
        if facts is not None:
            shapes[position] = AttentionShape(**{"stack": stack, **facts})
    backward = sum(1 for _, facts in kernels if "stack" in facts)
    note = (
        f"{plural(len(kernels) - backward, 'attention kernel')} fused ({stack}): scores stay on chip; each reads Q, K, V "
        f"and writes O in main memory"
    )
    if backward:
        note += f"; {plural(backward, 'backward kernel')} ({stack} backward) read Q, K, V, dO and write dQ, dK, dV"
    windows = sorted({(s.kv_len, s.kv_positions) for s in shapes.values() if s.kv_positions})
    notes = (note,) + tuple(
        f"attention reads the last {w:,} of {n:,} cached positions (a sliding window: K and V sliced)"
        for w, n in windows
    )
    return plan.with_(groups=tuple(groups), attention=shapes, notes=plan.notes + notes)


def attention_placement(plan: Plan, graph: ValueGraph, group: Group, main: str, cache: str, keeps: bool) -> Placement:
    """Bytes of one fused attention kernel (one chip's share):

        main     = (K + V) / shards + (Q + O + other inputs) / tensor-parallel chips
        on chip  = main, plus (not `keeps`: a TPU's VMEM) the f32 score tile written and read once
                   per element there (2 x 4 B x query rows x kv_len / chips)

    where shards = min(chips, KV heads) (shard_tensor_parallel): a chip holds its KV heads' cache
    and computes its query heads; with fewer KV heads than chips each KV head is replicated.
    """
    shape = plan.attention[group.id]
    p = plan.partition
    chips = p.tensor_parallel if p and p.mode == "tensor parallel" else 1
    inputs = [v for v in group_inputs(plan, graph, group) if v not in graph.splat]  # a splat constant is an immediate
    kv = sum(ceil_div(read_bytes(plan, graph, group, v), shape.shards) for v in inputs if v in shape.kv)
    rest = sum(read_bytes(plan, graph, group, v) for v in inputs if v not in shape.kv) + sum(
        graph.nbytes(v) for v in group_outputs(plan, graph, group)
    )
    hbm = kv + ceil_div(rest, chips)
    on_chip = hbm if keeps else hbm + ceil_div(2 * 4 * shape.score_elements, chips)
    return Placement(((main, hbm), (cache, on_chip)))
