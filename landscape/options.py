"""The CLI's shared options and the checks every command makes before any work: dtypes, target
names and `--set` knobs, `--targets` lists, `--shape` and `--from-file`, model context lengths.

Everything here runs before torch or jax is imported; a bad value is one `LandscapeError`.
"""

from __future__ import annotations

import re

import click

from landscape.lowering import SIDES
from reference.dtypes import DTYPES as DTYPE_TABLE
from reference.dtypes import FLOAT_DTYPES, get_dtype

# Stated here, not imported, so that `landscape --help` does not import numpy; tests check they
# equal reference.spec.INT64_MAX and reference.inputs.SEED_RANGE, which the library enforces.
INT64_MAX = 2**63 - 1
SEED_RANGE = (0, 2**32 - 1)


class DecimalRange(click.IntRange):
    """An integer option in [min, max] written in plain ASCII decimal digits with an optional sign:
    click's IntRange reads what Python's int() reads, so `1_6`, `１６` and `١٦`
    would pass; this refuses them as --shape does, then checks the range (the message names it)."""

    name = "integer"

    def convert(self, value, param, ctx):
        if not (isinstance(value, int) and not isinstance(value, bool)):
            text = str(value).strip()
            digits = text[1:] if text[:1] in "+-" else text
            if not (digits.isascii() and digits.isdigit()):
                self.fail(f"{value!r} is not an integer in plain decimal digits; {self.choices()}", param, ctx)
        number = int(value) if not isinstance(value, int) else value
        if self.max is not None and number > self.max:
            self.fail(
                f"{number} is larger than {self.max:,}"
                + (" (int64)" if self.max == INT64_MAX else "")
                + f"; {self.choices()}",
                param,
                ctx,
            )
        if self.min is not None and number < self.min:
            self.fail(f"{number} is below {self.min}; {self.choices()}", param, ctx)
        return super().convert(number, param, ctx)

    def choices(self) -> str:
        """What the option takes, for its error messages: "choose an integer >= 1"."""
        top = "" if self.max in (None, INT64_MAX) else f" and <= {self.max:,}"
        return f"choose an integer >= {self.min}{top}"

    def _describe_range(self) -> str:
        """--help's range: 'x>=1' where the top is int64's (a limit no one types), '0<=x<=4294967295' otherwise."""
        return f"x>={self.min}" if self.max == INT64_MAX else super()._describe_range()


# A size, count or length option: an integer in [1, int64], plain decimal digits.
SIZE = DecimalRange(min=1, max=INT64_MAX)


class BatchParam(DecimalRange):
    """predict's --batch: a size, or `max` (the largest batch whose weights and KV cache fit)."""

    name = "batch"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "max":
            return "max"
        return super().convert(value, param, ctx)

    def choices(self) -> str:
        return "choose an integer >= 1, or max (the largest batch that fits)"


BATCH = BatchParam(min=1, max=INT64_MAX)
SEED = DecimalRange(min=SEED_RANGE[0], max=SEED_RANGE[1])
ALLOW_BEYOND_CONTEXT_HELP = (
    "Accept more tokens than the model's context length (max_position_embeddings); "
    "the output then carries a note saying so."
)


class DTypeParam(click.ParamType):
    """A dtype option drawn from reference.dtypes: any spelling of an allowed dtype is accepted
    (bf16, bfloat16, BF16) and normalized to its canonical name, or to its short name."""

    name = "dtype"

    def __init__(self, allowed: tuple[str, ...], short: bool = False, kind: str = "dtype"):
        self.allowed, self.short, self.kind = allowed, short, kind
        self.shown = tuple(get_dtype(a).short if short else a for a in allowed)

    def get_metavar(self, param, ctx=None) -> str:
        return "[" + "|".join(self.shown) + "]"

    def convert(self, value, param, ctx):
        from reference.errors import UnknownName

        try:
            dtype = get_dtype(value, self.allowed)
        except UnknownName:
            aliases = [s for d in DTYPE_TABLE if d.name in self.allowed for s in d.spellings if s not in self.shown]
            self.fail(
                f"unknown {self.kind} {value!r}; valid: {', '.join(self.shown)} (or {', '.join(aliases)})", param, ctx
            )
        return dtype.short if self.short else dtype.name


DTYPE = DTypeParam(FLOAT_DTYPES)
DTYPE_HELP = "float32, bfloat16 or float16 (also f32/fp32, bf16, f16/fp16)."

# A --set value: a plain decimal or scientific number; inf and nan pass here so that the target's
# domain check (hardware_models/target.py) can say why they are refused.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)


def parse_settings(settings: tuple[str, ...]) -> dict[str, float]:
    """`--set SECTION.KEY=NUMBER` items as {key: value}.

    Raises:
        MalformedInput: an item without '=' or a key, a value that is not a number, a key twice.
    """
    from reference.errors import MalformedInput

    out: dict[str, float] = {}
    for item in settings:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise MalformedInput(f"--set expects SECTION.KEY=NUMBER, got {item!r}")
        if not _NUMBER.fullmatch(value):
            raise MalformedInput(
                f"--set {key}: {value!r} is not a number; --set expects SECTION.KEY=NUMBER (e.g. 2e-6)"
            )
        if key in out:
            raise MalformedInput(f"--set gives {key} twice; give each key once")
        out[key] = float(value)
    return out


def load_target(name: str, settings: tuple[str, ...] = ()):
    """A target by name, with `--set section.key=VALUE` overrides applied.

    Raises:
        UnknownName: unknown target or key.
        MalformedInput: a setting that is not KEY=NUMBER.
        BadTargetFile: a value outside the key's domain (not finite, a fraction above 1...).
    """
    from hardware_models.target import get_target

    overrides = parse_settings(settings)
    target = get_target(name)
    caveat = target.family_record.caveat
    note = caveat(target) if caveat else ""
    if note:  # e.g. the host CPU's file, calibrated on another machine than this one
        import click

        click.echo(note, err=True)
    if not overrides:
        return target
    changed = target.with_overrides(overrides)
    for line in derived_set_notes(target, overrides):
        import click

        click.echo(line, err=True)
    return changed


def derived_set_notes(target, overrides: dict[str, float]) -> list[str]:
    """A line for each --set key the target file derives from others (a D quantity): the value
    given replaces the derivation, and the keys it follows from keep theirs."""
    lines = []
    for key in overrides:
        q = target.quantities.get(key)
        if q is not None and q.derivation:
            lines.append(
                f"note: --set {key} replaces a derived quantity ({key} = {q.derivation} in {target.name}'s file); "
                "the keys it follows from keep their values"
            )
    return lines


def parse_target_list(text: str) -> list[str]:
    """`--targets`: comma-separated target names, or 'all'.

    Raises:
        MalformedInput: an empty list, or a target named twice.
        UnknownName: an unknown target (when loaded).
    """
    from hardware_models.target import load_targets
    from reference.errors import MalformedInput

    valid = list(load_targets())
    if text.strip() == "all":
        return valid
    names = [t.strip() for t in text.split(",")]
    if any(names) and not all(names):
        raise MalformedInput(
            f"--targets {text!r} has an empty item; give names separated by single commas; valid: {', '.join(valid)}"
        )
    names = [n for n in names if n]
    if not names:
        raise MalformedInput(f"--targets is empty; give a comma-separated list or 'all'; valid: {', '.join(valid)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise MalformedInput(f"--targets lists {', '.join(twice)} more than once; each target is compared once")
    return names


def check_exclusive(**given) -> None:
    """At most one of the named options: check_exclusive(**{"--json": a, "--markdown": b})."""
    from reference.errors import MalformedInput

    chosen = [name for name, value in given.items() if value]
    if len(chosen) > 1:
        raise MalformedInput(f"{' and '.join(chosen)} cannot be given together; choose one")


def check_name_or_file(command: str, name, from_file) -> None:
    from reference.errors import MalformedInput

    if from_file is not None and name:
        raise MalformedInput(f"{command}: give NAME or --from-file FILE, not both (got {name!r} and {from_file!r})")
    if from_file is not None and not str(from_file).strip():
        raise MalformedInput(f"{command}: --from-file needs a path, got ''")
    if from_file is None and not name:
        raise MalformedInput(f"{command} needs NAME or --from-file FILE.mlir")


def model_names() -> list[str]:
    from reference.models import load_models

    return sorted(load_models())


def model_option(ctx, param, value):
    """--model: a published model's name, or a Hugging Face config.json's path, whose model is
    added to the catalogue under that path (reference.catalogue.resolve_model)."""
    if value is None:
        return value
    from reference.catalogue import resolve_model

    return resolve_model(value)


def check_model(model_name: str) -> None:
    """A published model config's name, checked before anything is lowered; the valid choices are
    the model configs only, not the kernels."""
    from reference.catalogue import PUBLISHED_MODELS
    from reference.errors import UnknownName

    if model_name not in model_names():
        raise UnknownName("model config", model_name, [*PUBLISHED_MODELS, "a Hugging Face config.json's path"])


def checked_shapes(name: str, shapes: tuple[str, ...], allow_beyond_context: bool = False) -> tuple[dict, str | None]:
    """(`--shape` overrides, a context note or None) for NAME, every shape checked now (names,
    constraints, int64 extents) and, for a published model, `seq` against its context length.

    Raises:
        UnknownName, InvalidShape, MalformedInput, BeyondContext.
    """
    from reference.catalogue import get_entry
    from reference.models import context_check
    from reference.spec import parse_assignments

    overrides = parse_assignments(shapes)
    entry = get_entry(name)
    resolved = entry.resolve(overrides)
    if entry.kind != "model":
        return overrides, None
    seq = resolved["seq"]
    what = f"seq={seq}" + (" (a KV cache of that many tokens)" if resolved.get("mode") == "decode" else " tokens")
    return overrides, context_check(entry.name, seq, what, "--shape seq", allow_beyond_context)


def verbose() -> bool:
    """Whether `landscape --verbose` was given."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("verbose"))


def print_json(data) -> None:
    """The one JSON printer: sorted keys, and never NaN or Infinity (`landscape.outputs.dump_json`)."""
    from landscape.outputs import dump_json

    click.echo(dump_json(data))


def note_on_stderr(note: str | None) -> None:
    if note:
        click.echo(f"landscape: note: {note}", err=True)


def parse_sides(text: str, at_least: int = 2, at_most: int | None = None, command: str = "compare") -> tuple[str, ...]:
    """--sides: a comma-separated list of paths ("torch,jax"), each once, or "all" alone (every
    path this machine has; where torch-xla's venv is not built, a note on stderr says it was left out).

    Raises:
        UnknownName: a path that is not one of SIDES.
        MalformedInput: fewer than `at_least` paths, more than `at_most`, one named twice, or
            "all" beside other names.
        PathUnavailable: torch-xla named where its venv is not built.
    """
    from landscape.lowering import available_sides
    from reference.errors import MalformedInput, PathUnavailable, UnknownName
    from torchxla_side import available, unavailable_reason

    names = tuple(s.strip() for s in text.split(",") if s.strip())
    if "all" in names and len(names) > 1:
        raise MalformedInput(f"--sides all stands alone (every path this machine has); got {text!r}")
    if names == ("all",):
        sides = available_sides()
        if "torch-xla" not in sides:
            note_on_stderr(f"--sides all: torch-xla left out, as {unavailable_reason()}")
    else:
        sides = names
        for side in sides:
            if side not in SIDES:
                raise UnknownName("side", side, (*SIDES, "all"))
        if len(set(sides)) != len(sides) or len(sides) < at_least:
            raise MalformedInput(
                f"--sides takes {at_least} or more different paths of {', '.join(SIDES)} (or all); got {text!r}"
            )
    if at_most is not None and len(sides) > at_most:
        raise MalformedInput(
            f"{command} compares {at_most} paths; --sides {text} names {len(sides)}: {', '.join(sides)} "
            "(compare --sides takes more)"
        )
    if "torch-xla" in sides and not available():
        raise PathUnavailable(unavailable_reason())
    return sides


def shape_options(fn):
    fn = click.option("--allow-beyond-context", "allow_beyond_context", is_flag=True, help=ALLOW_BEYOND_CONTEXT_HELP)(
        fn
    )
    fn = click.option(
        "--flat", is_flag=True, help="Lower a model layer by layer instead of one block called per layer."
    )(fn)
    fn = click.option("--dtype", type=DTYPE, default="float32", show_default=True, help=DTYPE_HELP)(fn)
    fn = click.option(
        "--shape",
        "shapes",
        multiple=True,
        metavar="PARAM=VALUE",
        help="Override a shape parameter (plain decimal digits); repeatable, each parameter once.",
    )(fn)
    return fn


def estimate_options(fn):
    fn = click.option(
        "--set",
        "settings",
        multiple=True,
        metavar="SECTION.KEY=VALUE",
        help="Override a target quantity (an assumed knob), e.g. schedule.launch_overhead_s=2e-6; repeatable.",
    )(fn)
    fn = click.option(
        "--from-file",
        "from_file",
        type=click.Path(dir_okay=False),
        help="Read StableHLO text instead of lowering NAME.",
    )(fn)
    fn = shape_options(fn)
    fn = click.option("--side", type=click.Choice(SIDES), default="jax", show_default=True)(fn)
    fn = click.option(
        "--target", "target_name", required=True, help="A target from `landscape targets` (h100, tpu-v5e, ...)."
    )(fn)
    fn = click.option(
        "--chips",
        type=SIZE,
        default=None,
        help="Chips (wafers on Cerebras) to spread the program over; default: the fewest that hold it.",
    )(fn)
    return fn
