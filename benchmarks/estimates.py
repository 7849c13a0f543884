"""Predicted prefill and decode time of published models on every target, from both sides'
lowerings, and how long the target compiler and cost model take (compile_s). A model too big
for one chip is spread over `chips` (each family's partition); main_memory_gb is the traffic at
the target's main memory (HBM, LPDDR5 or SRAM): per chip under tensor parallelism, in all on
the LPU and the wafer.

bfloat16, batch 1; prefill = 2048 tokens, decode = one token after 2048 cached. Writes
benchmarks/results/estimates.csv. Usage: python benchmarks/estimates.py [MODEL ...]
"""

from __future__ import annotations

import csv
import pathlib
import sys
import time

from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import load_targets
from landscape.lowering import lower_named

RESULTS = pathlib.Path(__file__).with_name("results") / "estimates.csv"
DEFAULT_MODELS = ("llama-3.1-8b", "llama-3.1-70b")  # every target in the targets folder
MODES = {"prefill": {"batch": 1, "seq": 2048}, "decode": {"batch": 1, "seq": 2048, "mode": "decode"}}


def est_chips(plan) -> int:
    return plan.partition.chips if plan.partition else 1


def main(models: list[str]) -> None:
    rows = []
    for model in models:
        for mode, shapes in MODES.items():
            for side in ("torch", "jax"):
                module = lower_named(model, side, shapes, "bfloat16").module
                for target in load_targets().values():
                    start = time.perf_counter()
                    try:
                        est_plan = compile_plan(module, target)
                        est = estimate(module, target, model, est_plan)
                    except Exception as err:  # an unsupported dtype on one target must not lose the others
                        print(model, mode, side, target.name, "refused:", err, flush=True)
                        continue
                    compile_s = time.perf_counter() - start
                    d = est.to_dict()
                    rows.append(
                        [
                            model,
                            mode,
                            side,
                            target.name,
                            f"{d['total_time_s'] * 1e3:.3f}",
                            f"{d['compute_s'] * 1e3:.3f}",
                            f"{d['memory_s'] * 1e3:.3f}",
                            f"{d['schedule_s'] * 1e3:.3f}",
                            d["kernels"],
                            f"{d['bytes'].get(target.main_memory_level, 0) / 1e9:.3f}",
                            est_chips(est_plan),
                            d["bottleneck_counts"]["compute"],
                            d["bottleneck_counts"]["memory"],
                            d["bottleneck_counts"]["schedule"],
                            f"{compile_s:.3f}",
                        ]
                    )
                    print(*rows[-1], flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "model",
                "mode",
                "side",
                "target",
                "total_ms",
                "compute_ms",
                "memory_ms",
                "schedule_ms",
                "kernels",
                "main_memory_gb",
                "chips",
                "compute_bound",
                "memory_bound",
                "schedule_bound",
                "compile_s",
            ]
        )
        writer.writerows(rows)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(DEFAULT_MODELS))
