"""resolve_dtypes: check every floating element type against what the target runs.

The type each element type runs as is decided here, once, and recorded in the plan
(`Plan.dtypes`, read through `plan.runs_as`): an emulated type (f16 on a TPU runs as f32) is
tiled, stored, counted in bytes and costed as the type it runs as by every later pass and cost
model, and noted. Scalars are exempt: torch-mlir computes Python floats as f64[] scalars, which
a compiler folds or runs on the host; they are noted.

A tensor of a type the target neither runs nor lists as emulated (f64 on a TPU, a Groq LPU, a
Cerebras wafer or Spyre: torch-mlir computes LayerNorm's variance in f64) is costed, not refused:
  - on a chip that runs f32 natively, as double-f32 ("double-word") arithmetic, which is how
    XLA:TPU runs f64 (it rewrites a computation "to not contain X64 element types", pairs of
    f32: jax-ml/jax#21108, patrick-kidger/diffrax#366): each element is a pair of f32 words, so
    its bytes stay 8, and each f64 operation costs DOUBLE_F32_OPS f32 operations on the units
    that run f32 (`Plan.flop_factors`, read by plan.group_work for every cost model);
  - on a chip without f32 arithmetic (Spyre runs f32 as f16: its [dtypes] table), as the type
    f32 runs as there, as its compiler does for f32 (no f32 pair to build double-f32 from);
  - a type neither rule covers (an 8-bit float on an A100) is refused, naming the op.
Every such op is noted with its source line. With `strict_dtypes` (`--strict-dtypes`) a type the
target lacks is refused, with the op, its source line and what to do instead.

Worked number: LayerNorm's statistics over x[1024, 768] in f64 on a TPU v5e: the subtract,
square and two reductions are about 4 * 786,432 = 3.1 M FLOPs, 63 M f32 operations emulated; at
the VPU's 1 TensorCore * 2048 ALUs * 1.5e9 = 3.07 TFLOP/s (assumed ALU count) that is 20 us
against 1.0 us in f32, while an 8-byte tensor of x's size takes 6.3 MB / 819 GB/s = 7.7 us of
HBM time to read or write.
"""

from __future__ import annotations

from hardware_models.plan import Plan
from hardware_models.target import Target
from reference.errors import LandscapeError, UnsupportedDtype
from reference.ir import Module

# Assumed: f32 operations per f64 operation in double-f32 arithmetic. Joldes, Muller and Popescu,
# "Tight and rigorous error bounds for basic building blocks of double-word arithmetic" (ACM
# TOMS 44(2), 2017) count 20 f32 operations for an accurate double-word addition and 9 for a
# multiplication with an FMA; 20 is taken for every op (the adds and reductions of a variance
# dominate), an upper bound for the rest. XLA:TPU's own sequence is unpublished.
DOUBLE_F32_OPS = 20
WIDE = ("f64",)  # types wider than any accelerator here computes in but the GPUs


class StrictDtype(UnsupportedDtype):
    """--strict-dtypes: a type the target lacks, refused with what to do instead."""

    def __init__(self, target: Target, dtype: str, where: str, valid, instead: str):
        self.entry, self.dtype, self.valid = f"target {target.name}", dtype, tuple(valid)
        emulated = dict(target.emulated_dtypes)
        runs = ", ".join(target.native_dtypes) + (
            "; " + ", ".join(f"{a} as {b}" for a, b in emulated.items()) if emulated else ""
        )
        LandscapeError.__init__(
            self,
            f"target {target.name} has no {dtype} ({where}; it runs {runs}); without --strict-dtypes "
            f"it is costed as {instead}: drop --strict-dtypes, or lower the program without {dtype}",
        )


def emulation(dtype: str, target: Target) -> tuple[str, int, str] | None:
    """How `dtype`, which the target lacks, is costed there: (the type it runs as, native
    operations per operation, a description), or None when it cannot be."""
    if dtype not in WIDE:
        return None
    if "f32" in target.native_dtypes:
        return (
            dtype,
            DOUBLE_F32_OPS,
            f"double-f32 (pairs of f32: 8 bytes an element, {DOUBLE_F32_OPS} f32 operations an operation, assumed)",
        )
    f32 = dict(target.emulated_dtypes).get("f32")
    if f32 is not None:
        return (f32, 1, f"{f32}, as f32 runs there (the chip has no f32 to pair)")
    return None


def _where(p) -> str:
    return f"{p.op.short_name} at {p.op.origin.source or p.op.origin.scope or p.instance}"


def _sites(users, shown: int = 3) -> str:
    """Where the ops come from, by the user's source line: "at layers.py:146: convert, reduce, rsqrt"."""
    by_line: dict[str, dict[str, None]] = {}
    for p in users:
        by_line.setdefault(p.op.origin.source or p.op.origin.scope or p.instance, {})[p.op.short_name] = None
    lines = [f"at {where}: {', '.join(ops)}" for where, ops in list(by_line.items())[:shown]]
    return "; ".join(lines) + (f"; and {len(by_line) - shown} more lines" if len(by_line) > shown else "")


def resolve_dtypes(module: Module, plan: Plan, target: Target) -> Plan:
    """Record what each type runs as; cost a missing wide type as its emulation (see the module).

    Raises:
        UnsupportedDtype: a type the target lacks and cannot emulate, naming the op and the
            target's native and emulated types; with plan.strict_dtypes, any type it lacks.
    """
    types = {t for p in plan.ops for t in (*p.op.operand_types, *p.op.result_types)}
    notes = []
    runs = []
    factors = []
    for dtype in sorted({t.dtype for t in types if t.elements > 1}):
        noted = False  # the emulation of a missing wide type has its own note
        try:
            runs_as = target.runs_as(dtype)
        except UnsupportedDtype as err:
            users = [
                p
                for p in plan.ops
                if any(t.dtype == dtype and t.elements > 1 for t in (*p.op.result_types, *p.op.operand_types))
            ]
            users = [
                p for p in users if p.op.short_name != "constant"
            ] or users  # constants are folded into their readers
            how = emulation(dtype, target)
            if how is None or plan.strict_dtypes:
                first = users[0]
                if how is not None:
                    raise StrictDtype(target, dtype, _where(first), err.valid, how[2]) from None
                where = first.op.origin.scope or first.op.origin.source or first.instance
                raise UnsupportedDtype(f"target {target.name} ({first.op.name} at {where})", dtype, err.valid) from None
            runs_as, factor, described = how
            if factor != 1:
                factors.append((dtype, factor))
            notes.append(
                f"{target.name} has no {dtype}: {len(users)} {dtype} ops ({_sites(users)}) run as {described}; "
                f"--strict-dtypes refuses them instead"
            )
            noted = True
        if runs_as != dtype:
            runs.append((dtype, runs_as))
            if not noted:
                notes.append(f"{dtype} is emulated on {target.name}: it runs, is stored and is costed as {runs_as}")
    for dtype in sorted({t.dtype for t in types if t.elements <= 1} - {t.dtype for t in types if t.elements > 1}):
        try:
            target.runs_as(dtype)
        except UnsupportedDtype:
            notes.append(
                f"{dtype} scalars (not tensors) appear; {target.name} has no {dtype}: they are folded or run on the host"
            )
    if not (notes or runs or factors):
        return plan
    return plan.with_(notes=plan.notes + tuple(notes), dtypes=tuple(runs), flop_factors=tuple(factors))
