"""The kernel calibration, as the docs show it: every fitted value with the row it cites, and the
model against every measured row of hardware_models/kernels.csv, fitted or held out.

Writes benchmarks/results/calibration_fits.csv (target, key, value, row) and
benchmarks/results/calibration_rows.csv (id, target, workload, unit, measured, predicted, error,
sample); `make docs` renders both into docs/models.md. Runs in a few seconds (no framework).
"""

from __future__ import annotations

import csv
import pathlib

from hardware_models.calibration import check, read_csv, refit
from hardware_models.target import load_targets

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def main() -> None:
    targets = load_targets()
    kernels = read_csv()
    fits = []
    for name, target in sorted(targets.items()):
        # the targets fitted on kernels.csv (the host CPU's fits cite its own rows: docs/host-cpu.md)
        if not any(q.tag == "F" and q.calibration_row in kernels for q in target.quantities.values()):
            continue
        refit(target)  # raises if a cited row is missing: the table never shows a value it cannot refit
        for key, q in sorted(target.quantities.items()):
            if q.tag == "F":
                fits.append({"target": name, "key": key, "value": f"{q.value:.6g}", "row": q.calibration_row})
    rows = [
        {**r, "measured": f"{r['measured']:.6g}", "predicted": f"{r['predicted']:.6g}", "error": f"{r['error']:.5f}"}
        for r in check(targets)
    ]
    for name, table in (("calibration_fits.csv", fits), ("calibration_rows.csv", rows)):
        with open(RESULTS / name, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(table[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(table)
        print(f"wrote benchmarks/results/{name}: {len(table)} rows")


if __name__ == "__main__":
    main()
