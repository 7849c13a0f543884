"""Predicted against published serving figures (hardware_models/serving.csv): every row, through
`landscape predict --json` in a fresh process, with the error per row and a summary over the
comparable rows (within 2x, median |error|). Rows that cannot be compared one-to-one are shown
with their reason and left out of the summary (hardware_models/serving_rows.py).

In the same run, where `make bench-peers` has built .venv-peers, the two peer predictors GenZ
(genz-llm) and llm-analysis predict the same rows at their default efficiencies
(benchmarks/peers.py), and the three tools are summarized side by side: each over the comparable
rows it can predict, and all three over the rows every one of them predicts.

Writes benchmarks/results/serving_accuracy.csv on a full run (the peers' columns stay empty
without .venv-peers); a run of some rows prints only. Usage: python benchmarks/serving_accuracy.py [ROW_ID ...]
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
ROOT = pathlib.Path(__file__).resolve().parents[1]
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
PEERS = ("genz", "llm-analysis")


def run_peers() -> dict:
    """{row id: {"genz": figure or None, "llm-analysis": ...}} from benchmarks/peers.py, or {} (and
    why, on stderr) where .venv-peers is absent or the run fails."""
    if not PEERS_PYTHON.exists():
        print(
            "peers: .venv-peers is absent (make bench-peers builds it); GenZ and llm-analysis not run", file=sys.stderr
        )
        return {}
    out = subprocess.run(
        [str(PEERS_PYTHON), str(ROOT / "benchmarks" / "peers.py")], capture_output=True, text=True, timeout=900
    )
    if out.returncode != 0:
        print(f"peers: benchmarks/peers.py failed: {out.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return {}
    return json.loads(out.stdout)


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
        return {
            "id": row.id,
            "failed": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}",
        }
    data = json.loads(out.stdout)
    predicted = row.figure(data)
    return {
        "id": row.id,
        "model": row.model,
        "target": row.target,
        "chips": data["chips"],
        "batch": data["batch"],
        "precision": row.precision,
        "metric": row.metric,
        "published": row.published,
        "predicted": predicted,
        "error": error(predicted, row.published),
        "within_2x": within_2x(predicted, row.published),
        "comparable": not row.not_comparable,
        "reason": row.not_comparable,
        "wall_s": wall,
    }


def summary(results: list[dict], key: str = "predicted", label: str = "landscape") -> str:
    """Within 2x and median |error| over the comparable rows that `key` predicted."""
    rows = [r for r in results if r.get("comparable") and r.get(key) is not None]
    if not rows:
        return f"{label}: no comparable rows predicted"
    inside = sum(within_2x(r[key], r["published"]) for r in rows)
    median = statistics.median(abs(error(r[key], r["published"])) for r in rows)
    return f"{label}: comparable rows {len(rows)}; within 2x {inside}/{len(rows)}; median |error| {median:.1%}"


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
        print(
            f"{r['id']:4s} {r['model']:15s} {r['target']:9s} x{r['chips']:<3d} b={r['batch']:<5} {r['precision']:5s} "
            f"{r['metric']:10s} published {r['published']:>9.4g} predicted {r['predicted']:>9.4g} "
            f"error {r['error']:+7.1%}{tag}",
            flush=True,
        )
    print(summary(results))
    peers = run_peers()
    if peers:
        ran = [r for r in results if "failed" not in r]
        for r in ran:
            for peer in PEERS:
                r[peer] = peers.get(r["id"], {}).get(peer)
        print("\nside by side (error against the published figure; - : the tool has no model of that hardware)")
        print(f"{'row':4s} {'published':>10s} {'landscape':>10s} {'GenZ':>10s} {'llm-analysis':>12s}")
        for r in ran:
            cells = [
                f"{error(r[k], r['published']):+.0%}" if r.get(k) is not None else "-" for k in ("predicted", *PEERS)
            ]
            print(
                f"{r['id']:4s} {r['published']:>10.4g} {cells[0]:>10s} {cells[1]:>10s} {cells[2]:>12s}"
                + ("" if r["comparable"] else "   (not comparable)")
            )
        for key, label in (("predicted", "landscape"), ("genz", "GenZ"), ("llm-analysis", "llm-analysis")):
            print(summary(ran, key, label))
        common = [r for r in ran if all(r.get(k) is not None for k in ("predicted", *PEERS))]
        ids_common = ", ".join(r["id"] for r in common if r["comparable"])
        print(f"on the comparable rows all three predict ({ids_common}):")
        for key, label in (("predicted", "landscape"), ("genz", "GenZ"), ("llm-analysis", "llm-analysis")):
            print("  " + summary(common, key, label))
    if ids:  # a partial run prints only: the committed CSV holds every row
        return
    RESULTS.parent.mkdir(exist_ok=True)
    keys = [
        "id",
        "model",
        "target",
        "chips",
        "batch",
        "precision",
        "metric",
        "published",
        "predicted",
        "error",
        "within_2x",
        "comparable",
        "reason",
        "genz",
        "llm-analysis",
        "wall_s",
    ]
    with open(RESULTS, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        writer.writeheader()
        for r in results:
            if "failed" not in r:
                writer.writerow({k: (f"{r[k]:.4g}" if isinstance(r.get(k), float) else r.get(k, "")) for k in keys})


if __name__ == "__main__":
    main(sys.argv[1:])
