"""Time `landscape run` (reference + PyTorch + JAX) per catalogue entry at its defaults.

Writes benchmarks/results/run_times.csv: entry, dtype, seconds for a first run in a fresh
process state (JAX compiles), seconds for a second run (compiled), and the agreement verdict.
"""

from __future__ import annotations

import csv
import pathlib
import time

import jax_side
import pytorch_side
from reference.agreement import check_agreement
from reference.catalogue import KERNELS

RESULTS = pathlib.Path(__file__).with_name("results") / "run_times.csv"
RUNNERS = {"torch": pytorch_side.run_case, "jax": jax_side.run_case}


def main() -> None:
    rows = []
    for name in [*KERNELS, "tiny", "gpt2-small"]:
        for dtype in ("float32", "bfloat16", "float16"):
            times = []
            for _ in range(2):
                start = time.perf_counter()
                result = check_agreement(name, {}, dtype, runners=RUNNERS)
                times.append(time.perf_counter() - start)
            rows.append([name, dtype, f"{times[0]:.3f}", f"{times[1]:.3f}", result.ok])
            print(*rows[-1], flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["entry", "dtype", "first_run_s", "second_run_s", "ok"])
        writer.writerows(rows)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
