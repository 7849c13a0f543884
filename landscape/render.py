"""Terminal renderings of the CLI's results, as rich tables: pure functions of the result objects.

Kept apart from landscape/cli.py (the composition root), which parses and calls; these only
draw what `to_dict()` already holds. Every time, size and rate goes through reference/units.py.
"""

from __future__ import annotations

import re

from reference.units import format_bytes, format_percent, format_rate, format_seconds, plural

SEGMENTS_SHOWN = 8  # divergent segments printed by `compare`; the rest are counted
XLA_METADATA = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def xla_text(text: str, verbose: bool = False) -> str:
    """XLA's optimized HLO without its source metadata (the FileNames, FunctionNames,
    FileLocations and StackFrames tables: local paths and call stacks, ~50 lines before the
    HLO), and without the stack_frame_id references into them; `verbose` keeps everything."""
    if verbose:
        return text
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line.strip() in XLA_METADATA:
            skipping = True
        elif skipping and not line.strip():
            skipping = False
        elif not skipping:
            out.append(re.sub(r" stack_frame_id=\d+", "", line))
    return re.sub(r"\n{3,}", "\n\n", "".join(out))


def short_scope(scope: str) -> str:
    """Where a kernel comes from, short: 'jit(f)/mlp/dot_general' -> 'mlp'; 'linear.py:134' kept."""
    parts = [p for p in scope.split("/") if p and not p.startswith("jit(")]
    return "/".join(parts[:-1] if len(parts) > 1 else parts)


def short_label(label: str) -> str:
    """A kernel's ops, short: 'stablehlo.transpose+stablehlo.add' -> 'transpose +1 fused'."""
    ops = [op.split(".", 1)[-1] for op in label.split("+")]
    return ops[0] + (f" +{len(ops) - 1} fused" if len(ops) > 1 else "")


def kernel_cause(top: dict) -> str:
    """'39.0 ms (62%) in transpose +3 fused (mlp): memory-bound at 0.06 FLOP/B'."""
    if not top:
        return "-"
    where = short_scope(top["scope"]) if top.get("scope") else ""
    what = {"fallback": "a host fallback", "transfer": "a chip-to-chip transfer"}.get(
        top["kind"], short_label(top["op"])
    )
    intensity = f" at {top['intensity']:.3g} FLOP/B" if top.get("intensity") is not None else ""
    return (
        f"{format_seconds(top['time_s'])} ({format_percent(top['share'])}) in {what}{f' ({where})' if where else ''}: "
        f"{top['bound']}-bound{intensity}"
    )


def ranking(data: dict) -> list[dict]:
    """The targets of one phase, fastest first: each target's fastest path, its time, chips,
    time x chips, how many times the fastest target's time it takes, and its top kernel."""
    best = {}
    for r in data["results"]:
        if "refused" in r or not r["time_s"] > 0:
            continue
        if r["target"] not in best or r["time_s"] < best[r["target"]]["time_s"]:
            best[r["target"]] = r
    ranked = sorted(best.values(), key=lambda r: (r["time_s"], r["target"]))
    first = ranked[0]["time_s"] if ranked else 0.0
    return [
        {
            "rank": i + 1,
            "target": r["target"],
            "side": r["side"],
            "time_s": r["time_s"],
            "chips": r["chips"],
            "chip_s": r["time_s"] * r["chips"],
            "slower": r["time_s"] / first,
            "top_kernel": r.get("top_kernel", {}),
        }
        for i, r in enumerate(ranked)
    ]


def render_estimate(result, extra_notes=()) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    data = result.to_dict()
    levels = list(data["bytes"])
    table = Table(title=escape(f"{data['name']} on {data['target']}"))
    for col in ("group", "kind", "op", "x", "FLOPs", *(f"{lv} bytes" for lv in levels), "time", "util", "bound"):
        table.add_column(col, overflow="fold")
    for row in data["ops"]:
        op = row["op"] if len(row["op"]) <= 48 else row["op"][:45] + "..."
        table.add_row(
            str(row["group"]),
            row["kind"],
            escape(op),
            str(row["repeats"]),
            f"{row['flops']:.3g}",
            *(format_bytes(row["bytes"].get(lv, 0)) for lv in levels),
            format_seconds(row["time_s"]),
            format_percent(row["utilization"]),
            row["bottleneck"],
        )
    console = Console(width=150)
    console.print(table)
    by_level = ", ".join(f"{lv} {format_bytes(b)}" for lv, b in data["bytes"].items())
    console.print(
        f"total {format_seconds(data['total_time_s'])} over {plural(data['kernels'], 'kernel')}: compute {format_seconds(data['compute_s'])}, "
        f"memory {format_seconds(data['memory_s'])}, schedule {format_seconds(data['schedule_s'])}; {data['flops']:.4g} FLOPs; "
        + (f"{by_level}; " if by_level else "")
        + f"utilization {data['utilization']:.1%}"
    )
    console.print("bottlenecks: " + ", ".join(f"{k} {v}" for k, v in data["bottleneck_counts"].items()))
    for note in [*data["notes"], *extra_notes]:
        console.print(escape(f"note: {note}"))


def render_targets(loaded: dict) -> None:
    """`landscape targets`: each target with its family, peak, and main memory named by kind."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from hardware_models.families import get_family

    table = Table(title="Landscape targets")
    for col in ("name", "family", "description", "16-bit peak", "main memory", "bandwidth", "ridge (FLOP/B)"):
        table.add_column(col)
    for t in loaded.values():
        table.add_row(
            escape(t.name),
            escape(get_family(t.family).describe()),
            escape(t.description),
            format_rate(t.peak_16bit_flop_per_s, "FLOP/s"),
            f"{format_bytes(t.main_memory_bytes)} {t.main_memory_level.upper()}",
            format_rate(t.main_memory_bytes_per_s, "B/s"),
            f"{t.ridge_flop_per_byte:.3g}",
        )
    Console(width=160).print(table)


def kind_deltas(cost: dict[str, float]) -> str:
    """'contraction -48.7 ns, data movement +2.47 µs': the kinds whose cost differs (a difference
    that rounds to zero is left out); 'no difference' when none does; an empty `cost` means a
    side was refused."""
    if not cost:
        return "refused on one side"
    parts = [f"{kind} {text}" for kind, delta in cost.items() if (text := format_seconds(delta, signed=True)) != "0 s"]
    return ", ".join(parts) or "no difference"


def bound_counts(row: dict) -> str:
    """A comparison row's kernels by bound, '9/8/3' (compute/memory/schedule)."""
    counts = row.get("bottleneck_counts", {})
    return "/".join(str(counts.get(b, 0)) for b in ("compute", "memory", "schedule"))


PATH_LABELS = {"torch": "the PyTorch path", "jax": "the JAX path", "torch-xla": "the torch-xla path"}


def path_label(side: str) -> str:
    """How the text names a side: "the PyTorch path", or a file's name."""
    return PATH_LABELS.get(side, side)


def pair_sections(data: dict) -> list[tuple[str, str, dict, dict]]:
    """(first, second, difference_cost_s, diff) for every pair of sides a comparison holds: the
    first pair (torch, jax), then, with three paths, the others."""
    first, second = data.get("sides", ("torch", "jax"))[:2]
    return [
        (first, second, data["difference_cost_s"], data["diff"]),
        *((p["sides"][0], p["sides"][1], p["difference_cost_s"], p["diff"]) for p in data.get("more_pairs", [])),
    ]


def _workload_lines(data: dict) -> list[str]:
    w = data.get("workload") or {}
    if not w:
        labels = [path_label(s) for s in data.get("sides", ("torch", "jax"))]
        return [f"{data['name']}: {', '.join(labels[:-1])} and {labels[-1]}"]
    what = w["label"] if w["label"] == w["entry"] else f"{w['label']} (catalogue entry {w['entry']})"
    shapes = " ".join(f"{k}={v}" for k, v in w["shapes"].items() if k != "mode")
    return [
        f"{what} in {w['dtype']}, {w['phase_text']}",
        f"shapes: {shapes}",
        "paths: " + "; ".join(f"{side} {path}" for side, path in w["compilers"].items()),
        *(f"note: {note}" for note in w.get("notes", [])),
    ]


def artifact_lines(data: dict) -> list[str]:
    """compare's "artifacts compiled away" section: per target and side, the upcasts folded into
    contractions and what they would have cost, and the types the target lacks and emulates."""
    lines = []
    for row in data["results"]:
        a = row.get("artifacts")
        if not a:
            continue
        if a["upcasts_folded"]:
            lines.append(
                f"  {row['target']} {row['side']}: {a['upcasts_folded']} upcasts folded into contractions "
                f"({', '.join(sorted({f['from'] + '->' + f['to'] for f in a['folds']}))}); unfolded they would have cost "
                f"{format_seconds(a['would_have_cost_s'])} more and moved {format_bytes(a['saved_bytes'])} more"
            )
        lines += [f"  {row['target']} {row['side']}: {note}" for note in a["emulated"]]
    return (
        ["Artifacts of a lowering compiled away or emulated (--strict-dtypes refuses a missing type instead):", *lines]
        if lines
        else []
    )


def render_comparison(results) -> None:
    """`landscape compare`: for each phase, what was compared, then time and bottleneck per target
    and side, what the JAX path costs against the PyTorch one by kind, and where the IRs differ."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=170)
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    details = results[0].to_dict().get("target_details", {})
    if details:
        console.print("targets:")
        for name, d in details.items():
            console.print(
                escape(
                    f"  {name:9s} {d['kind']}: {d['description']}; main memory "
                    f"{format_bytes(d['main_memory_bytes'])} {d['main_memory_level'].upper()}"
                )
            )
    for result in results:
        data = result.to_dict()
        title, *rest = _workload_lines(data)
        console.print()
        console.print(escape(title), style="bold")
        for line in rest:
            console.print(escape(f"  {line}"))
        table = Table()
        for col in (
            "target",
            "side",
            "time",
            "bound",
            "kernels",
            "by bound: compute/memory/schedule",
            "fused",
            "chips",
            "padding",
            "main-memory traffic",
            "fallbacks",
        ):
            table.add_column(col, overflow="fold")
        for row in data["results"]:
            if "refused" in row:
                table.add_row(row["target"], row["side"], "refused", escape(row["refused"]), *[""] * 7)
                continue
            level = row.get("main_memory_level", "").upper()
            table.add_row(
                row["target"],
                row["side"],
                format_seconds(row["time_s"]),
                row["bottleneck"],
                str(row["kernels"]),
                bound_counts(row),
                str(row["fused_groups"]),
                str(row["chips"]),
                format_percent(row["padding_waste"]),
                f"{format_bytes(row['main_memory_bytes'])} {level}".strip(),
                escape(", ".join(row["fallbacks"]) or "-"),
            )
        console.print(table)
        ranked = ranking(data)
        if len(ranked) > 1:
            console.print(
                "Which target is faster, and why (each target's fastest path; time × chips where chips differ):"
            )
            many_chips = len({r["chips"] for r in ranked}) > 1
            for r in ranked:
                chips = f", {plural(r['chips'], 'chip')}, {format_seconds(r['chip_s'])} × chips" if many_chips else ""
                console.print(
                    escape(
                        f"  {r['rank']}. {r['target']} ({r['side']}): {format_seconds(r['time_s'])}, "
                        f"{r['slower']:.2f}× the fastest{chips}; top kernel {kernel_cause(r['top_kernel'])}"
                    )
                )
        pairs = pair_sections(data)
        for first, second, costs, _ in pairs:
            console.print(
                escape(f"What {path_label(second)} costs against {path_label(first)}, by kind of kernel (+ is slower):")
            )
            for target in result.targets:
                console.print(escape(f"  {target}: {kind_deltas(costs[target])}"))
        for line in artifact_lines(data):
            console.print(escape(line))
        for first, second, _, diff in pairs:
            hist = {op: v for op, v in diff["histogram"].items() if v[0] != v[1]}
            if hist:
                console.print(
                    escape(f"Ops whose counts differ ({first}/{second}): ")
                    + escape(", ".join(f"{op} {a}/{b}" for op, (a, b) in sorted(hist.items())))
                )
            divergences = diff["divergences"]
            for d in divergences[:SEGMENTS_SHOWN]:
                console.print(escape(f"  segment {d['segment']} after {d['after']}: {'; '.join(d['reasons'])}"))
            if len(divergences) > SEGMENTS_SHOWN:
                console.print(
                    f"  … and {plural(len(divergences) - SEGMENTS_SHOWN, 'more segment')} (`landscape diff` or the report lists them all)"
                )


def render_agreement(result) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    tol = result.tolerance
    shapes = " ".join(f"{k}={v}" for k, v in result.shapes.items())
    table = Table(title=escape(f"{result.kernel} [{result.dtype}] {shapes}"))
    for col in ("comparison", "max abs", "max rel", "bound", "result"):
        table.add_column(col)
    for key, err in result.errors.items():
        verdict = "[green]pass[/green]" if err.ok else "[red]FAIL[/red]"
        table.add_row(key, f"{err.max_abs:.3e}", f"{err.max_rel:.3e}", f"{err.bound:.3e}", verdict)
    console = Console(width=120)
    console.print(table)
    console.print(
        f"tolerance {tol.dtype}: |side - ref| <= {tol.atol:.3g} + {tol.rtol:.3g} * max|ref|; "
        f"side vs side at twice that. {tol.accumulation}."
    )


def render_map(result) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="The Accelerator Landscape Map", show_lines=True)
    table.add_column("")
    for family in result.families:
        table.add_column(escape(f"{result.names[family]} ({result.targets[family]})"), overflow="fold")
    for row, cells in result.rows:
        table.add_row(escape(row), *(escape(cells[f]) for f in result.families))
    Console(width=200).print(table)


def prediction_notes(data: dict) -> list[tuple[str, str]]:
    """predict's notes as (phase, note): "prefill", "decode", or "prefill and decode" when both
    graphs gave the same note."""
    prefill, decode = data["prefill"]["notes"], data["decode"]["notes"]
    both, only_prefill = "prefill and decode", "prefill"
    return [
        (both if note in prefill and note in decode else only_prefill if note in prefill else "decode", note)
        for note in dict.fromkeys(prefill + decode)
    ]


def _rate(tokens_per_s: float) -> str:
    """A rate in ten columns: one decimal, or three significant digits below 0.1 (never a bare 0.0)."""
    return f"{tokens_per_s:10.1f}" if tokens_per_s >= 0.1 or tokens_per_s == 0 else f"{tokens_per_s:10.3g}"


def render_prediction(data: dict, precision: str, side: str) -> None:
    import click

    chips = data["chips"]
    click.echo(
        f"{data['model']} on {data['target']} ({plural(chips, data.get('chip_unit', 'chip'))}, {precision}, batch {data['batch']}, "
        f"{data['input_len']} in / {data['output_len']} out, {side} lowering)\n"
        f"  time to first token   {format_seconds(data['ttft_s']):>10}\n"
        + (
            f"  decode step (mean)    {format_seconds(data['decode_step_s']):>10}   ({data['bottleneck']}-bound at the last step; "
            if data["decode_steps"]
            else f"  decode step (next)    {format_seconds(data['decode_step_s']):>10}   (none runs: the prefill makes the only token; "
            f"{data['bottleneck']}-bound; "
        )
        + ", ".join(f"{format_seconds(p['step_s'])} at {p['cache_len']:,} tokens" for p in data["decode_step_at"])
        + ")\n"
        f"  decode, all steps     {format_seconds(data['decode_total_s']):>10}   ({plural(data['decode_steps'], 'step')} after the first token)\n"
        f"  end to end            {format_seconds(data['e2e_latency_s']):>10}\n"
        f"  tokens/s per user     {_rate(data['tokens_per_s_per_user'])}\n"
        f"  throughput tokens/s   {_rate(data['throughput_tokens_per_s'])}   (batch x output tokens / end to end)\n"
        f"  KV cache              {format_bytes(data['kv_cache_bytes']):>10} in {data['kv_cache_location']}"
    )
    for note in ([data["batch_note"]] if data.get("batch_note") else []) + data.get("notes", []):
        click.echo(f"  note: {note}")
    for phase, note in prediction_notes(data):
        click.echo(f"  note ({phase}): {note}")
