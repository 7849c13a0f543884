"""`landscape train` against published, measured training steps (hardware_models/training.csv):
NeMo's and MaxText's Llama-3.1 and Llama-2 runs on H100s (NVIDIA's DGX Cloud benchmark
recipes) and MaxText's on TPU v6e (AI-Hypercomputer/tpu-recipes). Nothing is fitted to these
rows: each prediction is the model's, at the row's chips, global batch and sequence length, with
the row's tensor, pipeline and virtual-pipeline parallelism where it states them (the rest searched, as `train`
does). Context parallelism (CP=2 in NeMo's rows) is not modelled: its chips count as data
parallel here. A row's error is predicted / published step time - 1.

Writes benchmarks/results/training_accuracy.csv; `make docs` renders docs/training.md's block.
Usage: python benchmarks/training_accuracy.py [--rows ID,ID]
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ROWS = ROOT / "hardware_models" / "training.csv"
RESULTS = pathlib.Path(__file__).with_name("results") / "training_accuracy.csv"


def predict_row(row: dict) -> dict:
    from hardware_models.target import load_targets
    from hardware_models.train import predict_training
    from landscape.lowering import training_lowerer
    from reference.models import get_model

    target = load_targets()[row["target"]]
    cfg = get_model(row["model"])
    start = time.perf_counter()
    result = predict_training(
        training_lowerer(row["model"], "jax", int(row["seq"]), row["precision"]),
        target,
        cfg,
        chips=int(row["chips"]),
        global_batch=int(row["global_batch"]),
        seq=int(row["seq"]),
        dtype_bytes=2,
        peak_flop_per_s=target.peak_16bit_flop_per_s,
        tp=int(row["tp"]) if row["tp"] else None,
        pp=int(row["pp"]) if row["pp"] else None,
        vp=int(row["vp"]) if row["vp"] else None,
    )
    wall = time.perf_counter() - start
    lay = result.layout
    published = float(row["step_time_s"])
    return {
        **_published(row),
        "layout": f"tp{lay.tp} pp{lay.pp}{f' vp{lay.vp}' if lay.vp > 1 else ''} dp{lay.dp} mb{lay.microbatch} "
        f"{lay.recompute}/{lay.shard}",
        "predicted_step_s": round(result.step_s, 4),
        "error": round(result.step_s / published - 1, 4),
        "predicted_mfu": round(result.mfu, 4),
        "wall_s": round(wall, 1),
        "note": "",
    }


COLUMNS = (
    "id", "model", "target", "chips", "global_batch", "seq", "layout", "published_step_s", "predicted_step_s",
    "error", "published_mfu", "predicted_mfu", "wall_s", "note",
)  # fmt: skip


def _published(row: dict) -> dict:
    """What a row of the table says, the same for a costed row and a refused one."""
    keep = ("id", "model", "target", "chips", "global_batch", "seq")
    return {**{k: row[k] for k in keep}, "published_step_s": float(row["step_time_s"]), "published_mfu": row["mfu"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="", help="comma-separated row ids (default: all)")
    args = parser.parse_args()
    wanted = set(filter(None, args.rows.split(",")))
    rows = [r for r in csv.DictReader(ROWS.open()) if not wanted or r["id"] in wanted]
    from reference.errors import LandscapeError

    out = []
    for row in rows:
        try:
            out.append(predict_row(row))
        except LandscapeError as err:  # a configuration the model cannot hold (host offload): said, not dropped
            refused = {"layout": "refused", "predicted_step_s": "", "error": "", "predicted_mfu": "", "wall_s": ""}
            out.append({**_published(row), **refused, "note": str(err)})
            print(f"{row['id']:<40} refused: {err}", flush=True)
            continue
        print(
            f"{out[-1]['id']:<40} {out[-1]['layout']:<32} published {out[-1]['published_step_s']:>7} s "
            f"predicted {out[-1]['predicted_step_s']:>8} s ({out[-1]['error']:+.1%})",
            flush=True,
        )
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(out)
    costed = [r for r in out if r["error"] != ""]
    errors = [abs(r["error"]) for r in costed]
    within = sum(1 for r in costed if 0.5 <= 1 + r["error"] <= 2)
    print(
        f"{within}/{len(costed)} costed rows within 2x ({len(out) - len(costed)} refused), "
        f"median |error| {statistics.median(errors):.1%}"
    )


if __name__ == "__main__":
    main()
