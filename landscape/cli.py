"""`landscape`: the command line, and the only module that reaches into every package.

Commands are thin: parse, call one documented function, render. torch and jax are imported
inside the commands that need them, so `landscape --help` stays fast, and names, shapes and
dtypes are checked before either is imported, so a typo is reported at once. Bad input prints
one line, `landscape: error: ...`, and exits 2; a check that ran and failed exits 1.
"""

from __future__ import annotations

import json
import os
import sys

import click

from landscape.serving import PRECISIONS, SIDES, lower_for_serving, lower_named, lowering_from_file
from reference.dtypes import DTYPES as DTYPE_TABLE
from reference.dtypes import FLOAT_DTYPES, get_dtype


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
            self.fail(f"unknown {self.kind} {value!r}; valid: {', '.join(self.shown)} (or {', '.join(aliases)})", param, ctx)
        return dtype.short if self.short else dtype.name


DTYPE = DTypeParam(FLOAT_DTYPES)
DTYPE_HELP = "float32, bfloat16 or float16 (also f32/fp32, bf16, f16/fp16)."


def default_runners() -> dict:
    """The two implementations, each a function from a Case to its outputs, imported only when
    first called (after the name, shapes and dtype have been checked)."""

    def torch_run(case):
        import pytorch_side

        return pytorch_side.run_case(case)

    def jax_run(case):
        import jax_side

        return jax_side.run_case(case)

    return {"torch": torch_run, "jax": jax_run}


def _verbose() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("verbose"))


def _print_json(data) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--verbose", is_flag=True,
              help="Keep the compilers' own logging (XLA's INFO lines on stderr) and XLA's source metadata "
                   "(file names, stack frames) in `hlo --stage xla` and the report's dumps.")
def cli(verbose: bool) -> None:
    """Landscape: one model, two frameworks, five AI execution models.

    Every kernel exists as a float64 numpy reference, a PyTorch module and a JAX/Flax NNX
    module. NAME is a catalogue kernel (matmul, attention, block, ...) or a published model
    config (llama-3.1-8b, ...); see `landscape kernels`.
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
        _print_json(rows)
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


@cli.command()
@click.argument("name")
@click.option("--shape", "shapes", multiple=True, metavar="PARAM=VALUE", help="Override a shape parameter; repeatable.")
@click.option("--dtype", type=DTYPE, default="float32", show_default=True, help=DTYPE_HELP)
@click.option("--seed", type=int, default=0, show_default=True, help="Input generator seed.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def run(name: str, shapes: tuple[str, ...], dtype: str, seed: int, as_json: bool) -> None:
    """Run NAME on the reference, PyTorch and JAX with identical inputs and weights.

    Prints, for each side against the float64 reference and for the two sides against each
    other, the max absolute and max relative (normwise) error, the bound from the dtype's
    tolerance, and pass or fail. Exits 1 if any comparison fails.
    """
    from reference.agreement import check_agreement
    from reference.spec import parse_assignments

    overrides = parse_assignments(shapes)
    result = check_agreement(name, overrides, dtype, seed, runners=default_runners())
    if as_json:
        _print_json(result.to_dict())
    else:
        from landscape.render import render_agreement

        render_agreement(result)
    if not result.ok:
        raise click.exceptions.Exit(1)


STAGE_NAMES = ("fx", "jaxpr", "stablehlo", "ir", "xla")


def _lowering_for(command: str, name, from_file, side: str, shapes, dtype: str, flat: bool, compile_xla: bool = False):
    """The lowering a command works on: read from --from-file, or NAME lowered on one side."""
    from reference.errors import MalformedInput
    from reference.spec import parse_assignments

    if from_file:
        return lowering_from_file(from_file)
    if not name:
        raise MalformedInput(f"{command} needs NAME or --from-file FILE.mlir")
    return lower_named(name, side, parse_assignments(shapes), dtype, compile_xla=compile_xla, flat=flat)


def _shape_options(fn):
    fn = click.option("--flat", is_flag=True, help="Lower a model layer by layer instead of one block called per layer.")(fn)
    fn = click.option("--dtype", type=DTYPE, default="float32", show_default=True, help=DTYPE_HELP)(fn)
    fn = click.option("--shape", "shapes", multiple=True, metavar="PARAM=VALUE", help="Override a shape parameter; repeatable.")(fn)
    return fn


@cli.command()
@click.argument("name", required=False)
@click.option("--side", type=click.Choice(SIDES), default="jax", show_default=True)
@click.option("--stage", type=click.Choice(STAGE_NAMES), default="ir", show_default=True,
              help="fx (torch), jaxpr (jax), stablehlo, ir, or xla (jax: XLA's optimized HLO, CPU backend).")
@_shape_options
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write the dump under DIR instead of printing it.")
@click.option("--from-file", "from_file", type=click.Path(dir_okay=False), help="Read StableHLO text instead of lowering NAME.")
def hlo(name, side, stage, shapes, dtype, flat, out_dir, from_file) -> None:
    """Print one stage of NAME's lowering on one side (or of a StableHLO file)."""
    from reference.errors import UnknownName
    from reference.lowering import STAGES

    if not from_file and stage not in STAGES[side]:  # checked before the (slow) lowering
        raise UnknownName(f"stage for the {side} side", stage, STAGES[side])
    lowering = _lowering_for("hlo", name, from_file, side, shapes, dtype, flat, compile_xla=stage == "xla")
    text = lowering.stage(stage)
    if stage == "xla":
        from landscape.render import xla_text

        text = xla_text(text, _verbose())
    if out_dir:
        from pathlib import Path

        path = Path(out_dir) / f"{lowering.name}.{lowering.side}.{stage}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        click.echo(f"wrote {path}")
    else:
        click.echo(text, nl=not text.endswith("\n"))


@cli.command()
@click.argument("name", required=False)
@click.option("--side", type=click.Choice(SIDES), default="jax", show_default=True)
@_shape_options
@click.option("--from-file", "from_file", type=click.Path(dir_okay=False), help="Read StableHLO text instead of lowering NAME.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def stats(name, side, shapes, dtype, flat, from_file, as_json) -> None:
    """FLOPs, transcendentals, bytes accessed, parameter bytes and the op histogram of NAME's IR.

    Loops count once per iteration; bytes are at op boundaries as if nothing were fused.
    """
    data = _lowering_for("stats", name, from_file, side, shapes, dtype, flat).stats().to_dict()
    if as_json:
        _print_json(data)
        return
    from landscape.units import format_bytes

    for key in ("flops", "transcendentals", "bytes_accessed", "param_bytes"):
        scaled = f"  ({format_bytes(data[key])})" if "bytes" in key else ""
        click.echo(f"{key:16s} {data[key]:,}{scaled}")
    click.echo("ops:")
    for op, count in sorted(data["ops"].items(), key=lambda kv: -kv[1]):
        click.echo(f"  {count:6d}  {op}")
    if data["unknown_ops"]:
        click.echo(f"unknown (kept opaque, costed as data movement): {data['unknown_ops']}")


@cli.command()
@click.argument("name")
@_shape_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def diff(name, shapes, dtype, flat, as_json) -> None:
    """Where the PyTorch and JAX lowerings of NAME differ: op histogram and divergent segments."""
    from reference.ir.diff import diff_modules
    from reference.spec import parse_assignments

    overrides = parse_assignments(shapes)
    torch_side = lower_named(name, "torch", overrides, dtype, flat=flat)
    jax_side = lower_named(name, "jax", overrides, dtype, flat=flat)
    result = diff_modules(torch_side.module, jax_side.module)
    if as_json:
        _print_json(result.to_dict())
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=140)
    table = Table(title=escape(f"{name} [{dtype}]: ops per path"))
    for col in ("op", "torch", "jax"):
        table.add_column(col)
    for op, (a, b) in sorted(result.histogram.items()):
        style = "" if a == b else "bold"
        table.add_row(escape(op), str(a), str(b), style=style)
    console.print(table)
    for d in result.divergences:
        console.print(escape(f"segment {d.segment} (after {d.after}): {'; '.join(d.reasons)}"))
        for side in result.sides:
            ops = ", ".join(f"{k.split('.', 1)[-1]} x{v}" for k, v in d.ops[side].items() if v)
            console.print(escape(f"    {side:5s} {ops or '-'}   from {', '.join(d.scopes[side]) or '-'}"))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: every quantity with its source.")
def targets(as_json: bool) -> None:
    """List the hardware targets: family, 16-bit peak (dense, not sustained), main memory (HBM, SRAM or
    LPDDR5) and its bandwidth, ridge point."""
    from hardware_models.target import load_targets

    loaded = load_targets()
    if as_json:
        _print_json([t.to_dict() for t in loaded.values()])
        return
    from landscape.render import render_targets

    render_targets(loaded)


@cli.command()
@click.argument("m", type=int)
@click.argument("n", type=int)
@click.argument("k", type=int)
@click.option("--array", "array", default="128x128", show_default=True, metavar="RxC", help="Systolic array rows x columns.")
@click.option("--dataflow", type=click.Choice(("os", "ws", "is")), default="os", show_default=True,
              help="Output, weight or input stationary.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def gemm(m, n, k, array, dataflow, as_json) -> None:
    """Compute cycles of C[M,N] = A[M,K] @ B[K,N] on a systolic array, under SCALE-Sim's conventions."""
    from hardware_models.cost.systolic import parse_array, systolic_gemm

    rows, cols = parse_array(array)
    result = systolic_gemm(m, n, k, rows, cols, dataflow)
    if as_json:
        _print_json(result.to_dict())
        return
    click.echo(
        f"{m}x{n}x{k} on {rows}x{cols} ({dataflow}): Sr={result.sr} Sc={result.sc} T={result.t}, "
        f"{result.row_folds}x{result.col_folds} folds of {result.cycles_per_fold} cycles\n"
        f"compute_cycles {result.compute_cycles:,}  utilization {result.utilization:.1%}  "
        f"mapping efficiency {result.mapping_efficiency:.1%}"
    )


def load_target(name: str, settings: tuple[str, ...] = ()):
    """A target by name, with `--set section.key=VALUE` overrides applied.

    Raises:
        UnknownName: unknown target or key.
        MalformedInput: a setting that is not KEY=NUMBER.
    """
    from hardware_models.target import get_target
    from reference.errors import MalformedInput

    overrides = {}
    for item in settings:
        key, sep, value = item.partition("=")
        try:
            overrides[key.strip()] = float(value)
        except ValueError:
            raise MalformedInput(f"--set expects SECTION.KEY=NUMBER, got {item!r}") from None
        if not sep:
            raise MalformedInput(f"--set expects SECTION.KEY=NUMBER, got {item!r}")
    target = get_target(name)
    return target.with_overrides(overrides) if overrides else target


def _estimate_options(fn):
    fn = click.option("--set", "settings", multiple=True, metavar="SECTION.KEY=VALUE",
                      help="Override a target quantity (an assumed knob), e.g. schedule.launch_overhead_s=2e-6; repeatable.")(fn)
    fn = click.option("--from-file", "from_file", type=click.Path(dir_okay=False), help="Read StableHLO text instead of lowering NAME.")(fn)
    fn = _shape_options(fn)
    fn = click.option("--side", type=click.Choice(SIDES), default="jax", show_default=True)(fn)
    fn = click.option("--target", "target_name", required=True, help="A target from `landscape targets` (h100, tpu-v5e, ...).")(fn)
    fn = click.option("--chips", type=click.IntRange(min=1), default=None,
                      help="Chips (wafers on Cerebras) to spread the program over; default: the fewest that hold it.")(fn)
    return fn


def _estimate_for(command, name, target_name, side, shapes, dtype, flat, from_file, settings, chips=None):
    """(target, plan, estimate) for NAME lowered on one side, or a StableHLO file."""
    from hardware_models.estimate import estimate as estimate_module
    from hardware_models.pipelines import compile_plan

    target = load_target(target_name, settings)  # checked before the (slow) lowering
    lowering = _lowering_for(command, name, from_file, side, shapes, dtype, flat)
    plan = compile_plan(lowering.module, target, chips=chips)
    label = f"{lowering.name} ({lowering.side}, {dtype})" if not from_file else lowering.name
    return target, plan, estimate_module(lowering.module, target, label, plan)


@cli.command()
@click.argument("name", required=False)
@_estimate_options
@click.option("--plan", "show_plan", is_flag=True, help="Also print the compiled plan: groups, tiles, bytes per level.")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False),
              help="Write the static schedule as a Chrome trace (JSON for Perfetto); scheduled targets only (groq-lpu).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def estimate(name, chips, target_name, side, shapes, dtype, flat, from_file, settings, show_plan, trace_path, as_json) -> None:
    """Predict NAME's time on a target, kernel by kernel: compute, memory and schedule time.

    NAME is lowered on one side, compiled by the target's passes (fusion, tiling and padding,
    memory placement) and costed. Each row is one kernel (a fused group): its ops, FLOPs,
    bytes per memory level, time and bottleneck; totals follow. With --json the plan is
    included under "plan" when --plan is given.
    """
    if trace_path:  # refused before the (slow) lowering, not after
        from hardware_models.trace import check_traceable

        check_traceable(load_target(target_name, settings))
    target, plan, result = _estimate_for("estimate", name, target_name, side, shapes, dtype, flat, from_file, settings, chips)
    if trace_path:
        from pathlib import Path

        from hardware_models.trace import chrome_trace

        trace = json.dumps(chrome_trace(plan, target), sort_keys=True)
        Path(trace_path).parent.mkdir(parents=True, exist_ok=True)
        Path(trace_path).write_text(trace)
        click.echo(f"wrote {trace_path}", err=True)
    if as_json:
        _print_json({**result.to_dict(), **({"plan": plan.to_dict()} if show_plan else {})})
        return
    if show_plan:
        click.echo(plan.render())
    from landscape.render import render_estimate

    render_estimate(result)


@cli.command()
@click.argument("name", required=False)
@_estimate_options
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False), help="Output file: .png or .svg.")
def roofline(name, chips, target_name, side, shapes, dtype, flat, from_file, settings, out_path) -> None:
    """Draw NAME's kernels on the target's roofline (PNG or SVG), schedule-bound ones marked."""
    from pathlib import Path

    from hardware_models.cost.roofline import schedule_spans
    from landscape.roofline_plot import plot_roofline
    from reference.errors import UnknownName

    suffix = Path(out_path).suffix.lower()
    if suffix not in (".png", ".svg"):
        raise UnknownName("roofline output format", suffix or out_path, (".png", ".svg"))
    target, plan, result = _estimate_for("roofline", name, target_name, side, shapes, dtype, flat, from_file, settings, chips)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    points = plot_roofline(result, target, out_path, schedule_spans(plan, target))
    from landscape.roofline_plot import roofline_title

    counts = {b: sum(p.bottleneck == b for p in points) for b in ("compute", "memory", "schedule")}
    click.echo(f"wrote {out_path}: {roofline_title(result, target, points)} ({', '.join(f'{k}-bound {v}' for k, v in counts.items())})")


@cli.command()
@click.option("--model", "model_name", required=True, help="A published model config (llama-3.1-8b, ...; see `landscape kernels`).")
@click.option("--target", "target_name", required=True, help="A target from `landscape targets`.")
@click.option("--chips", type=click.IntRange(min=1), default=None, help="Chips (wafers) to use; default: the fewest that hold the model and its cache.")
@click.option("--batch", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--input-len", "input_len", type=click.IntRange(min=1), default=2048, show_default=True)
@click.option("--output-len", "output_len", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--precision", type=DTypeParam(PRECISIONS, short=True, kind="precision"), default="bf16", show_default=True,
              help="bf16, fp16; or fp8 / int8: weights, KV cache and matmul inputs in 8 bits (W8A8), the rest bf16. "
                   "Also bfloat16, float16, f8E4M3FN, i8.")
@click.option("--side", type=click.Choice(SIDES), default="jax", show_default=True)
@click.option("--set", "settings", multiple=True, metavar="SECTION.KEY=VALUE", help="Override a target quantity; repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def predict(model_name, target_name, chips, batch, input_len, output_len, precision, side, settings, as_json) -> None:
    """Predict how fast MODEL serves on a target: time to first token, decode step, tokens/s.

    The model is lowered twice (prefill of --input-len tokens; one decode step against a cache of
    input + output tokens), and both graphs are compiled and costed by the target's pipeline.
    """
    from hardware_models.predict import predict_inference

    _check_model(model_name)
    target = load_target(target_name, settings)  # checked before the (slow) lowering
    prefill, decode, cache_bytes = lower_for_serving(model_name, side, batch, input_len, output_len, precision)
    result = predict_inference(prefill, decode, target, model=model_name, batch=batch, input_len=input_len,
                               output_len=output_len, kv_cache_bytes=cache_bytes, chips=chips)
    data = result.to_dict()
    if as_json:
        _print_json(data)
        return
    from landscape.render import render_prediction

    render_prediction(data, precision, side)


def _model_names() -> list[str]:
    from reference.models import load_models

    return sorted(load_models())


def _check_model(model_name: str) -> None:
    """A published model config's name, checked before anything is lowered."""
    from reference.errors import UnknownName

    if model_name not in _model_names():
        raise UnknownName("model config", model_name, _model_names())


@cli.command(name="map")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", "as_markdown", is_flag=True, help="A Markdown table.")
@click.option("--model", "model_name", default="llama-3.1-8b", show_default=True,
              help="The reference model whose KV-cache placement is predicted on each family.")
def landscape_map_command(as_json, as_markdown, model_name) -> None:
    """The Accelerator Landscape Map: GPU, TPU, Cerebras, Groq and Spyre side by side.

    Prose rows come from a data file, numbers from the target files, and the KV-cache row from
    predicting MODEL (2048 tokens in, 256 out, bf16) on each family's representative target.
    """
    from hardware_models.landscape_map import FAMILIES, landscape_map
    from hardware_models.predict import predict_inference
    from landscape.units import format_bytes

    base = landscape_map()
    _check_model(model_name)
    prefill, decode, cache = lower_for_serving(model_name, "jax", 1, 2048, 256)
    placed = {}
    for family in FAMILIES:
        result = predict_inference(prefill, decode, load_target(base.targets[family]), model=model_name, batch=1,
                                   input_len=2048, output_len=256, kv_cache_bytes=cache)
        placed[family] = f"{model_name}: {format_bytes(cache)} in {result.kv_cache_location}"
    result = landscape_map(placed)
    if as_json:
        _print_json(result.to_dict())
    elif as_markdown:
        click.echo(result.to_markdown())
    else:
        from landscape.render import render_map

        render_map(result)


def _default_targets() -> str:
    from hardware_models.families import representative_targets

    return ",".join(representative_targets())


@cli.command()
@click.argument("name", required=False)
@click.option("--targets", "target_list", default=_default_targets, show_default="one target per family",
              help="Comma-separated targets, or 'all'.")
@click.option("--phase", type=click.Choice(("prefill", "decode", "both")), default="both", show_default=True,
              help="For an entry with a mode (block, decoder, models): prefill, one decode step, or both.")
@click.option("--shape", "shapes", multiple=True, metavar="PARAM=VALUE", help="Override a shape parameter; repeatable.")
@click.option("--dtype", type=DTYPE, default="bfloat16", show_default=True, help=DTYPE_HELP)
@click.option("--chips", type=click.IntRange(min=1), default=None, help="Force a chip count on every target.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Write report.html, report.json, HLO dumps of both sides, plans, rooflines and traces under DIR.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: {\"comparisons\": [one per phase]}.")
def compare(name, target_list, phase, shapes, dtype, chips, out_dir, as_json) -> None:
    """Compare NAME's PyTorch and JAX paths on one target per family (or --targets).

    Without NAME: one Llama-3.1-8B layer (`block` at llama-3.1-8b's dimensions, batch 1), a
    prefill of 2048 tokens and one decode step against a 2048-token KV cache. For each phase,
    target and side: time, bottleneck, kernels, fused groups, chips, padding waste, main-memory
    bytes, fallbacks; then where the two lowerings differ and what that costs on each target.
    """
    from hardware_models.target import load_targets
    from landscape.workload import compare_workload, plan_workloads
    from reference.spec import parse_assignments

    names = list(load_targets()) if target_list == "all" else [t.strip() for t in target_list.split(",") if t.strip()]
    targets = [load_target(t) for t in names]  # an unknown target fails here, before any lowering
    workloads = plan_workloads(name, parse_assignments(shapes), dtype, phase)  # so do bad names and shapes
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True)
    done = []
    with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("lowering", total=len(workloads) * (2 + 2 * len(targets)))
        for workload in workloads:
            done.append(compare_workload(workload, targets, chips, compile_xla=bool(out_dir),
                                         progress=lambda label: bar.update(task, advance=1, description=label)))
    if out_dir:
        from landscape.report import write_report

        written = write_report(done, targets, out_dir, verbose=_verbose())
        err.print(f"wrote {len(written)} files under {out_dir}; open {out_dir}/report.html")
    if as_json:
        _print_json({"comparisons": [result.to_dict() for result, _ in done]})
        return
    from landscape.render import render_comparison

    render_comparison([result for result, _ in done])


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `landscape` console script."""
    from reference.errors import LandscapeError

    try:
        code = cli.main(args=argv, prog_name="landscape", standalone_mode=False)
    except LandscapeError as err:
        click.echo(f"landscape: error: {err}", err=True)
        return 2
    except click.UsageError as err:
        click.echo(f"landscape: error: {err.format_message()}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("landscape: aborted", err=True)
        return 130
    except click.exceptions.Exit as exit_:
        return exit_.exit_code
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
