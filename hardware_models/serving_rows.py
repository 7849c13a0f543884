"""The published serving figures (hardware_models/serving.csv, a verbatim copy of
../shared/calibration/serving.csv) as `landscape predict` runs them, read once by hand.

Each row names the model config, target, chips, batch, lengths and precision the measurement
used, which of predict's figures its metric is, and, for a row that cannot be compared
one-to-one, why (speculative decoding, an earlier software release, an unstated chip count,
precision or prompt). Such rows are predicted and shown with their reason, and never fitted.
Nothing in the model is fitted to any row here: the GPU knobs come from kernels.csv, the rest
are sourced or assumed in the target files.

Metrics, from predict's fields (hardware_models/predict.py):
    per_gpu     throughput_tokens_per_s / chips
    throughput  throughput_tokens_per_s (batch x output tokens / (prefill + every decode step))
    per_user    tokens_per_s_per_user (1 / the mean decode step)
    ttft        ttft_s
Published model names map to the configs of the same architecture: Llama-3.3-70B and
Llama-3-70B are llama-3.1-70b's, Llama-3-8B and Llama-3.1-8B-Instruct llama-3.1-8b's. A batch
of "max" is `--batch max` (the engine's maximum load: the largest batch whose cache fits).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

SERVING_CSV = Path(__file__).with_name("serving.csv")

# Unstated lengths of per-user and TTFT figures: assumed, and said in each such row's reason.
ASSUMED_IN, ASSUMED_OUT = 1000, 1000


@dataclass(frozen=True)
class ServingRow:
    id: str
    model: str
    target: str
    chips: int | None  # None: not stated, the fewest that hold the model
    batch: int | str  # "max": the engine's maximum load
    input_len: int
    output_len: int
    precision: str
    metric: str  # per_gpu, throughput, per_user, ttft
    published: float
    not_comparable: str = ""  # why the row cannot be compared one-to-one, or ""
    note: str = ""  # an ambiguity in a comparable row, and how it was read

    def predict_args(self) -> list[str]:
        """The `landscape predict` arguments that serve this row (with --json)."""
        args = [
            "predict",
            "--model",
            self.model,
            "--target",
            self.target,
            "--batch",
            str(self.batch),
            "--input-len",
            str(self.input_len),
            "--output-len",
            str(self.output_len),
            "--precision",
            self.precision,
            "--json",
        ]
        return args + (["--chips", str(self.chips)] if self.chips else [])

    def figure(self, prediction: dict) -> float:
        """predict's figure for this row's metric, in the row's unit."""
        if self.metric == "per_gpu":
            return prediction["throughput_tokens_per_s"] / prediction["chips"]
        if self.metric == "throughput":
            return prediction["throughput_tokens_per_s"]
        if self.metric == "per_user":
            return prediction["tokens_per_s_per_user"]
        return prediction["ttft_s"]


_UNKNOWN_H100 = "vendor-cited figure of an unnamed H100 cloud instance: chips, precision and lengths not stated"
ROWS = (
    ServingRow("G10", "llama-2-70b", "h100", 2, 1024, 128, 128, "fp8", "per_gpu", 2657),
    ServingRow("G11", "llama-2-70b", "h100", 2, 64, 2048, 2048, "fp8", "per_gpu", 547),
    ServingRow(
        "G13",
        "llama-2-70b",
        "a100",
        4,
        1280,
        128,
        128,
        "fp16",
        "per_gpu",
        670,
        note="the header 'Throughput (out tok/s)' does not say per GPU or total; read per GPU, as G10 and G11 "
        "of the same document and table layout are (as a total, the prediction would be 3.8x the figure)",
    ),
    ServingRow("G15", "llama-2-13b", "h200", 1, 1024, 128, 128, "fp8", "per_gpu", 11819),
    ServingRow("G16", "llama-3.1-8b", "h100", 1, "max", 128, 128, "fp8", "throughput", 28312),
    ServingRow("G17", "llama-3.1-8b", "h200", 1, "max", 128, 2048, "fp8", "throughput", 26221),
    ServingRow("G18", "llama-3.1-8b", "h100", 1, "max", 128, 2048, "fp8", "throughput", 22714),
    ServingRow("G19", "llama-3.1-70b", "h200", 1, "max", 128, 2048, "fp8", "throughput", 4336),
    ServingRow("G20", "llama-3.1-70b", "h100", 2, "max", 128, 2048, "fp8", "throughput", 6651),
    ServingRow("G21", "llama-3.1-405b", "h200", 8, "max", 128, 2048, "fp8", "throughput", 5348),
    ServingRow("G22", "llama-3.1-405b", "h100", 8, "max", 128, 2048, "fp8", "throughput", 4340),
    ServingRow(
        "G37",
        "llama-3.1-70b",
        "h100",
        8,
        64,
        128,
        8,
        "bf16",
        "throughput",
        1077.84,
        "precision and the metric's definition not stated (bf16 and end-to-end throughput assumed)",
    ),
    ServingRow("G42", "llama-3.1-8b", "h100", None, 1, ASSUMED_IN, ASSUMED_OUT, "bf16", "per_user", 242, _UNKNOWN_H100),
    ServingRow(
        "G43", "llama-3.1-70b", "h100", None, 1, ASSUMED_IN, ASSUMED_OUT, "bf16", "per_user", 128, _UNKNOWN_H100
    ),
    ServingRow(
        "C03",
        "llama-3.1-70b",
        "wse-3",
        None,
        1,
        ASSUMED_IN,
        ASSUMED_OUT,
        "bf16",
        "per_user",
        2100,
        "speculative decoding (the Oct-2024 update), from secondary sources; 4 CS-3s by those sources, where "
        "the wafer partition here needs 5 for the 16-bit weights (so the fewest that hold them are used)",
    ),
    ServingRow(
        "C05",
        "llama-3.1-405b",
        "wse-3",
        None,
        1,
        ASSUMED_IN,
        1,
        "bf16",
        "ttft",
        0.24,
        "chip count and prompt length not stated (a 1000-token prompt assumed)",
    ),
    ServingRow(
        "Q04",
        "llama-2-70b",
        "groq-lpu",
        None,
        1,
        ASSUMED_IN,
        ASSUMED_OUT,
        "bf16",
        "per_user",
        100,
        "an earlier software release (Aug 2023 demo); chips and precision not stated",
    ),
    ServingRow("T02", "llama-3.1-8b", "tpu-v5e", 8, 256, 1024, 1024, "int8", "throughput", 10873),
    ServingRow("T04", "llama-2-7b", "tpu-v5e", 8, 96, 1024, 1024, "int8", "throughput", 4783),
)


def read_csv(path: Path = SERVING_CSV) -> dict[str, dict]:
    with open(path, newline="") as f:
        return {row["id"]: row for row in csv.DictReader(f)}
