"""The request stream a serving simulation runs: lengths and arrivals.

A request is (arrival time or None, prompt tokens, output tokens). Lengths are fixed, drawn from
a distribution around the given means, or read from a trace; arrivals are a closed loop at a
fixed concurrency (a finished request is replaced at once, as the engines' benchmark clients do:
arrival None), an open loop at a rate (Poisson), or the trace's own times.

    fixed        every request input_len in, output_len out
    uniform      each length drawn uniformly from [L/2, 3L/2] (rounded, at least 1): mean L
    exponential  each length 1 + an exponential draw of mean L - 1: mean L, a long tail

Poisson arrivals: gaps drawn from an exponential of mean 1 / rate; the first request at its gap.
A trace is CSV (a header row) or JSON Lines, with input_len and output_len on every row and
arrival_s (seconds from the start, non-decreasing) on all rows or none.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reference.errors import InvalidShape, MalformedInput

DISTRIBUTIONS = ("fixed", "uniform", "exponential")
TRACE_COLUMNS = ("arrival_s", "input_len", "output_len")


@dataclass(frozen=True)
class RequestSpec:
    input_len: int
    output_len: int
    arrival_s: float | None = None  # None: closed loop (arrives when a slot frees)


def draw_lengths(n: int, input_len: int, output_len: int, dist: str, rng: np.random.Generator) -> list[tuple[int, int]]:
    """n (input, output) pairs of the distribution (see module doc)."""
    if dist == "fixed":
        return [(input_len, output_len)] * n

    def draw(mean: int) -> np.ndarray:
        if dist == "uniform":
            return np.maximum(1, np.rint(rng.uniform(mean / 2, 3 * mean / 2, n))).astype(int)
        return 1 + np.rint(rng.exponential(max(mean - 1, 0), n)).astype(int) if mean > 1 else np.ones(n, int)

    if dist not in DISTRIBUTIONS:
        raise MalformedInput(f"unknown --length-dist {dist!r}; valid: {', '.join(DISTRIBUTIONS)}")
    ins, outs = draw(input_len), draw(output_len)
    return [(int(a), int(b)) for a, b in zip(ins, outs)]


def poisson_arrivals(n: int, rate: float, rng: np.random.Generator) -> list[float]:
    """Arrival times of n requests at `rate` per second (exponential gaps)."""
    if not (rate > 0 and math.isfinite(rate)):
        raise InvalidShape("serve", "rate", rate, "requests per second must be a finite number > 0")
    return [float(t) for t in np.cumsum(rng.exponential(1 / rate, n))]


def _positive_int(value, where: str, column: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise MalformedInput(f"{where}: {column} must be an integer >= 1, got {value!r}") from None
    if number < 1:
        raise MalformedInput(f"{where}: {column} must be an integer >= 1, got {value!r}")
    return number


def read_trace(path: str) -> list[RequestSpec]:
    """The requests of a trace file (CSV with a header, or JSON Lines: see module doc).

    Raises:
        MalformedInput: unreadable, empty, a missing column, or a bad row (naming its line).
    """
    file = Path(path)
    if not file.is_file():
        raise MalformedInput(
            f"--trace {path}: no such file" if not file.exists() else f"--trace {path}: not a regular file"
        )
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MalformedInput(f"--trace {path}: cannot be read ({exc.__class__.__name__}: {exc})") from None
    lines = text.splitlines()
    rows: list[tuple[int, dict]] = []
    if lines and lines[0].lstrip().startswith("{"):
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MalformedInput(f"{path} line {number}: not a JSON object ({exc.msg})") from None
            if not isinstance(row, dict):
                raise MalformedInput(f"{path} line {number}: not a JSON object")
            rows.append((number, row))
    else:
        reader = csv.DictReader(lines)
        missing = [c for c in TRACE_COLUMNS[1:] if c not in (reader.fieldnames or [])]
        if missing:
            raise MalformedInput(
                f"{path}: the header lacks {', '.join(missing)}; columns: {', '.join(TRACE_COLUMNS)} "
                "(arrival_s optional)"
            )
        rows = [(number, row) for number, row in enumerate(reader, 2) if any((v or "").strip() for v in row.values())]
    if not rows:
        raise MalformedInput(f"{path}: no requests; give rows of {', '.join(TRACE_COLUMNS)}")
    timed = ["arrival_s" in row and str(row["arrival_s"]).strip() != "" for _, row in rows]
    if any(timed) and not all(timed):
        number = rows[timed.index(False)][0]
        raise MalformedInput(f"{path} line {number}: arrival_s is missing; give it on every row or on none")
    specs, last = [], 0.0
    for (number, row), has_time in zip(rows, timed):
        where = f"{path} line {number}"
        for column in TRACE_COLUMNS[1:]:
            if column not in row:
                raise MalformedInput(f"{where}: {column} is missing")
        arrival = None
        if has_time:
            try:
                arrival = float(row["arrival_s"])
            except (TypeError, ValueError):
                raise MalformedInput(
                    f"{where}: arrival_s must be a number of seconds >= 0, got {row['arrival_s']!r}"
                ) from None
            if not (math.isfinite(arrival) and arrival >= 0):
                raise MalformedInput(f"{where}: arrival_s must be a number of seconds >= 0, got {row['arrival_s']!r}")
            if arrival < last:
                raise MalformedInput(
                    f"{where}: arrival_s {arrival} is before the previous row's {last}; sort the trace by time"
                )
            last = arrival
        specs.append(
            RequestSpec(
                _positive_int(row["input_len"], where, "input_len"),
                _positive_int(row["output_len"], where, "output_len"),
                arrival,
            )
        )
    return specs
