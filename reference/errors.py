"""One exception hierarchy for every error a user can cause.

Each error formats a single line: what was wrong, the bad value, and the valid choices.
The CLI catches `LandscapeError` alone, prints that line and exits with code 2; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def _choices(valid: Iterable[str], bad: str | None = None) -> str:
    valid = list(valid)
    text = ", ".join(valid)
    if bad is not None:
        folded = [v for v in valid if v.casefold() == bad.casefold()]  # 'H100' for 'h100'
        close = folded or difflib.get_close_matches(bad, valid, n=1)
        if close:
            return f"did you mean {close[0]!r}? valid: {text}"
    return f"valid: {text}"


class LandscapeError(Exception):
    """Base of every error that bad input can cause."""


class UnknownName(LandscapeError):
    """A kernel, model, dtype, parameter or choice that does not exist."""

    def __init__(self, kind: str, name: str, valid: Iterable[str]):
        self.kind, self.name, self.valid = kind, name, tuple(valid)
        super().__init__(f"unknown {kind} {name!r}; {_choices(self.valid, name)}")


class InvalidShape(LandscapeError):
    """A shape parameter whose value breaks its constraint."""

    def __init__(self, entry: str, param: str, value: object, rule: str):
        self.entry, self.param, self.value, self.rule = entry, param, value, rule
        super().__init__(f"{entry}: {param}={value} is invalid; {rule}")


class UnsupportedDtype(LandscapeError):
    """A dtype that the entry or the target does not support."""

    def __init__(self, entry: str, dtype: str, valid: Iterable[str]):
        self.entry, self.dtype, self.valid = entry, dtype, tuple(valid)
        super().__init__(f"{entry}: dtype {dtype!r} is not supported; {_choices(self.valid, dtype)}")


class TooLargeToRun(LandscapeError):
    """A numerical run too large to hold: more weights than the run budget, or more memory than the
    machine has available (estimated before anything is allocated)."""

    def __init__(
        self,
        entry: str,
        n_params: int,
        limit: int,
        *,
        needed_bytes: int | None = None,
        available_bytes: int | None = None,
    ):
        self.entry, self.n_params, self.limit = entry, n_params, limit
        self.needed_bytes, self.available_bytes = needed_bytes, available_bytes
        if needed_bytes is None:
            super().__init__(
                f"{entry}: {n_params:,} parameters is too large to run numerically "
                f"(limit {limit:,}); choose fewer layers (--shape layers=N) or a smaller model such as tiny or gpt2-small"
            )
        else:
            super().__init__(
                f"{entry}: a numerical run needs about {_bytes(needed_bytes)} (estimate: inputs, weights, outputs and "
                f"the largest intermediate on the float64 reference and both sides), more than the {_bytes(available_bytes)} "
                f"of memory available now; choose smaller shapes (--shape), or use estimate/compare, which need no arrays"
            )


def _bytes(n: int | None) -> str:
    """Bytes with a decimal unit."""
    from reference.units import format_bytes

    return format_bytes(float(n or 0))


class BeyondContext(LandscapeError):
    """A model asked for more tokens than its context length (max_position_embeddings).

    `given` states what was asked ("--input-len 5000 + --output-len 256 = 5,256 tokens", "seq=5000"),
    `knob` what to change ("--input-len + --output-len", "--shape seq"); `learned`: the model has
    learned positions (GPT-2), so nothing can extend it.
    """

    def __init__(self, model: str, given: str, context: int, knob: str, learned: bool = False):
        self.model, self.given, self.context, self.knob, self.learned = model, given, context, knob, learned
        if learned:
            advice = f"it has {context:,} learned positions, so no flag extends it; choose {knob} <= {context}"
        else:
            advice = f"choose {knob} <= {context}, or pass --allow-beyond-context to explore anyway"
        super().__init__(
            f"{model}: {given} exceeds its context of {context:,} tokens "
            f"(max_position_embeddings in its config); {advice}"
        )


class MalformedInput(LandscapeError):
    """A command-line argument that is not of the expected form."""


def _few(names: list[str], shown: int = 6) -> str:
    """A sorted name list for a one-line message: the first few, then how many more."""
    if not names:
        return "none"
    return str(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


class WeightMismatch(LandscapeError):
    """A weight dict whose keys differ from the module's canonical weight names."""

    def __init__(self, missing: Iterable[str], unexpected: Iterable[str], shapes: dict | None = None, hint: str = ""):
        self.missing, self.unexpected, self.shapes = sorted(missing), sorted(unexpected), dict(shapes or {})
        tail = f"; {hint}" if hint else ""
        if self.shapes:
            wrong = ", ".join(
                f"{k} {tuple(got)} (needs {tuple(want)})" for k, (got, want) in sorted(self.shapes.items())[:4]
            )
            super().__init__(f"weights do not match the module: shapes differ: {wrong}{tail}")
            return
        super().__init__(
            f"weights do not match the module: missing {_few(self.missing)}, unexpected {_few(self.unexpected)}{tail}"
        )


class MalformedIR(LandscapeError):
    """StableHLO text that does not parse, or IR that breaks a shape or type rule."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        self.line, self.column = line, column
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(f"malformed IR{where}: {message}")


class LoweringFailed(LandscapeError):
    """A framework's compiler could not lower the program."""


class PathUnavailable(LandscapeError):
    """A compilation path whose tools are not installed here (torch-xla's venv: `make torch-xla`)."""


class BadTargetFile(LandscapeError):
    """A target data file with a missing, unknown, ill-typed or non-positive field (`key`), or one
    that cannot be read at all (`key` None: not a file, unreadable, not UTF-8, not TOML)."""

    def __init__(self, path: object, key: str | None, expected: str):
        self.path, self.key, self.expected = str(path), key, expected
        super().__init__(f"{self.path}: field {key!r}: {expected}" if key else f"{self.path}: {expected}")


class BadOutput(LandscapeError):
    """An output path that cannot be written, a folder that already holds a report (without
    --force), or a folder another run is writing (its lock is held)."""


class NonFiniteResult(LandscapeError):
    """A result field that is NaN or infinite: a bug upstream, refused rather than printed."""

    def __init__(self, field: str, value: float):
        self.field, self.value = field, value
        super().__init__(
            f"result field {field!r} is {value!r}, not a finite number; this is a bug in the model "
            f"that produced it, so nothing was printed (please report it with the command line)"
        )


# Frames that are the capture machinery, not the user's model (the user's line is the innermost other).
_MACHINERY = (
    "site-packages",
    "dist-packages",
    "<frozen",
    "/lib/python",
    "pytorch_side/capture.py",
    "pytorch_side/lower.py",
    "jax_side/capture.py",
    "jax_side/lower.py",
    "torchxla_side/driver.py",
)
# What a source line does that a graph capture cannot follow, and the fix (first match wins).
_HOST_SYNCS = (
    (".item()", "calls `.item()`", "use torch.where (jnp.where), or move the check out of forward"),
    (".tolist()", "calls `.tolist()`", "keep the values as a tensor, or move the use out of forward"),
    ("float(", "converts a tensor to a Python float", "keep it a tensor (a 0-d tensor broadcasts)"),
    ("int(", "converts a tensor to a Python int", "keep it a tensor, or compute it from shapes, not values"),
    ("bool(", "converts a tensor to a Python bool", "use torch.where (jnp.where) instead of branching"),
    ("if ", "branches on a tensor's value", "use torch.where (jnp.where), or torch.cond (lax.cond)"),
    ("while ", "loops on a tensor's value", "use a loop with a static count, or lax.while_loop"),
)


# The errors a capture raises on data-dependent control flow or a host sync (torch.export; JAX's tracer).
DATA_DEPENDENT = (
    "GuardOnDataDependentSymNode",
    "DataDependentOutputException",
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "TracerArrayConversionError",
    "data-dependent",
)


class CaptureFailed(LoweringFailed):
    """A graph capture (torch.export, jax.jit's trace) that could not follow forward: data-dependent
    control flow or a host sync. The message names the user's file and line and the fix; on a
    target with no eager fallback the same code is a compile rejection, on a GPU a graph break."""

    def __init__(self, message: str, file: str = "", line: int = 0, cause: str = ""):
        self.file, self.line, self.cause = file, line, cause
        super().__init__(message)

    @classmethod
    def from_exception(cls, err: BaseException, tool: str) -> CaptureFailed:
        import linecache
        import traceback

        frames, seen, current = [], set(), err
        while current is not None and id(current) not in seen:  # the error and the ones it chains
            seen.add(id(current))
            frames.extend(traceback.extract_tb(current.__traceback__))
            current = current.__cause__ or current.__context__
        user = [f for f in frames if f.filename and not any(m in f.filename for m in _MACHINERY)]
        kind = type(err).__name__
        first = (str(err).strip().splitlines() or [""])[0]
        if not user:
            return cls(f"{tool} could not capture forward: {kind}: {first}", cause=kind)
        frame = user[-1]
        name = frame.filename.rsplit("/", 1)[-1]
        if kind not in DATA_DEPENDENT and not any(k in str(err) for k in DATA_DEPENDENT):
            return cls(
                f"line {frame.lineno} of {name} (in {frame.name}): {tool} could not capture forward: {kind}: {first}",
                frame.filename,
                frame.lineno,
                kind,
            )
        text = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
        what, fix = next(
            ((w, f) for key, w, f in _HOST_SYNCS if key in text),
            ("depends on a tensor's value", "compute it with tensor ops, not Python values"),
        )
        where = (
            "on a target with no eager fallback (TPU, Spyre, LPU, wafer) this is a compile rejection; on a GPU, "
            "torch.compile makes it a graph break"
            if tool.startswith("torch")
            else "jax.jit has no eager fallback, so it is a compile rejection on every target"
        )
        return cls(
            f"line {frame.lineno} of {name} {what} inside {frame.name}: data-dependent control flow cannot be captured "
            f"by {tool}; {fix}; {where} ({kind})",
            frame.filename,
            frame.lineno,
            kind,
        )
