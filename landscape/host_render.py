"""How `landscape validate host-cpu` prints and stores its rows."""

from __future__ import annotations

import csv
import io

from landscape.host_validate import RUNTIME_LABELS, Row


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


def render_rows(rows: list[Row], summary: dict, target) -> str:
    lines = [
        f"host-cpu validation: {target.description} (target file {target.path})",
        f"{'entry':15s} {'size':5s} {'runtime':9s} {'measured us':>12s} {'IQR':>8s} {'predicted us':>13s} {'error':>7s}  kernels",
    ]
    for r in rows:
        lines.append(
            f"{r.entry:15s} {r.size:5s} {r.runtime:9s} {_us(r.measured_s):>12s} {_us(r.iqr_s):>8s} "
            f"{_us(r.predicted_s):>13s} {r.error:>+7.0%}  {r.kernels}"
        )
    lines.append("")
    for key, s in summary.items():
        label = "all rows" if key == "all" else RUNTIME_LABELS[key]
        lines.append(
            f"{label:26s} median |error| {s['median_abs_error']:.1%}, worst ratio {s['worst_ratio']:.2f}x, "
            f"{s['within_2x']} of {s['rows']} rows within 2x"
        )
    return "\n".join(lines)


def render_drift(before: dict[str, float], after: dict[str, float]) -> str:
    """One line: the anchor rows' time now against the calibration's, before and after."""
    if not before:
        return "machine drift: not measured (the target file has no rows file beside it)"
    parts = ", ".join(f"{k} {before[k]:.2f}x then {after.get(k, float('nan')):.2f}x" for k in before)
    return f"machine drift (time now / at calibration): {parts}"


def rows_csv(rows: list[Row]) -> str:
    buffer = io.StringIO()
    fields = ("entry", "size", "runtime", "shapes", "measured_s", "iqr_s", "predicted_s", "error", "kernels")
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        writer.writerow(
            {
                **r.to_dict(),
                "measured_s": f"{r.measured_s:.6e}",
                "iqr_s": f"{r.iqr_s:.3e}",
                "predicted_s": f"{r.predicted_s:.6e}",
                "error": f"{r.error:+.4f}",
            }
        )
    return buffer.getvalue()
