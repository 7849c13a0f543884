"""`landscape predict` for published models on one target per family, timed end to end.

bfloat16, batch 1, 2048 tokens in, 256 out, JAX lowering. Each (model, target) runs in a fresh
process, so `wall_s` includes start-up, framework import, both lowerings and both estimates.
Writes benchmarks/results/predict.csv. Usage: python benchmarks/predict.py [MODEL ...]
"""

from __future__ import annotations

import csv
import json
import pathlib
import subprocess
import sys
import time

RESULTS = pathlib.Path(__file__).with_name("results") / "predict.csv"
DEFAULT_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b")
TARGETS = ("h100", "tpu-v5e", "wse-3", "groq-lpu", "spyre")


def main(models: list[str]) -> None:
    rows = []
    for model in models:
        for target in TARGETS:
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-m", "landscape.cli", "predict", "--model", model, "--target", target, "--json"],
                capture_output=True,
                text=True,
                timeout=600,
            )
            wall = time.perf_counter() - start
            if out.returncode != 0:
                print(model, target, "refused:", out.stderr.strip(), flush=True)
                continue
            d = json.loads(out.stdout)
            rows.append(
                [
                    model,
                    target,
                    d["chips"],
                    f"{d['ttft_s'] * 1e3:.1f}",
                    f"{d['decode_step_s'] * 1e3:.3f}",
                    f"{d['tokens_per_s_per_user']:.1f}",
                    d["bottleneck"],
                    f"{d['kv_cache_bytes'] / 1e9:.3f}",
                    f"{wall:.1f}",
                ]
            )
            print(*rows[-1], flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "model",
                "target",
                "chips",
                "ttft_ms",
                "decode_step_ms",
                "tokens_per_s_per_user",
                "bottleneck",
                "kv_cache_gb",
                "wall_s",
            ]
        )
        writer.writerows(rows)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(DEFAULT_MODELS))
