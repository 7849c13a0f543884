"""write_report: a comparison's files under one folder, for reading and diffing.

For each phase compared (prefill, decode), under PHASE/ (or directly under the folder for an
entry without phases):

    hlo/<side>.<stage>.txt         every stage of both lowerings (fx, jaxpr, stablehlo, ir, xla)
    plans/<target>.<side>.txt      each target's compiled plan (Plan.render)
    rooflines/<target>.<side>.png  and .svg
    traces/<target>.<side>.json    a Chrome trace, for statically scheduled targets

and at the top:

    report.json                    {"comparisons": [each phase's Comparison.to_dict()]}
    report.html                    all of it on one self-contained page (inline SVG, no network),
                                   which says what was compared and links the files above
"""

from __future__ import annotations

import html
from pathlib import Path

from hardware_models.comparison import Comparison
from hardware_models.cost.roofline import chip_shares, schedule_spans
from hardware_models.trace import chrome_trace, scheduled
from landscape.outputs import dump_json
from landscape.render import bound_counts, kernel_cause, kind_deltas, pair_sections, path_label, ranking, xla_text
from landscape.roofline_plot import plot_roofline
from reference.units import format_bytes, format_percent, format_seconds

# How the page names a path in a sentence ("The PyTorch path: ...").
PATH_NAMES = {"torch": "PyTorch", "jax": "JAX", "torch-xla": "torch-xla"}

# One line each, on the page under "How to read it".
DEFINITIONS = {
    "bound": "which of a kernel's compute, memory and schedule (launch, fill, drain, sync) time is largest; "
    "for a program, the largest of the three summed over its kernels",
    "padding": "the share of the FLOPs a target executes that only fill its tiles (1 − useful / padded FLOPs)",
    "fused": "kernels that run more than one IR op (a fused group); kernels counts every launch",
    "other": "elementwise and reduction kernels: neither a contraction (matmul, convolution), pure data "
    "movement, a host fallback nor a chip-to-chip transfer",
    "main-memory traffic": "bytes moved to and from the target's main memory: HBM on GPUs and TPUs, on-chip SRAM "
    "on the LPU and the wafer, LPDDR5 on Spyre",
    "time × chips": "the time multiplied by the chips that run it (chip-seconds): what a program costs in "
    "hardware where targets need different chip counts",
    "top kernel": "the kernel that takes the most time (time × repeats), its share of the program's time, what "
    "bounds it and its arithmetic intensity on main memory (FLOPs per main-memory byte)",
}


def _ranking_section(data: dict) -> str:
    e = html.escape
    ranked = ranking(data)
    if not ranked:
        return ""
    details = data.get("target_details") or {}
    many_chips = len({r["chips"] for r in ranked}) > 1
    rows = "".join(
        f"<tr data-rank='{r['rank']}' data-ranked='{e(r['target'])}'><td>{r['rank']}</td><td>{e(r['target'])}<br>"
        f"<small>{e(details.get(r['target'], {}).get('kind', ''))}</small></td><td>{e(PATH_NAMES.get(r['side'], r['side']))}</td>"
        f"<td>{format_seconds(r['time_s'])}</td><td>{r['slower']:.2f}×</td><td>{r['chips']}</td>"
        + (f"<td>{format_seconds(r['chip_s'])}</td>" if many_chips else "")
        + f"<td>{e(kernel_cause(r['top_kernel']))}</td></tr>"
        for r in ranked
    )
    top = ranked[0]
    answer = (
        f"{e(top['target'])} is the fastest ({format_seconds(top['time_s'])}, {e(PATH_NAMES.get(top['side'], top['side']))} path)"
        + (f", {ranked[1]['slower']:.2f}× ahead of {e(ranked[1]['target'])}" if len(ranked) > 1 else "")
        + f"; its time goes first to {e(kernel_cause(top['top_kernel']))}."
    )
    if many_chips:
        cheapest = min(ranked, key=lambda r: (r["chip_s"], r["target"]))
        answer += (
            f" Per chip-second the cheapest is {e(cheapest['target'])} ({format_seconds(cheapest['chip_s'])} × chips)."
        )
    return f"""<h3>Which target is faster, and why</h3>
<p class="ranking-answer">{answer}</p>
<table class="ranking"><tr><th>rank</th><th>target</th><th>fastest path</th><th>time</th><th>× the fastest</th><th>chips</th>{"<th>time × chips</th>" if many_chips else ""}<th>top kernel and its cause</th></tr>
{rows}</table>"""


def phase_dir(result: Comparison) -> str:
    """The folder a phase's files go under, relative to the report ('' for no phase)."""
    return (result.workload or {}).get("phase") or ""


def write_report(
    comparisons: list[tuple[Comparison, dict]], targets: list, out_dir: str, verbose: bool = False
) -> list[Path]:
    """Write the files above; returns their paths.

    Args:
        comparisons: (Comparison, {side: Lowering}) per phase.
        targets: the loaded targets compared.
        verbose: keep XLA's source metadata (local paths) in the xla dumps.
    """
    root = Path(out_dir)
    written = []

    def write(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)

    by_name = {t.name: t for t in targets}
    svgs = {}
    for result, lowerings in comparisons:
        base = root / phase_dir(result)
        for side, lowering in lowerings.items():
            for stage in (*lowering.stages, "ir"):
                text = lowering.stage(stage)
                write(base / "hlo" / f"{side}.{stage}.txt", xla_text(text, verbose) if stage == "xla" else text)
        for (target_name, side), side_result in sorted(result.results.items()):
            if side_result.plan is None:
                continue
            target = by_name[target_name]
            write(base / "plans" / f"{target_name}.{side}.txt", side_result.plan.render() + "\n")
            figures = [base / "rooflines" / f"{target_name}.{side}{suffix}" for suffix in (".png", ".svg")]
            figures[0].parent.mkdir(parents=True, exist_ok=True)
            plot_roofline(
                side_result.estimate,
                target,
                figures,
                schedule_spans(side_result.plan, target),
                chip_shares(side_result.plan),
            )
            written.extend(figures)
            svgs[(phase_dir(result), target_name, side)] = figures[1].read_text()
            if scheduled(target.family):
                write(
                    base / "traces" / f"{target_name}.{side}.json",
                    dump_json(chrome_trace(side_result.plan, target), indent=None),
                )
    data = {"comparisons": [result.to_dict() for result, _ in comparisons]}
    write(root / "report.json", dump_json(data) + "\n")
    files = {p.relative_to(root).as_posix() for p in written}
    write(root / "report.html", render_html([result for result, _ in comparisons], svgs, files))
    return written


def _and(names: list[str]) -> str:
    """ "PyTorch and JAX"; "PyTorch, JAX and torch-xla"."""
    return " and ".join(names) if len(names) <= 2 else f"{', '.join(names[:-1])} and {names[-1]}"


def _link(files: set[str], path: str, text: str) -> str:
    return f"<a href='{html.escape(path)}'>{html.escape(text)}</a>" if path in files else ""


def _opening(comparisons: list[Comparison], files: set[str]) -> str:
    e = html.escape
    first = comparisons[0].to_dict()
    w = first.get("workload") or {}
    details = first.get("target_details") or {}
    if w:
        shapes = ", ".join(f"{k}={v}" for k, v in w["shapes"].items() if k != "mode")
        phases = "; ".join(e(c.workload["phase_text"]) for c in comparisons)
        what = (
            f"<b>{e(w['label'])}</b> (the catalogue's <code>{e(w['entry'])}</code> at {e(shapes)}), "
            f"in <b>{e(w['dtype'])}</b>: {phases}."
        )
        paths = " ".join(f"The {PATH_NAMES.get(s, s)} path: {e(p)}." for s, p in w["compilers"].items())
    else:
        what, paths = f"<b>{e(first['name'])}</b>.", ""
    targets = "".join(
        f"<li><b>{e(name)}</b>: {e(d['kind'])}: {e(d['description'])}; main memory {format_bytes(d['main_memory_bytes'])} "
        f"{e(d['main_memory_level'].upper())}</li>"
        for name, d in details.items()
    )
    definitions = "".join(f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in DEFINITIONS.items())
    links = []
    for c in comparisons:
        ph = phase_dir(c)
        prefix = f"{ph}/" if ph else ""
        hlo = " · ".join(
            filter(
                None,
                (
                    _link(files, f"{prefix}hlo/{f}", f)
                    for f in sorted(p.split("/")[-1] for p in files if p.startswith(f"{prefix}hlo/"))
                ),
            )
        )
        links.append(
            f"<li>{e(ph or 'files')}: HLO dumps {hlo}; plans, rooflines and traces per row of the table below</li>"
        )
    every = "Both paths" if len(first.get("sides", ())) <= 2 else f"All {len(first['sides'])} paths"
    return f"""<p class="lede">What was compared: {what} {every} lower the same module to StableHLO, which is imported
into one IR; each target's compiler passes map that IR onto the chip (fusion, tiling and padding, placement) and its
cost model predicts the time. {paths}</p>
<p>Targets, one per family:</p><ul id="targets">{targets}</ul>
<p>How to read it:</p><ul id="definitions">{definitions}</ul>
<p>Files beside this page: {_link(files, "report.json", "report.json")} (everything below, as data)</p><ul>{"".join(links)}</ul>"""


def _phase_section(result: Comparison, svgs: dict, files: set[str]) -> str:
    e = html.escape
    data = result.to_dict()
    ph = phase_dir(result)
    prefix = f"{ph}/" if ph else ""
    details = data.get("target_details") or {}
    rows = []
    for r in data["results"]:
        kind = details.get(r["target"], {}).get("kind", "")
        cell = f"<td>{e(r['target'])}<br><small>{e(kind)}</small></td>"
        if "refused" in r:
            rows.append(
                f"<tr class='refused'>{cell}<td>{e(r['side'])}</td><td colspan='10'>refused: {e(r['refused'])}</td></tr>"
            )
            continue
        stem = f"{r['target']}.{r['side']}"
        links = " · ".join(
            filter(
                None,
                (
                    _link(files, f"{prefix}plans/{stem}.txt", "plan"),
                    _link(files, f"{prefix}rooflines/{stem}.svg", "roofline"),
                    _link(files, f"{prefix}traces/{stem}.json", "trace"),
                ),
            )
        )
        rows.append(
            f"<tr data-target='{e(r['target'])}' data-side='{e(r['side'])}' data-time='{r['time_s']}'>{cell}<td>{e(r['side'])}</td>"
            f"<td class='time'>{format_seconds(r['time_s'])}</td><td>{e(r['bottleneck'])}</td><td>{r['kernels']}</td>"
            f"<td>{bound_counts(r)}</td><td>{r['fused_groups']}</td>"
            f"<td>{r['chips']}</td><td>{format_percent(r['padding_waste'])}</td>"
            f"<td>{format_bytes(r['main_memory_bytes'])} {e(r.get('main_memory_level', '').upper())}</td>"
            f"<td>{e(', '.join(r['fallbacks']) or '-')}</td><td>{links}</td></tr>"
        )
    pairs = []
    for a, b, costs, diff in pair_sections(data):
        deltas = "".join(f"<tr><td>{e(t)}</td><td>{e(kind_deltas(d))}</td></tr>" for t, d in costs.items())
        hist = "".join(
            f"<tr><td>{e(op)}</td><td>{x}</td><td>{y}</td></tr>"
            for op, (x, y) in sorted(diff["histogram"].items())
            if x != y
        )
        n_hist = sum(1 for x, y in diff["histogram"].values() if x != y)
        segments = "".join(
            f"<li>segment {d['segment']} after <code>{e(d['after'])}</code>: {e('; '.join(d['reasons']))}</li>"
            for d in diff["divergences"]
        )
        pairs.append(f"""<h3>What {e(path_label(b))} costs against {e(path_label(a))}, by kind of kernel</h3>
<table><tr><th>target</th><th>{e(b)} − {e(a)}</th></tr>{deltas}</table>
<h3>Where the IRs of {e(a)} and {e(b)} differ</h3>
<details class="op-counts"><summary>op counts that differ ({n_hist} ops)</summary>
<table><tr><th>op</th><th>{e(a)}</th><th>{e(b)}</th></tr>{hist}</table></details>
<ul>{segments}</ul>""")
    order = {t: i for i, t in enumerate(data.get("targets", []))}  # the table's order, not the alphabet's
    side_order = {s: i for i, s in enumerate(data.get("sides", []))}
    figures = "".join(
        f"<figure><figcaption>{e(t)} ({e(details.get(t, {}).get('kind', ''))}) · {e(s)}</figcaption>{svg[svg.find('<svg') :]}</figure>"
        for (p, t, s), svg in sorted(
            svgs.items(),
            key=lambda kv: (order.get(kv[0][1], len(order)), side_order.get(kv[0][2], len(side_order)), kv[0]),
        )
        if p == ph
    )
    w = data.get("workload") or {}
    text = w.get("phase_text", "")
    heading = e(text[:1].upper() + text[1:]) if ph else "Results"
    return f"""<section class="phase" data-phase="{e(ph)}" data-sides="{e(",".join(data.get("sides", ("torch", "jax"))))}">
<h2>{heading}</h2>
{"".join(f"<p class='note'>Note: {e(n)}</p>" for n in w.get("notes", []))}
<p class="summary"></p>
{_ranking_section(data)}
<h3>Per target and side</h3>
<table class="results"><tr><th>target</th><th>side</th><th>time</th><th>bound</th><th>kernels</th><th>compute/ memory/ schedule-bound</th><th>fused</th><th>chips</th><th>padding</th><th>main-memory traffic</th><th>fallbacks</th><th>files</th></tr>
{"".join(rows)}</table>
{"".join(pairs)}
<h3>Rooflines</h3>
{figures}
</section>"""


def render_html(
    comparisons: list[Comparison], svgs: dict[tuple[str, str, str], str], files: set[str] = frozenset()
) -> str:
    """A self-contained page (inline SVG rooflines, no network): what was compared, then for each
    phase the results per target and side, what the difference between the paths costs, where the
    IRs differ, and the rooflines. `svgs`: (phase, target, side) -> SVG text; `files`: the paths
    written beside the page, relative to it, which the page links."""
    e = html.escape
    comparisons = list(comparisons)
    first = comparisons[0].to_dict()
    label = (first.get("workload") or {}).get("label") or first["name"]
    sections = "\n".join(_phase_section(c, svgs, set(files)) for c in comparisons)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Landscape: {e(label)}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1400px; }}
table {{ border-collapse: collapse; margin: 8px 0 24px; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }}
td small {{ color: #666; }}
table.results td {{ white-space: nowrap; }}
tr.faster td.time {{ font-weight: bold; color: #0a6; }}
tr.refused td {{ color: #a30; }}
figure {{ display: inline-block; width: 560px; margin: 8px; }}
figure svg {{ width: 100%; height: auto; }}
</style></head>
<body>
<h1>{e(label[:1].upper() + label[1:])}: the {e(_and([PATH_NAMES.get(x, x) for x in first.get("sides", ("torch", "jax"))]))} paths on {len(first["targets"])} targets</h1>
{_opening(comparisons, set(files))}
{sections}
<script>
(function () {{
  document.querySelectorAll("section.phase").forEach(section => {{
    const rows = Array.from(section.querySelectorAll("table.results tr[data-target]"));
    const byTarget = {{}};
    rows.forEach(r => (byTarget[r.dataset.target] = byTarget[r.dataset.target] || []).push(r));
    const sides = section.dataset.sides.split(",");
    const fastest = {{}};
    let ties = 0;
    Object.values(byTarget).forEach(group => {{
      if (group.length !== sides.length) return;  // a side was refused on this target
      const times = group.map(r => Number(r.dataset.time));
      if (!times.every(t => t > 0)) return;
      const best = Math.min(...times);
      const winners = group.filter((r, i) => times[i] - best <= 1e-9 * best);
      if (winners.length > 1) {{ ties += 1; return; }}  // a tie is painted for none
      winners[0].classList.add("faster");
      fastest[winners[0].dataset.side] = (fastest[winners[0].dataset.side] || 0) + 1;
    }});
    const costed = Object.keys(byTarget).length + " targets costed; ";
    section.querySelector(".summary").textContent = (sides.length === 2
      ? costed + "the JAX path is faster on " + (fastest["jax"] || 0) + " (in green)"
      : costed + "the fastest path (in green): " + sides.map(s => s + " on " + (fastest[s] || 0)).join(", ")) +
      (ties ? "; " + ties + " tied" : "") + ".";
  }});
  document.body.dataset.ready = "1";
}})();
</script>
</body></html>
"""
