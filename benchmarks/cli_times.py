"""Wall time of the commands docs/cli.md quotes, each in a fresh process as a user runs it: the
help, a typo caught before torch or jax is imported, a systolic GEMM, the targets, the map.
Each command runs `REPEATS` times; the CSV keeps the fastest and slowest (the machine is shared,
so the spread is part of the figure). Writes benchmarks/results/cli_times.csv.
Usage: python benchmarks/cli_times.py
"""

from __future__ import annotations

import csv
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = pathlib.Path(__file__).with_name("results") / "cli_times.csv"
REPEATS = 3
COMMANDS = {  # name -> (arguments, the exit status it must give)
    "help": (["--help"], 0),
    "typo": (["predict", "--model", "llama-3.1-8", "--target", "h100"], 2),
    "gemm": (["gemm", "512", "512", "512"], 0),
    "targets": (["targets"], 0),
    "map": (["map"], 0),
}


def time_command(args: list[str], status: int) -> float:
    """Seconds of one run of `landscape ARGS` in a fresh interpreter.

    Raises:
        RuntimeError: the command gave another exit status than `status`.
    """
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "landscape.cli", *args], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != status:
        raise RuntimeError(f"landscape {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return seconds


def main() -> int:
    rows = []
    for name, (args, status) in COMMANDS.items():
        times = [time_command(args, status) for _ in range(REPEATS)]
        rows.append(
            {"command": name, "args": " ".join(args), "min_s": f"{min(times):.3f}", "max_s": f"{max(times):.3f}"}
        )
        print(f"{name:8s} {min(times):6.2f}-{max(times):.2f} s  landscape {' '.join(args)}", flush=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["command", "args", "min_s", "max_s"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
