"""What `landscape serve` prints and writes: the summary as rich tables, and under --out the
result (report.json), one row per request (requests.csv), one per engine step (timeline.csv)
and the timeline plot (timeline.png: running requests, tokens per step, cache occupancy)."""

from __future__ import annotations

import csv
from pathlib import Path

from reference.units import format_seconds

LATENCIES = (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("ITL", "itl_s"), ("end-to-end", "e2e_s"))


def _latency_table(summary: dict, title: str):
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in ("latency", "mean", "P50", "P90", "P99"):
        table.add_column(column, justify="left" if column == "latency" else "right")
    for label, key in LATENCIES:
        s = summary[key]
        table.add_row(label, *(format_seconds(s[k]) if s[k] == s[k] else "-" for k in ("mean", "p50", "p90", "p99")))
    return table


def _lines(summary: dict) -> list[str]:
    cache = summary["kv_cache"]
    return [
        f"throughput {summary['output_tokens_per_s']:,.0f} output tokens/s ({summary['output_tokens_per_s_per_chip']:,.0f} "
        f"a chip), {summary['requests_per_s']:.3g} requests/s, mean in flight {summary['mean_in_flight']:.3g}",
        f"{summary['requests']:,} requests measured ({summary['warmup']:,} warm-up) over {format_seconds(summary['duration_s'])}"
        f" in {summary['iterations']:,} engine steps; {summary['preemptions']:,} preemptions",
        f"KV cache: {cache['blocks']:,} blocks of {cache['block_tokens']} tokens; occupancy mean "
        f"{cache['mean_occupancy']:.1%}, peak {cache['peak_occupancy']:.1%}",
    ]


def render_serving(data: dict) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    d = data["deployment"]
    e = d["engine"]
    load = ", ".join(f"{k} {v}" for k, v in data["load"].items())
    console.print(
        f"[bold]{d['model']} on {d['chips']} {d['target']} {d['chip_unit']}(s)[/bold]: {load}; "
        f"{e['scheduler']} scheduler, {e['token_budget']} tokens a step, up to {e['max_batch']} running, "
        f"{e['cache']} cache",
        highlight=False,
    )
    console.print(_latency_table(data, "latency per request"))
    for line in _lines(data):
        console.print(line, highlight=False)
    for note in data.get("notes", []):
        console.print(f"note: {escape(note)}", highlight=False)


def render_capacity(data: dict) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    best, slo, mode = data["best"], data["slo"], data["search"]
    limits = " and ".join(
        f"P{slo['percentile']} {label} <= {format_seconds(slo[key])}"
        for label, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"))
        if slo[key] is not None
    )
    unit = "requests/s" if mode == "rate" else "requests in flight"
    console.print(
        f"[bold]capacity under {limits}[/bold]: {best[mode]:.4g} {unit} on {best['chips']} chip(s) with at most "
        f"{best['max_batch']} running ({best[mode + '_per_chip']:.4g} a chip); {len(data['trials'])} simulations",
        highlight=False,
    )
    console.print(_latency_table(best, "at that load"))
    for line in _lines(best):
        console.print(line, highlight=False)
    for note in data.get("notes", []):
        console.print(f"note: {escape(note)}", highlight=False)


def plot_timeline(result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = result.timeline
    fig, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    axes[0].step(t.end_s, t.running, where="post", label="running")
    axes[0].step(t.end_s, t.waiting, where="post", label="waiting")
    axes[0].set_ylabel("requests")
    axes[0].legend(loc="upper right")
    axes[1].step(t.end_s, t.prefill_tokens, where="post", label="prompt tokens")
    axes[1].step(t.end_s, t.decode_tokens, where="post", label="decode tokens")
    axes[1].set_ylabel("tokens per step")
    axes[1].legend(loc="upper right")
    blocks = result.summary["kv_cache"]["blocks"]
    axes[2].step(t.end_s, [100 * b / blocks for b in t.cache_blocks], where="post")
    axes[2].set_ylabel("KV cache used (%)")
    axes[2].set_xlabel("time (s)")
    axes[2].set_ylim(0, 105)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(data: dict, result, root: str) -> None:
    from landscape.outputs import dump_json

    folder = Path(root)
    (folder / "report.json").write_text(dump_json(data) + "\n")
    if result is None:
        return
    with (folder / "requests.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("arrival_s", "input_len", "output_len", "ttft_s", "tpot_s", "e2e_s", "preemptions"))
        writer.writerows(result.requests)
    rows = result.timeline.rows()
    with (folder / "timeline.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["end_s"])
        writer.writeheader()
        writer.writerows(rows)
    plot_timeline(result, folder / "timeline.png")
