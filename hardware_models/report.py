"""write_report: a comparison's files under one folder, for reading and diffing.

    hlo/<side>.<stage>.txt         every stage of both lowerings (fx, jaxpr, stablehlo, ir, xla)
    plans/<target>.<side>.txt      each target's compiled plan (Plan.render)
    rooflines/<target>.<side>.png  and .svg
    traces/<target>.<side>.json    a Chrome trace, for statically scheduled targets
    report.json                    the comparison's to_dict()
"""

from __future__ import annotations

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
        if scheduled(target.family):
            write(root / "traces" / f"{target_name}.{side}.json", json.dumps(chrome_trace(side_result.plan, target), sort_keys=True))
    write(root / "report.json", json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
    return written
