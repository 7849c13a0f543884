"""What-if sweeps over `predict`: a grid of design points, every one costed by the same model as
`landscape predict` alone, a table of them, and the Pareto front of chosen objectives. The Python
API of `landscape sweep`:

    from landscape.sweep import load_spec, run_sweep
    result = run_sweep(load_spec("examples/sweep.toml"))
    result.front  # the points no other point beats on every objective

A spec (TOML) names the model, the axes and what to optimise:

    model = "llama-3.1-8b"
    [axes]                       # every combination is a point
    target = ["h100", "h200", "b200"]
    precision = ["bf16", "fp8"]
    batch = [1, 16, 64]
    input_len = [1024]
    output_len = [256]
    chips = [1, 2]               # optional: predict's fewest chips when absent
    "set.levels.hbm.bytes_per_s" = [3.35e12, 6.7e12]   # optional: a target knob (as --set)
    [objectives]                 # two or three, each "max" or "min"
    tokens_per_s_per_user = "max"
    throughput_tokens_per_s_per_chip = "max"
    [constraints]                # optional: a point that breaks one is off the front
    decode_step_s = { max = 0.05 }

The model is lowered once per distinct (precision, batch, input_len, output_len) and every target,
chip count and knob is costed on that lowering. A point the target cannot run (a precision it
lacks, too few chips for the weights) is kept in the table with its reason, never dropped.

Pareto front: point p is dominated when some feasible q is at least as good on every objective
and better on one; the front is the feasible points no point dominates (checked by brute force,
O(n^2): a grid of a few thousand points takes well under a second).
"""

from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from reference.errors import InvalidShape, LandscapeError, MalformedInput, UnknownName

LOWERING_AXES = ("precision", "batch", "input_len", "output_len")
COSTING_AXES = ("target", "chips")
KNOB = "set."  # an axis `set.SECTION.KEY` is a target quantity, as `--set SECTION.KEY=VALUE`
DEFAULTS = {"precision": "bf16", "batch": 1, "input_len": 2048, "output_len": 256, "chips": None}
METRICS = (
    "ttft_s",
    "decode_step_s",
    "e2e_latency_s",
    "tokens_per_s_per_user",
    "throughput_tokens_per_s",
    "throughput_tokens_per_s_per_chip",
    "chips_used",  # the chips the point ran on: its `chips` axis, or predict's fewest when that is absent
    "kv_cache_bytes",
)
SENSES = ("max", "min")
CONSTRAINT_BOUNDS = ("max", "min")
MAX_POINTS = 100_000  # beyond this a sweep runs for hours; refused unless the caller says yes


class SweepSpecError(MalformedInput):
    """A spec that cannot be swept: one line naming the key and what is valid."""


@dataclass(frozen=True)
class Spec:
    model: str
    axes: dict  # name -> tuple of values, in the spec's order
    objectives: dict  # metric -> "max" | "min"
    constraints: dict = field(default_factory=dict)  # metric -> {"max": x} / {"min": x}
    side: str = "jax"

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.axes.values())

    def points(self) -> list[dict]:
        """Every combination of the axes, the defaults filled in (the spec's order, last axis fastest)."""
        names = list(self.axes)
        return [{**DEFAULTS, **dict(zip(names, values))} for values in itertools.product(*self.axes.values())]


def _fail(where: str, problem: str) -> SweepSpecError:
    return SweepSpecError(f"sweep spec: {where}: {problem}")


def parse_spec(data: dict) -> Spec:
    """A Spec from a TOML table, every key checked (module doc).

    Raises:
        SweepSpecError: an unknown key, axis or metric; an empty or repeated axis value; fewer than
            two objectives or more than three; a sense other than max/min.
    """
    known = {"model", "axes", "objectives", "constraints", "side"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise _fail(unknown[0], f"unknown key; valid: {', '.join(sorted(known))}")
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise _fail("model", "give a model config's name (llama-3.1-8b) or a config.json path")
    axes_in = data.get("axes")
    if not isinstance(axes_in, dict) or not axes_in:
        raise _fail("axes", 'give at least one axis, e.g. target = ["h100", "h200"]')
    valid_axes = (*COSTING_AXES, *LOWERING_AXES)
    axes = {}
    for name, values in axes_in.items():
        if name not in valid_axes and not name.startswith(KNOB):
            raise _fail(f"axes.{name}", f"unknown axis; valid: {', '.join(valid_axes)}, or set.SECTION.KEY (a knob)")
        if not isinstance(values, list) or not values:
            raise _fail(f"axes.{name}", "give a non-empty list of values")
        if len({repr(v) for v in values}) != len(values):
            raise _fail(f"axes.{name}", "lists a value more than once")
        for v in values:
            _check_value(name, v)
        axes[name] = tuple(values)
    axes.setdefault("target", ("h100",))
    objectives = data.get("objectives")
    if not isinstance(objectives, dict) or not 2 <= len(objectives) <= 3:
        raise _fail("objectives", 'give two or three, e.g. tokens_per_s_per_user = "max"')
    for metric, sense in objectives.items():
        if metric not in METRICS:
            raise _fail(f"objectives.{metric}", f"unknown metric; valid: {', '.join(METRICS)}")
        if sense not in SENSES:
            raise _fail(f"objectives.{metric}", f"{sense!r}; valid: max, min")
    constraints = data.get("constraints", {})
    if not isinstance(constraints, dict):
        raise _fail("constraints", "give a table of metric = { max = X } or { min = X }")
    for metric, bound in constraints.items():
        if metric not in METRICS:
            raise _fail(f"constraints.{metric}", f"unknown metric; valid: {', '.join(METRICS)}")
        if not isinstance(bound, dict) or not bound or set(bound) - set(CONSTRAINT_BOUNDS):
            raise _fail(f"constraints.{metric}", "give { max = X } and/or { min = X }")
        for key, x in bound.items():
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                raise _fail(f"constraints.{metric}.{key}", f"{x!r} is not a finite number")
        if "max" in bound and "min" in bound and bound["min"] > bound["max"]:
            raise _fail(f"constraints.{metric}", "min is above max: no point can meet it")
    side = data.get("side", "jax")
    if side not in ("jax", "torch"):
        raise _fail("side", f"{side!r}; valid: jax, torch")
    return Spec(model, axes, dict(objectives), dict(constraints), side)


def _check_value(axis: str, value) -> None:
    if axis in ("target", "precision"):
        if not isinstance(value, str) or not value:
            raise _fail(f"axes.{axis}", f"{value!r} is not a name")
        return
    if axis.startswith(KNOB):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _fail(f"axes.{axis}", f"{value!r} is not a finite number")
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(f"axes.{axis}", f"{value!r} is not an integer >= 1")


def load_spec(path: str | Path) -> Spec:
    """parse_spec of a TOML file.

    Raises:
        SweepSpecError: the file cannot be read or is not TOML (naming the line), or parse_spec's.
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise SweepSpecError(f"sweep spec {path}: cannot be read ({err.strerror or err})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise SweepSpecError(f"sweep spec {path}: not TOML: {err}") from None
    return parse_spec(data)


def check_spec(spec: Spec) -> None:
    """Every name and knob checked before anything is lowered: the model, each target (a name or a
    file), each precision (and that some target runs it), each knob on each target.

    Raises:
        UnknownName, BadTargetFile, SweepSpecError.
    """
    from landscape.lowering import PRECISIONS
    from landscape.options import check_model, load_target
    from reference.dtypes import get_dtype

    check_model(spec.model)
    for precision in spec.axes.get("precision", (DEFAULTS["precision"],)):
        get_dtype(precision, PRECISIONS)
    knobs = {k[len(KNOB) :]: v for k, v in spec.axes.items() if k.startswith(KNOB)}
    for name in spec.axes["target"]:
        target = load_target(name)
        for key, values in knobs.items():
            for value in values:
                target.with_overrides({key: value})


def _metrics(prediction) -> dict:
    d = prediction.to_dict()
    out = {m: d[m] for m in METRICS if m in d}
    out["chips_used"] = d["chips"]
    out["throughput_tokens_per_s_per_chip"] = d["throughput_tokens_per_s"] / d["chips"]
    return out


def feasible(row: dict, constraints: dict) -> bool:
    """The point ran and meets every constraint."""
    if row.get("error"):
        return False
    return all(
        ("max" not in b or row[m] <= b["max"]) and ("min" not in b or row[m] >= b["min"])
        for m, b in constraints.items()
    )


def pareto_front(rows: list[dict], objectives: dict) -> list[dict]:
    """The rows no other row dominates (module doc); `rows` already feasible. Ties (equal on every
    objective) all stay."""

    def key(r):
        return tuple(r[m] if s == "max" else -r[m] for m, s in objectives.items())

    scored = [(key(r), r) for r in rows]
    return [
        r
        for k, r in scored
        if not any(all(a >= b for a, b in zip(o, k)) and any(a > b for a, b in zip(o, k)) for o, _ in scored)
    ]


@dataclass(frozen=True)
class SweepResult:
    spec: Spec
    rows: tuple  # every point: its axes, its metrics or its error
    front: tuple  # the Pareto front of the feasible points

    def to_dict(self) -> dict:
        return {
            "model": self.spec.model,
            "objectives": self.spec.objectives,
            "constraints": self.spec.constraints,
            "points": len(self.rows),
            "failed": sum(1 for r in self.rows if r.get("error")),
            "feasible": sum(1 for r in self.rows if feasible(r, self.spec.constraints)),
            "rows": list(self.rows),
            "front": list(self.front),
        }


def point_key(point: dict) -> str:
    """A point's identity in a table (what --resume matches): its axes' values."""
    return "|".join(f"{k}={point[k]}" for k in sorted(point) if k in AXIS_COLUMNS or k.startswith(KNOB))


AXIS_COLUMNS = (*COSTING_AXES, *LOWERING_AXES)


def run_sweep(spec: Spec, *, done: dict[str, dict] | None = None, progress=None, yes: bool = False) -> SweepResult:
    """Cost every point of `spec` (module doc); `done`: rows already costed, by point_key, kept as
    they are (--resume); `progress(i, n)` after each point.

    Raises:
        SweepSpecError: more than MAX_POINTS points without `yes`; check_spec's errors.
    """
    from hardware_models.predict import predict_inference
    from landscape.lowering import lower_for_serving
    from landscape.options import load_target
    from landscape.serve_cli import check_precision
    from reference.catalogue import get_entry

    if spec.size > MAX_POINTS and not yes:
        raise _fail("axes", f"{spec.size:,} points, above {MAX_POINTS:,}: narrow the axes, or pass --yes")
    check_spec(spec)
    done = done or {}
    points = spec.points()
    rows: list[dict] = []
    lowered: dict[tuple, object] = {}
    targets: dict[tuple, object] = {}
    for i, point in enumerate(points):
        key = point_key(point)
        if key in done:
            rows.append(done[key])
            continue
        row = {k: v for k, v in point.items() if k in AXIS_COLUMNS or k.startswith(KNOB)}
        knobs = tuple(sorted((k[len(KNOB) :], v) for k, v in point.items() if k.startswith(KNOB)))
        try:
            tkey = (point["target"], knobs)
            if tkey not in targets:
                base = load_target(point["target"])
                targets[tkey] = base.with_overrides(dict(knobs)) if knobs else base
            target = targets[tkey]
            check_precision(point["precision"], target)
            lkey = tuple(point[a] for a in LOWERING_AXES)
            if lkey not in lowered:
                entry = get_entry(spec.model)
                entry.resolve({"batch": point["batch"], "seq": point["input_len"]})
                entry.resolve(
                    {"batch": point["batch"], "seq": point["input_len"] + point["output_len"], "mode": "decode"}
                )
                lowered[lkey] = lower_for_serving(
                    spec.model, spec.side, point["batch"], point["input_len"], point["output_len"], point["precision"]
                )
            prefill, decode, cache = lowered[lkey]
            prediction = predict_inference(
                prefill,
                decode,
                target,
                model=spec.model,
                batch=point["batch"],
                input_len=point["input_len"],
                output_len=point["output_len"],
                kv_cache_bytes=cache,
                chips=point["chips"],
            )
            row.update(_metrics(prediction), error="")
        except (LandscapeError, InvalidShape, UnknownName) as err:  # a point the target cannot run: kept, said why
            row.update(dict.fromkeys(METRICS), error=str(err))
        rows.append(row)
        if progress:
            progress(i + 1, len(points))
    front = pareto_front([r for r in rows if feasible(r, spec.constraints)], spec.objectives)
    return SweepResult(spec, tuple(rows), tuple(front))


def columns(spec: Spec) -> list[str]:
    return [*spec.axes, *(a for a in AXIS_COLUMNS if a not in spec.axes), *METRICS, "error"]


def write_table(result: SweepResult, out: Path) -> tuple[Path, Path]:
    """points.csv (every point) and front.csv (the Pareto front) under `out`."""
    import csv

    out.mkdir(parents=True, exist_ok=True)
    names = columns(result.spec)
    paths = (out / "points.csv", out / "front.csv")
    for path, rows in zip(paths, (result.rows, result.front)):
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=names, extrasaction="ignore")
            writer.writeheader()
            writer.writerows({k: ("" if r.get(k) is None else r.get(k)) for k in names} for r in rows)
    return paths


def read_done(path: Path, spec: Spec) -> dict[str, dict]:
    """The rows of an earlier points.csv (--resume), typed back, by point_key; a row that failed is
    costed again. A file whose columns are not this spec's is refused.

    Raises:
        SweepSpecError: the file's header differs from this spec's columns.
    """
    import csv

    if not path.exists():
        return {}
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != columns(spec):
            raise SweepSpecError(
                f"--resume: {path} holds another sweep's columns; give another --out, or drop --resume"
            )
        rows = list(reader)
    done = {}
    for r in rows:
        if r["error"]:
            continue
        typed = {k: _typed(k, v) for k, v in r.items()}
        done[point_key({**DEFAULTS, **typed})] = typed
    return done


def _typed(key: str, text: str):
    if key in ("target", "precision", "error"):
        return text
    if text == "":
        return None
    if key in ("batch", "input_len", "output_len", "chips", "chips_used", "kv_cache_bytes"):
        return int(text)
    return float(text)
