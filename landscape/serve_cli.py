"""The commands about models and targets side by side: `predict`, `map` and `compare` (registered on
the `landscape` group by landscape/cli.py). Like every command they check their input (names,
lengths against the model's context, output folders) before torch or jax is imported.
"""

from __future__ import annotations

import contextlib
import math

import click

from landscape.lowering import PRECISIONS, SIDES, lower_for_serving
from landscape.options import (
    ALLOW_BEYOND_CONTEXT_HELP,
    BATCH,
    DTYPE,
    DTYPE_HELP,
    SIZE,
    DTypeParam,
    check_exclusive,
    check_model,
    load_target,
    model_option,
    parse_target_list,
    print_json,
    verbose,
)

STRICT_DTYPES_HELP = (
    "Refuse a floating type the target lacks (f64 on a TPU, Groq, Cerebras or Spyre: torch-mlir's "
    "LayerNorm variance) instead of costing its emulation."
)
WITHOUT_HELP = (
    "Leave a pass out of the compiler's pipeline, a what-if (what its fusion or fold saves): fold_upcasts, "
    "fuse_elementwise, fuse_attention, shard_tensor_parallel or insert_restickify, where the target's "
    "pipeline has it; repeatable."
)


@click.command()
@click.option(
    "--model",
    "model_name",
    required=True,
    callback=model_option,
    help="A published model config (llama-3.1-8b, ...; see `landscape kernels`), or a Hugging Face config.json's path.",
)
@click.option("--target", "target_name", required=True, help="A target from `landscape targets`.")
@click.option(
    "--chips",
    type=SIZE,
    default=None,
    help="Chips (wafers) to use; default: the fewest that hold the model and its cache.",
)
@click.option(
    "--batch",
    type=BATCH,
    default="1",
    show_default=True,
    help="Sequences served together (a static batch), or `max`: the largest batch whose weights and KV cache "
    "fit the chips (--chips, else the fewest that hold one sequence), capped at 2048, as in-flight-batching "
    "servers report max-load throughput (GPU, TPU and Spyre targets).",
)
@click.option("--input-len", "input_len", type=SIZE, default=2048, show_default=True)
@click.option("--output-len", "output_len", type=SIZE, default=256, show_default=True)
@click.option(
    "--precision",
    type=DTypeParam(PRECISIONS, short=True, kind="precision"),
    default="bf16",
    show_default=True,
    help="bf16, fp16; or fp8 / int8: weights, KV cache and matmul inputs in 8 bits (W8A8), the rest bf16; "
    "or fp4 (NVFP4/MXFP4): weights and their matmuls' inputs in 4 bits, the KV cache and attention in fp8. "
    "Also bfloat16, float16, f8E4M3FN, i8, nvfp4, mxfp4.",
)
@click.option("--side", type=click.Choice(SIDES), default="jax", show_default=True)
@click.option(
    "--set", "settings", multiple=True, metavar="SECTION.KEY=VALUE", help="Override a target quantity; repeatable."
)
@click.option("--allow-beyond-context", "allow_beyond_context", is_flag=True, help=ALLOW_BEYOND_CONTEXT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def predict(
    model_name,
    target_name,
    chips,
    batch,
    input_len,
    output_len,
    precision,
    side,
    settings,
    allow_beyond_context,
    as_json,
) -> None:
    """Predict how fast MODEL serves one static batch on a target: time to first token, decode steps, tokens/s.

    A static batch: every sequence starts together and reserves its whole cache; `landscape serve`
    simulates in-flight batching with a paged cache under a request stream.

    The model is lowered for the prefill of --input-len tokens and for a decode step at three
    cache lengths (the first, middle and last of the output); every graph is compiled and costed
    by the target's pipeline, and the steps are interpolated over every output position.

    \b
    ttft_s                   the prefill (it produces the first token)
    decode_step_s            the mean of the output_len - 1 decode steps after it
    decode_total_s           their sum; e2e_latency_s = ttft_s + decode_total_s
    tokens_per_s_per_user    1 / decode_step_s
    throughput_tokens_per_s  batch * output_len / e2e_latency_s (static batch, as TensorRT-LLM reports)

    Input + output tokens must fit the model's context length (max_position_embeddings) unless
    --allow-beyond-context is given.
    """
    from hardware_models.predict import predict_inference
    from landscape.outputs import require_finite
    from reference.catalogue import get_entry
    from reference.models import context_check

    check_model(model_name)
    target = load_target(target_name, settings)  # checked before the (slow) lowering
    check_precision(precision, target)
    tokens = input_len + output_len
    note = context_check(
        model_name,
        tokens,
        f"--input-len {input_len} + --output-len {output_len} = {tokens:,} tokens",
        "--input-len + --output-len",
        allow_beyond_context,
    )
    batch_note = ""
    if batch == "max":
        batch, chips, batch_note = choose_max_batch(model_name, target, chips, tokens, precision)
    entry = get_entry(model_name)  # both graphs' shapes checked (int64 extents) before lowering
    entry.resolve({"batch": batch, "seq": input_len})
    entry.resolve({"batch": batch, "seq": tokens, "mode": "decode"})
    prefill, decode, cache_bytes = lower_for_serving(model_name, side, batch, input_len, output_len, precision)
    result = predict_inference(
        prefill,
        decode,
        target,
        model=model_name,
        batch=batch,
        input_len=input_len,
        output_len=output_len,
        kv_cache_bytes=cache_bytes,
        chips=chips,
        batch_note=batch_note,
    )
    data = {**result.to_dict(), "notes": [note] if note else []}
    if as_json:
        print_json(data)
        return
    from landscape.render import render_prediction

    require_finite(data)
    render_prediction(data, precision, side)


def choose_max_batch(model_name: str, target, chips: int | None, tokens: int, precision: str) -> tuple[int, int, str]:
    """(batch, chips, note) for --batch max: the chips are --chips, or the fewest (a power of two,
    as tensor parallelism takes them) that hold the weights and one sequence's cache."""
    from hardware_models.predict import fewest_chips, max_batch
    from landscape.lowering import precision_bytes
    from reference.catalogue import get_entry
    from reference.models import get_model

    element, cache_element = precision_bytes(precision)
    entry = get_entry(model_name)
    config = get_model(model_name)
    weights = math.ceil(entry.n_weights(entry.resolve({})) * element)
    sequence = config.kv_cache_bytes(1, tokens, cache_element)
    chips = chips or fewest_chips(target, weights, sequence, config.n_kv_heads)
    batch, note = max_batch(target, chips, weights, sequence, config.n_kv_heads)
    return batch, chips, note


def check_precision(precision: str, target) -> None:
    """Refuse, before lowering, a --precision whose type the target neither runs nor emulates,
    naming the precisions it does take: "h100 has no int8; choose --precision bf16|fp16|fp8"."""
    from reference.dtypes import get_dtype
    from reference.errors import LandscapeError, UnsupportedDtype

    class NoSuchPrecision(UnsupportedDtype):
        def __init__(self, short: str, valid: tuple[str, ...]):
            self.entry, self.dtype, self.valid = f"target {target.name}", short, valid
            LandscapeError.__init__(self, f"{target.name} has no {short}; choose --precision {'|'.join(valid)}")

    def runs(p: str) -> bool:
        try:
            target.runs_as(get_dtype(p).mlir)
            return True
        except UnsupportedDtype:
            return False

    if not runs(precision):
        raise NoSuchPrecision(get_dtype(precision).short, tuple(get_dtype(p).short for p in PRECISIONS if runs(p)))


MAP_TOKENS = (2048, 256)  # the map's prediction: prompt and generated tokens


@click.command(name="map")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--markdown", "as_markdown", is_flag=True, help="A Markdown table (not with --json).")
@click.option(
    "--model",
    "model_name",
    default="llama-3.1-8b",
    show_default=True,
    callback=model_option,
    help="The reference model whose KV-cache placement is predicted on each family.",
)
@click.option(
    "--target",
    "chosen",
    multiple=True,
    help="A target (a name from `landscape targets`, or a target file's path) to show in its family's column "
    "instead of the representative one; repeatable, one a family.",
)
def landscape_map_command(as_json, as_markdown, model_name, chosen) -> None:
    """The Accelerator Landscape Map: one column per family (NVIDIA and AMD GPUs, TPU, Cerebras, Groq, Spyre).

    Prose rows come from a data file, numbers from the target files, and the KV-cache row from
    predicting MODEL (2048 tokens in, 256 out, bf16) on each family's representative target, or
    on the --target given for its column.
    """
    from hardware_models.landscape_map import FAMILIES, column_targets, landscape_map
    from hardware_models.predict import predict_inference
    from reference.errors import UnknownName
    from reference.models import get_model
    from reference.units import format_bytes

    check_exclusive(**{"--json": as_json, "--markdown": as_markdown})
    check_model(model_name)
    tokens = sum(MAP_TOKENS)
    if get_model(model_name).max_positions < tokens:
        from reference.catalogue import PUBLISHED_MODELS

        fitting = [m for m in PUBLISHED_MODELS if get_model(m).max_positions >= tokens]
        raise UnknownName(
            f"model for the map (it predicts {MAP_TOKENS[0]} + {MAP_TOKENS[1]} tokens; {model_name}'s context is "
            f"{get_model(model_name).max_positions})",
            model_name,
            fitting,
        )
    targets = column_targets(tuple(load_target(name) for name in chosen))
    prefill, decode, cache = lower_for_serving(model_name, "jax", 1, *MAP_TOKENS)
    placed = {}
    for family in FAMILIES:
        result = predict_inference(
            prefill,
            decode,
            targets[family],
            model=model_name,
            batch=1,
            input_len=MAP_TOKENS[0],
            output_len=MAP_TOKENS[1],
            kv_cache_bytes=cache,
        )
        placed[family] = f"{model_name}: {format_bytes(cache)} in {result.kv_cache_location}"
    result = landscape_map(placed, targets)
    if as_json:
        print_json(result.to_dict())
    elif as_markdown:
        click.echo(result.to_markdown())
    else:
        from landscape.render import render_map

        render_map(result)


def _compare_files(paths, targets, chips, strict_dtypes: bool, as_json: bool, without: tuple[str, ...] = ()) -> None:
    """`compare --from-file A B`: the two programs on every target, each side named by its file."""
    from pathlib import Path

    from hardware_models.comparison import compare_lowerings
    from landscape.lowering import lowering_from_file

    first, second = (lowering_from_file(p) for p in paths)  # a bad file fails here, in one line
    names = [Path(p).name for p in paths]
    if names[0] == names[1]:
        names = [str(p) for p in paths]
    if names[0] == names[1]:  # the same file twice
        names = [f"A {names[0]}", f"B {names[1]}"]
    result = compare_lowerings(
        first,
        second,
        targets,
        "two programs from files",
        chips,
        strict_dtypes=strict_dtypes,
        sides=(names[0], names[1]),
        without=without,
    )
    if as_json:
        print_json({"comparisons": [result.to_dict()]})
        return
    from landscape.render import render_comparison

    render_comparison([result])


def _default_targets() -> str:
    from hardware_models.families import representative_targets

    return ",".join(representative_targets())


@click.command()
@click.argument("name", required=False, callback=model_option)
@click.option(
    "--targets",
    "target_list",
    default=_default_targets,
    show_default="one target per family",
    help="Comma-separated targets, each once, or 'all'.",
)
@click.option(
    "--phase",
    type=click.Choice(("prefill", "decode", "both")),
    default=None,
    show_default="both",
    help="For an entry with a mode (block, decoder, models): prefill, one decode step, or both "
    "(an entry without phases refuses prefill and decode).",
)
@click.option(
    "--shape",
    "shapes",
    multiple=True,
    metavar="PARAM=VALUE",
    help="Override a shape parameter (plain decimal digits); repeatable, each parameter once.",
)
@click.option("--dtype", type=DTYPE, default="bfloat16", show_default=True, help=DTYPE_HELP)
@click.option("--chips", type=SIZE, default=None, help="Force a chip count on every target.")
@click.option("--allow-beyond-context", "allow_beyond_context", is_flag=True, help=ALLOW_BEYOND_CONTEXT_HELP)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Write report.html, report.json, HLO dumps of both sides, plans, rooflines and traces under DIR "
    "(staged beside it and moved into place when complete; locked while running).",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --out: replace the report an earlier run wrote in DIR (only the files it wrote; others stay).",
)
@click.option("--strict-dtypes", "strict_dtypes", is_flag=True, help=STRICT_DTYPES_HELP)
@click.option("--without", "without", multiple=True, metavar="PASS", help=WITHOUT_HELP)
@click.option(
    "--from-file",
    "from_files",
    nargs=2,
    type=click.Path(dir_okay=False),
    default=None,
    metavar="A.mlir B.mlir",
    help="Compare the two StableHLO programs these files hold (two compilers, two versions, two exports) instead of NAME's two paths.",
)
@click.option(
    "--sides",
    "side_list",
    default="torch,jax",
    show_default=True,
    metavar="A,B[,C]",
    help="The compilation paths to compare: torch, jax, torch-xla (PyTorch through torch-xla, after "
    "`make torch-xla`), or all (every path this machine has).",
)
@click.option("--json", "as_json", is_flag=True, help='Machine-readable output: {"comparisons": [one per phase]}.')
@click.pass_context
def compare(
    ctx,
    name,
    target_list,
    phase,
    shapes,
    dtype,
    chips,
    allow_beyond_context,
    out_dir,
    force,
    strict_dtypes,
    without,
    from_files,
    side_list,
    as_json,
) -> None:
    """Compare NAME's PyTorch and JAX paths (or --sides, torch-xla's too) on one target per family (or --targets).

    With --from-file A.mlir B.mlir: any two StableHLO programs, each side named by its file.

    Without NAME: one Llama-3.1-8B layer (`block` at llama-3.1-8b's dimensions, batch 1), a
    prefill of 2048 tokens and one decode step against a 2048-token KV cache. For each phase,
    target and side: time, bottleneck, kernels, fused groups, chips, padding waste, main-memory
    bytes, fallbacks; then where the two lowerings differ and what that costs on each target.
    """
    from landscape.comparison_workload import compare_workload, plan_workloads
    from landscape.outputs import OutputDir
    from reference.errors import MalformedInput
    from reference.spec import parse_assignments

    if force and out_dir is None:
        raise MalformedInput("--force applies only with --out DIR")
    targets = [
        load_target(t) for t in parse_target_list(target_list)
    ]  # an unknown target fails here, before any lowering
    without = tuple(dict.fromkeys(without))
    if without:
        from hardware_models.pipelines import check_without

        check_without(without, targets)
    if from_files:
        from click.core import ParameterSource

        if any(f.startswith("-") for f in from_files):  # one file given: the option after it was taken as the second
            raise MalformedInput(f"--from-file takes two StableHLO files, A.mlir B.mlir; got {' '.join(from_files)}")

        given = [
            flag
            for flag, on in (
                ("NAME", name is not None),
                ("--shape", bool(shapes)),
                ("--phase", phase is not None),
                ("--sides", ctx.get_parameter_source("side_list") is ParameterSource.COMMANDLINE),
                ("--dtype", ctx.get_parameter_source("dtype") is ParameterSource.COMMANDLINE),
                ("--allow-beyond-context", allow_beyond_context),
                ("--out", out_dir is not None),
            )
            if on
        ]
        if given:
            raise MalformedInput(
                f"--from-file compares the programs the two files hold, so {', '.join(given)} does not apply; "
                "valid with it: --targets, --chips, --strict-dtypes, --without, --json"
            )
        return _compare_files(from_files, targets, chips, strict_dtypes, as_json, without)
    from landscape.options import parse_sides

    sides = parse_sides(side_list)
    workloads = plan_workloads(
        name,
        parse_assignments(shapes),
        dtype,
        phase,  # so do bad names, shapes and lengths
        allow_beyond_context=allow_beyond_context,
    )
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True)
    done = []
    with (
        OutputDir(out_dir, force) if out_dir is not None else contextlib.nullcontext() as out
    ):  # checked and locked first
        with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
            task = bar.add_task("lowering", total=len(workloads) * len(sides) * (1 + len(targets)))
            for workload in workloads:
                done.append(
                    compare_workload(
                        workload,
                        targets,
                        chips,
                        compile_xla=out is not None,
                        progress=lambda label: bar.update(task, advance=1, description=label),
                        strict_dtypes=strict_dtypes,
                        sides=sides,
                        without=without,
                    )
                )
        if out is not None:
            from landscape.report import write_report

            written = out.write(lambda root: write_report(done, targets, root, verbose=verbose()))
            err.print(f"wrote {len(written)} files under {out_dir}; open {out_dir}/report.html", highlight=False)
    if as_json:
        print_json({"comparisons": [result.to_dict() for result, _ in done]})
        return
    from landscape.render import render_comparison

    render_comparison([result for result, _ in done])
