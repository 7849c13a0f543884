"""The peers on the measured in-flight-batching rows: NVIDIA's aiconfigurator (PyPI
aiconfigurator==0.12.0, its own venv: `make peers-load`) predicts every row of
hardware_models/serving_concurrency.csv at its defaults, as `aiconfigurator cli estimate --mode agg`
does: the row's engine (backend), GPU, TP size and concurrency (its batch_size), its bundled model
configs (the FP8 checkpoint for an fp8 row) and its latest perf database for that engine.

Runs in .venv-peers-load (it does not import Landscape); writes
benchmarks/results/serving_load_peers.csv, which benchmarks/serving_load.py renders beside its own
figures. Vidur (PyPI vidur==0.0.26) is not run: its step-time predictor is fitted at run time on
profiling tables it downloads from Hugging Face (`model_profiling_dataset`, default
project-vajra/dev-staging-meta-llama-llama-3-8b-h100), and this machine reaches no hub; the
generated page says so.
Usage: .venv-peers-load/bin/python benchmarks/peers_load.py
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROWS_CSV = ROOT / "hardware_models" / "serving_concurrency.csv"
RESULTS = pathlib.Path(
    os.environ.get("SERVING_LOAD_PEERS_CSV", pathlib.Path(__file__).with_name("results") / "serving_load_peers.csv")
)
# aiconfigurator's bundled configs (aiconfigurator_core/model_configs) by our model and precision
MODELS = {
    ("llama-3.1-8b", "bf16"): "meta-llama/Meta-Llama-3.1-8B",
    ("llama-3.1-70b", "bf16"): "meta-llama/Meta-Llama-3.1-70B",
    ("llama-3.1-70b", "fp8"): "nvidia/Llama-3.1-70B-Instruct-FP8",
}
SYSTEMS = {"h100": "h100_sxm", "h200": "h200_sxm"}
FIELDS = ["id", "tool", "version", "backend_version", "ttft_ms", "tpot_ms", "note"]


def predict(row: dict) -> dict:
    from aiconfigurator.cli.api import cli_estimate

    model = MODELS.get((row["model"], row["precision"]))
    system = SYSTEMS.get(row["target"])
    if model is None or system is None:
        return {
            "ttft_ms": "",
            "tpot_ms": "",
            "backend_version": "",
            "note": f"no bundled config or system for {row['model']} {row['precision']} on {row['target']}",
        }
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        got = cli_estimate(
            model,
            system,
            mode="agg",
            backend_name=row["backend"],
            isl=int(row["input_len"]),
            osl=int(row["output_len"]),
            batch_size=int(row["concurrency"]),
            tp_size=int(row["tp"]),
        )
    note = got.kv_cache_warning or ""
    return {
        "ttft_ms": round(float(got.ttft), 3),
        "tpot_ms": round(float(got.tpot), 4),
        "backend_version": got.backend_version,
        "note": str(note).replace("\n", " ")[:200],
    }


def main() -> int:
    try:
        import aiconfigurator
    except ImportError:
        print("aiconfigurator is not installed here: run `make peers-load` (builds .venv-peers-load)", file=sys.stderr)
        return 2
    logging.disable(logging.WARNING)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with ROWS_CSV.open() as f:
        rows = list(csv.DictReader(f))
    out, start = [], time.time()
    for row in rows:
        try:
            got = predict(row)
        except Exception as err:  # a row the peer refuses is reported, not fatal
            got = {"ttft_ms": "", "tpot_ms": "", "backend_version": "", "note": f"{type(err).__name__}: {err}"[:200]}
        out.append({"id": row["id"], "tool": "aiconfigurator", "version": aiconfigurator.__version__, **got})
        print(
            f"{row['id']} aiconfigurator TTFT {row['ttft_ms']} -> {got['ttft_ms']} ms, "
            f"TPOT {row['tpot_ms']} -> {got['tpot_ms']} ms {got['note']}",
            flush=True,
        )
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(out)
    print(
        f"wrote {RESULTS} ({len(out)} rows in {time.time() - start:.0f} s); "
        "rerun python benchmarks/serving_load.py --render to put them on the page"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
