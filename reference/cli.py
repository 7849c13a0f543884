"""`landscape`: the command line, and the only module that reaches into every package.

Commands are thin: parse, call one documented function, render. torch and jax are imported
inside the commands that need them, so `landscape --help` stays fast. Bad input prints one
line, `landscape: error: ...`, and exits 2; a check that ran and failed exits 1.
"""

from __future__ import annotations

import json
import sys

import click

DTYPES = ("float32", "bfloat16", "float16")


def default_runners() -> dict:
    """The two implementations, each a function from a Case to its outputs."""
    import jax_side
    import pytorch_side

    return {"torch": pytorch_side.run_case, "jax": jax_side.run_case}


def _print_json(data) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Landscape: one model, two frameworks, five AI execution models.

    Every kernel exists as a float64 numpy reference, a PyTorch module and a JAX/Flax NNX
    module. NAME is a catalogue kernel (matmul, attention, block, ...) or a published model
    config (llama-3.1-8b, ...); see `landscape kernels`.
    """


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
@click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True)
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
        from reference.render import render_agreement

        render_agreement(result)
    if not result.ok:
        raise click.exceptions.Exit(1)


SIDES = ("torch", "jax")
STAGE_NAMES = ("fx", "jaxpr", "stablehlo", "ir", "xla")


def lower_named(name: str, side: str, shapes: dict, dtype: str, compile_xla: bool = False, flat: bool = False):
    """Lower a catalogue entry or model on one side; returns a `reference.lowering.Lowering`.

    Published models lower regionally (embedding, one block called `layers` times, head) unless
    `flat`; kernels and the `decoder` entry lower flat. The xla stage needs a flat lowering.

    Raises:
        UnknownName, InvalidShape: bad name or shapes.
        LoweringFailed: the framework's compiler failed.
    """
    from reference.catalogue import get_entry

    entry = get_entry(name)
    resolved = entry.resolve(shapes)
    entry.check_dtype(dtype)
    regional = entry.kind == "model" and not flat and not compile_xla
    if side == "torch":
        from pytorch_side.lower import lower_entry, lower_regional

        return lower_regional(entry.name, resolved, dtype) if regional else lower_entry(entry.name, resolved, dtype)
    from jax_side.lower import lower_entry, lower_regional

    if regional:
        return lower_regional(entry.name, resolved, dtype)
    return lower_entry(entry.name, resolved, dtype, compile_xla=compile_xla)


def _lowering_from_file(path: str):
    from pathlib import Path

    from reference.errors import MalformedInput
    from reference.ir import parse_stablehlo, verify
    from reference.lowering import Lowering

    try:
        text = Path(path).read_text()
    except OSError as err:
        raise MalformedInput(f"cannot read {path}: {err.strerror}") from None
    return Lowering("file", Path(path).stem, {"stablehlo": text}, verify(parse_stablehlo(text)))


def _lowering_for(command: str, name, from_file, side: str, shapes, dtype: str, flat: bool, compile_xla: bool = False):
    """The lowering a command works on: read from --from-file, or NAME lowered on one side."""
    from reference.errors import MalformedInput
    from reference.spec import parse_assignments

    if from_file:
        return _lowering_from_file(from_file)
    if not name:
        raise MalformedInput(f"{command} needs NAME or --from-file FILE.mlir")
    return lower_named(name, side, parse_assignments(shapes), dtype, compile_xla=compile_xla, flat=flat)


def _shape_options(fn):
    fn = click.option("--flat", is_flag=True, help="Lower a model layer by layer instead of one block called per layer.")(fn)
    fn = click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True)(fn)
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
    for key in ("flops", "transcendentals", "bytes_accessed", "param_bytes"):
        click.echo(f"{key:16s} {data[key]:,}")
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
    """List the hardware targets: family, 16-bit peak, main memory and its bandwidth, ridge point."""
    from hardware_models.target import load_targets

    loaded = load_targets()
    if as_json:
        _print_json([t.to_dict() for t in loaded.values()])
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Landscape targets")
    for col in ("name", "family", "description", "16-bit peak", "memory bandwidth", "memory", "ridge (FLOP/B)"):
        table.add_column(col)
    for t in loaded.values():
        table.add_row(
            escape(t.name), t.family, escape(t.description), f"{t.peak_16bit_flop_per_s / 1e12:.0f} TFLOP/s",
            f"{t.main_memory_bytes_per_s / 1e12:.2f} TB/s", f"{t.main_memory_bytes / 1e9:.0f} GB", f"{t.ridge_flop_per_byte:.0f}",
        )
    Console(width=140).print(table)


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
    from reference.render import render_estimate

    render_estimate(result)


@cli.command()
@click.argument("name", required=False)
@_estimate_options
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False), help="Output file: .png or .svg.")
def roofline(name, chips, target_name, side, shapes, dtype, flat, from_file, settings, out_path) -> None:
    """Draw NAME's kernels on the target's roofline (PNG or SVG), schedule-bound ones marked."""
    from pathlib import Path

    from hardware_models.cost.roofline import plot_roofline, schedule_spans
    from reference.errors import UnknownName

    suffix = Path(out_path).suffix.lower()
    if suffix not in (".png", ".svg"):
        raise UnknownName("roofline output format", suffix or out_path, (".png", ".svg"))
    target, plan, result = _estimate_for("roofline", name, target_name, side, shapes, dtype, flat, from_file, settings, chips)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    points = plot_roofline(result, target, out_path, schedule_spans(plan, target))
    counts = {b: sum(p.bottleneck == b for p in points) for b in ("compute", "memory", "schedule")}
    click.echo(f"wrote {out_path}: {len(points)} kernels ({', '.join(f'{k} {v}' for k, v in counts.items())})")


# --precision: (the dtype the model is lowered in, the 8-bit type its weights and matmuls then take)
PRECISIONS = {"bf16": ("bfloat16", None), "fp16": ("float16", None), "fp8": ("bfloat16", "f8E4M3FN"), "int8": ("bfloat16", "i8")}


@cli.command()
@click.option("--model", "model_name", required=True, help="A published model config (llama-3.1-8b, ...; see `landscape kernels`).")
@click.option("--target", "target_name", required=True, help="A target from `landscape targets`.")
@click.option("--chips", type=click.IntRange(min=1), default=None, help="Chips (wafers) to use; default: the fewest that hold the model and its cache.")
@click.option("--batch", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--input-len", "input_len", type=click.IntRange(min=1), default=2048, show_default=True)
@click.option("--output-len", "output_len", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--precision", type=click.Choice(tuple(PRECISIONS)), default="bf16", show_default=True,
              help="bf16, fp16; or fp8 / int8: weights, KV cache and matmul inputs in 8 bits (W8A8), the rest bf16.")
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
    from reference.render import render_prediction

    render_prediction(data, precision, side)


def _model_names() -> list[str]:
    from reference.models import load_models

    return sorted(load_models())


def _check_model(model_name: str) -> None:
    from reference.catalogue import get_entry
    from reference.errors import UnknownName

    if get_entry(model_name).kind != "model":
        raise UnknownName("model config", model_name, _model_names())


def lower_for_serving(model_name: str, side: str, batch: int, input_len: int, output_len: int, precision: str = "bf16"):
    """(prefill IR, decode IR, KV-cache bytes) of a published model, as `predict_inference` takes them.

    The decode step runs against a cache of input + output tokens; fp8 and int8 go through
    `quantize_weights` (weights, KV cache and matmul inputs in 8 bits).
    """
    from hardware_models.passes.quantize_weights import quantize_weights
    from reference.dtypes import numpy_dtype
    from reference.models import get_model

    dtype, eight_bit = PRECISIONS[precision]
    tokens = input_len + output_len
    prefill = lower_named(model_name, side, {"batch": batch, "seq": input_len}, dtype).module
    decode = lower_named(model_name, side, {"batch": batch, "seq": tokens, "mode": "decode"}, dtype).module
    if eight_bit:
        prefill, decode = quantize_weights(prefill, eight_bit), quantize_weights(decode, eight_bit)
    cache_bytes = get_model(model_name).kv_cache_bytes(batch, tokens, 1 if eight_bit else numpy_dtype(dtype).itemsize)
    return prefill, decode, cache_bytes


@cli.command(name="map")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", "as_markdown", is_flag=True, help="A Markdown table.")
@click.option("--model", "model_name", default="llama-3.1-8b", show_default=True,
              help="The reference model whose KV-cache placement is measured on each family.")
def landscape_map_command(as_json, as_markdown, model_name) -> None:
    """The Accelerator Landscape Map: GPU, TPU, Cerebras, Groq and Spyre side by side.

    Prose rows come from a data file, numbers from the target files, and the KV-cache row from
    predicting MODEL (2048 tokens in, 256 out, bf16) on each family's representative target.
    """
    from hardware_models.landscape_map import FAMILIES, landscape_map
    from hardware_models.predict import predict_inference

    base = landscape_map()
    _check_model(model_name)
    prefill, decode, cache = lower_for_serving(model_name, "jax", 1, 2048, 256)
    placed = {}
    for family in FAMILIES:
        result = predict_inference(prefill, decode, load_target(base.targets[family]), model=model_name, batch=1,
                                   input_len=2048, output_len=256, kv_cache_bytes=cache)
        placed[family] = f"{model_name}: {cache / 1e9:.2f} GB in {result.kv_cache_location}"
    result = landscape_map(placed)
    if as_json:
        _print_json(result.to_dict())
    elif as_markdown:
        click.echo(result.to_markdown())
    else:
        from reference.render import render_map

        render_map(result)


DEFAULT_COMPARE_TARGETS = ("h100", "tpu-v5e", "wse-3", "groq-lpu", "spyre")  # one per family


@cli.command()
@click.argument("name", default="block")
@click.option("--targets", "target_list", default=",".join(DEFAULT_COMPARE_TARGETS), show_default=True,
              help="Comma-separated targets, or 'all'.")
@click.option("--phase", type=click.Choice(("prefill", "decode")), default="prefill", show_default=True)
@click.option("--shape", "shapes", multiple=True, metavar="PARAM=VALUE", help="Override a shape parameter; repeatable.")
@click.option("--dtype", type=click.Choice(DTYPES), default="bfloat16", show_default=True)
@click.option("--chips", type=click.IntRange(min=1), default=None, help="Force a chip count on every target.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False),
              help="Write HLO dumps of both sides, plans, rooflines, traces and report.json under DIR.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def compare(name, target_list, phase, shapes, dtype, chips, out_dir, as_json) -> None:
    """Compare NAME's PyTorch and JAX paths on one target per family (or --targets).

    NAME defaults to `block`, the Llama-style block (batch 2, 16 tokens, 4 heads of 16, GQA 2,
    d_ff 128). For each target and side: time, bottleneck, bytes per level, kernels, padding
    waste, fallbacks; then where the two lowerings differ and what that costs on each target.
    """
    from hardware_models.compare import compare_lowerings
    from hardware_models.target import load_targets
    from reference.catalogue import get_entry
    from reference.spec import parse_assignments

    names = list(load_targets()) if target_list == "all" else [t.strip() for t in target_list.split(",") if t.strip()]
    targets = [load_target(t) for t in names]  # an unknown target fails here, before any lowering
    overrides = parse_assignments(shapes)
    if "mode" in get_entry(name).params:
        overrides.setdefault("mode", phase)
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True)
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("lowering", total=2 + 2 * len(targets))
        lowered = {}
        for side in SIDES:
            lowered[side] = lower_named(name, side, overrides, dtype, compile_xla=bool(out_dir) and side == "jax")
            bar.update(task, advance=1, description=f"lowered {side}")
        result = compare_lowerings(lowered["torch"], lowered["jax"], targets, name, chips,
                                   progress=lambda label: bar.update(task, advance=1, description=label))
    if out_dir:
        from hardware_models.report import write_report

        written = write_report(result, lowered, targets, out_dir)
        err.print(f"wrote {len(written)} files under {out_dir}")
    if as_json:
        _print_json(result.to_dict())
        return
    from reference.render import render_comparison

    render_comparison(result)


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
