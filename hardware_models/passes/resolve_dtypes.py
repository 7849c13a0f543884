"""resolve_dtypes: check every floating element type against what the target runs.

The type each element type runs as is decided here, once, and recorded in the plan
(`Plan.dtypes`, read through `plan.runs_as`): an emulated type (f16 on a TPU runs as f32) is
tiled, stored, counted in bytes and costed as the type it runs as by every later pass and cost
model, and noted; a tensor of a type the target neither runs nor emulates (f64 on a TPU)
is an error. Scalars are exempt: torch-mlir computes Python floats as f64[] scalars, which a
compiler folds or runs on the host; they are noted.
"""

from __future__ import annotations

from hardware_models.plan import Plan
from hardware_models.target import Target
from reference.errors import UnsupportedDtype
from reference.ir import Module


def resolve_dtypes(module: Module, plan: Plan, target: Target) -> Plan:
    """Raise UnsupportedDtype for a type the target lacks; note each emulated one.

    Raises:
        UnsupportedDtype: naming the type and the target's native and emulated types.
    """
    types = {t for p in plan.ops for t in (*p.op.operand_types, *p.op.result_types)}
    notes = []
    runs = []
    for dtype in sorted({t.dtype for t in types if t.elements > 1}):
        try:
            runs_as = target.runs_as(dtype)
        except UnsupportedDtype as err:
            first = next(p for p in plan.ops if any(t.dtype == dtype and t.elements > 1 for t in p.op.result_types + p.op.operand_types))
            where = first.op.origin.scope or first.op.origin.source or first.instance
            raise UnsupportedDtype(f"target {target.name} ({first.op.name} at {where})", dtype, err.valid) from None
        if runs_as != dtype:
            runs.append((dtype, runs_as))
            notes.append(f"{dtype} is emulated on {target.name}: it runs, is stored and is costed as {runs_as}")
    for dtype in sorted({t.dtype for t in types if t.elements <= 1} - {t.dtype for t in types if t.elements > 1}):
        try:
            target.runs_as(dtype)
        except UnsupportedDtype:
            notes.append(f"{dtype} scalars (not tensors) appear; {target.name} has no {dtype}: they are folded or run on the host")
    return plan.with_(notes=plan.notes + tuple(notes), dtypes=tuple(runs)) if notes else plan
