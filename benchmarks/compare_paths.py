"""`landscape compare` with its defaults, as docs/comparing.md quotes it: one Llama-3.1-8B layer
lowered by both sides, a prefill of 2048 tokens and one decode step against a 2048-token cache,
on one target per family. Writes benchmarks/results/compare.csv, one row per (phase, target,
side): time, bottleneck, kernels, fused groups, main-memory bytes and that level's name, and the
command's wall time (`wall_s`, the same on every row). Runs in about 10 s.
Usage: python benchmarks/compare_paths.py
"""

from __future__ import annotations

import csv
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = pathlib.Path(__file__).with_name("results") / "compare.csv"
COLUMNS = (
    "phase",
    "target",
    "side",
    "time_s",
    "bottleneck",
    "kernels",
    "fused_groups",
    "main_memory",
    "main_bytes",
    "wall_s",
)


def rows(report: dict, wall_s: float) -> list[dict]:
    """compare --json's results as CSV rows."""
    out = []
    for comparison in report["comparisons"]:
        phase = comparison["workload"]["phase"]
        for r in comparison["results"]:
            if "time_s" not in r:  # a target that refused the side: no figures
                continue
            out.append(
                {
                    "phase": phase,
                    "target": r["target"],
                    "side": r["side"],
                    "time_s": f"{r['time_s']:.6e}",
                    "bottleneck": r["bottleneck"],
                    "kernels": r["kernels"],
                    "fused_groups": r["fused_groups"],
                    "main_memory": r["main_memory_level"],
                    "main_bytes": r["main_memory_bytes"],
                    "wall_s": f"{wall_s:.1f}",
                }
            )
    return out


def main() -> int:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "landscape.cli", "compare", "--json"], cwd=ROOT, capture_output=True, text=True
    )
    wall_s = time.perf_counter() - start
    if done.returncode:
        print(done.stderr.strip() or f"landscape compare exited {done.returncode}", file=sys.stderr)
        return done.returncode
    table = rows(json.loads(done.stdout), wall_s)
    with RESULTS.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(table)
    for r in table:
        print(f"{r['phase']:8s} {r['target']:9s} {r['side']:6s} {float(r['time_s']) * 1e3:10.4f} ms  {r['bottleneck']}")
    print(f"wrote {RESULTS.relative_to(ROOT)}: {len(table)} rows ({wall_s:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
