"""Run `make test` (lint, then every test on two workers) and record what it took, for
docs/testing.md: the date, wall time, cores, whether .venv-torchxla was there (its tests run only
then), and pytest's counts (passed, skipped, failed, errors). The suite's output goes to the
terminal as it runs. Writes benchmarks/results/suite_time.csv (one row: the last run) and exits
with `make test`'s status. Usage: python benchmarks/suite_time.py
"""

from __future__ import annotations

import csv
import datetime
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = pathlib.Path(__file__).with_name("results") / "suite_time.csv"
COUNTS = ("passed", "skipped", "failed", "errors")
SUMMARY = re.compile(r"(\d+) (passed|skipped|failed|errors?|deselected|xfailed|xpassed|warnings?)\b")


def counts(output: str) -> dict[str, int]:
    """pytest's final counts from its summary line ("2908 passed, 173 skipped in 359.1s")."""
    lines = [line for line in output.splitlines() if re.search(r"\b(passed|failed)\b.* in [\d.]+s", line)]
    found = {kind: 0 for kind in COUNTS}
    for number, kind in SUMMARY.findall(lines[-1] if lines else ""):
        kind = "errors" if kind.startswith("error") else kind
        if kind in found:
            found[kind] = int(number)
    return found


def main() -> int:
    start = time.perf_counter()
    process = subprocess.Popen(["make", "test"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = []
    for line in process.stdout:
        sys.stdout.write(line)
        output.append(line)
    status = process.wait()
    wall_s = time.perf_counter() - start
    row = {
        "date": datetime.date.today().isoformat(),
        "wall_s": f"{wall_s:.0f}",
        "cores": os.cpu_count(),
        "torchxla": (ROOT / ".venv-torchxla").is_dir(),
        **counts("".join(output)),
        "status": status,
    }
    with RESULTS.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    print(f"wrote {RESULTS.relative_to(ROOT)}: {row}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
