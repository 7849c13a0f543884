"""Predicted against published serving figures (hardware_models/serving.csv): every row, through
`landscape predict --json` in a fresh process, with the error per row and a summary over the
comparable rows (within 2x, median |error|). Rows that cannot be compared one-to-one are shown
with their reason and left out of the summary (hardware_models/serving_rows.py).

Writes benchmarks/results/serving_accuracy.csv. Usage: python benchmarks/serving_accuracy.py [ROW_ID ...]
"""

from __future__ import annotations

import csv
import json
import pathlib
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from hardware_models.serving_rows import ROWS, ServingRow  # noqa: E402

RESULTS = pathlib.Path(__file__).with_name("results") / "serving_accuracy.csv"


def command(row: ServingRow) -> list[str]:
    return [sys.executable, "-m", "landscape.cli", *row.predict_args()]


def error(predicted: float, published: float) -> float:
    """Signed relative error, (predicted - published) / published."""
    return (predicted - published) / published


def within_2x(predicted: float, published: float) -> bool:
    return 0.5 <= predicted / published <= 2.0


def run(row: ServingRow) -> dict:
    start = time.perf_counter()
    out = subprocess.run(command(row), capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        return {"id": row.id, "failed": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    data = json.loads(out.stdout)
    predicted = row.figure(data)
    return {"id": row.id, "model": row.model, "target": row.target, "chips": data["chips"], "batch": data["batch"],
            "precision": row.precision, "metric": row.metric, "published": row.published, "predicted": predicted,
            "error": error(predicted, row.published), "within_2x": within_2x(predicted, row.published),
            "comparable": not row.not_comparable, "reason": row.not_comparable, "wall_s": wall}


def summary(results: list[dict]) -> str:
    comparable = [r for r in results if r.get("comparable")]
    if not comparable:
        return "no comparable rows ran"
    inside = sum(r["within_2x"] for r in comparable)
    median = statistics.median(abs(r["error"]) for r in comparable)
    return f"comparable rows: {len(comparable)}; within 2x: {inside}/{len(comparable)}; median |error|: {median:.1%}"


def main(ids: list[str]) -> None:
    rows = [r for r in ROWS if not ids or r.id in ids]
    results = []
    for row in rows:
        r = run(row)
        results.append(r)
        if "failed" in r:
            print(f"{row.id:4s} FAILED: {r['failed']}", flush=True)
            continue
        tag = f"   [not comparable: {r['reason']}]" if not r["comparable"] else (f"   [{row.note}]" if row.note else "")
        print(f"{r['id']:4s} {r['model']:15s} {r['target']:9s} x{r['chips']:<3d} b={r['batch']:<5} {r['precision']:5s} "
              f"{r['metric']:10s} published {r['published']:>9.4g} predicted {r['predicted']:>9.4g} "
              f"error {r['error']:+7.1%}{tag}", flush=True)
    print(summary(results))
    RESULTS.parent.mkdir(exist_ok=True)
    keys = ["id", "model", "target", "chips", "batch", "precision", "metric", "published", "predicted", "error",
            "within_2x", "comparable", "reason", "wall_s"]
    with open(RESULTS, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        writer.writeheader()
        for r in results:
            if "failed" not in r:
                writer.writerow({k: (f"{r[k]:.4g}" if isinstance(r[k], float) else r[k]) for k in keys})


if __name__ == "__main__":
    main(sys.argv[1:])
