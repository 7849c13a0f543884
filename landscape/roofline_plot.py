"""The roofline drawn with matplotlib: the points and ceilings of hardware_models/cost/roofline.py
as a PNG or SVG figure.

The title counts what the estimate's table counts (its kernels, one per fused group) and says
which of them are not drawn: a kernel that only moves data has no FLOPs, so no intensity. The
ceilings are sustained rates (fitted efficiencies applied), lower than the peaks `landscape
targets` lists, and are labelled so. The kernels that take the most time (time × repeats) are
named on the plot.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence

from hardware_models.cost.model import Estimate
from hardware_models.cost.roofline import Point, ceilings, roofline_points
from hardware_models.target import Target
from landscape.render import short_label, short_scope
from reference.ir.from_stablehlo import DATA_MOVEMENT
from reference.units import format_rate, format_seconds

MARKERS = {"compute": ("o", "tab:blue"), "memory": ("s", "tab:green"), "schedule": ("x", "tab:red")}
NAMED = 3  # how many of the biggest kernels are named on the plot


def kernel_counts(est: Estimate, points: list[Point]) -> dict[str, int]:
    """How the estimate's kernels (one per fused group, as its table lists them) split:
    {"kernels": all, "drawn": with a point, "data_only": no FLOPs, every op moves data,
    "no_flops": no FLOPs counted otherwise (transcendentals), "off_main": FLOPs but no
    main-memory bytes or no time}; the last three have no point."""
    zero = [g for g in est.groups if not g.cost.flops]
    data_only = sum(1 for g in zero if all(op.split(".")[-1] in DATA_MOVEMENT for op in g.ops))
    return {
        "kernels": len(est.groups),
        "drawn": len(points),
        "data_only": data_only,
        "no_flops": len(zero) - data_only,
        "off_main": len(est.groups) - len(points) - len(zero),
    }


def roofline_title(est: Estimate, target: Target, points: list[Point]) -> str:
    """'block on h100: 22 of 24 kernels drawn; 2 move data only (no FLOPs)'."""
    n = kernel_counts(est, points)
    title = f"{est.name} on {target.name}: {n['drawn']} of {n['kernels']} kernels drawn"
    notes = []
    if n["data_only"]:
        notes.append(f"{n['data_only']} move data only (no FLOPs)")
    if n["no_flops"]:
        notes.append(f"{n['no_flops']} count no FLOPs (transcendentals are not FLOPs)")
    if n["off_main"]:
        notes.append(f"{n['off_main']} touch no {target.main_memory_level.upper()}")
    return title + ("; " + ", ".join(notes) if notes else "")


def biggest(est: Estimate, points: list[Point], count: int = NAMED) -> list[tuple[Point, float]]:
    """The drawn kernels that take the most time (time × repeats), largest first."""
    total = {g.group: g.cost.time_s * g.repeats for g in est.groups}
    ranked = sorted(points, key=lambda p: -total.get(p.group, 0.0))
    return [(p, total.get(p.group, 0.0)) for p in ranked[:count]]


def plot_roofline(
    est: Estimate,
    target: Target,
    path: str | os.PathLike | Sequence[str | os.PathLike],
    spans: dict[int, float] | None = None,
    shares: dict[int, int] | None = None,
) -> list[Point]:
    """Draw one chip's roofline to `path` (.png or .svg, by its suffix; a list of paths draws
    once and saves each); returns the points drawn. `spans`: `schedule_spans(plan, target)` for
    a statically scheduled target; `shares`: `chip_shares(plan)` where kernels are split over
    chips."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "landscape"  # the same SVG ids on every run
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: smaller, selectable, and faster to write
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import FuncFormatter, LogLocator

    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    points = roofline_points(est, target.main_memory_level, spans, shares)
    scopes = {g.group: short_scope(g.scope) for g in est.groups}
    compute, memory = ceilings(target)
    level = target.main_memory_level.upper()
    lo = min([p.intensity for p in points] + [0.1]) / 2
    hi = max([p.intensity for p in points] + [max(compute.values()) / min(memory.values())]) * 4
    x = np.geomspace(lo, hi, 256)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    top = max(compute.values())
    for name, bandwidth in memory.items():
        ax.plot(x, np.minimum(top, x * bandwidth), lw=1.5, label=f"{name} {format_rate(bandwidth, 'B/s')} sustained")
    for name, peak in compute.items():
        ax.axhline(peak, ls="--", lw=1, color="gray")
        ax.text(hi, peak, f" {name} {format_rate(peak, 'FLOP/s')} sustained", va="bottom", ha="right", fontsize=8)
    for bound, (marker, color) in MARKERS.items():
        chosen = [p for p in points if p.bottleneck == bound]
        if chosen:
            ax.scatter(
                [p.intensity for p in chosen],
                [p.attained_flop_per_s for p in chosen],
                marker=marker,
                color=color,
                label=f"{bound}-bound ({len(chosen)})",
                zorder=3,
            )
    names = []
    for rank, (p, seconds) in enumerate(biggest(est, points), start=1):
        ax.annotate(
            str(rank),
            (p.intensity, p.attained_flop_per_s),
            xytext=(5, 6 - 9 * (rank - 1)),
            textcoords="offset points",
            fontsize=8,
            fontweight="bold",
        )
        names.append(
            f"{rank}. {short_label(p.label)}{f' at {scopes[p.group]}' if scopes.get(p.group) else ''}: {format_seconds(seconds)}"
        )
    if names:
        ax.text(
            0.01,
            0.99,
            "largest kernels (time × repeats)\n" + "\n".join(names),
            transform=ax.transAxes,
            va="top",
            ha="left",
            fontsize=7,
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.8", "alpha": 0.9},
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    # Plain-text labels on decades only: mathtext tick labels and minor ticks made a figure ~1 s.
    ax.minorticks_off()
    ax.xaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_rate(v, "FLOP/s")))
    ax.set_xlabel(f"arithmetic intensity (FLOP / {level} byte)")
    ax.set_ylabel("attained FLOP/s")
    title = roofline_title(est, target, points) + ("; FLOPs per chip of split kernels" if shares else "")
    ax.set_title("\n".join(textwrap.wrap(title, 100)), fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="major", alpha=0.2)
    fig.subplots_adjust(left=0.16, right=0.97, top=0.91, bottom=0.1)  # fixed margins: tight_layout costs ~0.5 s
    for out in paths:
        fig.savefig(out, metadata={"Date": None} if str(out).endswith(".svg") else None)
    plt.close(fig)
    return points
