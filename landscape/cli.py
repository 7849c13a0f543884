"""`landscape`: the command line, and the only module that reaches into every package.

Commands are thin: parse, call one documented function, render. torch and jax are imported
inside the commands that need them, so `landscape --help` stays fast, and names, shapes and
dtypes are checked before either is imported, so a typo is reported at once. Bad input prints
one line, `landscape: error: ...`, and exits 2; a check that ran and failed exits 1.
"""

from __future__ import annotations

import dataclasses
import os
import sys

import click

from landscape.lowering import SIDES
from landscape.lowering_cli import lowering_for
from landscape.options import (
    DTYPE,
    DTYPE_HELP,
    SEED,
    SEED_RANGE,
    SIZE,
    DTypeParam,
    check_name_or_file,
    checked_shapes,
    estimate_options,
    load_target,
    model_option,
    print_json,
)
from landscape.outputs import check_output_dir, check_output_file, dump_json, write_file
from landscape.serve_cli import STRICT_DTYPES_HELP, WITHOUT_HELP

__all__ = ["DTYPE", "DTypeParam", "cli", "load_target", "main"]


def default_runners(sides: tuple[str, ...] = ("torch", "jax")) -> dict:
    """The implementations, each a function from a Case to its outputs, imported only when
    first called (after the name, shapes and dtype have been checked): PyTorch, JAX, and the
    PyTorch module on torch-xla's CPU device (a subprocess in .venv-torchxla)."""

    def torch_run(case):
        import pytorch_side

        return pytorch_side.run_case(case)

    def jax_run(case):
        import jax_side

        return jax_side.run_case(case)

    def torchxla_run(case):
        from torchxla_side.run import run_case

        return run_case(case)

    runners = {"torch": torch_run, "jax": jax_run, "torch-xla": torchxla_run}
    return {side: runners[side] for side in sides}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--verbose",
    is_flag=True,
    help="Keep the compilers' own logging (XLA's INFO lines on stderr) and XLA's source metadata "
    "(file names, stack frames) in `hlo --stage xla` and the report's dumps.",
)
def cli(verbose: bool) -> None:
    """Landscape: one model, two frameworks, five AI execution models.

    Every kernel exists as a float64 numpy reference, a PyTorch module and a JAX/Flax NNX
    module. NAME is a catalogue kernel (matmul, attention, block, ...) or a published model
    config (llama-3.1-8b, ...); see `landscape kernels`.

    Exit codes: 0 done; 1 a check failed (run); 2 bad input (one line, no traceback); 130
    interrupted (SIGINT); 141 stdout closed or full; 143 terminated (SIGTERM).
    """
    if not verbose:  # before jax is imported: XLA reads it when it first logs
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def kernels(as_json: bool) -> None:
    """List every kernel and model: parameters with defaults, dtypes and sides."""
    from reference.catalogue_info import describe_catalogue

    rows = describe_catalogue()
    if as_json:
        print_json(rows)
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Landscape catalogue")
    for col in ("name", "kind", "description", "parameters (defaults)", "dtypes"):
        table.add_column(col, overflow="fold")
    for r in rows:
        params = " ".join(f"{k}={v['default']}" for k, v in r["params"].items())
        table.add_row(*(escape(c) for c in (r["name"], r["kind"], r["description"], params, ", ".join(r["dtypes"]))))
    Console(width=160).print(table)


def checkpoint_for(name: str, overrides: dict, path: str) -> dict:
    """--weights: the checkpoint's canonical weights for model NAME at its resolved layer count."""
    from reference.catalogue import get_entry
    from reference.errors import MalformedInput
    from reference.hf_weights import checkpoint_weights

    entry = get_entry(name)
    if entry.kind != "model":
        raise MalformedInput(
            f"run: --weights takes a model's checkpoint; {name!r} is a {entry.kind}, not a model "
            "(give a published model's name or a config.json)"
        )
    return checkpoint_weights(name, path, entry.resolve(overrides)["layers"])


@cli.command()
@click.argument("name", callback=model_option)
@click.option(
    "--shape",
    "shapes",
    multiple=True,
    metavar="PARAM=VALUE",
    help="Override a shape parameter (plain decimal digits); repeatable, each parameter once.",
)
@click.option("--dtype", type=DTYPE, default="float32", show_default=True, help=DTYPE_HELP)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help=f"Input generator seed, an integer in [{SEED_RANGE[0]}, {SEED_RANGE[1]}].",
)
@click.option(
    "--weights",
    "weights_path",
    type=click.Path(),
    metavar="PATH",
    help="A model's checkpoint (a .safetensors file, or a folder of them) to run instead of seeded "
    "weights; with --shape layers=N, its first N blocks.",
)
@click.option(
    "--allow-beyond-context",
    "allow_beyond_context",
    is_flag=True,
    help="Accept a model's seq beyond its context length; the output then says so.",
)
@click.option(
    "--sides",
    "side_list",
    default="torch,jax",
    show_default=True,
    metavar="A,B[,C]",
    help="The implementations to run beside the reference: torch, jax, torch-xla (the PyTorch module on "
    "torch-xla's CPU device, after `make torch-xla`), or all.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def run(
    name: str,
    shapes: tuple[str, ...],
    dtype: str,
    seed: int,
    weights_path: str | None,
    allow_beyond_context: bool,
    side_list: str,
    as_json: bool,
) -> None:
    """Run NAME on the reference, PyTorch and JAX with identical inputs and weights.

    NAME may be a Hugging Face config.json, or the folder holding one; --weights runs its
    checkpoint's weights (reference/hf_weights.py maps the names).

    Prints, for each side against the float64 reference and for the two sides against each
    other, the max absolute and max relative (normwise) error, the bound from the dtype's
    tolerance, and pass or fail. Exits 1 if any comparison fails. The run's memory is estimated
    first (inputs, weights, outputs, the largest intermediate, on the float64 reference and both
    sides) and refused, with the estimate and the limit, when it exceeds the memory available.
    """
    from landscape.options import parse_sides
    from reference.agreement import check_agreement

    sides = parse_sides(side_list, at_least=1)
    overrides, note = checked_shapes(name, shapes, allow_beyond_context)
    weights = None if weights_path is None else checkpoint_for(name, overrides, weights_path)
    result = check_agreement(name, overrides, dtype, seed, runners=default_runners(sides), weights=weights)
    notes = [note] if note else []
    if weights is not None:
        notes.append(f"weights: the checkpoint {weights_path} ({len(weights)} tensors), not seeded ones")
    if notes:
        result = dataclasses.replace(result, notes=(*result.notes, *notes))
    if as_json:
        print_json(result.to_dict())
    else:
        from landscape.render import render_agreement

        render_agreement(result)
    if not result.ok:
        raise click.exceptions.Exit(1)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: every quantity with its source.")
@click.option(
    "--check",
    "check",
    metavar="FILE",
    default=None,
    help="Check a target file of your own instead: every key its family needs that it lacks, or what else "
    "is wrong, a line each (exit 2); a file every command takes (--target FILE.toml) says so (exit 0).",
)
def targets(as_json: bool, check: str | None) -> None:
    """List the hardware targets: family, 16-bit peak (dense, not sustained), main memory (HBM, SRAM or
    LPDDR5) and its bandwidth, ridge point."""
    from hardware_models.target import load_targets

    if check is not None:
        _check_target_file(check, as_json)
        return
    loaded = load_targets()
    if as_json:
        print_json([t.to_dict() for t in loaded.values()])
        return
    from landscape.render import render_targets

    render_targets(loaded)


def _check_target_file(path: str, as_json: bool) -> None:
    from hardware_models.target import check_target_file, load_target_file

    problems = check_target_file(path)
    if as_json:
        print_json({"file": path, "ok": not problems, "problems": problems})
    elif problems:
        for line in problems:
            click.echo(line)
    else:
        t = load_target_file(path)
        assumed = sum(1 for q in t.quantities.values() if q.assumed)
        click.echo(
            f"{path}: a valid {t.family} target, {t.name!r}: {len(t.quantities)} quantities ({assumed} assumed, U), "
            f"every derived value reproduced; use it as --target {path}"
        )
    if problems:
        raise click.exceptions.Exit(2)


@cli.command()
@click.argument("m", type=SIZE)
@click.argument("n", type=SIZE)
@click.argument("k", type=SIZE)
@click.option(
    "--array", "array", default="128x128", show_default=True, metavar="RxC", help="Systolic array rows x columns."
)
@click.option(
    "--dataflow",
    type=click.Choice(("os", "ws", "is")),
    default="os",
    show_default=True,
    help="Output, weight or input stationary.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def gemm(m, n, k, array, dataflow, as_json) -> None:
    """Compute cycles of C[M,N] = A[M,K] @ B[K,N] on a systolic array, under SCALE-Sim's conventions.

    M, N and K are integers >= 1.
    """
    from hardware_models.cost.systolic import parse_array, systolic_gemm

    rows, cols = parse_array(array)
    result = systolic_gemm(m, n, k, rows, cols, dataflow)
    if as_json:
        print_json(result.to_dict())
        return
    click.echo(
        f"{m}x{n}x{k} on {rows}x{cols} ({dataflow}): Sr={result.sr} Sc={result.sc} T={result.t}, "
        f"{result.row_folds}x{result.col_folds} folds of {result.cycles_per_fold} cycles\n"
        f"compute_cycles {result.compute_cycles:,}  utilization {result.utilization:.1%}  "
        f"mapping efficiency {result.mapping_efficiency:.1%}"
    )


def _estimate_for(
    command,
    name,
    target_name,
    side,
    shapes,
    dtype,
    flat,
    from_file,
    settings,
    chips=None,
    allow_beyond_context=False,
    strict_dtypes=False,
    cost_artifacts=False,
    without=(),
    compiler=None,
):
    """(target, plan, estimate, context note) for NAME lowered on one side, or a StableHLO file.
    `compiler`: one of the target family's compilers (its usual one when None; checked before lowering).
    `cost_artifacts`: when upcasts were folded, note what they would have cost (compiled again without the fold).
    `without`: passes left out of the pipeline (a what-if; checked against the target's before lowering)."""
    from hardware_models.estimate import estimate as estimate_module
    from hardware_models.pipelines import compile_plan

    target = load_target(target_name, settings)  # checked before the (slow) lowering
    target.family_record.compiler(compiler)  # an unknown compiler: refused before lowering, naming the family's
    without = tuple(without)
    if without:
        from hardware_models.pipelines import check_without

        check_without(without, [target], compiler)
    check_name_or_file(command, name, from_file)
    checked = checked_shapes(name, shapes, allow_beyond_context) if from_file is None else ({}, None)
    lowering = lowering_for(command, name, from_file, side, shapes, dtype, flat, checked=checked)
    plan = compile_plan(
        lowering.module, target, chips=chips, strict_dtypes=strict_dtypes, without=without, compiler=compiler
    )
    label = f"{lowering.name} ({lowering.side}, {dtype})" if not from_file else lowering.name
    label += f" by {plan.compiler}" if compiler is not None else ""
    result = estimate_module(lowering.module, target, label, plan)
    if without:
        result = dataclasses.replace(
            result,
            notes=(
                *result.notes,
                f"compiled without {', '.join(without)}: a what-if; "
                f"{target.name}'s compiler runs {'them' if len(without) > 1 else 'it'}",
            ),
        )
    if cost_artifacts and plan.folds:
        from hardware_models.comparison import unfolded_time
        from reference.units import format_seconds

        saved = unfolded_time(lowering.module, target, plan, chips, strict_dtypes, without) - result.total.time_s
        result = dataclasses.replace(
            result,
            notes=(
                *result.notes,
                f"artifacts compiled away: {len(plan.folds)} upcasts folded "
                f"into contractions (fold lines above); they would have cost {format_seconds(saved)} more",
            ),
        )
    return target, plan, result, checked[1]


@cli.command()
@click.argument("name", required=False, callback=model_option)
@estimate_options
@click.option("--plan", "show_plan", is_flag=True, help="Also print the compiled plan: groups, tiles, bytes per level.")
@click.option("--strict-dtypes", "strict_dtypes", is_flag=True, help=STRICT_DTYPES_HELP)
@click.option("--without", "without", multiple=True, metavar="PASS", help=WITHOUT_HELP)
@click.option(
    "--compiler",
    "compiler",
    metavar="NAME",
    help="One of the target family's compilers (host-cpu: inductor, the usual one, or xla); the plan records it.",
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False),
    help="Write the static schedule as a Chrome trace (JSON for Perfetto); scheduled targets only (groq-lpu).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def estimate(
    name,
    chips,
    target_name,
    side,
    shapes,
    dtype,
    flat,
    allow_beyond_context,
    from_file,
    settings,
    show_plan,
    strict_dtypes,
    without,
    compiler,
    trace_path,
    as_json,
) -> None:
    """Predict NAME's time on a target, kernel by kernel: compute, memory and schedule time.

    A floating type the target lacks (f64 on a TPU: torch-mlir's LayerNorm variance) is costed as
    its emulation and noted, unless --strict-dtypes. With --plan, upcasts compiled away into
    contractions are listed, with what they would have cost.

    NAME is lowered on one side, compiled by the target's passes (fusion, tiling and padding,
    memory placement) and costed. Each row is one kernel (a fused group): its ops, FLOPs,
    bytes per memory level, time and bottleneck; totals follow. With --json the plan is
    included under "plan" when --plan is given.
    """
    if trace_path is not None:  # refused before the (slow) lowering, not after
        from hardware_models.trace import check_traceable

        check_output_file(trace_path, "--trace")
        check_traceable(load_target(target_name, settings))
    target, plan, result, note = _estimate_for(
        "estimate",
        name,
        target_name,
        side,
        shapes,
        dtype,
        flat,
        from_file,
        settings,
        chips,
        allow_beyond_context,
        strict_dtypes,
        cost_artifacts=show_plan,
        without=without,
        compiler=compiler,
    )
    data = result.to_dict()
    data["notes"] = [*data["notes"], *([note] if note else [])]
    if trace_path is not None:
        from hardware_models.trace import chrome_trace

        write_file(trace_path, dump_json(chrome_trace(plan, target), indent=None))
        click.echo(f"wrote {trace_path}", err=True)
    if as_json:
        print_json({**data, **({"plan": plan.to_dict()} if show_plan else {})})
        return
    from landscape.outputs import require_finite
    from landscape.render import render_estimate

    require_finite(data)
    if show_plan:
        click.echo(plan.render())
    render_estimate(result, extra_notes=[note] if note else [])


@cli.command()
@click.argument("name", required=False, callback=model_option)
@estimate_options
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False), help="Output file: .png or .svg.")
def roofline(
    name, chips, target_name, side, shapes, dtype, flat, allow_beyond_context, from_file, settings, out_path
) -> None:
    """Draw NAME's kernels on the target's roofline (PNG or SVG), schedule-bound ones marked."""
    from pathlib import Path

    from reference.errors import UnknownName

    suffix = Path(out_path).suffix.lower()
    if suffix not in (".png", ".svg"):
        raise UnknownName("roofline output format", suffix or out_path, (".png", ".svg"))
    check_output_file(out_path, "--out")
    target, plan, result, note = _estimate_for(
        "roofline", name, target_name, side, shapes, dtype, flat, from_file, settings, chips, allow_beyond_context
    )
    from hardware_models.cost.roofline import chip_shares, schedule_spans
    from landscape.roofline_plot import plot_roofline, roofline_title

    points = []
    write_file(
        out_path,
        writer=lambda tmp: points.extend(
            plot_roofline(result, target, tmp, schedule_spans(plan, target), chip_shares(plan))
        ),
    )
    counts = {b: sum(p.bottleneck == b for p in points) for b in ("compute", "memory", "schedule")}
    click.echo(
        f"wrote {out_path}: {roofline_title(result, target, points)} ({', '.join(f'{k}-bound {v}' for k, v in counts.items())})"
    )
    if note:
        click.echo(f"note: {note}")


@cli.command()
@click.argument("name", required=False, callback=model_option)
@click.option("--target", "target_name", default="h100", show_default=True, help="A target (see `landscape targets`).")
@click.option(
    "--side",
    type=click.Choice(SIDES),
    default="torch",
    show_default=True,
    help="Which framework's program to run: torch, jax, or torch-xla (the PyTorch module on torch-xla's CPU device, after `make torch-xla`).",
)
@click.option(
    "--inject", "inject", multiple=True, metavar="FAULT", help="Plant a fault (see --list-faults); repeatable."
)
@click.option(
    "--shape",
    "shapes",
    multiple=True,
    metavar="PARAM=VALUE",
    help="Override a shape parameter (plain decimal digits); repeatable, each parameter once.",
)
@click.option("--dtype", type=DTYPE, default="float32", show_default=True, help=DTYPE_HELP)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help=f"Input generator seed, an integer in [{SEED_RANGE[0]}, {SEED_RANGE[1]}].",
)
@click.option(
    "--from-file",
    "from_file",
    type=click.Path(dir_okay=False),
    help="Run a StableHLO file (its arguments from FILE.npz beside it, if there; else seeded).",
)
@click.option(
    "--repro-dir",
    "repro_dir",
    type=click.Path(file_okay=False),
    default="debug-repro",
    show_default=True,
    help="Where a divergent program's repro (.mlir and .npz) is written.",
)
@click.option(
    "--list-faults", "show_faults", is_flag=True, help="List the plantable faults with their layers, and exit."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def debug(name, target_name, side, inject, shapes, dtype, seed, from_file, repro_dir, show_faults, as_json) -> None:
    """Run NAME down the ladder of executors and find where its result first diverges.

    R0 the float64 reference, R1 the eager framework, R2 the captured graph replayed on fresh
    inputs, R3 the lowered IR interpreted, R4 to R7 the target's compiled plan executed: graph
    passes, padded layouts and tiles, the memory planner and DMA, the device's numerics. Prints
    the first divergent rung and its layer, the op where the fault originates (teacher-forced)
    and the ops where it shows (free-running), whether it reaches the output, the bisected
    sub-step and the repro's path. Exits 1 when a rung diverges.
    """
    from landscape.debug import debug as run_debug
    from landscape.debug import list_faults, render
    from reference.faults import get_fault

    if show_faults:
        rows = list_faults()
        if as_json:
            print_json(rows)
        else:
            for r in rows:
                click.echo(
                    f"{r['name']:28s} layer {r['layer']} {r['layer_name']:36s} {r['rung']:3s} "
                    f"{','.join(r['families']):20s} {r['description']}"
                )
        return
    from click.core import ParameterSource

    from reference.errors import MalformedInput

    for fault in inject:
        get_fault(fault)  # an unknown name is refused before anything is lowered
    load_target(target_name)
    check_name_or_file("debug", name, from_file)
    if from_file is not None:
        context = click.get_current_context()
        given = [
            f"--{p}"
            for p in ("shape", "dtype", "side")
            if context.get_parameter_source(p + "s" if p == "shape" else p) not in (ParameterSource.DEFAULT, None)
        ]
        if given:
            raise MalformedInput(
                f"debug --from-file: {', '.join(given)} do(es) not apply to a file, whose program fixes "
                "its shapes and types; drop it, or debug NAME"
            )
    overrides = checked_shapes(name, shapes)[0] if from_file is None else {}
    check_output_dir(repro_dir, "--repro-dir")
    finding = run_debug(name, target_name, side, overrides, dtype, tuple(inject), from_file, seed, repro_dir)
    if as_json:
        print_json(finding.to_dict())
    else:
        click.echo(render(finding))
    if finding.first is not None:
        raise click.exceptions.Exit(1)


from landscape.host_cli import calibrate, validate  # noqa: E402  (the commands that measure this machine)
from landscape.load_cli import serve  # noqa: E402  (serving under load)
from landscape.lowering_cli import diff, hlo, stats  # noqa: E402  (the commands that show a lowering)
from landscape.serve_cli import compare, landscape_map_command, predict  # noqa: E402  (the commands that serve models)
from landscape.sweep_cli import sweep  # noqa: E402  (what-if grids over predict)
from landscape.train_cli import train  # noqa: E402  (a training step)

for _command in (hlo, stats, diff, predict, landscape_map_command, compare, calibrate, validate, serve, sweep, train):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `landscape` console script; the exit codes are in landscape/exits.py."""
    from landscape.exits import run as run_cli

    return run_cli(cli, argv)


if __name__ == "__main__":
    sys.exit(main())
