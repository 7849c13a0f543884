"""The commands that show a lowering: `hlo` (one stage of it), `stats` (its counts) and `diff` (where
two paths' lowerings differ), and `lowering_for`, the lowering a command works on (registered on
the `landscape` group in cli.py)."""

from __future__ import annotations

import click

from landscape.lowering import SIDES, TRAIN_SIDES, lower_named, lowering_from_file
from landscape.options import (
    check_name_or_file,
    checked_shapes,
    model_option,
    note_on_stderr,
    print_json,
    shape_options,
    verbose,
)
from landscape.outputs import check_output_dir, write_file
from reference.training import RECOMPUTE

STAGE_NAMES = ("fx", "jaxpr", "stablehlo", "ir", "xla")


def lowering_for(
    command: str,
    name,
    from_file,
    side: str,
    shapes,
    dtype: str,
    flat: bool,
    compile_xla: bool = False,
    allow_beyond_context: bool = False,
    checked: tuple | None = None,
):
    """The lowering a command works on: read from --from-file, or NAME lowered on one side.
    `checked`: `checked_shapes`'s answer when the command already has it (its note is printed there)."""
    check_name_or_file(command, name, from_file)
    if from_file is not None:
        return lowering_from_file(from_file)
    overrides, note = checked or checked_shapes(name, shapes, allow_beyond_context)
    if checked is None:
        note_on_stderr(note)
    return said(side, lower_named(name, side, overrides, dtype, compile_xla=compile_xla, flat=flat))


def said(side: str, lowering):
    """The lowering, its notes on stderr: what it changed or left out (torch-xla's rewrites, its driver)."""
    for lowering_note in lowering.notes:
        note_on_stderr(f"{side}: {lowering_note}")
    return lowering


@click.command()
@click.argument("name", required=False, callback=model_option)
@click.option("--side", type=click.Choice(SIDES), default="jax", show_default=True)
@click.option(
    "--stage",
    type=click.Choice(STAGE_NAMES),
    default="ir",
    show_default=True,
    help="fx (torch), jaxpr (jax), stablehlo, ir, or xla (XLA's optimized HLO, CPU backend: jax's, or "
    "torch-xla's own from its lazy-tensor graph); torch-xla has stablehlo, ir and xla.",
)
@shape_options
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Write the dump to DIR/NAME.SIDE.STAGE.txt (the stablehlo stage: .mlir, which --from-file reads) instead of printing it.",
)
@click.option(
    "--from-file", "from_file", type=click.Path(dir_okay=False), help="Read StableHLO text instead of lowering NAME."
)
def hlo(name, side, stage, shapes, dtype, flat, allow_beyond_context, out_dir, from_file) -> None:
    """Print one stage of NAME's lowering on one side (or of a StableHLO file)."""
    from reference.errors import UnknownName
    from reference.lowering import STAGES

    check_name_or_file("hlo", name, from_file)
    if not from_file and stage not in STAGES[side]:  # checked before the (slow) lowering
        raise UnknownName(f"stage for the {side} side", stage, STAGES[side])
    if out_dir is not None:
        check_output_dir(out_dir, "--out")
    lowering = lowering_for(
        "hlo",
        name,
        from_file,
        side,
        shapes,
        dtype,
        flat,
        compile_xla=stage == "xla",
        allow_beyond_context=allow_beyond_context,
    )
    text = lowering.stage(stage)
    if stage == "xla":
        from landscape.render import xla_text

        text = xla_text(text, verbose())
    if out_dir is not None:
        from pathlib import Path

        path = write_file(Path(out_dir) / hlo_file_name(lowering.name, lowering.side, stage), text)
        click.echo(f"wrote {path}")
    else:
        click.echo(text, nl=not text.endswith("\n"))


def hlo_file_name(name: str, side: str, stage: str) -> str:
    """What `hlo --out` names a stage's file: NAME.SIDE.STAGE.txt, and NAME.SIDE.stablehlo.mlir for
    the StableHLO stage, which `--from-file` reads back."""
    return f"{name}.{side}.{stage}." + ("mlir" if stage == "stablehlo" else "txt")


@click.command()
@click.argument("name", required=False, callback=model_option)
@click.option("--side", type=click.Choice(SIDES), default="jax", show_default=True)
@shape_options
@click.option(
    "--from-file", "from_file", type=click.Path(dir_okay=False), help="Read StableHLO text instead of lowering NAME."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def stats(name, side, shapes, dtype, flat, allow_beyond_context, from_file, as_json) -> None:
    """FLOPs, transcendentals, bytes accessed, parameter bytes and the op histogram of NAME's IR.

    Loops count once per iteration; bytes are at op boundaries as if nothing were fused.
    """
    lowering = lowering_for(
        "stats", name, from_file, side, shapes, dtype, flat, allow_beyond_context=allow_beyond_context
    )
    data = lowering.stats().to_dict()
    if as_json:
        print_json(data)
        return
    from reference.units import format_bytes

    for key in ("flops", "transcendentals", "bytes_accessed", "param_bytes"):
        scaled = f"  ({format_bytes(data[key])})" if "bytes" in key else ""
        click.echo(f"{key:16s} {data[key]:,}{scaled}")
    click.echo("ops:")
    for op, count in sorted(data["ops"].items(), key=lambda kv: -kv[1]):
        click.echo(f"  {count:6d}  {op}")
    if data["unknown_ops"]:
        click.echo(f"unknown (kept opaque, costed as data movement): {data['unknown_ops']}")


@click.command()
@click.argument("name", callback=model_option)
@shape_options
@click.option(
    "--sides",
    "side_list",
    default="torch,jax",
    show_default=True,
    metavar="A,B",
    help="The two paths to diff, of torch, jax and torch-xla (torch-xla: after `make torch-xla`).",
)
@click.option(
    "--train",
    is_flag=True,
    help="Diff one layer's training step instead (forward and backward: JAX's jax.vjp, PyTorch's AOTAutograd "
    "joint graph; docs/training.md): NAME a published model, at --shape batch=B seq=L, in --dtype.",
)
@click.option(
    "--recompute",
    type=click.Choice(RECOMPUTE),
    default="none",
    show_default=True,
    help="With --train: the layer's activation recomputation.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def diff(name, shapes, dtype, flat, allow_beyond_context, side_list, train, recompute, as_json) -> None:
    """Where two lowerings of NAME differ (PyTorch and JAX by default): op histogram and divergent segments."""
    from landscape.options import parse_sides
    from reference.ir.diff import diff_modules

    sides = parse_sides(side_list, at_most=2, command="diff")
    overrides, note = checked_shapes(name, shapes, allow_beyond_context)
    note_on_stderr(note)
    if train:
        modules = train_block_modules(name, sides, overrides, dtype, recompute)
    else:
        modules = [said(side, lower_named(name, side, overrides, dtype, flat=flat)).module for side in sides]
    result = diff_modules(*modules, sides)
    if as_json:
        print_json(result.to_dict())
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=140)
    what = f"one layer's training step, recompute {recompute}" if train else dtype
    table = Table(title=escape(f"{name} [{what}]: ops per path"))
    for col in ("op", *sides):
        table.add_column(col)
    for op, (a, b) in sorted(result.histogram.items()):
        style = "" if a == b else "bold"
        table.add_row(escape(op), str(a), str(b), style=style)
    console.print(table)
    for d in result.divergences:
        console.print(escape(f"segment {d.segment} (after {d.after}): {'; '.join(d.reasons)}"))
        for side in result.sides:
            ops = ", ".join(f"{k.split('.', 1)[-1]} x{v}" for k, v in d.ops[side].items() if v)
            console.print(escape(f"    {side:9s} {ops or '-'}   from {', '.join(d.scopes[side]) or '-'}"))


def train_block_modules(name: str, sides: tuple[str, ...], overrides: dict, dtype: str, recompute: str) -> list:
    """The IR of one layer's training step (forward and backward) of model NAME on each side.

    Raises:
        UnknownName: NAME is not a published model, or a side other than torch and jax.
    """
    from reference.catalogue import get_entry
    from reference.errors import UnknownName
    from reference.models import get_model, load_models

    if get_entry(name).kind != "model":
        raise UnknownName("model for diff --train", name, sorted(load_models()))
    for side in sides:
        if side not in TRAIN_SIDES:
            raise UnknownName("side for diff --train", side, TRAIN_SIDES)
    resolved = get_entry(name).resolve(overrides)
    out = []
    for side in sides:
        if side == "torch":
            from pytorch_side.train import lower_train_parts
        else:
            from jax_side.train import lower_train_parts
        parts = lower_train_parts(get_model(name), resolved["batch"], resolved["seq"], dtype, recompute)
        out.append(parts.parts["block"].module)
    return out
