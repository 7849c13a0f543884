"""write_report: a comparison's files under one folder, for reading and diffing.

    hlo/<side>.<stage>.txt         every stage of both lowerings (fx, jaxpr, stablehlo, ir, xla)
    plans/<target>.<side>.txt      each target's compiled plan (Plan.render)
    rooflines/<target>.<side>.png  and .svg
    traces/<target>.<side>.json    a Chrome trace, for statically scheduled targets
    report.json                    the comparison's to_dict()
    report.html                    all of it on one self-contained page (inline SVG, no network)
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from hardware_models.compare import Comparison
from hardware_models.cost.roofline import plot_roofline, schedule_spans
from hardware_models.trace import chrome_trace, scheduled


def write_report(result: Comparison, lowerings: dict, targets: list, out_dir: str) -> list[Path]:
    """Write the files above; returns their paths. `lowerings`: side -> Lowering."""
    root = Path(out_dir)
    written = []

    def write(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)

    for side, lowering in lowerings.items():
        for stage in (*lowering.stages, "ir"):
            write(root / "hlo" / f"{side}.{stage}.txt", lowering.stage(stage))
    by_name = {t.name: t for t in targets}
    svgs = {}
    for (target_name, side), side_result in sorted(result.results.items()):
        if side_result.plan is None:
            continue
        target = by_name[target_name]
        write(root / "plans" / f"{target_name}.{side}.txt", side_result.plan.render() + "\n")
        for suffix in (".png", ".svg"):
            path = root / "rooflines" / f"{target_name}.{side}{suffix}"
            path.parent.mkdir(parents=True, exist_ok=True)
            plot_roofline(side_result.estimate, target, str(path), schedule_spans(side_result.plan, target))
            written.append(path)
            if suffix == ".svg":
                svgs[(target_name, side)] = path.read_text()
        if scheduled(target.family):
            write(root / "traces" / f"{target_name}.{side}.json", json.dumps(chrome_trace(side_result.plan, target), sort_keys=True))
    write(root / "report.json", json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
    write(root / "report.html", render_html(result, svgs))
    return written


def render_html(result: Comparison, svgs: dict[tuple[str, str], str]) -> str:
    """A self-contained page (inline SVG rooflines, no network): results per target and side,
    what the difference between the paths costs, where the IRs differ, and the rooflines."""
    e = html.escape
    data = result.to_dict()
    rows = []
    for r in data["results"]:
        if "refused" in r:
            rows.append(f"<tr class='refused'><td>{e(r['target'])}</td><td>{e(r['side'])}</td><td colspan='7'>refused: {e(r['refused'])}</td></tr>")
            continue
        rows.append(
            f"<tr data-target='{e(r['target'])}' data-side='{e(r['side'])}' data-time='{r['time_s']}'><td>{e(r['target'])}</td><td>{e(r['side'])}</td>"
            f"<td class='time'>{r['time_s'] * 1e6:,.1f} µs</td><td>{e(r['bottleneck'])}</td><td>{r['kernels']}</td><td>{r['fused_groups']}</td>"
            f"<td>{r['chips']}</td><td>{r['padding_waste']:.0%}</td><td>{r['main_memory_bytes'] / 1e6:,.2f} MB</td>"
            f"<td>{e(', '.join(r['fallbacks']) or '-')}</td></tr>")
    deltas = "".join(
        f"<tr><td>{e(t)}</td><td>{e(', '.join(f'{k} {v * 1e6:+,.1f} µs' for k, v in d.items()) or 'refused on one side')}</td></tr>"
        for t, d in data["difference_cost_s"].items())
    hist = "".join(f"<tr><td>{e(op)}</td><td>{a}</td><td>{b}</td></tr>"
                   for op, (a, b) in sorted(data["diff"]["histogram"].items()) if a != b)
    segments = "".join(f"<li>segment {d['segment']} after <code>{e(d['after'])}</code>: {e('; '.join(d['reasons']))}</li>"
                       for d in data["diff"]["divergences"])
    figures = "".join(f"<figure><figcaption>{e(t)} · {e(s)}</figcaption>{svg[svg.find('<svg'):]}</figure>"
                      for (t, s), svg in sorted(svgs.items()))
    families = ", ".join(e(t) for t in data["targets"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Landscape: {e(result.name)}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; margin: 8px 0 24px; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}
tr.faster td.time {{ font-weight: bold; color: #0a6; }}
tr.refused td {{ color: #a30; }}
figure {{ display: inline-block; width: 560px; margin: 8px; }}
figure svg {{ width: 100%; height: auto; }}
</style></head>
<body>
<h1>{e(result.name)}: the PyTorch and JAX paths on {len(data["targets"])} targets</h1>
<p>Targets: {families}. <span id="summary"></span></p>
<h2>Per target and side</h2>
<table id="results"><tr><th>target</th><th>side</th><th>time</th><th>bound</th><th>kernels</th><th>fused</th><th>chips</th><th>padding</th><th>main memory</th><th>fallbacks</th></tr>
{''.join(rows)}</table>
<h2>What the JAX path costs against the PyTorch path, by kind of kernel</h2>
<table><tr><th>target</th><th>jax − torch</th></tr>{deltas}</table>
<h2>Where the two IRs differ</h2>
<table><tr><th>op</th><th>torch</th><th>jax</th></tr>{hist}</table>
<ul>{segments}</ul>
<h2>Rooflines</h2>
{figures}
<script>
(function () {{
  const rows = Array.from(document.querySelectorAll("#results tr[data-target]"));
  const byTarget = {{}};
  rows.forEach(r => (byTarget[r.dataset.target] = byTarget[r.dataset.target] || []).push(r));
  let jaxFaster = 0;
  Object.values(byTarget).forEach(pair => {{
    if (pair.length !== 2) return;
    const fast = pair.reduce((a, b) => (Number(a.dataset.time) <= Number(b.dataset.time) ? a : b));
    fast.classList.add("faster");
    if (fast.dataset.side === "jax") jaxFaster += 1;
  }});
  document.getElementById("summary").textContent =
    Object.keys(byTarget).length + " targets costed; the JAX path is faster on " + jaxFaster + ".";
  document.body.dataset.ready = "1";
}})();
</script>
</body></html>
"""
