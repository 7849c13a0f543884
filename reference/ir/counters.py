"""Per-op cost facts and module totals, with the counting rules written down.

FLOPs (the rules of XLA's HloCostAnalysis, so the two can be compared exactly):
  dot_general   2 * prod(result shape) * prod(lhs contracting sizes)        (2 x MACs)
  convolution   2 * prod(result shape) * prod(kernel spatial) * kernel input features
  elementwise   one per result element (add, multiply, compare, select, convert, ...)
  transcendental  counted apart, one per element (exp, log, tanh, sqrt, rsqrt, power, erf, logistic)
  reduce        (input elements - output elements) * FLOPs of one application of the body
  batch_norm_training   7 per input element (sum for the mean, subtract it, square, sum for the
                variance, multiply by rsqrt, by scale, add offset) + 3 per feature (two divides by
                the count, + epsilon), and one rsqrt per feature as a transcendental
  batch_norm_inference  4 per element (subtract mean, multiply by rsqrt, by scale, add offset)
                + 1 per feature (+ epsilon), and one rsqrt per feature
  data movement 0 (constant, broadcast, reshape, transpose, slice, concatenate, gather, ...)
  call          the callee's cost;   while: (condition + body) * trip count
Bytes at op boundaries, as if nothing were fused (an upper bound that target compilers lower by
fusing): each op reads its operands and writes its results, except that a slice, dynamic_slice
or gather reads of its operand 0 only the elements it returns (at most the whole operand);
constants, returns, calls and loops move nothing themselves (their callees and bodies do).

Where XLA's own count (JAX's `Lowered.cost_analysis()`) differs, and why; policy="xla"
applies these three rules so the totals can be compared exactly, while the default policy
("trip_count") counts the program as the hardware executes it:
  1. a while loop's body counts once in HloCostAnalysis, whatever its trip count;
  2. a convolution counts only the multiply-adds that land on real input, not on padding
     (XLA's HandleConvolution); we count the full window, as a dense kernel executes it and as
     torch's FlopCounterMode counts it;
  3. XLA's StableHLO import folds ops whose operands are all constants (sqrt of a constant) and
     identities (convert to the same type, x + 0, x * 1), so they never reach the counter; an
     iota over a dimension of size one is such a constant (RoPE's angle at a decode step);
  4. XLA expands composite CHLO ops before counting: chlo.erfc becomes a rational polynomial
     with one exp (XLA_CHLO_EXPANSION); we count it as one transcendental per element, as a
     GPU executes erfcf. chlo.square is x * x either way.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace

from reference.ir.from_stablehlo import (
    BATCH_NORMS,
    ELEMENTWISE,
    TRANSCENDENTAL,
    category,
)
from reference.ir.graph import Function, Module, Op

# Rule 4: (FLOPs, transcendentals) per element of XLA's expansion of a CHLO op, by element
# type; read off XLA 0.10.2's cost_analysis of the single op, re-measured by
# tests/sides/test_lowering.py::test_chlo_erfc_expansion_table_matches_xla. 16-bit types add an
# upcast and a downcast.
XLA_CHLO_EXPANSION = {("erfc", "f32"): (62, 1), ("erfc", "bf16"): (64, 1), ("erfc", "f16"): (64, 1)}

FREE = {"constant", "return"}  # "return" covers func.return and stablehlo.return
PARTIAL_READS = {"slice", "dynamic_slice", "gather"}  # read of operand 0: the elements returned


@dataclass(frozen=True)
class OpCounts:
    """What an op does, counted: FLOPs, transcendentals and bytes read and written, addable.
    (Counts, not seconds: hardware_models/cost/model.py's `Cost` is the time a target takes.)"""

    flops: int = 0
    transcendentals: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def __add__(self, other: OpCounts) -> OpCounts:
        return OpCounts(*(a + b for a, b in zip(self.astuple(), other.astuple())))

    def __mul__(self, k: int) -> OpCounts:
        return OpCounts(*(a * k for a in self.astuple()))

    def astuple(self) -> tuple[int, int, int, int]:
        return (self.flops, self.transcendentals, self.bytes_read, self.bytes_written)

    @property
    def bytes_accessed(self) -> int:
        return self.bytes_read + self.bytes_written


def _block_cost(ops, module: Module, policy: str) -> OpCounts:
    total = OpCounts()
    constant_ids: set[str] = set()  # values XLA's import can fold (rule 3)
    splats: dict[str, float] = {}
    for op in ops:
        if policy == "xla":
            single_iota = op.short_name == "iota" and op.result_types[0].shape[op.attr("iota_dimension", 0)] == 1
            if op.short_name == "constant" or single_iota:
                constant_ids.update(op.results)
                if op.splat is not None:
                    splats[op.results[0]] = op.splat
            if _folded_by_xla_import(op, constant_ids, splats):
                constant_ids.update(op.results)
                if op.short_name in ("broadcast_in_dim", "reshape", "convert") and op.operands[0] in splats:
                    splats[op.results[0]] = splats[op.operands[0]]
                continue
        total = total + op_cost(op, module, policy)
    return total


def _folded_by_xla_import(op: Op, constant_ids: set[str], splats: dict[str, float]) -> bool:
    """Rule 3: does XLA's StableHLO import fold this op away?"""
    short = op.short_name
    if not op.operands or not op.known or short in ("return", "call", "while"):
        return False
    if all(o in constant_ids for o in op.operands):
        return True
    if short == "convert" and op.operand_types[0] == op.result_types[0]:
        return True
    identity = {"add": 0.0, "subtract": 0.0, "multiply": 1.0}.get(short)
    if identity is None:
        return False
    # x - 0 folds, 0 - x does not; addition and multiplication fold on either side.
    candidates = op.operands[1:] if short == "subtract" else op.operands
    return any(splats.get(o) == identity for o in candidates)


def _valid_window_positions(size: int, kernel: int, stride: int, pad_lo: int, out: int, dilation: int) -> int:
    """Pairs (output position, kernel tap) whose input index falls inside [0, size)."""
    return sum(1 for o in range(out) for k in range(kernel) if 0 <= o * stride + k * dilation - pad_lo < size)


def xla_convolution_flops(op: Op) -> int:
    """Rule 2: 2 x the multiply-adds that read real input (padding taps excluded), as XLA counts."""
    dims = op.attr("dimension_numbers")
    lhs, kernel, out = op.operand_types[0].shape, op.operand_types[1].shape, op.result_types[0].shape
    n_spatial = len(dims.input_spatial)
    strides = op.attr("window_strides") or (1,) * n_spatial
    dilation = op.attr("rhs_dilation") or (1,) * n_spatial
    padding = padding_pairs(op.attr("padding"), n_spatial)
    taps = 1
    for i in range(n_spatial):
        taps *= _valid_window_positions(
            lhs[dims.input_spatial[i]],
            kernel[dims.kernel_spatial[i]],
            strides[i],
            padding[i][0],
            out[dims.output_spatial[i]],
            dilation[i],
        )
    other = out[dims.output_batch] * out[dims.output_feature]
    return 2 * other * taps * kernel[dims.kernel_input_feature]


def padding_pairs(value, n_spatial: int) -> list[tuple[int, int]]:
    """(low, high) padding per spatial dimension from the importer's flattened pairs."""
    if value is None:
        return [(0, 0)] * n_spatial
    if isinstance(value, tuple) and value and value[0] == "splat":
        return [(int(value[1]), int(value[1]))] * n_spatial
    return [(value[2 * i], value[2 * i + 1]) for i in range(n_spatial)]


def contraction_flops(op: Op) -> int:
    """2 x MACs of a dot_general or convolution (see module docstring)."""
    out = op.result_types[0].elements
    if op.short_name in ("dot_general", "dot"):
        dims = op.attr("dot_dimension_numbers")
        lhs = op.operand_types[0].shape
        contracting = dims.lhs_contracting if dims is not None else (len(lhs) - 1,)
        return 2 * out * math.prod(lhs[d] for d in contracting)
    dims = op.attr("dimension_numbers")
    kernel = op.operand_types[1].shape
    window = math.prod(kernel[d] for d in dims.kernel_spatial)
    # The kernel's input-feature extent is already C_in / feature_group_count.
    return 2 * out * window * kernel[dims.kernel_input_feature]


def batch_norm_cost(op: Op) -> OpCounts:
    """FLOPs and rsqrts of batch_norm_training or batch_norm_inference (the rules above): n input
    elements, f features (the extent of feature_index)."""
    n = op.operand_types[0].elements
    f = op.operand_types[0].shape[op.attr("feature_index", 0)] if op.operand_types[0].shape else 1
    if op.short_name == "batch_norm_training":
        return OpCounts(flops=7 * n + 3 * f, transcendentals=f)
    return OpCounts(flops=4 * n + f, transcendentals=f)


def op_cost(op: Op, module: Module, policy: str = "trip_count") -> OpCounts:
    """The cost of one op, including what it calls and loops over."""
    short = op.short_name
    if short == "call" and op.callee:  # a regional call runs trip_count times (one per layer)
        return _block_cost(module.function(op.callee).ops, module, policy) * (op.trip_count or 1)
    if short == "while" and op.known:
        trips = 1 if policy == "xla" or op.trip_count is None else op.trip_count
        return _block_cost([o for r in op.regions for o in r.ops], module, policy) * trips
    moved = OpCounts(
        bytes_read=sum(t.nbytes for t in op.operand_types),
        bytes_written=sum(t.nbytes for t in op.result_types),
    )
    if short in PARTIAL_READS and op.known and op.operand_types and op.result_types:
        # reads the elements it returns, not its whole operand 0 (a layer's slice of a stacked
        # cache, one embedding row); capped at the operand, which a strided or repeated read re-reads
        whole = op.operand_types[0].nbytes
        moved = replace(moved, bytes_read=moved.bytes_read - whole + min(whole, op.result_types[0].nbytes))
    if not op.known:  # opaque: what it moves, nothing more (a target costs it as a fallback)
        return moved
    if short in FREE:
        return OpCounts(bytes_written=op.result_types[0].nbytes if short == "constant" and op.result_types else 0)
    out = op.result_types[0].elements if op.result_types else 0
    kind = category(op)
    if kind == "contraction":
        if policy == "xla" and short == "convolution":
            return moved + OpCounts(flops=xla_convolution_flops(op))
        return moved + OpCounts(flops=contraction_flops(op))
    expansion = XLA_CHLO_EXPANSION.get((short, op.result_types[0].dtype)) if policy == "xla" else None
    if expansion is not None and op.name.startswith("chlo."):
        return moved + OpCounts(flops=expansion[0] * out, transcendentals=expansion[1] * out)
    if short in BATCH_NORMS:
        return moved + batch_norm_cost(op)
    if short in TRANSCENDENTAL:
        return moved + OpCounts(transcendentals=out)
    if short in ELEMENTWISE:
        return moved + OpCounts(flops=out)
    if short == "reduce":
        applications = op.operand_types[0].elements - op.result_types[0].elements
        per_application = _block_cost(op.regions[0].ops, module, "trip_count").flops
        return moved + OpCounts(flops=applications * per_application)
    if short == "scatter" and op.regions and len(op.operand_types) >= 3:
        # the combiner runs once per update element (a scatter-add: one add each; a plain
        # overwrite, whose combiner returns the update: none), as XLA's cost analysis counts it
        per_application = _block_cost(op.regions[0].ops, module, "trip_count").flops
        return moved + OpCounts(flops=op.operand_types[-1].elements * per_application)
    return moved


@dataclass(frozen=True)
class Stats:
    """Totals over a module, JSON-ready: the `landscape stats` output."""

    flops: int
    transcendentals: int
    bytes_accessed: int
    param_bytes: int
    ops: dict[str, int] = field(default_factory=dict)
    categories: dict[str, int] = field(default_factory=dict)
    unknown_ops: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "flops": self.flops,
            "transcendentals": self.transcendentals,
            "bytes_accessed": self.bytes_accessed,
            "param_bytes": self.param_bytes,
            "ops": dict(sorted(self.ops.items())),
            "categories": dict(sorted(self.categories.items())),
            "unknown_ops": dict(sorted(self.unknown_ops.items())),
        }


def _walk(ops):
    for op in ops:
        yield op
        for region in op.regions:
            yield from _walk(region.ops)


def all_ops(module: Module):
    """Every op of every function, nested regions included, each once (static count)."""
    for fn in module.functions:
        yield from _walk(fn.ops)


def module_stats(module: Module, param_args: tuple[int, ...] = (), policy: str = "trip_count") -> Stats:
    """Totals of the entry function: FLOPs, transcendentals, bytes, parameter bytes, op histogram.

    Args:
        module: the IR.
        param_args: indices of the entry function's arguments that are weights.
        policy: "trip_count" (as executed) or "xla" (XLA's conventions, rules 1-3, for comparison).
    """
    main: Function = module.main
    cost = _block_cost(main.ops, module, policy)
    ops = Counter(op.name for op in all_ops(module) if op.short_name not in ("return",))
    categories = Counter(category(op) for op in all_ops(module) if op.short_name not in ("return",))
    unknown = Counter(op.name for op in all_ops(module) if not op.known)
    # A weight passed to a call made L times (a regional decoder's block) is L weights.
    repeats = {o: op.trip_count for op in main.ops if op.short_name == "call" and op.trip_count for o in op.operands}
    param_bytes = sum(main.args[i][1].nbytes * repeats.get(main.args[i][0], 1) for i in param_args)
    return Stats(
        cost.flops, cost.transcendentals, cost.bytes_accessed, param_bytes, dict(ops), dict(categories), dict(unknown)
    )


def dot_and_conv_flops(module: Module, policy: str = "trip_count") -> int:
    """FLOPs of contractions alone: what torch's FlopCounterMode counts."""

    def block(ops, trips=1):
        total = 0
        for op in ops:
            if category(op) == "contraction":
                total += contraction_flops(op)
            elif op.callee:
                total += block(module.function(op.callee).ops) * (op.trip_count or 1)
            elif op.short_name == "while" and op.known:
                n = 1 if policy == "xla" or op.trip_count is None else op.trip_count
                total += n * sum(block(r.ops) for r in op.regions)
        return total * trips

    return block(module.main.ops)
