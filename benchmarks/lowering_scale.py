"""Time, peak memory and op count of lowering published models on each side.

lower_s is lowering plus IR construction; import_s, importing the framework first, is apart.

Each (model, side) runs in a fresh process, so peak RSS is that lowering's alone. Models
lower regionally (one block called per layer). torch-xla, where .venv-torchxla is built, lowers in
its driver's process: its lower_s includes that process's start and torch-xla's import (about 5 s),
and driver_peak_rss_gb is that process's peak (one layer's weights materialized).
Writes benchmarks/results/lowering.csv.
Usage: python benchmarks/lowering_scale.py [MODEL ...]
"""

from __future__ import annotations

import csv
import json
import pathlib
import subprocess
import sys

RESULTS = pathlib.Path(__file__).with_name("results") / "lowering.csv"
DEFAULT_MODELS = ("gpt2-small", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b")
SEQ = 2048  # gpt2-small has 1024 learned positions and lowers at 1024

CHILD = """
import importlib, json, resource, sys, time
from landscape.lowering import lower_named
name, side = sys.argv[1], sys.argv[2]
start = time.perf_counter()
for module in {"torch": ["pytorch_side.lower", "torch_mlir.fx"], "jax": ["jax_side.lower"], "torch-xla": ["torchxla_side.lower"]}[side]:
    importlib.import_module(module)
imported = time.perf_counter()
lowering = lower_named(name, side, json.loads(sys.argv[3]), "bfloat16")
seconds = time.perf_counter() - imported
stats = lowering.stats()
driver = [float(n.split("peak memory there ")[1].split(" GB")[0]) for n in lowering.notes if "peak memory there" in n]
print(json.dumps({"driver_peak_rss_gb": driver[0] if driver else None, "seconds": seconds, "import_s": imported - start, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
                  "ops": sum(stats.ops.values()), "flops": stats.flops, "param_bytes": stats.param_bytes}))
"""


def main(models: list[str]) -> None:
    from torchxla_side import available

    rows = []
    for model in models:
        for side in ("torch", "jax", "torch-xla") if available() else ("torch", "jax"):
            shapes = {"batch": 1, "seq": 1024 if model == "gpt2-small" else SEQ}
            out = subprocess.run(
                [sys.executable, "-c", CHILD, model, side, json.dumps(shapes)],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if out.returncode != 0:
                print(model, side, "failed:", out.stderr.strip().splitlines()[-1:], flush=True)
                continue
            data = json.loads(out.stdout.strip().splitlines()[-1])
            driver = "" if data["driver_peak_rss_gb"] is None else f"{data['driver_peak_rss_gb']:.2f}"
            rows.append(
                [
                    model,
                    side,
                    shapes["seq"],
                    f"{data['import_s']:.2f}",
                    f"{data['seconds']:.2f}",
                    f"{data['peak_rss_gb']:.2f}",
                    driver,
                    data["ops"],
                    f"{data['flops']:.4e}",
                    data["param_bytes"],
                ]
            )
            print(*rows[-1], flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "model",
                "side",
                "seq",
                "import_s",
                "lower_s",
                "peak_rss_gb",
                "driver_peak_rss_gb",
                "ir_ops",
                "flops",
                "param_bytes",
            ]
        )
        writer.writerows(rows)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(DEFAULT_MODELS))
