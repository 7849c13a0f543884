"""The serving simulator against measured in-flight-batching runs: every row of
hardware_models/serving_concurrency.csv (a verbatim copy of ../shared/calibration/
serving_concurrency.csv), simulated as its benchmark ran it: a closed loop of `concurrency`
requests in flight, each input_len in and output_len out, on `tp` GPUs at the row's precision.
Nothing is fitted to any row: the engine knobs are the engines' defaults (EngineConfig) and the
step costs the targets' own.

The benchmark client's protocol is not in the rows. Simulated: `--waves` x concurrency requests
(default 8: a closed loop's first wave prefills together, later ones spread out), statistics over
all of them but the first `--warmup-waves` waves (default 1: aiconfigurator's closed-loop
estimator and the engines' benchmark scripts warm up first).

Prints each row and a summary (rows within 2x, median |error| of TTFT and TPOT), for all rows and
per model; writes benchmarks/results/serving_load.csv on a full run. Where .venv-peers has the
peers (make bench-peers), their figures are run on the same rows (benchmarks/peers_load.py).
Usage: python benchmarks/serving_load.py [--waves N] [--warmup-waves N] [ROW_ID ...]
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROWS_CSV = ROOT / "hardware_models" / "serving_concurrency.csv"
RESULTS = pathlib.Path(os.environ.get("SERVING_LOAD_CSV", pathlib.Path(__file__).with_name("results") / "serving_load.csv"))
STAGGER = bool(os.environ.get('STAGGER'))
PRECISION = {"bf16": "bf16", "fp8": "fp8"}


def rows() -> list[dict]:
    with ROWS_CSV.open() as f:
        return list(csv.DictReader(f))


def predict_row(row: dict, waves: int, warmup_waves: int) -> dict:
    from hardware_models.serving import EngineConfig, Workload
    from landscape.serve_load import serve

    c = int(row["concurrency"])
    workload = Workload(requests=waves * c, input_len=int(row["input_len"]), output_len=int(row["output_len"]), concurrency=c)
    placed, result = serve(row["model"], row["target"], workload, EngineConfig(), precision=PRECISION[row["precision"]],
                           chips=int(row["tp"]), warmup=warmup_waves * c, stagger=STAGGER)
    s = result.summary
    return {"ttft_ms": s["ttft_s"]["mean"] * 1e3, "tpot_ms": s["tpot_s"]["mean"] * 1e3, "preemptions": s["preemptions"],
            "peak_cache": s["kv_cache"]["peak_occupancy"]}


def summarize(label: str, pairs: list[tuple[float, float]]) -> str:
    ratios = [p / m for p, m in pairs]
    within = sum(1 for r in ratios if 0.5 <= r <= 2)
    median = statistics.median(abs(r - 1) for r in ratios) if ratios else float("nan")
    worst = max((max(r, 1 / r) for r in ratios), default=float("nan"))
    return f"{label}: {within}/{len(ratios)} within 2x, median |error| {median:.1%}, worst {worst:.2f}x"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*")
    parser.add_argument("--waves", type=int, default=8)
    parser.add_argument("--warmup-waves", type=int, default=1)
    args = parser.parse_args(argv)
    chosen = [r for r in rows() if not args.ids or r["id"] in args.ids]
    out = []
    start = time.time()
    for row in chosen:
        got = predict_row(row, args.waves, args.warmup_waves)
        m_ttft, m_tpot = float(row["ttft_ms"]), float(row["tpot_ms"])
        out.append({"id": row["id"], "model": row["model"], "target": row["target"], "precision": row["precision"],
                    "tp": row["tp"], "input_len": row["input_len"], "output_len": row["output_len"],
                    "concurrency": row["concurrency"], "measured_ttft_ms": m_ttft, "predicted_ttft_ms": round(got["ttft_ms"], 2),
                    "ttft_ratio": round(got["ttft_ms"] / m_ttft, 3), "measured_tpot_ms": m_tpot,
                    "predicted_tpot_ms": round(got["tpot_ms"], 3), "tpot_ratio": round(got["tpot_ms"] / m_tpot, 3),
                    "preemptions": got["preemptions"], "peak_cache_occupancy": round(got["peak_cache"], 3)})
        r = out[-1]
        print(f"{r['id']} {r['model']:>13} {r['target']} c{r['concurrency']:>3} {r['input_len']:>4}x{r['output_len']:<4} "
              f"TTFT {m_ttft:8.1f} -> {r['predicted_ttft_ms']:8.1f} ms ({r['ttft_ratio']:.2f}x)  "
              f"TPOT {m_tpot:6.2f} -> {r['predicted_tpot_ms']:6.2f} ms ({r['tpot_ratio']:.2f}x)"
              + (f"  {r['preemptions']} preemptions" if r["preemptions"] else ""), flush=True)
    print(f"({len(out)} rows in {time.time() - start:.0f} s; {args.waves} waves, {args.warmup_waves} warm-up)")
    for model in sorted({r["model"] for r in out}) + [None]:
        sel = [r for r in out if model is None or r["model"] == model]
        name = model or "all"
        print(summarize(f"{name} TTFT", [(r["predicted_ttft_ms"], r["measured_ttft_ms"]) for r in sel]))
        print(summarize(f"{name} TPOT", [(r["predicted_tpot_ms"], r["measured_tpot_ms"]) for r in sel]))
    if not args.ids:
        RESULTS.parent.mkdir(exist_ok=True)
        with RESULTS.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(out[0]))
            writer.writeheader()
            writer.writerows(out)
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
