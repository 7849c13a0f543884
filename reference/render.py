"""Terminal renderings of the CLI's results, as rich tables: pure functions of the result objects.

Kept apart from reference/cli.py (the composition root), which parses and calls; these only
draw what `to_dict()` already holds.
"""

from __future__ import annotations

def render_estimate(result) -> None:
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
            str(row["group"]), row["kind"], escape(op), str(row["repeats"]), f"{row['flops']:.3g}",
            *(f"{row['bytes'].get(lv, 0):.3g}" for lv in levels), f"{row['time_s'] * 1e6:.2f} us",
            f"{row['utilization']:.0%}", row["bottleneck"],
        )
    console = Console(width=150)
    console.print(table)
    by_level = ", ".join(f"{lv} {b / 1e9:.3f} GB" for lv, b in data["bytes"].items())
    console.print(
        f"total {data['total_time_s'] * 1e3:.4f} ms over {data['kernels']} kernels: compute {data['compute_s'] * 1e3:.4f} ms, "
        f"memory {data['memory_s'] * 1e3:.4f} ms, schedule {data['schedule_s'] * 1e3:.4f} ms; {data['flops']:.4g} FLOPs; {by_level}; "
        f"utilization {data['utilization']:.1%}"
    )
    console.print("bottlenecks: " + ", ".join(f"{k} {v}" for k, v in data["bottleneck_counts"].items()))
    for note in data["notes"]:
        console.print(escape(f"note: {note}"))



def render_comparison(result) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=170)
    table = Table(title=escape(f"{result.name}: PyTorch and JAX paths"))
    for col in ("target", "side", "time", "bound", "kernels", "fused", "chips", "padding", "main memory", "fallbacks"):
        table.add_column(col, overflow="fold")
    for row in result.to_dict()["results"]:
        if "refused" in row:
            table.add_row(row["target"], row["side"], "refused", escape(row["refused"]), *[""] * 6)
            continue
        table.add_row(row["target"], row["side"], f"{row['time_s'] * 1e6:,.1f} us", row["bottleneck"], str(row["kernels"]),
                      str(row["fused_groups"]), str(row["chips"]), f"{row['padding_waste']:.0%}", f"{row['main_memory_bytes'] / 1e6:,.2f} MB",
                      escape(", ".join(row["fallbacks"]) or "-"))
    console.print(table)
    console.print("What the JAX path costs against the PyTorch path, by kind of kernel (+ is slower):")
    for target in result.targets:
        cost = result.difference_cost(target)
        parts = ", ".join(f"{kind} {delta * 1e6:+,.1f} us" for kind, delta in cost.items()) or "refused on one side"
        console.print(escape(f"  {target}: {parts}"))
    hist = {op: v for op, v in result.diff["histogram"].items() if v[0] != v[1]}
    if hist:
        console.print("Ops whose counts differ (torch, jax): " + escape(", ".join(f"{op.split('.', 1)[-1]} {a}/{b}" for op, (a, b) in sorted(hist.items()))))
    for d in result.diff["divergences"][:8]:
        console.print(escape(f"  segment {d['segment']} after {d['after']}: {'; '.join(d['reasons'])}"))



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


def render_prediction(data: dict, precision: str, side: str) -> None:
    import click

    chips = data["chips"]
    click.echo(
        f"{data['model']} on {data['target']} ({chips} chip{'s' if chips > 1 else ''}, {precision}, batch {data['batch']}, "
        f"{data['input_len']} in / {data['output_len']} out, {side} lowering)\n"
        f"  time to first token   {data['ttft_s'] * 1e3:10.3f} ms\n"
        f"  decode step           {data['decode_step_s'] * 1e3:10.3f} ms   ({data['bottleneck']}-bound)\n"
        f"  tokens/s per user     {data['tokens_per_s_per_user']:10.1f}\n"
        f"  throughput tokens/s   {data['throughput_tokens_per_s']:10.1f}\n"
        f"  KV cache              {data['kv_cache_bytes'] / 1e9:10.3f} GB in {data['kv_cache_location']}"
    )
    for note in dict.fromkeys(data["prefill"]["notes"] + data["decode"]["notes"]):
        click.echo(f"  note: {note}")
