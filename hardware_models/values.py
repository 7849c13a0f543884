"""The values of a plan: who produces and reads each one, which ops only view another, what a
group reads, writes and computes. Passes and cost models share these counts.

Calls without a trip count (JAX's private helpers such as `_where`) are inlined, as XLA inlines
them: a callee's argument is a view of the call's operand and the call's result a view of what
the callee returns, so a kernel can span the call (fuse_elementwise, fuse_attention) and the
boundary moves no bytes. A call with a trip count (a regional block run `layers` times) keeps its
boundary: its arguments are read and its results written once per call.

Layouts a matmul takes as they are form no kernel either: a transpose read only by contractions
(cuBLAS's transposed operand), and a slice that is one contiguous block of its operand read only
by contractions (an offset into the buffer: HF's stacked MoE experts' gate_up_proj[e]), whose
result the contraction reads in place at the slice's own size.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from reference.ir import Module, Op, TensorType, category
from reference.ir.counters import PARTIAL_READS, contraction_flops, op_cost
from reference.ir.graph import element_bytes

if TYPE_CHECKING:
    from hardware_models.plan import Group, Plan, PlannedOp

# Ops that only rename or re-view a value: no kernel, no bytes; a read through one reads the
# value underneath it (a broadcast bias is read at its own size).
VIEWS = {
    "reshape",
    "broadcast_in_dim",
    "broadcast",
    "bitcast_convert",
    "optimization_barrier",
    "get_tuple_element",
    "tuple",
    "folded_convert",
}  # an upcast fold_upcasts folded into the contraction that read it
FREE = {"constant", "return", "call", "while"}
FALLBACK_OPS = {"custom_call"}  # besides ops the importer does not know


def constant_values(ops: tuple[PlannedOp, ...], fold_iota: bool = True) -> set[str]:
    """Values computable at compile time: constants, iotas and arithmetic on them (no call,
    loop or return), which the targets' compilers fold into the ops that read them. With
    `fold_iota` False, an iota and what is computed from it are left to run time, as XLA:CPU
    and Inductor's C++ backend do (XLA's constant folding skips iotas and broadcasts, which
    would make large constants; both compute them inside the loop that reads them)."""
    constant: set[str] = set()
    sources = ("constant", "iota") if fold_iota else ("constant",)
    for p in ops:
        if not p.op.known:  # an opaque op is a host fallback, never folded at compile time
            continue
        if p.op.short_name in sources or (
            p.operands and all(v in constant for v in p.operands) and p.op.short_name not in ("call", "while", "return")
        ):
            constant.update(p.results)
    return constant


def is_kernel_op(p: PlannedOp, graph: ValueGraph) -> bool:
    """Ops that do work in a kernel (not views, constants, returns, calls or loops)."""
    return (
        not (p.op.known and p.op.short_name in VIEWS | FREE)
        and p.index not in graph.layout_views
        and p.index not in graph.offset_views
    )


def is_fallback_op(p: PlannedOp) -> bool:
    return not p.op.known or p.op.short_name in FALLBACK_OPS or category(p.op) == "unknown"


def contiguous_slice(op: Op) -> bool:
    """A static slice (unit strides) whose result is one contiguous block of its row-major
    operand: every dimension before the first one it keeps more than one element of is one
    element, every dimension after it is whole (slicing [e:e+1, 0:2F, 0:D] of [n, 2F, D])."""
    if op.short_name != "slice" or not op.known or not op.operand_types or not op.result_types:
        return False
    shape, out = op.operand_types[0].shape, op.result_types[0].shape
    strides = tuple(op.attr("strides") or (1,) * len(shape))
    if len(shape) != len(out) or any(s != 1 for s in strides):
        return False
    first = next((d for d, n in enumerate(out) if n > 1), len(out))
    return all(out[d] == shape[d] for d in range(first + 1, len(out)))


def update_operand(op: Op) -> int | None:
    """The operand position of the update when `op` overwrites part of its operand 0 with it: a
    dynamic_update_slice (1), or a scatter whose combiner returns the update (2); else None."""
    if op.short_name == "dynamic_update_slice" and len(op.operands) >= 2:
        return 1
    if op.short_name == "scatter" and len(op.operands) == 3 and op.regions:
        body = op.regions[0]
        if (
            len(body.ops) == 1
            and body.ops[0].short_name == "return"
            and len(body.args) == 2
            and body.ops[0].operands == (body.args[1][0],)
        ):
            return 2
    return None


class ValueGraph:
    """Producers, consumers, view aliases and sizes of every value in a plan's ops."""

    def __init__(self, ops: tuple[PlannedOp, ...], runs_as: dict[str, str] | None = None):
        self.runs_as = runs_as or {}  # element type -> the type the target runs it as (its width counts)
        self.producer: dict[str, int] = {}
        self.consumers: dict[str, list[int]] = {}
        self.alias: dict[str, str] = {}  # view result -> the value it views
        self.types: dict[str, TensorType] = {}
        self.splat: set[str] = set()
        self.views_of: dict[str, list[str]] = {}
        self.view_ops: set[int] = set()  # indices of ops that only alias (their reads are not reads)
        inlined: dict[str, PlannedOp] = {}  # callee instance -> its call, for calls without a trip count
        for p in ops:
            for value, typ in zip(p.results, p.op.result_types):
                self.producer[value] = p.index
                self.types[value] = typ
            if p.callee:  # an inlined call: its callee's arguments view its operands (module doc)
                inlined[p.callee] = p
                self.view_ops.add(p.index)
                for argument, operand in p.binds:
                    self.alias[argument] = operand
                    self.views_of.setdefault(operand, []).append(argument)
            if p.op.short_name == "return" and p.instance in inlined:  # the call's results view what it returns
                self.view_ops.add(p.index)
                for result, value in zip(inlined[p.instance].results, p.operands):
                    self.alias[result] = value
                    self.views_of.setdefault(value, []).append(result)
                for value, typ in zip(p.operands, p.op.operand_types):
                    self.types.setdefault(value, typ)
                    self.consumers.setdefault(value, []).append(p.index)
                continue
            if p.op.short_name in VIEWS and p.op.known and p.operands:
                self.view_ops.add(p.index)
                # result i views operand i: optimization_barrier passes several values through
                # (jax.checkpoint's), every other view has one operand that matters
                sources = p.operands if len(p.operands) == len(p.results) else (p.operands[0],) * len(p.results)
                for value, source in zip(p.results, sources):
                    self.alias[value] = source
                    self.views_of.setdefault(source, []).append(value)
            if p.op.short_name == "constant" and p.op.splat is not None:
                self.splat.update(p.results)
            for value, typ in zip(p.operands, p.op.operand_types):
                self.types.setdefault(value, typ)
                self.consumers.setdefault(value, []).append(p.index)
            if p.op.short_name == "return":  # a returned value leaves its instance: written out
                for value in p.operands:
                    self.consumers.setdefault(value, []).append(-1)
        # A call with a trip count returns values its caller may never read (a regional block's
        # K and V in a prefill whose program returns only logits): as XLA removes a loop's dead
        # outputs, they are not written out, and ops that only fed them fuse like the flat program's.
        for p in ops:
            if p.op.short_name == "call" and p.op.callee and not p.callee and p.index + 1 < len(ops):
                child = ops[p.index + 1].instance  # expand_workload puts the callee's ops right after the call
                ret = next((q for q in ops[p.index + 1 :] if q.instance == child and q.op.short_name == "return"), None)
                if ret is None or not child.startswith(p.instance + "/"):
                    continue
                for value, result in zip(ret.operands, p.results):
                    if not self.consumers.get(result) and -1 in self.consumers.get(value, []):
                        self.consumers[value] = [u for u in self.consumers[value] if u not in (-1, ret.index)]
        # An update of part of a buffer that nothing else reads (a KV cache: JAX's
        # dynamic_update_slice, or the scatter at a constant index that torch-mlir makes of
        # slice_scatter) runs in place: a serving runtime donates an argument's buffer (jax.jit's
        # donate_argnums and XLA's input-output aliasing; TensorRT-LLM and vLLM preallocate the
        # cache), and XLA's buffer assignment reuses a computed buffer that dies at the update
        # (a flat decoder's slice of its stacked cache, which the slice wrote). The op writes only
        # the update, and its result is the buffer itself: a read of it reads the buffer once, and
        # writing it out writes only the update. A buffer that is a constant (a broadcast zero) is
        # materialized by the update, not updated.
        self.in_place: dict[str, str] = {}  # result -> the update written into the buffer
        for p in ops:
            position = update_operand(p.op)
            if position is None or not p.results:
                continue
            buffer = p.operands[0]
            root = self.root(buffer)
            made_by = ops[self.producer[root]].op.short_name if root in self.producer else None
            if (
                self.consumers.get(buffer) != [p.index]
                or self.users(root) != [p.index]
                or made_by in ("constant", "iota")
            ):
                continue
            self.in_place[p.results[0]] = p.operands[position]
            self.alias[p.results[0]] = buffer
            self.views_of.setdefault(buffer, []).append(p.results[0])
        # A transpose read only by contractions is a layout choice, not a copy: cuBLAS takes a
        # transposed operand and XLA's layout assignment folds it into the dot.
        self.layout_views: set[int] = set()
        for p in ops:
            if p.op.short_name == "transpose" and p.results:
                users = self.users(p.results[0])
                if users and all(u >= 0 and category(ops[u].op) == "contraction" for u in users):
                    self.alias[p.results[0]] = p.operands[0]
                    self.views_of.setdefault(p.operands[0], []).append(p.results[0])
                    self.layout_views.add(p.index)
                    self.view_ops.add(p.index)
        self.offset_views: set[int] = set()
        # A slice that is one contiguous block of its operand (`contiguous_slice`: HF's fused MoE
        # experts' gate_up_proj[e], one expert's [2F, D] of the stacked [n, 2F, D]) read only by
        # contractions is an offset into the operand's buffer, not a copy: Inductor lowers the
        # select to a view its extern mm takes as it is (a base offset), and XLA's GPU backend
        # can fold such a slice into the cuBLAS call (its dynamic-slice fusion, formerly
        # address-computation fusion, behind xla_gpu_enable_dynamic_slice_fusion). No kernel runs
        # it; the contraction reads the slice's elements in place (the result keeps its own
        # size), and a read of the operand is a read through it (`users`).
        for p in ops:
            if p.index in self.view_ops or not contiguous_slice(p.op) or not p.results:
                continue
            users = self.users(p.results[0])
            if users and all(u >= 0 and category(ops[u].op) == "contraction" for u in users):
                self.views_of.setdefault(p.operands[0], []).append(p.results[0])
                self.offset_views.add(p.index)
                self.view_ops.add(p.index)

    def root(self, value: str) -> str:
        while value in self.alias:
            value = self.alias[value]
        return value

    def nbytes(self, value: str) -> int:
        """The value's bytes at the width the target runs its type as (f16 emulated as f32: 4); an
        update in place (see `in_place`) writes only its update's bytes."""
        if value in self.in_place:
            return self.nbytes(self.in_place[value])
        root = self.root(value)
        typ = self.types[root]
        per_element = element_bytes(self.runs_as.get(typ.dtype, typ.dtype))
        return math.ceil(per_element if root in self.splat else per_element * typ.elements)

    def users(self, value: str) -> list[int]:
        """Ops that read the value, directly or through views (-1: returned)."""
        out = [u for u in self.consumers.get(value, []) if u not in self.view_ops]
        for view in self.views_of.get(value, []):
            out += self.users(view)
        return out


def group_inputs(plan: Plan, graph: ValueGraph, group: Group) -> list[str]:
    """Root values the group reads from outside itself (weights, activations), each once; the
    buffer an update in place writes into is not read."""
    members = set(group.members)
    seen: dict[str, None] = {}
    for p in plan.group_ops(group):
        for position, value in enumerate(p.operands):
            if position == 0 and p.results and p.results[0] in graph.in_place:
                continue
            root = graph.root(value)
            if graph.producer.get(root) not in members:
                seen.setdefault(root)
    return list(seen)


def read_bytes(plan: Plan, graph: ValueGraph, group: Group, value: str) -> int:
    """The bytes of the root `value` the group reads from main memory: all of it, unless every
    member that reads it is a slice, dynamic_slice or gather of it (counters.PARTIAL_READS), which
    read only the elements they return (a layer's slice of a stacked cache, one embedding row)."""
    members = set(group.members)
    readers = [u for u in graph.users(value) if u in members]
    whole = graph.nbytes(value)
    partial = 0
    for u in readers:
        p = plan.ops[u]
        operands = [graph.root(v) for v in p.operands]
        if p.op.short_name not in PARTIAL_READS or operands[0] != value or value in operands[1:]:
            return whole
        partial += graph.nbytes(p.results[0])
    return min(whole, partial) if readers else whole


def group_outputs(plan: Plan, graph: ValueGraph, group: Group) -> list[str]:
    """Values the group writes out: read by another group or returned."""
    members = set(group.members)
    out = []
    for p in plan.group_ops(group):
        for value in p.results:
            if any(u == -1 or u not in members for u in graph.users(value)):
                out.append(value)
    return out


class Work(NamedTuple):
    """What one execution of a group computes and touches, counted once for every cost model.

    flops: every member's FLOPs; transcendentals; bytes: op-boundary bytes (each member's operands
    and results); contraction_flops: the contraction's own (0 for a group without one), so the
    epilogue (the work fused after a matmul) is flops - contraction_flops.
    """

    flops: int
    transcendentals: int
    bytes: int
    contraction_flops: int = 0

    @property
    def epilogue_flops(self) -> int:
        return self.flops - self.contraction_flops


def group_work(plan: Plan, module: Module, group: Group) -> Work:
    """The Work of one execution of the group."""
    flops = trans = moved = 0
    for p in plan.group_ops(group):
        cost = op_cost(p.op, module)
        if p.index in plan.in_place_updates:  # reads and writes its update, not the buffer (ValueGraph.in_place)
            update = p.op.operand_types[plan.in_place_updates[p.index]].nbytes
            cost = replace(cost, bytes_read=cost.bytes_read - p.op.operand_types[0].nbytes, bytes_written=update)
        factor = plan.flop_factor(p.op)  # an emulated type's native operations per op (resolve_dtypes)
        flops, trans, moved = flops + cost.flops * factor, trans + cost.transcendentals, moved + cost.bytes_accessed
    first = plan.ops[group.members[0]].op if group.members else None
    contraction = (
        contraction_flops(first) * plan.flop_factor(first) if group.kind == "contraction" and first is not None else 0
    )
    return Work(flops, trans, moved, contraction)
