"""How much faster the closed-form systolic core is than SCALE-Sim, on the same GEMMs.

SCALE-Sim runs in .venv-scalesim (make scalesim), one process per case, so its time includes
its start-up; the closed form is timed in-process. Both must give the same compute cycles.
Writes benchmarks/results/systolic_speed.csv.
"""

from __future__ import annotations

import csv
import json
import pathlib
import subprocess
import time

from hardware_models.cost.systolic import systolic_gemm

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "systolic_speed.csv"
ORACLE = ROOT / "tests" / "oracles" / "scalesim_gemm.py"
SCALESIM_PYTHON = ROOT / ".venv-scalesim" / "bin" / "python"
CASES = [
    (64, 64, 64, 8, 8, "os"),
    (129, 150, 65, 16, 16, "ws"),
    (256, 256, 256, 32, 32, "is"),
    (512, 512, 512, 128, 128, "os"),
]


def main() -> None:
    rows = []
    for case in CASES:
        start = time.perf_counter()
        out = subprocess.run(
            [str(SCALESIM_PYTHON), str(ORACLE), ",".join(map(str, case))], capture_output=True, text=True, check=True
        )
        scalesim_s = time.perf_counter() - start
        scalesim_cycles = json.loads(out.stdout.strip().splitlines()[-1])[0][0]
        repeats = 10_000
        start = time.perf_counter()
        for _ in range(repeats):
            closed = systolic_gemm(*case).compute_cycles
        closed_s = (time.perf_counter() - start) / repeats
        rows.append(
            [
                *case,
                scalesim_cycles,
                closed,
                f"{scalesim_s:.3f}",
                f"{closed_s * 1e6:.2f}",
                f"{scalesim_s / closed_s:.0f}",
            ]
        )
        print(*rows[-1], flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "m",
                "n",
                "k",
                "rows",
                "cols",
                "dataflow",
                "scalesim_cycles",
                "closed_form_cycles",
                "scalesim_s",
                "closed_form_us",
                "speedup",
            ]
        )
        writer.writerows(rows)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
