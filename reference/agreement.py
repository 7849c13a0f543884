"""Three-way numerical agreement: each side against the float64 reference, and side against side.

`check_agreement` runs one catalogue entry; `compare_outputs` judges any outputs, so users can
check their own modules against their own reference.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from reference.catalogue import get_entry
from reference.dtypes import numpy_dtype
from reference.errors import InvalidShape, TooLargeToRun, WeightMismatch
from reference.inputs import Case, check_seed, make_case
from reference.spec import Entry, Value
from reference.tolerance import CROSS_SIDE_FACTOR, Tolerance, tolerance_for

# Numerical runs hold the weights three times (float64 reference, PyTorch, JAX); 150M
# parameters keeps that near 2.4 GB and admits gpt2-small (124M). Lowering needs no weights.
RUN_PARAMETER_LIMIT = 150_000_000
# What PyTorch and JAX themselves take once imported (about 0.6 GB resident measured; rounded up).
FRAMEWORK_BYTES = 1_000_000_000
SIDE_ELEMENT_BYTES = 4  # a side holds its tensors in at most float32 (16-bit sides accumulate in it)

Outputs = tuple[np.ndarray, ...]
Runner = Callable[[Case], Outputs]


@dataclass(frozen=True)
class ErrorStats:
    """max_abs = max|a - b|; max_rel = max_abs / max|b| (normwise relative error)."""

    max_abs: float
    max_rel: float
    bound: float

    @property
    def ok(self) -> bool:
        return bool(self.max_abs <= self.bound)

    def to_dict(self) -> dict:
        """JSON-ready; an error that is not finite (a side returned NaN or infinity, or a nonzero
        error against an all-zero reference) is null, never NaN or Infinity, and `ok` is false."""
        finite = lambda v: v if math.isfinite(v) else None  # noqa: E731
        return {"max_abs": finite(self.max_abs), "max_rel": finite(self.max_rel), "bound": self.bound, "ok": self.ok}


def error_stats(actual: Outputs, expected: Outputs, tolerance: Tolerance, term_scale: float = 0.0) -> ErrorStats:
    """Compare output tuples elementwise in float64; the worst output decides. The bound's scale is
    max|expected|, or `term_scale` where that is larger: the terms of a sum that cancels (an
    entry's `terms`), whose stored roundings the error scales with.

    Raises:
        InvalidShape: the tuples differ in length or an output differs in shape.
    """
    if len(actual) != len(expected):
        raise InvalidShape("outputs", "count", len(actual), f"expected {len(expected)} outputs")
    worst_abs, worst_rel, worst_bound, worst_margin = 0.0, 0.0, tolerance.bound(0.0), -np.inf
    for a, b in zip(actual, expected):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            raise InvalidShape("outputs", "shape", a.shape, f"expected {b.shape}")
        if a.size == 0:
            continue
        scale = float(np.max(np.abs(b)))
        max_abs = float(np.max(np.abs(a - b))) if np.isfinite(a).all() else float("inf")
        bound = tolerance.bound(max(scale, term_scale))
        if max_abs - bound > worst_margin:
            worst_margin = max_abs - bound
            worst_abs, worst_bound = max_abs, bound
            worst_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    return ErrorStats(worst_abs, worst_rel, worst_bound)


@dataclass(frozen=True)
class Agreement:
    """The result of a three-way check, JSON-ready through `to_dict`.

    `reference` and `outputs` keep the arrays that were compared (float64), for inspection;
    `to_dict` leaves them out.
    """

    kernel: str
    dtype: str
    shapes: Mapping[str, Value]
    seed: int
    errors: Mapping[str, ErrorStats]
    tolerance: Tolerance
    reference: Outputs = field(default=(), repr=False, compare=False)
    outputs: Mapping[str, Outputs] = field(default_factory=dict, repr=False, compare=False)
    notes: tuple[str, ...] = ()
    term_scale: float = 0.0

    def bound(self, reference: np.ndarray) -> float:
        """The bound one output is held to against the reference (see `error_stats`)."""
        return self.tolerance.bound(max(float(np.abs(reference).max()) if reference.size else 0.0, self.term_scale))

    @property
    def ok(self) -> bool:
        return all(e.ok for e in self.errors.values())

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "dtype": self.dtype,
            "shapes": dict(self.shapes),
            "seed": self.seed,
            "errors": {k: v.to_dict() for k, v in self.errors.items()},
            "tolerance": {
                **self.tolerance.to_dict(),
                "cross_side_factor": CROSS_SIDE_FACTOR,
                "term_scale": self.term_scale,
            },
            "ok": self.ok,
            "notes": list(self.notes),
        }


def compare_outputs(name: str, dtype: str, reference: Outputs, sides: Mapping[str, Outputs], **meta) -> Agreement:
    """Judge each side against the reference, and every pair of sides against each other.

    Args:
        name: a label for the report.
        dtype: the run's dtype; picks the row of the tolerance table.
        reference: float64 outputs.
        sides: side name -> outputs, e.g. {"torch": (...), "jax": (...)}.
        meta: shapes and seed, for the report; reduction, the program's longest sum, which widens
            the bound past the table's domain (`tolerance_for`); term_scale, the terms of a sum that
            cancels (`error_stats`).
    """
    tol = tolerance_for(dtype, meta.get("reduction", 0))
    terms = meta.get("term_scale", 0.0)
    errors = {f"{side}_vs_ref": error_stats(out, reference, tol, terms) for side, out in sides.items()}
    names = list(sides)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            errors[f"{a}_vs_{b}"] = error_stats(sides[a], sides[b], tol.widened(CROSS_SIDE_FACTOR), terms)
    return Agreement(
        name, dtype, meta.get("shapes", {}), meta.get("seed", 0), errors, tol, reference, dict(sides), term_scale=terms
    )


def run_memory_bytes(entry: Entry, shapes: Mapping[str, Value], dtype: str) -> int:
    """An estimate of the memory a numerical run of `entry` at resolved `shapes` takes, simple but
    honest (an upper-side estimate, not a measurement):

        bytes = (b + 8 + 2 * 4) * N_io + (8 + 2 * 4 + 16) * N_big + FRAMEWORK_BYTES

    where N_io is the element count of the inputs and weights, N_big that of the outputs and the
    largest intermediates (`Entry.largest`; the largest input when the entry declares none) and b the
    dtype's bytes: the case holds inputs and weights in the dtype (b); the float64 reference widens
    them and computes its outputs and intermediates in float64 (8); each of the two sides holds its
    own copy of all of them in at most float32 (2 * 4); the comparison widens each output to float64
    and takes a difference (16); and PyTorch and JAX take about a gigabyte themselves.
    """
    b = np.dtype(numpy_dtype(dtype)).itemsize
    specs = {**entry.inputs(shapes), **entry.weights(shapes)}
    n_io = sum(math.prod(s.shape) for s in specs.values())
    big = (
        entry.largest(shapes).values()
        if entry.largest
        else [max((s.shape for s in specs.values()), key=math.prod, default=())]
    )
    n_big = sum(math.prod(shape) for shape in big)
    return (b + 8 + 2 * SIDE_ELEMENT_BYTES) * n_io + (8 + 2 * SIDE_ELEMENT_BYTES + 16) * n_big + FRAMEWORK_BYTES


def available_memory_bytes() -> int | None:
    """Memory this process can still take, read now: /proc/meminfo's MemAvailable (sysconf's
    available pages elsewhere), capped by a cgroup v2 limit (memory.max - memory.current) when
    one is set; None when the system does not say."""
    available = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    try:
        limit = open("/sys/fs/cgroup/memory.max").read().strip()
        if limit != "max":
            used = int(open("/sys/fs/cgroup/memory.current").read())
            available = min(available, max(int(limit) - used, 0))
    except (OSError, ValueError):
        pass
    return available


def check_run_memory(entry: Entry, shapes: Mapping[str, Value], dtype: str) -> int:
    """The run's memory estimate (`run_memory_bytes`), refused when it exceeds what is available.

    Raises:
        TooLargeToRun: with the estimate and the limit.
    """
    needed = run_memory_bytes(entry, shapes, dtype)
    available = available_memory_bytes()
    if available is not None and needed > available:
        raise TooLargeToRun(
            entry.name, entry.n_weights(shapes), RUN_PARAMETER_LIMIT, needed_bytes=needed, available_bytes=available
        )
    return needed


def given_weights(entry: Entry, shapes: Mapping[str, Value], weights: Mapping[str, np.ndarray], dtype: str) -> dict:
    """`weights` checked against the entry's specs and rounded once to the run's dtype.

    Raises:
        WeightMismatch: a name the entry lacks or lacks a weight of, or a shape that differs.
    """
    specs = entry.weights(shapes)
    if set(specs) != set(weights):
        raise WeightMismatch(set(specs) - set(weights), set(weights) - set(specs))
    wrong = sorted(k for k, s in specs.items() if tuple(np.shape(weights[k])) != tuple(s.shape))
    if wrong:
        raise WeightMismatch([], [], shapes={k: (np.shape(weights[k]), tuple(specs[k].shape)) for k in wrong})
    target = numpy_dtype(dtype)
    return {
        k: np.asarray(v).astype(np.float32).astype(target) if np.asarray(v).dtype != target else np.asarray(v)
        for k, v in weights.items()
    }


def check_agreement(
    name: str,
    shapes: Mapping[str, Value] | None = None,
    dtype: str = "float32",
    seed: int = 0,
    *,
    runners: Mapping[str, Runner],
    weights: Mapping[str, np.ndarray] | None = None,
) -> Agreement:
    """Run a catalogue entry on the reference and on every side, on identical inputs.

    Args:
        name: a kernel or model name (see `reference.catalogue.CATALOGUE`).
        shapes: overrides of the entry's shape parameters (strings or values).
        dtype: "float32", "bfloat16" or "float16".
        seed: input generator seed.
        runners: side name -> function from a `Case` to its outputs, e.g.
            {"torch": pytorch_side.run_case, "jax": jax_side.run_case}.
        weights: canonical weights to run instead of seeded ones (a checkpoint's, from
            reference/hf_weights.py), rounded to `dtype`; their names and shapes must be the entry's.

    Raises:
        UnknownName, InvalidShape, UnsupportedDtype: bad input, one line each.
        TooLargeToRun: more than RUN_PARAMETER_LIMIT weights, or more memory than is available
            (`run_memory_bytes`), refused before anything is allocated.
        MalformedInput: a seed outside [0, 2**32-1].
        WeightMismatch: `weights` whose names or shapes are not the entry's.
    """
    entry = get_entry(name)
    resolved = entry.resolve(shapes)
    entry.check_dtype(dtype)
    seed = check_seed(seed)
    n_params = entry.n_weights(resolved)
    if n_params > RUN_PARAMETER_LIMIT:
        raise TooLargeToRun(entry.name, n_params, RUN_PARAMETER_LIMIT)
    check_run_memory(entry, resolved, dtype)
    case = make_case(entry, resolved, dtype, seed)
    if weights is not None:
        case = dataclasses.replace(case, weights=given_weights(entry, resolved, weights, dtype))
    outputs = {side: tuple(run(case)) for side, run in runners.items()}
    reduction = entry.reduction(resolved) if entry.reduction else 0
    return compare_outputs(
        entry.name,
        dtype,
        case.reference(),
        outputs,
        shapes=resolved,
        seed=seed,
        reduction=reduction,
        term_scale=case.term_scale(),
    )
