"""The GPU model against a real GPU: each row `benchmarks/gpu_measure.py` timed (on an H200 here)
beside the prediction for the same PyTorch module, lowered (torch.export -> torch-mlir) and
compiled by the GPU family's passes onto the matching target. Writes
benchmarks/results/gpu_compare.csv and prints the table.

The measured rows run the module as PyTorch runs it without torch.compile: eagerly, and replayed
from a CUDA graph (no launch gaps). The model costs the compiled program (fused loops, FlashAttention,
cuBLAS-like GEMM tiles), so a GEMM or attention row compares like with like, and a model row shows
how far unfused PyTorch stands from the compiled program the model describes.
Usage: python benchmarks/gpu_compare.py [MEASURED.csv]   (another file's comparison is written beside it, MEASURED.compare.csv)
"""

from __future__ import annotations

import csv
import math
import pathlib
import sys

RESULTS = pathlib.Path(__file__).with_name("results")
TARGETS = {"NVIDIA H200": "h200", "NVIDIA H100 80GB HBM3": "h100", "NVIDIA A100-SXM4-80GB": "a100"}


def parse_shapes(text: str) -> dict[str, str]:
    """A row's shapes ("m=256 n=256 k=256", as gpu_measure.label writes them) as a dict.

    Raises:
        ValueError: a word that is not NAME=VALUE.
    """
    pairs = [kv.split("=", 1) for kv in text.split()]
    if any(len(kv) != 2 for kv in pairs):
        raise ValueError(f"shapes {text!r} are not NAME=VALUE pairs")
    return dict(pairs)


def predict(row: dict) -> float:
    """The GPU model's time for one measured row (a gpu_measured.csv row) on its GPU's target."""
    from hardware_models.estimate import estimate
    from hardware_models.target import get_target
    from landscape.lowering import lower_named

    target = get_target(TARGETS[row["device"]])
    shapes = parse_shapes(row["shapes"])
    entry = row["entry"]
    if entry == "sdpa":  # SDPA itself, causal or not as the row ran, every head its own KV head
        if "floor" in shapes:  # a graph of one tiny kernel: the target's launch overhead
            return target["schedule.launch_overhead_s"]
        from hardware_models.calibration import attention_module
        from reference.dtypes import get_dtype

        module = attention_module(
            int(shapes["batch"]),
            int(shapes["n_heads"]),
            int(shapes["seq"]),
            int(shapes["head_dim"]),
            get_dtype(row["dtype"]).mlir,
            causal=shapes.get("causal") == "1",
        )
        return estimate(module, target, entry).total.time_s
    return estimate(lower_named(entry, "torch", shapes, row["dtype"]).module, target, entry).total.time_s


def _refuse(message: str) -> int:
    print(f"gpu_compare: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    from reference.errors import LandscapeError

    path = pathlib.Path(argv[0]) if argv else RESULTS / "gpu_measured.csv"
    # the committed comparison for the committed measurements; another file's beside it
    out_path = RESULTS / "gpu_compare.csv" if not argv else path.with_name(f"{path.stem}.compare.csv")
    try:
        with path.open() as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError) as e:
        return _refuse(f"cannot read {path}: {e.strerror if isinstance(e, OSError) else 'not UTF-8 text'}")
    missing = {"entry", "shapes", "dtype", "mode", "median_s", "iqr_s", "device"} - set(rows[0] if rows else {})
    unknown = sorted({str(r.get("device")) for r in rows} - set(TARGETS))
    if not rows or missing or unknown:
        why = (
            "no rows" if not rows else f"missing columns {sorted(missing)}" if missing else f"unknown devices {unknown}"
        )
        return _refuse(f"{path} is not a gpu_measure.py CSV ({why}; devices known: {', '.join(TARGETS)})")
    predicted: dict[tuple[str, str], float] = {}
    out = []
    for line, r in enumerate(rows, start=2):
        key = (r["entry"], r["shapes"])
        try:
            measured = float(r["median_s"])
            if not measured > 0 and not math.isnan(measured):
                raise ValueError(f"median_s {r['median_s']!r} is not a positive time")
            if key not in predicted:
                predicted[key] = predict(r)
        except (ValueError, LandscapeError) as e:  # a row gpu_measure.py did not write
            return _refuse(f"{path} line {line}: {e}")
        p = predicted[key]
        out.append(
            {
                **{k: r[k] for k in ("entry", "shapes", "dtype", "mode", "median_s", "iqr_s")},
                "target": TARGETS[r["device"]],
                "predicted_s": f"{p:.6e}",
                "error": "" if math.isnan(measured) else f"{p / measured - 1:+.4f}",
            }
        )
    with out_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(out[0]))
        writer.writeheader()
        writer.writerows(out)
    print(f"{'entry':13s} {'shapes':58s} {'mode':5s} {'measured us':>12s} {'predicted us':>12s} {'error':>7s}")
    for r in out:
        print(
            f"{r['entry']:13s} {r['shapes']:58s} {r['mode']:5s} {float(r['median_s']) * 1e6:12.1f} "
            f"{float(r['predicted_s']) * 1e6:12.1f} {r['error']:>7s}"
        )
    print(f"wrote {out_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
