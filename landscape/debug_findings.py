"""What `landscape debug` finds, as data, and how it is judged and printed: each rung's error
against its gate (the tolerance policy's own check), the sites of ops, the finding, the fault
list, and the text rendering. The ladder itself is landscape/debug.py.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from reference.faults import FAULTS, LAYERS, RUNG_NAMES, get_fault


@dataclass
class Rung:
    """One rung's result against R0: its worst normwise error, the gate, and whether ops differ from the rung below."""

    rung: str
    error: float | None = None
    gate: float | None = None
    ops_differ: int = 0
    note: str = ""
    ran: bool = True

    @property
    def ok(self) -> bool:
        return self.ran and (self.error is None or self.gate is None or self.error <= self.gate) and not self.ops_differ

    def to_dict(self) -> dict:
        finite = lambda v: v if v is None or math.isfinite(v) else None  # noqa: E731
        return {
            "rung": self.rung,
            "what": RUNG_NAMES[self.rung],
            "ran": self.ran,
            "error": finite(self.error),
            "gate": self.gate,
            "ops_differ": self.ops_differ,
            "ok": self.ok,
            "note": self.note,
        }


@dataclass
class OpSite:
    key: str
    op: str
    scope: str = ""
    source: str = ""

    def text(self) -> str:
        where = ", ".join(
            x for x in (self.scope and f"scope {self.scope}", self.source and f"source {self.source}") if x
        )
        return f"{self.op} {self.key}" + (f" ({where})" if where else "")


@dataclass
class Finding:
    program: str
    side: str
    target: str
    dtype: str
    faults: tuple[str, ...]
    rungs: list[Rung] = field(default_factory=list)
    first: str | None = None
    origin: OpSite | None = None
    manifests: list[OpSite] = field(default_factory=list)
    reaches_output: bool | None = None
    bisect: str = ""
    noise_floor: float | None = None
    events: list[str] = field(default_factory=list)
    repro: str = ""
    capture_error: str = ""
    not_planted: list[str] = field(default_factory=list)
    shrunk: str = ""
    specialized: str = ""  # R2: the graph captured at a second shape is another program (landscape.debug._recapture)
    accumulated: bool = False  # no op differs when fed the rung below's inputs: the origin is where it first shows

    @property
    def layer(self) -> str:
        if self.first is None:
            return ""
        if self.capture_error:
            return "2 graph capture"
        planted = [get_fault(f) for f in self.faults if get_fault(f).rung == self.first]
        if planted:
            return f"{planted[0].layer} {planted[0].layer_record.name}"
        layer = next((la for la in LAYERS if self.first in la.rung.split("/")), None)
        return f"{layer.number} {layer.name}" if layer else ""

    def to_dict(self) -> dict:
        site = lambda s: dataclasses.asdict(s) if s else None  # noqa: E731
        return {
            "program": self.program,
            "side": self.side,
            "target": self.target,
            "dtype": self.dtype,
            "faults": list(self.faults),
            "rungs": [r.to_dict() for r in self.rungs],
            "first_divergent_rung": self.first,
            "layer": self.layer,
            "origin": site(self.origin),
            "manifests": [site(m) for m in self.manifests],
            "reaches_output": self.reaches_output,
            "bisect": self.bisect,
            "noise_floor": self.noise_floor,
            "events": self.events,
            "repro": self.repro,
            "shrunk_repro": self.shrunk,
            "accumulated": self.accumulated,
            "capture_error": self.capture_error,
            "specialized": self.specialized,
            "not_planted": self.not_planted,
        }


# -- comparisons
def measure(actual, expected, tol) -> tuple[float, float]:
    """(error, gate) of the worst output, both relative to the output's scale max|b|: error is
    max|a - b| / max|b| (normwise), gate the tolerance policy's bound at that scale, atol + rtol
    max|b|, over max|b|; error <= gate exactly when the outputs agree. An all-zero output is
    measured absolutely; a value that is not finite where the other is has an infinite error."""
    worst = (0.0, tol.bound(1.0), -math.inf)
    for a, b in zip(actual, expected):
        with np.errstate(invalid="ignore", over="ignore"):  # a NaN or infinity widened is still one
            a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            return math.inf, tol.bound(1.0)
        if not a.size:
            continue
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        if same.all():
            continue
        if not np.isfinite(a[~same]).all() or not np.isfinite(b[~same]).all():
            return math.inf, tol.bound(1.0)
        scale = float(np.max(np.abs(b)))
        err = float(np.max(np.abs(a[~same] - b[~same])))
        ratio = err / tol.bound(scale)
        if ratio > worst[2]:
            worst = (err / scale, tol.bound(scale) / scale, ratio) if scale > 0 else (err, tol.atol, ratio)
    return worst[0], worst[1]


def gate(dtype: str, reduction: int = 0):
    """The tolerance a rung's outputs must meet (reference.tolerance, for the program's longest reduction)."""
    from reference.tolerance import tolerance_for

    return tolerance_for(dtype, reduction)


def op_differs(a: tuple, b: tuple, tol) -> bool:
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype.kind in "biu" or y.dtype.kind in "biu":
            if not np.array_equal(x, y):
                return True
        else:
            error, limit = measure((x,), (y,), tol)
            if error > limit:
                return True
    return False


def differing_ops(trace: dict, below: dict, bound) -> list[str]:
    return [k for k, v in trace.items() if k in below and op_differs(v, below[k], bound)]


def list_faults() -> list[dict]:
    return [
        {
            "name": f.name,
            "layer": f.layer,
            "layer_name": f.layer_record.name,
            "rung": f.rung,
            "families": list(f.families) or ["all"],
            "description": f.description,
            "shows_on": f.shows_on,
        }
        for f in FAULTS
    ]


def render(finding: Finding) -> str:
    """The finding as text."""
    skipped = {n.split(":", 1)[0] for n in finding.not_planted}
    planted = [f for f in finding.faults if f not in skipped]
    lines = [
        f"debug {finding.program} ({finding.side}, {finding.dtype}) on {finding.target}"
        + (f", planted: {', '.join(planted)}" if planted else "")
        + (
            f", not planted: {', '.join(f for f in finding.faults if f in skipped)}"
            if skipped & set(finding.faults)
            else ""
        )
    ]
    for r in finding.rungs:
        if not r.ran:
            lines.append(f"  {r.rung} {RUNG_NAMES[r.rung]}: not run ({r.note})")
            continue
        err = "—" if r.error is None else (f"{r.error:.3g}" if math.isfinite(r.error) else "not finite")
        below = "of the graph change at a second shape" if r.rung == "R2" else "differ from the rung below"
        ops = f", {r.ops_differ} op(s) {below}" if r.ops_differ else ""
        verdict = "ok" if r.ok else "DIVERGES"
        limit = "" if r.gate is None else f" (gate {r.gate:.3g})"
        lines.append(
            f"  {r.rung} {RUNG_NAMES[r.rung]}: error {err}{limit}{ops}: {verdict}"
            + (f"  [{r.note}]" if r.note and r.rung not in ("R0",) else "")
        )
    if finding.noise_floor is not None:
        lines.append(
            f"  noise floor: the lowered program in {finding.dtype} against float64, {finding.noise_floor:.3g}"
        )
    if finding.first is None:
        lines.append("no rung diverges: the result agrees with the reference at every layer of the stack")
    else:
        lines.append(f"first divergent rung: {finding.first} ({RUNG_NAMES[finding.first]}), layer {finding.layer}")
        if finding.capture_error:
            lines.append(f"  {finding.capture_error}")
        if finding.specialized and finding.first == "R2":
            lines.append(f"  {finding.specialized}")
        if finding.origin and finding.accumulated:
            lines.append(
                f"  no op is wrong on its own (each, fed the rung below's inputs, is within the gate): the rung's "
                f"roundings accumulate, first beyond the gate at {finding.origin.text()}"
            )
        elif finding.origin:
            lines.append(f"  originates at {finding.origin.text()}")
        if finding.manifests:
            first, last = finding.manifests[0], finding.manifests[-1]
            lines.append(f"  shows in {len(finding.manifests)} op(s), first {first.text()}, last {last.text()}")
        if finding.reaches_output is not None:
            lines.append(
                "  reaches the output"
                if finding.reaches_output
                else "  does not reach the output: the end-to-end check passes, and the bug is real"
            )
        if finding.bisect:
            lines.append(f"  bisect: {finding.bisect}")
        if finding.repro:
            lines.append(
                f"  repro: landscape debug --from-file {finding.repro} --target {finding.target}"
                + "".join(f" --inject {f}" for f in finding.faults)
            )
        if finding.shrunk:
            lines.append(
                f"  shrunk: {finding.shrunk} (main cut short, returning the op it ends at; it still diverges at {finding.first})"
            )
    for e in finding.events:
        lines.append(f"  event: {e}")
    for n in finding.not_planted:
        lines.append(f"  not planted: {n}")
    return "\n".join(lines)
