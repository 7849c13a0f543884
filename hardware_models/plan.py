"""The mapping: what a target's compiler decided, kept as printable data (Timeloop's third part).

A `Plan` starts from the workload (the IR's ops, with calls and loops expanded into how many
times each op runs: hardware_models/workload.py) and each pass in `hardware_models/pipelines.py` returns a new plan with
more decisions filled in: which ops form one kernel (`Group`), how a contraction is tiled and
padded (`Tiling`), and how many bytes each group moves at each memory level (`Placement`).
Cost models read a finished plan and decide nothing.

Values are named per expanded function instance: an op of the block that `main` calls at its
third op is "main/2:block" and its value "%7" is "main/2:block%7", so every id is unique.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from hardware_models.tiles import ceil_div, round_up  # noqa: F401 (re-exported)
from hardware_models.values import (  # noqa: F401  (re-exported: the plan's values, shared by passes and cost models)
    FALLBACK_OPS,
    FREE,
    VIEWS,
    ValueGraph,
    Work,
    group_inputs,
    group_outputs,
    group_work,
    is_fallback_op,
    is_kernel_op,
    read_bytes,
    update_operand,
)
from reference.ir import Op
from reference.ir.counters import contraction_flops
from reference.ir.graph import element_bytes
from reference.units import format_bytes, format_seconds, plural


@dataclass(frozen=True)
class PlannedOp:
    """One op of the workload as it executes: its instance, ids and how often it runs."""

    index: int
    op: Op
    instance: str  # the expanded function instance ("main", "main/2:block")
    repeats: int  # executions per run of the program (layers x loop trips)
    # A call without a trip count, inlined (hardware_models/values.py): its callee's instance, and
    # (callee argument, the call's operand) for each argument, both qualified.
    callee: str = ""
    binds: tuple[tuple[str, str], ...] = ()

    def qualified(self, value: str) -> str:
        return f"{self.instance}{value}"

    @property
    def results(self) -> tuple[str, ...]:
        return tuple(self.qualified(v) for v in self.op.results)

    @property
    def operands(self) -> tuple[str, ...]:
        return tuple(self.qualified(v) for v in self.op.operands)


@dataclass(frozen=True)
class Group:
    """Ops that run as one kernel (a GPU kernel, an XLA fusion): members are PlannedOp indices.

    kind: "contraction" (a dot or convolution, with any fused epilogue), "fusion" (elementwise,
    data movement and reductions), "fallback" (an op the target cannot run: it runs on the
    host and its operands cross the host link) or "transfer" (chip-to-chip traffic a
    partition adds; it has no ops, and `label` says what it is).
    """

    id: int
    kind: str
    members: tuple[int, ...]
    instance: str
    repeats: int
    label: str = ""  # what a group without ops does ("stage hop", "all-reduce")


@dataclass(frozen=True)
class GemmShape:
    """A contraction as a batched GEMM: C[b, m, n] = A[b, m, k] @ B[b, k, n] (implicit GEMM for a convolution)."""

    batch: int
    m: int
    n: int
    k: int
    dtype: str  # operand element type as the target runs it

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k

    def operand_bytes(self) -> tuple[int, int]:
        """(A, B) bytes at the width the target runs them as."""
        e = element_bytes(self.dtype)
        return self.batch * self.m * self.k * e, self.batch * self.k * self.n * e


@dataclass(frozen=True)
class Tiling:
    """How one contraction is cut into tiles, and the padding that costs.

    tile: (tm, tn, tk); padded: (mp, np, kp) = each extent rounded up to its tile (ceil_div, once);
    units: tiles run in parallel (GPU: thread blocks; TPU: MXU folds); steps: how many rounds of
    units the hardware takes (GPU: waves over SMs; TPU: folds per MXU); block: the on-chip reuse
    block (bm, bn) that sets how often A and B are re-read from HBM. On a TPU one MXU is busy
    steps * cycles_per_step + fill_cycles cycles. On a GPU: split_k cuts k into that many slices
    of k_slice, each its own thread block, whose f32 partials (workspace_bytes, written and read
    back) a reduction sums through workspace_level; candidates: how many (tile, split-K) choices
    the compiler costed to pick this one (families/gpu/__init__.py).
    """

    shape: GemmShape
    tile: tuple[int, int, int]
    padded: tuple[int, int, int]
    units: int
    steps: int
    block: tuple[int, int]
    cycles_per_step: int = 0  # TPU: cycles per fold with weights double-buffered
    fill_cycles: int = 0  # TPU: the first weight load and the last fold's fill and drain
    split_k: int = 1  # GPU: slices of k run as separate thread blocks
    workspace_bytes: int = 0  # GPU: split-K's f32 partials, written and read back
    workspace_level: str = ""  # GPU: the memory level the partials move through
    candidates: int = 1  # GPU: (tile, split-K) choices costed

    @property
    def k_slice(self) -> int:
        """Depth of k one unit runs: whole tk steps of the padded k, shared over split_k slices."""
        tk = self.tile[2]
        return ceil_div(self.padded[2] // tk, self.split_k) * tk

    @property
    def padded_flops(self) -> int:
        mp, np_, kp = self.padded
        return 2 * self.shape.batch * mp * np_ * kp

    @property
    def padding_waste(self) -> float:
        """Fraction of the padded FLOPs that land on padding."""
        return 1 - self.shape.flops / self.padded_flops


@dataclass(frozen=True)
class Placement:
    """Bytes one execution of a group moves at each memory level, and what stayed on chip."""

    bytes: tuple[tuple[str, int], ...]  # (level, bytes), outermost level first
    resident_inputs: tuple[str, ...] = ()  # inputs read from an on-chip level, not HBM
    split: tuple[tuple[str, int], ...] = ()  # finer accounts where a cost model needs them (read, write, restickify)

    def at(self, level: str) -> int:
        return dict(self.bytes).get(level, 0)


@dataclass(frozen=True)
class Slot:
    """Where a statically scheduled op runs: its unit, start and finish cycle in its function
    instance, and `increment`, the cycles it adds to that instance's makespan (0 when hidden
    behind other work)."""

    unit: str
    start: int
    finish: int
    busy: int  # cycles the unit computes (the rest of finish - start is waiting on a stream)
    feed: int  # cycles its operands and results take to stream through memory
    increment: int
    padded_flops: int = 0  # the work its unit does, padding included (320 x 320 weight tiles)


@dataclass(frozen=True)
class Partition:
    """How a model is spread over chips: `chips` in all, `tensor_parallel` chips share each layer,
    the rest are pipeline stages in a row; `hidden_bytes` cross between stages."""

    chips: int
    tensor_parallel: int
    needed_bytes: int
    chip_bytes: float
    hidden_bytes: int
    layers: int
    mode: str = ""  # how the weights are held: "resident", "split over N wafers", "weight streaming"
    chunks: int = 1  # chunks a pass's token rows stream through a wafer's regions in, as a pipeline (place_layers)

    @property
    def stages(self) -> int:
        return ceil_div(self.chips, self.tensor_parallel)


@dataclass(frozen=True)
class Fold:
    """An upcast compiled away (fold_upcasts): `op` at `where` reads `narrow` instead of a convert
    to `wide` and accumulates in `wide`; `saved_bytes` are the op-boundary bytes the upcast moved
    (the convert kernel's read and write when it is gone, and the contraction's wider read)."""

    op: str
    where: str
    narrow: str
    wide: str
    saved_bytes: int
    convert_removed: bool = True

    def __str__(self) -> str:
        return (
            f"{self.op} at {self.where}: operand upcast {self.narrow}->{self.wide} folded, runs in {self.narrow} "
            f"accumulating in {self.wide} ({self.saved_bytes:,} B at op boundaries no longer move)"
        )

    def to_dict(self) -> dict:
        return {
            "op": self.op,
            "where": self.where,
            "from": self.narrow,
            "to": self.wide,
            "saved_bytes": self.saved_bytes,
            "convert_removed": self.convert_removed,
        }


@dataclass(frozen=True)
class AttentionShape:
    """A fused attention kernel (fuse_attention): softmax(Q K^T) V with the scores kept on chip.

    query_rows = batch x query heads x new tokens (one score row each), kv_heads = batch x KV
    heads, kv_len the keys each row sees: the score matrix has query_rows x kv_len elements and
    never reaches main memory. `kv_heads_per_sequence` is what tensor parallelism splits
    (shard_tensor_parallel: `shards` = min(chips, KV heads) chips divide K and V); `kv` are the
    root values of K and V (a KV cache's buffers in decode); `stack` the kernel it stands for.
    `causal_queries`: the new tokens per head of a causal mask found in the softmax (0: none), the
    last of the kv_len positions; `computed_share` the share of the score square the kernel
    computes (causal_share: it skips the key tiles the mask hides wholly; 1 when it does not).
    """

    query_rows: int
    kv_heads: int
    kv_heads_per_sequence: int
    kv_len: int
    head_dim: int
    dtype: str
    kv: tuple[str, ...]
    stack: str
    shards: int = 1
    causal_queries: int = 0
    computed_share: float = 1.0
    skip_tile: tuple[int, ...] = ()  # the kernel's (query rows, keys) block where it skips masked ones
    kv_positions: int = 0  # the positions of the K/V buffers it reads kv_len of (a sliding window; 0: all)

    @property
    def score_elements(self) -> int:
        return self.query_rows * self.kv_len

    def __str__(self) -> str:
        return (
            f"{self.stack}: {self.query_rows:,} query rows against {self.kv_heads} KV heads x {self.kv_len:,} tokens, "
            f"head_dim {self.head_dim}, {self.dtype}; scores ({self.score_elements:,} elements) stay on chip"
            + (
                (
                    f"; causal: {self.computed_share:.1%} of the {self.skip_tile[0]} x {self.skip_tile[1]} "
                    "score blocks computed (a block the diagonal crosses is computed whole)"
                    if self.skip_tile
                    else "; causal: the kernel computes every score block, masked ones too"
                )
                if self.causal_queries
                else ""
            )
            + (f"; K and V the last {self.kv_len:,} of {self.kv_positions:,} positions" if self.kv_positions else "")
            + (f"; K and V split over {self.shards} chips by KV heads" if self.shards > 1 else "")
        )


def causal_share(queries: int, keys: int, tile: tuple[int, int]) -> float:
    """The share of a causal score square [queries, keys] a flash kernel computes when it skips
    every key tile its mask hides wholly from a query tile. The queries are the last `queries` of
    the `keys` positions (query i sees keys 0 .. keys - queries + i); tile = (query rows, keys)
    per block. A block the diagonal crosses is computed whole (masked inside):

        share = sum over query blocks b of rows_b x min(keys, ceil(seen_b / key tile) x key tile)
                / (queries x keys),  seen_b = keys - queries + (b's last row) + 1

    Worked number: queries = keys = 8192, tile (128, 64): block b sees (b + 1) x 128 keys, so
    share = 128^2 x (64 x 65 / 2) / 8192^2 = 65 / 128 = 0.508. One query (decode) sees every key: 1.
    """
    if queries < 1 or keys < 1:
        return 1.0
    rows, columns = tile
    computed = 0
    for start in range(0, queries, rows):
        last = min(queries, start + rows) - 1
        seen = max(0, keys - queries + last + 1)
        computed += (last - start + 1) * min(keys, ceil_div(seen, columns) * columns)
    return computed / (queries * keys)


@dataclass(frozen=True)
class FamilyState:
    """What a family's own passes decide beyond what every family's plan holds (`Plan.state`):
    Spyre's stick layouts, re-layouts, dataflow and work division (families/spyre/plan.py), the
    LPU's SRAM (families/lpu/plan.py), the wafer's regions (families/wafer/plan.py). A family's
    package subclasses it, with empty defaults; a plan holds at most one, and `render_group`
    adds its lines to the plan's text, `problems` its invariants to verify_plan's, `padded_unit`
    and `executor_sram` what execute_plan's rungs R5 and R6 need of it (`state_of` gives the
    plan's state, or this base one: nothing to add)."""

    @classmethod
    def of(cls, plan: Plan):
        """The plan's state of this kind, or an empty one (a plan its passes have not reached)."""
        return plan.state if isinstance(plan.state, cls) else cls()

    def render_group(self, plan: Plan, group: Group) -> list[str]:
        return []

    def problems(self, plan: Plan, target) -> Iterable[str]:
        """The invariants of this state that the plan breaks, each a line (verify_plan checks
        them after every pass, beside the ones every plan keeps); none by default."""
        return ()

    def padded_unit(self, plan: Plan, target, value: str, shape: tuple[int, ...]) -> tuple[int, int] | None:
        """(elements per stick or vector, the dimension it runs along) of a value the family lays
        out padded to whole units (Spyre's sticks, the LPU's vectors), or None: none here."""
        return None

    def executor_sram(self, plan: Plan, free_at_first_use: bool = False) -> dict:
        """value -> the SRAM slot (its timeline, offset, size, written and freed cycles) where the
        family's compiler placed it, for execute_plan to write and read; none here.
        `free_at_first_use`: the debugger's planted fault (each value freed at its first reader)."""
        return {}


def state_of(plan: Plan) -> FamilyState:
    """The plan's family state, or the base one (a family without one, or a plan before its passes)."""
    return plan.state if isinstance(plan.state, FamilyState) else FamilyState()


@dataclass(frozen=True)
class PassRecord:
    """One pass of a compilation: its name, the groups after it and its wall time in seconds."""

    name: str
    groups: int
    seconds: float = 0.0


def shard_factor(plan: Plan, group: Group) -> int:
    """How many chips split this group's contraction (tensor parallelism); 1 otherwise."""
    p = plan.partition
    return p.tensor_parallel if p and group.kind == "contraction" and p.mode == "tensor parallel" else 1


@dataclass(frozen=True)
class Plan:
    target: str
    ops: tuple[PlannedOp, ...]
    compiler: str = ""  # the family's Compiler that made it (families/__init__.py), from compile_plan
    groups: tuple[Group, ...] = ()
    tilings: dict[int, Tiling] = field(default_factory=dict)
    placements: dict[int, Placement] = field(default_factory=dict)
    # a statically scheduled family's slots (schedule_static; `Family.scheduled`): the trace, the
    # roofline's spans and the verifier read them for any such family
    schedule: dict[int, Slot] = field(default_factory=dict)
    state: FamilyState | None = None  # what the family's own passes decide (FamilyState)
    partition: Partition | None = None
    requested_chips: int | None = None  # --chips: the user's count instead of the compiler's
    chips_shared: bool = False  # requested_chips is another graph's of the same model (predict's decode step's)
    notes: tuple[str, ...] = ()
    passes: tuple[PassRecord, ...] = ()
    dtypes: tuple[tuple[str, str], ...] = ()  # (element type, the type the target runs it as), from resolve_dtypes
    flop_factors: tuple[
        tuple[str, int], ...
    ] = ()  # (element type, native operations per op) of an emulation, from resolve_dtypes
    strict_dtypes: bool = False  # --strict-dtypes: a type the target lacks is refused, not emulated
    folds: tuple[Fold, ...] = ()  # upcasts compiled away, from fold_upcasts
    attention: dict[int, AttentionShape] = field(
        default_factory=dict
    )  # group id -> fused attention, from fuse_attention

    def with_(self, **changes) -> Plan:
        return replace(self, **changes)

    def with_state(self, kind: type[FamilyState], **changes) -> Plan:
        """The plan with its family state of `kind` (an empty one if it has none yet) changed."""
        return replace(self, state=replace(kind.of(self), **changes))

    def runs_as(self, dtype: str) -> str:
        """The type the target runs `dtype` as, decided once by resolve_dtypes (itself if native)."""
        return dict(self.dtypes).get(dtype, dtype)

    def flop_factor(self, op: Op) -> int:
        """Native operations per FLOP of `op`: the largest factor of an emulated type among its types
        (20 for f64 run as double-f32 on a chip without f64; resolve_dtypes), else 1."""
        factors = dict(self.flop_factors)
        return (
            max((factors.get(t.dtype, 1) for t in (*op.operand_types, *op.result_types)), default=1) if factors else 1
        )

    def value_graph(self) -> ValueGraph:
        """Producers, consumers and sizes of the plan's values, at the widths the target runs them as."""
        return ValueGraph(self.ops, dict(self.dtypes))

    @functools.cached_property
    def in_place_updates(self) -> dict[int, int]:
        """op index -> operand position of the update, for each update in place (ValueGraph.in_place)."""
        graph = self.value_graph()
        return {graph.producer[r]: self.ops[graph.producer[r]].operands.index(u) for r, u in graph.in_place.items()}

    @functools.cached_property
    def _callers(self) -> dict[str, str]:
        return {p.callee: p.instance for p in self.ops if p.callee}

    @functools.cached_property
    def written_by(self) -> dict[int, list[str]]:
        graph = self.value_graph()
        return {g.id: group_outputs(self, graph, g) for g in self.groups if g.kind != "transfer"}

    def timeline(self, instance: str) -> str:
        """The instance whose timeline an op of `instance` runs on: an inlined call's callee runs in
        its caller's (values.py inlines calls without a trip count); any other instance is its own."""
        while instance in self._callers:
            instance = self._callers[instance]
        return instance

    def group_ops(self, group: Group) -> list[PlannedOp]:
        return [self.ops[i] for i in group.members]

    def render(self) -> str:
        """The plan as text: one line per group, then its tiling and bytes per level."""
        by = f" by {self.compiler}" if self.compiler else ""
        lines = [f"plan for {self.target}{by}: {plural(len(self.groups), 'group')} from {plural(len(self.ops), 'op')}"]
        lines += [f"  pass {p.name}: {plural(p.groups, 'group')}, {format_seconds(p.seconds)}" for p in self.passes]
        for g in self.groups:
            ops = "+".join(self.ops[i].op.short_name for i in g.members) or g.label
            lines.append(f"  g{g.id} {g.kind:11s} x{g.repeats:<4d} {ops}   [{scope_of(self, g)}]")
            t = self.tilings.get(g.id)
            if t:
                s = t.shape
                split = f" split-K {t.split_k} (k slices of {t.k_slice})" if t.split_k > 1 else ""
                lines.append(
                    f"      gemm b={s.batch} m={s.m} n={s.n} k={s.k} {s.dtype}: tile {t.tile}{split} padded {t.padded} "
                    f"({t.padding_waste:.1%} waste), {plural(t.units, 'unit')} in {plural(t.steps, 'step')}, reuse block {t.block}"
                    + (f"; chosen of {t.candidates} candidates" if t.candidates > 1 else "")
                    + (
                        f"; f32 partials {t.workspace_bytes:,} B through {t.workspace_level}"
                        if t.workspace_bytes
                        else ""
                    )
                )
            slot = self.schedule.get(g.id)
            if slot:
                lines.append(
                    f"      {slot.unit} cycles {slot.start}-{slot.finish} (busy {slot.busy}, adds {slot.increment})"
                )
            if self.state is not None:
                lines += self.state.render_group(self, g)
            if g.id in self.attention:
                lines.append(f"      attention {self.attention[g.id]}")
            for i in g.members:
                if i in self.in_place_updates:
                    op = self.ops[i]
                    lines.append(
                        f"      {op.op.short_name} writes {op.operands[self.in_place_updates[i]]} into {op.operands[0]} in place "
                        f"(a donated buffer: only the update moves)"
                    )
            p = self.placements.get(g.id)
            if p:
                moved = ", ".join(f"{level} {n:,} B" for level, n in p.bytes)
                lines.append(
                    f"      bytes {moved}"
                    + (f"; from on chip: {', '.join(p.resident_inputs)}" if p.resident_inputs else "")
                )
        if self.partition:
            p = self.partition
            lines.append(
                f"  partition: {plural(p.chips, 'chip')}, {p.tensor_parallel} per layer, {plural(p.stages, 'pipeline stage')} "
                f"({format_bytes(p.needed_bytes)} over {format_bytes(p.chip_bytes)} usable per chip)"
                + (f"; weights {p.mode}" if p.mode else "")
            )
        lines += [f"  fold: {f}" for f in self.folds]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "compiler": self.compiler,
            **(
                {
                    "partition": {
                        "chips": self.partition.chips,
                        "tensor_parallel": self.partition.tensor_parallel,
                        "stages": self.partition.stages,
                        "mode": self.partition.mode,
                    }
                }
                if self.partition
                else {}
            ),
            "passes": [[p.name, p.groups] for p in self.passes],  # wall times vary: render() shows them
            "notes": list(self.notes),
            **({"folds": [f.to_dict() for f in self.folds]} if self.folds else {}),
            "groups": [
                {
                    "id": g.id,
                    "kind": g.kind,
                    "repeats": g.repeats,
                    "scope": scope_of(self, g),
                    "ops": [self.ops[i].op.short_name for i in g.members],
                    **({"tiling": _tiling_dict(self.tilings[g.id])} if g.id in self.tilings else {}),
                    **({"bytes": dict(self.placements[g.id].bytes)} if g.id in self.placements else {}),
                    **({"attention": str(self.attention[g.id])} if g.id in self.attention else {}),
                }
                for g in self.groups
            ],
        }


def _tiling_dict(t: Tiling) -> dict:
    s = t.shape
    return {
        "batch": s.batch,
        "m": s.m,
        "n": s.n,
        "k": s.k,
        "dtype": s.dtype,
        "tile": list(t.tile),
        "padded": list(t.padded),
        "units": t.units,
        "steps": t.steps,
        "block": list(t.block),
        "padding_waste": t.padding_waste,
        "split_k": t.split_k,
        "k_slice": t.k_slice,
        "workspace_bytes": t.workspace_bytes,
        "workspace_level": t.workspace_level,
        "candidates": t.candidates,
    }


def scope_of(plan: Plan, group: Group) -> str:
    """The framework scope of the group's first op that has one (the layer it came from)."""
    for i in group.members:
        origin = plan.ops[i].op.origin
        if origin.scope or origin.source:
            return origin.scope or origin.source
    return group.instance


def gemm_shape(op: Op, runs_as: str) -> GemmShape:
    """A dot_general or convolution as a batched GEMM (see GemmShape)."""
    if op.short_name in ("dot_general", "dot"):
        dims = op.attr("dot_dimension_numbers")
        lhs, rhs = op.operand_types[0].shape, op.operand_types[1].shape
        lb, lc = (dims.lhs_batch, dims.lhs_contracting) if dims else ((), (len(lhs) - 1,))
        rb, rc = (dims.rhs_batch, dims.rhs_contracting) if dims else ((), (0,))
        batch = math.prod(lhs[d] for d in lb)
        k = math.prod(lhs[d] for d in lc)
        m = math.prod(s for d, s in enumerate(lhs) if d not in lb and d not in lc)
        n = math.prod(s for d, s in enumerate(rhs) if d not in rb and d not in rc)
        return GemmShape(batch, m, n, k, runs_as)
    dims = op.attr("dimension_numbers")
    out, kernel = op.result_types[0].shape, op.operand_types[1].shape
    groups = op.attr("feature_group_count") or 1
    m = out[dims.output_batch] * math.prod(out[d] for d in dims.output_spatial)
    n = out[dims.output_feature] // groups
    k = kernel[dims.kernel_input_feature] * math.prod(kernel[d] for d in dims.kernel_spatial)
    shape = GemmShape(groups, m, n, k, runs_as)
    assert shape.flops == contraction_flops(op), "implicit GEMM must keep the convolution's FLOPs"
    return shape
