"""Execute a target's compiled plan on the CPU: the debugger's rungs R4 to R7.

Each rung runs the IR through the numpy interpreter (reference.ir.interpret) and adds, op by op,
what one more layer of the compiled plan does to the values. A rung includes every rung below it.

    R4  graph passes     each group of the plan (fusion, fold_upcasts, attention) runs as one
                         kernel; its members' values as the plan's groups compute them
    R5  layout, tiles    a value with a padded layout (Spyre's 128-byte sticks, the LPU's
                         320-element vectors) is written stick by stick into a buffer whose
                         padding holds stale memory, and read back; a contraction with a tiling
                         (GPU MMA tiles, TPU MXU folds, Spyre's 8-row passes) is computed tile by
                         tile into a buffer of stale memory
    R6  memory, DMA      every argument is DMA'd on chip with its planned length in bytes; on
                         the LPU, each computed value is written to its SRAM slot (allocate_sram)
                         at its producer's scheduled cycle and read from it at each reader's
    R7  numerics         every value rounds to the type the target runs it as (resolve_dtypes:
                         f32 as f16 on Spyre), and contractions accumulate in f32

A clean plan changes nothing beyond rounding: R4 to R6 equal R3, and R7 differs from it only by
its narrower types. "Stale memory" is a seeded draw of the same scale as the program's values,
so a value the plan forgets to write holds plausible garbage, as device memory does.

A planted fault (the debugger's, `Fault.rung` >= R4) is a switch read at one point of this
executor: `Execution.faults`. `Execution.steps`, when given, limits a rung's own behaviour to
those ops (qualified names), so the debugger can bisect a rung's sub-steps to the first bad one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from hardware_models.plan import Plan, ceil_div, state_of
from hardware_models.target import Target
from reference.ir import Module, Op
from reference.ir.interpret import Interpreter, as_type, numpy_type
from reference.ir.interpret_ops import as_matmul

RUNGS = ("R4", "R5", "R6", "R7")
LEVEL = {rung: i for i, rung in enumerate(RUNGS, start=4)}


@dataclass
class Execution:
    """One run of a plan at a rung: the hook the interpreter calls for every op.

    Attributes:
        rung: "R4" ... "R7".
        faults: names of the planted faults switched on (the debugger's catalogue).
        steps: qualified op names where the rung's own behaviour applies (None: every op).
        stale_seed: seeds the stale contents of fresh buffers.
        events: what the run did that the report prints (a DMA's length, a stale SRAM read).
    """

    module: Module
    plan: Plan
    target: Target
    rung: str = "R7"
    faults: frozenset[str] = frozenset()
    steps: frozenset[str] | None = None
    stale_seed: int = 0
    events: list[str] = field(default_factory=list)
    base: object = None  # the rungs below the plan's own: an interpreter hook (the debugger's R3 faults)

    def __post_init__(self):
        self.level = LEVEL[self.rung]
        self.planned = {p.results[0]: p for p in self.plan.ops if p.op.results}
        self.group_of = {i: g for g in self.plan.groups for i in g.members}
        self.rng = np.random.default_rng(self.stale_seed)
        self.scale = 1.0
        self.interpreter = Interpreter(self.module)  # executes each op (and walks its regions)
        self._sram_setup()

    # -- helpers
    def applies(self, key: str, level: int) -> bool:
        """Whether rung `level`'s behaviour runs at this op: every rung below this one's always does,
        this rung's own only at `steps` (all ops when steps is None)."""
        return level < self.level or self.steps is None or key in self.steps

    def stale(self, shape, like: np.ndarray) -> np.ndarray:
        """Fresh device memory: stale values of the program's own scale."""
        garbage = self.rng.standard_normal(shape) * self.scale
        return garbage.astype(like.dtype) if like.dtype.kind != "b" else garbage > 0

    def group(self, key: str):
        planned = self.planned.get(key)
        return self.group_of.get(planned.index) if planned is not None else None

    # -- the hook
    def __call__(self, key: str, op: Op, operands: tuple[np.ndarray, ...]):
        if op.short_name in ("call", "while"):
            return None  # the interpreter walks into them; their ops come back through this hook
        if self.level >= 6:
            operands = self.sram_reads(key, op, operands)
        results = tuple(as_type(r, t) for r, t in zip(self.compute(key, op, operands), op.result_types))
        if self.level >= 5 and self.applies(key, 5):
            results = tuple(self.layout(key, op, i, r) for i, r in enumerate(results))
        if self.level >= 7 and self.applies(key, 7):
            results = tuple(self.round_as(r, t) for r, t in zip(results, op.result_types))
        if self.level >= 6:
            self.sram_write(key, op, results)
        return results

    def compute(self, key: str, op: Op, x: tuple[np.ndarray, ...]):
        interp = self.interpreter
        short = op.short_name
        if self.base is not None:
            rewritten = self.base(key, op, x)
            if rewritten is not None:
                return rewritten
        if self.level >= 4 and short == "reduce" and "fused-reduce-wrong-axis" in self.faults and self.applies(key, 4):
            wrong = self.wrong_axis(key, op)
            if wrong is not None:
                return interp.execute(wrong, x, "")
        if short == "dot_general" and (self.level >= 5 or "fp16-accumulate" in self.faults):
            tiled = self.tiled_dot(key, op, x)
            if tiled is not None:
                return tiled
        return interp.execute(op, x, "")

    # -- R4: a fused group's reduction
    def wrong_axis(self, key: str, op: Op) -> Op | None:
        """The fault: a reduce fused with other ops reduces another axis of the same extent."""
        group = self.group(key)
        dims = op.attr("dimensions") or ()
        shape = op.operand_types[0].shape
        if group is None or len(group.members) < 2 or len(op.operands) != 2 or len(dims) != 1:
            return None
        other = [d for d in range(len(shape)) if d != dims[0] and shape[d] == shape[dims[0]]]
        if not other:
            return None
        self.events.append(
            f"fused-reduce-wrong-axis: {key}: the fused reduction runs over axis {other[-1]}, not {dims[0]}"
        )
        return dataclasses.replace(op, attrs=tuple((k, (other[-1],) if k == "dimensions" else v) for k, v in op.attrs))

    # -- R5: padded layouts
    def unit(self, value: str, shape: tuple[int, ...]) -> tuple[int, int] | None:
        """(elements per stick or vector, the dimension it runs along) of a value, or None: the
        family's state says (FamilyState.padded_unit)."""
        return state_of(self.plan).padded_unit(self.plan, self.target, value, shape)

    def layout(self, key: str, op: Op, index: int, value: np.ndarray) -> np.ndarray:
        planned = self.planned.get(key)
        if planned is None:
            return value
        return self.write_sticks(key, planned.results[index], value, copy=op.short_name == "copy")

    def write_sticks(self, key: str, name: str, value: np.ndarray, copy: bool) -> np.ndarray:
        """The value written stick by stick (vector by vector) into a padded buffer of stale memory,
        and read back. `copy`: a copy kernel (a copy op, or an argument copied in from the host),
        the site of the fault floor-stick-count."""
        unit = self.unit(name, value.shape)
        if unit is None or not value.shape:
            return value
        per, dim = unit
        moved = np.moveaxis(value, dim, -1)
        n = moved.shape[-1]
        sticks = ceil_div(n, per)
        if "floor-stick-count" in self.faults and copy:
            sticks = n // per  # the fault: the stick count recomputed with floor division
            if sticks * per < n:
                self.events.append(
                    f"floor-stick-count: {key}: the copy writes {sticks} stick(s) of {per} per row; "
                    f"elements {sticks * per}..{n - 1} keep stale memory"
                )
        padded = ceil_div(n, per) * per
        buffer = self.stale((*moved.shape[:-1], padded), moved)
        buffer[..., : sticks * per] = np.pad(moved, [(0, 0)] * (moved.ndim - 1) + [(0, padded - n)])[
            ..., : sticks * per
        ]
        return np.moveaxis(buffer[..., :n], -1, dim)

    def copy_in(self, key: str, name: str, x: np.ndarray) -> np.ndarray:
        """An argument as the chip holds it: copied into its layout (R5), moved by DMA (R6)."""
        if self.level >= 5 and self.applies(key, 5):
            x = self.write_sticks(key, f"main{name}", x, copy=True)
        if self.level >= 6 and self.applies(key, 6):
            x = self.dma(name, x, key)
        return x

    def tiled_dot(self, key: str, op: Op, x: tuple[np.ndarray, ...]):
        """A dot computed tile by tile as its tiling says (R5), accumulating in f32, or in f16 with
        the fault fp16-accumulate (R7); None where the plan has no tiling for it."""
        group = self.group(key)
        tiling = self.plan.tilings.get(group.id) if group is not None else None
        fp16 = "fp16-accumulate" in self.faults and self.level >= 7 and self.applies(key, 7)
        if tiling is None and not fp16:
            return None
        d = op.attr("dot_dimension_numbers")
        a, b = x
        if fp16:
            out = self.fp16_dot(a, b, d)
            self.events.append(f"fp16-accumulate: {key}: {a.shape} x {b.shape} summed in fp16 over k")
        else:
            (out,) = self.interpreter.op_dot_general(op, a, b)  # R3's product, which the tiles then cover
        if tiling is None or self.level < 5 or not self.applies(key, 5):
            return (out,)
        lhs_free = [i for i in range(a.ndim) if i not in d.lhs_batch and i not in d.lhs_contracting]
        m = math.prod(a.shape[i] for i in lhs_free)
        batch = len(d.lhs_batch)
        flat = out.reshape((*out.shape[:batch], m, -1))
        n = flat.shape[-1]
        (tm, tn, _), covered = tiling.tile, []
        for extent, tile, axis in ((m, tm, "rows"), (n, tn, "columns")):
            tiles = ceil_div(extent, tile)
            if "drop-remainder-tile" in self.faults:
                tiles = extent // tile  # the fault: the remainder tile dropped
                if tiles * tile < extent:
                    self.events.append(
                        f"drop-remainder-tile: {key}: {tiles} tile(s) of {tile} {axis} cover {tiles * tile} "
                        f"of {extent}; {axis} {tiles * tile}..{extent - 1} keep stale memory"
                    )
            covered.append(min(extent, tiles * tile))
        buffer = self.stale(flat.shape, flat)
        buffer[..., : covered[0], : covered[1]] = flat[..., : covered[0], : covered[1]]
        return (buffer.reshape(out.shape),)

    @staticmethod
    def fp16_dot(a, b, d) -> np.ndarray:
        """The fault: the products summed in fp16, one rounding per step along k."""
        am, bm, shape = as_matmul(a.astype(np.float32), b.astype(np.float32), d)
        total = np.zeros((*am.shape[:-1], bm.shape[-1]), np.float16)
        for step in range(am.shape[-1]):
            total = (total.astype(np.float32) + am[..., :, step : step + 1] * bm[..., step : step + 1, :]).astype(
                np.float16
            )
        return total.astype(np.float32).reshape(shape)

    # -- R6: DMA and the LPU's SRAM
    def dma(self, name: str, x: np.ndarray, key: str) -> np.ndarray:
        """An argument moved on chip: its planned length is its bytes (the fault: its elements)."""
        moved = x
        if "dma-length-elements" in self.faults and x.size and x.itemsize > 1:
            length = x.size  # the fault: a length in elements where the DMA counts bytes
            elements = length // x.itemsize
            flat = self.stale(x.size, x.reshape(-1))
            flat[:elements] = x.reshape(-1)[:elements]
            moved = flat.reshape(x.shape)
            self.events.append(
                f"dma-length-elements: {key}: {name} is DMA'd with length {length} (its elements) of its {x.nbytes} bytes: "
                f"{elements} of {x.size} elements arrive"
            )
        return moved

    def _sram_setup(self):
        self.slots = state_of(self.plan).executor_sram(self.plan, "free-at-first-use" in self.faults)
        self.start = {}  # qualified value -> cycle its reader or producer runs at
        self.writes: dict[str, list[tuple[int, int, int, bytes]]] = {}  # timeline -> (cycle, order, offset, bytes)
        self.early = None
        if "early-consumer" in self.faults and self.slots:
            self.early = self._early_consumer()

    def cycle(self, key: str) -> int | None:
        group = self.group(key)
        slot = self.plan.schedule.get(group.id) if group is not None else None
        return slot.start if slot is not None else None

    def _early_consumer(self) -> str | None:
        """The fault's site: the first op (in program order) reading a computed value from SRAM."""
        for p in self.plan.ops:
            if not p.op.results or self.cycle(p.results[0]) is None:
                continue
            if any(v in self.slots for v in p.operands):
                return p.results[0]
        return None

    def sram_reads(self, key: str, op: Op, operands):
        planned = self.planned.get(key)
        at = self.cycle(key)
        if planned is None or at is None or not self.slots:
            return operands
        if key == self.early and self.applies(key, 6):
            producers = [self.slots[v].written for v in planned.operands if v in self.slots]
            at = min(producers) - 1  # the fault: scheduled one slot before its producer writes
            self.events.append(
                f"early-consumer: {key}: scheduled at cycle {at}, before its operand is written at cycle {min(producers)}"
            )
        out = []
        for value, x in zip(planned.operands, operands):
            slot = self.slots.get(value)
            if slot is None or slot.size != x.nbytes:
                out.append(x)
                continue
            memory = bytearray(self.stale(x.size, x.reshape(-1)).tobytes())
            for cycle, _, offset, data in sorted(self.writes.get(slot.timeline, [])):
                if cycle > at:
                    break
                lo, hi = max(offset, slot.offset), min(offset + len(data), slot.offset + slot.size)
                if lo < hi:
                    memory[lo - slot.offset : hi - slot.offset] = data[lo - offset : hi - offset]
            read = np.frombuffer(bytes(memory), dtype=x.dtype).reshape(x.shape)
            if not np.array_equal(read, x, equal_nan=True) and self.applies(key, 6):
                cause = "early-consumer" if key == self.early else "free-at-first-use"
                self.events.append(
                    f"{cause}: {key}: reads {value} from SRAM [{slot.offset}, {slot.offset + slot.size}) at cycle {at} "
                    "and finds other data there"
                )
            out.append(read if self.applies(key, 6) else x)
        return tuple(out)

    def sram_write(self, key: str, op: Op, results):
        planned = self.planned.get(key)
        if planned is None or not self.slots:
            return
        for value, r in zip(planned.results, results):
            slot = self.slots.get(value)
            if slot is not None and slot.size == np.asarray(r).nbytes:
                log = self.writes.setdefault(slot.timeline, [])
                log.append((slot.written, len(log), slot.offset, np.ascontiguousarray(r).tobytes()))

    # -- R7: device numerics
    def round_as(self, value: np.ndarray, t) -> np.ndarray:
        runs_as = self.plan.runs_as(t.dtype)
        if runs_as == t.dtype or dict(self.plan.flop_factors).get(t.dtype, 1) > 1:  # native, or emulated (double-f32)
            return value
        try:
            narrow = numpy_type(runs_as)
        except Exception:  # noqa: BLE001 - a type without a numpy twin (double-f32 pairs) keeps its own
            return value
        return as_type(np.asarray(value).astype(narrow), t)


def run_plan(
    module: Module,
    plan: Plan,
    target: Target,
    args,
    rung: str = "R7",
    faults: Iterable[str] = (),
    steps: Iterable[str] | None = None,
    force: dict | None = None,
    stale_seed: int = 0,
    base=None,
):
    """(outputs, {qualified op: results}, events) of the plan executed at `rung` on `args`.

    `force`: teacher forcing, each op's results replaced by these (the rung below's) before any
    later op reads them; the trace keeps what the op itself computed. `base`: an interpreter hook
    for the rungs below R4 (the debugger's decomposition fault), so every rung includes them.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return _run_plan(module, plan, target, args, rung, faults, steps, force, stale_seed, base)


def _run_plan(module, plan, target, args, rung, faults, steps, force, stale_seed, base):
    from reference.ir.interpret import trace_values

    execution = Execution(
        module,
        plan,
        target,
        rung,
        frozenset(faults),
        None if steps is None else frozenset(steps),
        stale_seed,
        base=base,
    )
    floats = [
        float(np.max(np.abs(np.asarray(a, dtype=np.float64))))
        for a in args
        if np.asarray(a).size and np.asarray(a).dtype.kind != "b"
    ]
    execution.scale = max([f for f in floats if np.isfinite(f)] or [1.0]) or 1.0
    prepared, copied_in = [], {}
    for (name, t), a in zip(module.main.args, args):  # each argument copied in: a sub-step of its own
        key = f"main{name}:copy-in"
        x = as_type(np.asarray(a), t)
        own = execution.copy_in(key, name, x)
        copied_in[key] = (own,)
        prepared.append(force[key][0] if force and key in force else own)
    outputs, seen = trace_values(module, prepared, execution, force=force)
    seen = {**copied_in, **seen}
    outputs = list(outputs)
    returned = module.main.ops[-1].operands if module.main.ops else ()
    for p in plan.ops:  # a returned argument is written out by a copy kernel (workload.materialize_returned_arguments)
        if p.op.results and p.op.results[0].startswith("%landscape.copy"):
            source = dict(zip((a for a, _ in module.main.args), args)).get(p.op.operands[0])
            if source is None:
                continue
            (copied,) = execution(p.results[0], p.op, (as_type(np.asarray(source), p.op.operand_types[0]),))
            seen[p.results[0]] = (copied,)
            outputs = [copied if v == p.op.operands[0] else o for v, o in zip(returned, outputs)]
    return tuple(outputs), seen, execution.events
