"""Where two lowerings of the same program differ structurally, and where in the source.

Both sides compute the same contractions (their dot and convolution FLOPs are equal, by
test), so contractions anchor the comparison: each side's entry function is cut into
segments at its contractions, segment k of one side is compared with segment k of the
other, and every segment whose op histogram differs is reported with both sides'
provenance and a reason: transposes, materialized constant broadcasts, a composite op kept
whole on one side and decomposed on the other, different reductions, f64 intermediates, or
type conversions (upcasts) on one side only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from reference.ir.from_stablehlo import category, is_composite
from reference.ir.graph import Module, Op


@dataclass(frozen=True)
class Divergence:
    segment: int
    after: str  # the contraction that opens the segment ("start" for the first)
    reasons: tuple[str, ...]
    ops: dict[str, dict[str, int]]  # side -> op name -> count, for ops whose counts differ
    scopes: dict[str, tuple[str, ...]]  # side -> provenance of the differing ops

    def to_dict(self) -> dict:
        return {
            "segment": self.segment,
            "after": self.after,
            "reasons": list(self.reasons),
            "ops": self.ops,
            "scopes": {k: list(v) for k, v in self.scopes.items()},
        }


@dataclass(frozen=True)
class PathDiff:
    sides: tuple[str, str]
    histogram: dict[str, tuple[int, int]]  # op name -> (count on side a, count on side b)
    divergences: tuple[Divergence, ...]

    def to_dict(self) -> dict:
        return {
            "sides": list(self.sides),
            "histogram": {k: list(v) for k, v in sorted(self.histogram.items())},
            "divergences": [d.to_dict() for d in self.divergences],
        }


def _inline(module: Module, ops) -> list[Op]:
    """The entry's ops with calls inlined (JAX wraps sub-computations in func.call)."""
    out = []
    for op in ops:
        if op.callee:
            out.extend(_inline(module, module.function(op.callee).ops))
        else:
            out.append(op)
    return out


def _segments(module: Module) -> list[tuple[str, list[Op]]]:
    segments: list[tuple[str, list[Op]]] = [("start", [])]
    for op in _inline(module, module.main.ops):
        if category(op) == "contraction":
            shapes = " x ".join(str(t) for t in op.operand_types)
            segments.append((f"{op.short_name}({shapes})", []))
        elif op.short_name != "return":
            segments[-1][1].append(op)
    return segments


def _is_materialized_splat(op: Op) -> bool:
    return op.splat is not None and op.result_types[0].elements > 1


def _reasons(a: list[Op], b: list[Op]) -> tuple[str, ...]:
    reasons = []
    count = lambda ops, pred: sum(1 for o in ops if pred(o))
    if count(a, lambda o: o.short_name == "transpose") != count(b, lambda o: o.short_name == "transpose"):
        reasons.append("transposes (weight or layout) on one path only")
    if count(a, _is_materialized_splat) != count(b, _is_materialized_splat):
        reasons.append("constants materialized at full shape instead of broadcast from a scalar")
    chlo_a = {o.short_name for o in a if is_composite(o)}
    chlo_b = {o.short_name for o in b if is_composite(o)}
    if chlo_a != chlo_b:
        reasons.append(
            f"composite op kept whole on one path ({', '.join(sorted(chlo_a ^ chlo_b))}), decomposed on the other"
        )
    if count(a, lambda o: o.short_name == "reduce") != count(b, lambda o: o.short_name == "reduce"):
        reasons.append("different reductions (a decomposed softmax or norm)")
    f64 = lambda ops: any(t.dtype == "f64" for o in ops for t in o.result_types)  # noqa: E731
    if f64(a) != f64(b):
        reasons.append("f64 intermediates on one path only")
    if count(a, lambda o: o.short_name == "convert") != count(b, lambda o: o.short_name == "convert"):
        reasons.append("type conversions (upcasts and downcasts) on one path only")
    if not reasons:
        reasons.append("different elementwise decomposition")
    return tuple(reasons)


def diff_modules(a: Module, b: Module, sides: tuple[str, str] = ("torch", "jax")) -> PathDiff:
    """Compare two IR modules of the same program (see module docstring)."""
    hist_a = Counter(o.name for o in _inline(a, a.main.ops) if o.short_name != "return")
    hist_b = Counter(o.name for o in _inline(b, b.main.ops) if o.short_name != "return")
    histogram = {name: (hist_a.get(name, 0), hist_b.get(name, 0)) for name in hist_a.keys() | hist_b.keys()}
    divergences = []
    seg_a, seg_b = _segments(a), _segments(b)
    for k in range(max(len(seg_a), len(seg_b))):
        label, ops_a = seg_a[k] if k < len(seg_a) else ("missing", [])
        _, ops_b = seg_b[k] if k < len(seg_b) else ("missing", [])
        ca, cb = Counter(o.name for o in ops_a), Counter(o.name for o in ops_b)
        if ca == cb:
            continue
        differing = {n for n in ca.keys() | cb.keys() if ca[n] != cb[n]}
        scopes = {
            side: tuple(
                dict.fromkeys(w for o in ops if o.name in differing for w in [o.origin.source or o.origin.scope] if w)
            )[:6]
            for side, ops in zip(sides, (ops_a, ops_b))
        }
        divergences.append(
            Divergence(
                k,
                label,
                _reasons(ops_a, ops_b),
                {side: {n: c[n] for n in sorted(differing)} for side, c in zip(sides, (ca, cb))},
                scopes,
            )
        )
    return PathDiff(sides, histogram, tuple(divergences))
