"""docs/your-model.md's example: `landscape predict` on Meta's Llama-3.2-1B config.json (shipped in
examples/) and on the built-in `llama-3.2-1b` entry, on an h100 at predict's defaults (bf16, batch
1, 2048 in, 256 out, JAX lowering), each in a fresh process (wall_s: start-up, imports, lowering
and estimate). The two rows should agree to the last digit: the config is the entry's source.

Writes benchmarks/results/your_model.csv; `make docs` renders docs/your-model.md's block from it.
Usage: python benchmarks/your_model.py
"""

from __future__ import annotations

import csv
import json
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = pathlib.Path(__file__).with_name("results") / "your_model.csv"
MODELS = ("examples/llama-3.2-1b/config.json", "llama-3.2-1b")
TARGET = "h100"


def main() -> None:
    rows = []
    for model in MODELS:
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "landscape.cli", "predict", "--model", model, "--target", TARGET, "--json"],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
            check=True,
        )
        wall = time.perf_counter() - start
        d = json.loads(out.stdout)
        rows.append(
            {
                "model": model,
                "target": TARGET,
                "ttft_ms": f"{d['ttft_s'] * 1e3:.1f}",
                "decode_step_ms": f"{d['decode_step_s'] * 1e3:.2f}",
                "e2e_ms": f"{d['e2e_latency_s'] * 1e3:.0f}",
                "wall_s": f"{wall:.1f}",
            }
        )
        print(*rows[-1].values(), flush=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
