"""Roofline: each kernel as a point (arithmetic intensity, attained FLOP/s) under the target's ceilings.

    intensity = FLOPs / HBM bytes            attained = FLOPs / time_s
    ceiling(I) = min(compute peak, I * bandwidth) for each memory level with a bandwidth
A point far below both ceilings is schedule-bound: its time is launch, fill and drain, padding
or wave quantization, which no roofline of compute and memory shows; those points are marked.
On a statically scheduled target (the LPU) an op's time in the estimate is what it adds to the
makespan; the roofline uses its own span on its unit instead (`spans`), so overlap does not
make it look faster than the hardware.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardware_models.cost.model import Estimate
from hardware_models.target import Target

MARKERS = {"compute": ("o", "tab:blue"), "memory": ("s", "tab:green"), "schedule": ("x", "tab:red")}


@dataclass(frozen=True)
class Point:
    group: int
    label: str
    intensity: float  # FLOP per HBM byte
    attained_flop_per_s: float
    bottleneck: str


def roofline_points(est: Estimate, level: str = "hbm", spans: dict[int, float] | None = None) -> list[Point]:
    """One point per kernel that does arithmetic and touches the main memory `level`; `spans`
    (group -> seconds) replaces a kernel's time where given."""
    points = []
    for g in est.groups:
        c = g.cost
        hbm = c.bytes_at(level)
        seconds = (spans or {}).get(g.group, c.time_s)
        if c.flops and hbm and seconds:
            points.append(Point(g.group, "+".join(g.ops), c.flops / hbm, c.flops / seconds, c.bottleneck))
    return points


def schedule_spans(plan, target: Target) -> dict[int, float]:
    """Each statically scheduled op's own span in seconds (empty for targets without a schedule)."""
    if not plan.schedule:
        return {}
    clock = target["chip.clock_hz"]
    return {g: max(slot.finish - slot.start, 1) / clock for g, slot in plan.schedule.items()}


def ceilings(target: Target) -> tuple[dict[str, float], dict[str, float]]:
    """(compute peaks in FLOP/s, memory bandwidths in bytes/s) to draw, each sustained (fitted)."""
    if target.family == "gpu":
        from hardware_models.cost.gpu import contraction_peak, hbm_rate, vector_rate

        eff = target["fitted.gemm_efficiency"]
        compute = {"tensor bf16": contraction_peak(target, "bf16") * eff, "CUDA-core f32": 2 * vector_rate(target)}
        memory = {"HBM": hbm_rate(target)}
    elif target.family == "tpu":
        from hardware_models.cost.tpu import vpu_rate

        compute = {"MXU bf16": target["peak.bf16_flop_per_s"], "VPU": vpu_rate(target)}
        memory = {"HBM": target["memory.hbm_bytes_per_s"], "VMEM": target["memory.vmem_bytes_per_s"]}
    elif target.family == "spyre":
        cores = target["chip.cores"]
        compute = {"matmul fp16": 2 * cores * target["fitted.matmul_mac_per_s_per_core"],
                   "vector": cores * target["chip.vector_ops_per_s_per_core"]}
        memory = {"LPDDR5": target["fitted.lpddr5_one_way_bytes_per_s"]}
    elif target.family == "lpu":
        compute = {"MXM fp16": target["peak.fp16_flop_per_s"], "VXM": target["chip.vector_alus"] * target["chip.clock_hz"]}
        memory = {"SRAM": target["memory.sram_bytes_per_s"]}
    else:
        compute = {"wafer fp16": target["peak.fp16_flop_per_s"] * target["fitted.compute_efficiency"]}
        memory = {"SRAM": target["memory.sram_bytes_per_s"], "fabric": target["interconnect.fabric_bytes_per_s"]}
    return compute, memory


def plot_roofline(est: Estimate, target: Target, path: str, spans: dict[int, float] | None = None) -> list[Point]:
    """Draw the roofline to `path` (.png or .svg, by its suffix); returns the points drawn.
    `spans`: `schedule_spans(plan, target)` for a statically scheduled target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    points = roofline_points(est, target.main_memory_level, spans)
    compute, memory = ceilings(target)
    lo = min([p.intensity for p in points] + [0.1]) / 2
    hi = max([p.intensity for p in points] + [max(compute.values()) / min(memory.values())]) * 4
    x = np.geomspace(lo, hi, 256)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    top = max(compute.values())
    for name, bandwidth in memory.items():
        ax.plot(x, np.minimum(top, x * bandwidth), lw=1.5, label=f"{name} {bandwidth / 1e12:.2f} TB/s")
    for name, peak in compute.items():
        ax.axhline(peak, ls="--", lw=1, color="gray")
        ax.text(hi, peak, f" {name} {peak / 1e12:.0f} TFLOP/s", va="bottom", ha="right", fontsize=8)
    for bound, (marker, color) in MARKERS.items():
        chosen = [p for p in points if p.bottleneck == bound]
        if chosen:
            ax.scatter([p.intensity for p in chosen], [p.attained_flop_per_s for p in chosen], marker=marker,
                       color=color, label=f"{bound}-bound ({len(chosen)})", zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"arithmetic intensity (FLOP / {target.main_memory_level.upper()} byte)")
    ax.set_ylabel("attained FLOP/s")
    ax.set_title(f"{est.name} on {target.name}: {len(points)} kernels")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="both", alpha=0.2)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None} if str(path).endswith(".svg") else None)
    plt.close(fig)
    return points
