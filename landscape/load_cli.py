"""`landscape serve`: a model served under load on a target (hardware_models.serving), or, with
--slo-ttft/--slo-tpot, the highest load that meets those limits. Input is checked before torch or
jax is imported; the lowering and the grid of step costs come first, then the simulation.
"""

from __future__ import annotations

import math

import click

from landscape.lowering import PRECISIONS
from landscape.options import ALLOW_BEYOND_CONTEXT_HELP, SEED, DecimalRange, DTypeParam, model_option, print_json

COUNT = DecimalRange(min=1, max=10**7)  # requests, concurrency, budgets: beyond this a simulation runs for hours
BLOCK = DecimalRange(min=1, max=2**20)


class PositiveSeconds(click.ParamType):
    """A finite number > 0 (a rate per second, or seconds)."""

    name = "number"

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number; give a finite number > 0", param, ctx)
        if not (math.isfinite(number) and number > 0):
            self.fail(f"{value!r} must be a finite number > 0", param, ctx)
        return number


POSITIVE = PositiveSeconds()


def parse_counts(text: str | None, option: str) -> tuple[int, ...] | None:
    """'64,128' -> (64, 128): integers >= 1, each once."""
    from reference.errors import MalformedInput

    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isascii() and p.isdigit() and int(p) >= 1 for p in parts):
        raise MalformedInput(f"{option} {text!r}: give integers >= 1, comma-separated (e.g. 64 or 64,128)")
    values = tuple(int(p) for p in parts)
    if len(set(values)) != len(values):
        raise MalformedInput(f"{option} {text!r} lists a value more than once")
    if max(values) > 10**7:
        raise MalformedInput(f"{option} {text!r}: at most 10,000,000")
    return values


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
    "chips_text",
    default=None,
    metavar="N[,N...]",
    help="Chips (wafers) per replica; default: the fewest that hold the weights and the longest request's cache. "
    "A list with an SLO: each is searched.",
)
@click.option(
    "--concurrency", type=COUNT, default=None, help="A closed loop: this many requests in flight (default 1)."
)
@click.option(
    "--rate", type=POSITIVE, default=None, help="An open loop: Poisson arrivals at this many requests per second."
)
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Requests from a CSV (header) or JSONL file: input_len, output_len, and arrival_s (seconds) on every row or none.",
)
@click.option("--requests", "n_requests", type=COUNT, default=1000, show_default=True, help="Requests to simulate.")
@click.option(
    "--input-len",
    "input_len",
    type=COUNT,
    default=1024,
    show_default=True,
    help="Prompt tokens (the mean with --length-dist).",
)
@click.option(
    "--output-len",
    "output_len",
    type=COUNT,
    default=128,
    show_default=True,
    help="Output tokens (the mean with --length-dist).",
)
@click.option(
    "--length-dist",
    type=click.Choice(("fixed", "uniform", "exponential")),
    default="fixed",
    show_default=True,
    help="uniform: each length in [L/2, 3L/2]; exponential: 1 + an exponential draw, mean L.",
)
@click.option(
    "--scheduler",
    type=click.Choice(("chunked", "prefill-first")),
    default="chunked",
    show_default=True,
    help="chunked: prompt chunks share steps with decodes (vLLM v1, Sarathi); prefill-first: whole prompts stall decodes (vLLM v0).",
)
@click.option(
    "--max-batch",
    "max_batch_text",
    default="256",
    show_default=True,
    metavar="B[,B...]",
    help="Running requests at most (max_num_seqs); a list with an SLO: each is searched.",
)
@click.option(
    "--token-budget",
    type=COUNT,
    default=8192,
    show_default=True,
    help="Tokens per step at most (max_num_batched_tokens).",
)
@click.option(
    "--cache",
    type=click.Choice(("paged", "reserved")),
    default="paged",
    show_default=True,
    help="paged: blocks as tokens appear, the youngest preempted when full; reserved: each request's whole length "
    "held from admission (TensorRT-LLM's GUARANTEED_NO_EVICT; always on SRAM targets).",
)
@click.option("--block-tokens", type=BLOCK, default=16, show_default=True, help="Tokens per cache block.")
@click.option(
    "--no-preempt", is_flag=True, help="paged: a decode that finds no free block waits instead of preempting."
)
@click.option(
    "--warmup",
    type=DecimalRange(min=0, max=10**7),
    default=0,
    show_default=True,
    help="Leave the first N requests to arrive out of the statistics.",
)
@click.option(
    "--stagger",
    is_flag=True,
    help="Closed loop: spread the first requests over one request's life instead of all at 0.",
)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option(
    "--precision",
    type=DTypeParam(PRECISIONS, short=True, kind="precision"),
    default="bf16",
    show_default=True,
    help="bf16, fp16; or fp8 / int8 (weights, KV cache and matmul inputs in 8 bits).",
)
@click.option("--side", type=click.Choice(("jax", "torch")), default="jax", show_default=True)
@click.option(
    "--set", "settings", multiple=True, metavar="SECTION.KEY=VALUE", help="Override a target quantity; repeatable."
)
@click.option(
    "--slo-ttft",
    type=POSITIVE,
    default=None,
    help="Find the highest load whose TTFT percentile is at most this many seconds.",
)
@click.option(
    "--slo-tpot", type=POSITIVE, default=None, help="... and whose TPOT percentile is at most this many seconds."
)
@click.option("--slo-percentile", type=click.Choice(("50", "90", "99")), default="90", show_default=True)
@click.option(
    "--search",
    "search_mode",
    type=click.Choice(("rate", "concurrency")),
    default="rate",
    show_default=True,
    help="With an SLO: search the request rate (open loop) or the concurrency (closed loop).",
)
@click.option("--allow-beyond-context", "allow_beyond_context", is_flag=True, help=ALLOW_BEYOND_CONTEXT_HELP)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write report.json, requests.csv, timeline.csv and timeline.png under DIR.",
)
@click.option("--force", is_flag=True, help="With --out: replace the files an earlier run wrote in DIR.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: every field.")
def serve(
    model_name,
    target_name,
    chips_text,
    concurrency,
    rate,
    trace_path,
    n_requests,
    input_len,
    output_len,
    length_dist,
    scheduler,
    max_batch_text,
    token_budget,
    cache,
    block_tokens,
    no_preempt,
    warmup,
    stagger,
    seed,
    precision,
    side,
    settings,
    slo_ttft,
    slo_tpot,
    slo_percentile,
    search_mode,
    allow_beyond_context,
    out_dir,
    force,
    as_json,
) -> None:
    """Simulate MODEL served under load on a target: in-flight batching, a paged KV cache, a request stream.

    Each engine step's time comes from the target's compiled plans (a grid of prefill and decode
    graphs, costed once and interpolated). Reports TTFT, TPOT, inter-token latency and
    end-to-end latency (mean, P50, P90, P99), throughput, cache occupancy and preemptions.
    `predict` stays the static-batch figure.

    With --slo-ttft and/or --slo-tpot: the highest --search load (rate or concurrency) whose
    --slo-percentile meets them, for each --max-batch (and --chips) given.
    """
    from hardware_models.serving import SLO, EngineConfig, Workload, read_trace
    from landscape.options import check_model, load_target
    from landscape.serve_cli import check_precision
    from landscape.serve_load import check_lengths
    from reference.errors import MalformedInput

    check_model(model_name)
    if force and out_dir is None:
        raise MalformedInput("--force applies only with --out DIR")
    slo = None if slo_ttft is None and slo_tpot is None else SLO(slo_ttft, slo_tpot, int(slo_percentile))
    chips_list = parse_counts(chips_text, "--chips")
    caps = parse_counts(max_batch_text, "--max-batch")
    if slo is None and (len(caps) > 1 or (chips_list and len(chips_list) > 1)):
        raise MalformedInput(
            "a list of --max-batch or --chips values is searched only with an SLO (--slo-ttft/--slo-tpot); "
            "give one value, or add an SLO"
        )
    if slo is not None and (concurrency is not None or rate is not None):
        raise MalformedInput(
            "with an SLO the load is what is searched (--search rate|concurrency): drop --concurrency/--rate"
        )
    target = load_target(target_name, settings)
    check_precision(precision, target)
    trace = tuple(read_trace(trace_path)) if trace_path else None
    workload = Workload(
        requests=len(trace) if trace else n_requests,
        input_len=input_len,
        output_len=output_len,
        length_dist=length_dist,
        concurrency=concurrency,
        rate=rate,
        trace=trace,
        seed=seed,
    )
    notes = check_lengths(model_name, workload.specs(), allow_beyond_context)
    engine = EngineConfig(scheduler, token_budget, max(caps), cache, block_tokens, not no_preempt)
    import contextlib

    from landscape.outputs import OutputDir

    with (
        OutputDir(out_dir, force) if out_dir is not None else contextlib.nullcontext() as out
    ):  # checked and locked first
        if slo is not None:
            data = _capacity(
                model_name,
                target,
                workload,
                slo,
                engine,
                search_mode,
                caps,
                chips_list or (None,),
                side,
                precision,
                warmup,
            )
        else:
            data, result = _simulate(
                model_name,
                target,
                workload,
                engine,
                side,
                precision,
                chips_list[0] if chips_list else None,
                warmup,
                stagger,
            )
        data["notes"] = notes + data.get("notes", [])
        if out is not None:
            from landscape.load_render import write_outputs

            written = out.write(lambda root: write_outputs(data, None if slo else result, root), command="serve")
            click.echo(f"wrote {len(written)} files under {out_dir}", err=True)
    if as_json:
        print_json(data)
        return
    from landscape.load_render import render_capacity, render_serving

    (render_capacity if slo else render_serving)(data)


def _progress_bar():
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True)
    bar = Progress(console=err, transient=True, disable=not err.is_terminal)
    return bar


def _simulate(model_name, target, workload, engine, side, precision, chips, warmup, stagger):
    from landscape.serve_load import deployment, serve

    bar = _progress_bar()
    with bar:
        task = bar.add_task("lowering and costing the step grid", total=workload.requests)
        placed = deployment(model_name, target, workload, engine, side=side, precision=precision, chips=chips)
        bar.update(task, description="simulating")
        placed, result = serve(
            model_name,
            target,
            workload,
            engine,
            warmup=warmup,
            stagger=stagger,
            placed=placed,
            progress=lambda done, total: bar.update(task, completed=done),
        )
    load = (
        {"concurrency": workload.in_flight}
        if workload.closed
        else {"rate": workload.rate}
        if workload.rate
        else {"trace": "timed"}
    )
    return {
        "deployment": placed.to_dict(),
        "load": load,
        **result.to_dict(),
        "notes": list(placed.notes),
        "step_costs": placed.costs.to_dict(),
    }, result


def _capacity(model_name, target, workload, slo, engine, mode, caps, chips_list, side, precision, warmup):
    from landscape.serve_load import capacity

    bar = _progress_bar()
    best_overall, tried, deployments = None, [], []
    with bar:
        task = bar.add_task("searching", total=None)
        for chips in chips_list:
            best, trials, placed, alone = capacity(
                model_name,
                target,
                workload,
                slo,
                engine,
                mode=mode,
                batch_caps=caps,
                side=side,
                precision=precision,
                chips=chips,
                warmup=warmup,
                progress=lambda text: bar.update(task, description=text),
            )
            deployments.append(placed.to_dict())
            for t in trials:
                tried.append(
                    {
                        "chips": placed.chips,
                        mode: t.load,
                        "max_batch": t.max_batch,
                        "met": t.met,
                        "misses": slo.misses(t.summary),
                        "ttft_s": t.summary["ttft_s"],
                        "tpot_s": t.summary["tpot_s"],
                        "output_tokens_per_s": t.summary["output_tokens_per_s"],
                    }
                )
            per_chip = best.load / placed.chips if best else 0
            if best and (best_overall is None or per_chip > best_overall[0]):
                best_overall = (per_chip, best, placed, alone)
    if best_overall is None:
        from reference.errors import InvalidShape

        alone = alone["ttft_s"]["mean"], alone["tpot_s"]["mean"]
        raise InvalidShape(
            "serve",
            "slo",
            slo.to_dict(),
            f"no load meets it: one request alone has TTFT {alone[0]:.4g} s and TPOT {alone[1]:.4g} s; "
            "loosen the limits or give more --chips",
        )
    _, best, placed, _ = best_overall
    return {
        "slo": slo.to_dict(),
        "search": mode,
        "best": {
            mode: best.load,
            "max_batch": best.max_batch,
            "chips": placed.chips,
            f"{mode}_per_chip": best.load / placed.chips,
            **best.summary,
        },
        "deployments": deployments,
        "trials": tried,
        "notes": list(placed.notes),
    }
