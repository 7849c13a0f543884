"""Analysis time and peak memory against layer count: regional (one block function called L
times, compiled and costed once) against flat (every layer written out).

llama-3.2-1b's config with `layers` = 1, 8, 32, 80, 126, bf16, batch 1, 128 tokens, JAX side,
costed on the H100. Each (layers, mode) runs in a fresh process: lower_s is the lowering,
analyse_s the target compiler and cost model, peak_rss_gb the process's peak. Writes
benchmarks/results/layer_scaling.csv. Usage: python benchmarks/layer_scaling.py [--no-flat]
"""

from __future__ import annotations

import csv
import json
import pathlib
import subprocess
import sys

RESULTS = pathlib.Path(__file__).with_name("results") / "layer_scaling.csv"
LAYERS = (1, 8, 32, 80, 126)

CHILD = """
import json, resource, sys, time
import jax_side.lower  # framework import, outside the timings
from landscape.lowering import lower_named
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
layers, flat = int(sys.argv[1]), sys.argv[2] == "flat"
start = time.perf_counter()
lowering = lower_named("llama-3.2-1b", "jax", {"layers": layers, "seq": 128}, "bfloat16", flat=flat)
lowered = time.perf_counter()
target = get_target("h100")
plan = compile_plan(lowering.module, target)
est = estimate(lowering.module, target, "x", plan)
done = time.perf_counter()
print(json.dumps({"lower_s": lowered - start, "analyse_s": done - lowered, "ops": len(plan.ops), "kernels": est.to_dict()["kernels"],
                  "time_ms": est.total.time_s * 1e3, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))
"""


def main(flat: bool = True) -> None:
    rows = []
    for mode in ("regional", "flat") if flat else ("regional",):
        for layers in LAYERS:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(layers), mode], capture_output=True, text=True, timeout=1800
            )
            if out.returncode != 0:
                print(layers, mode, "failed:", out.stderr.strip().splitlines()[-1:], flush=True)
                continue
            d = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(
                [
                    mode,
                    layers,
                    d["ops"],
                    d["kernels"],
                    f"{d['lower_s']:.2f}",
                    f"{d['analyse_s']:.3f}",
                    f"{d['peak_rss_gb']:.2f}",
                    f"{d['time_ms']:.3f}",
                ]
            )
            print(*rows[-1], flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["mode", "layers", "planned_ops", "kernels", "lower_s", "analyse_s", "peak_rss_gb", "predicted_ms"]
        )
        writer.writerows(rows)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main(flat="--no-flat" not in sys.argv[1:])
