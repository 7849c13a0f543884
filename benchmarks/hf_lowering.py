"""Lowering Hugging Face models themselves (transformers' modules, not ours), flat and regionally.

Each model is built from its published config.json fields under FakeTensorMode (no weights, no
download), in bfloat16, and lowered by `pytorch_side.lower.lower_module` at batch 1 and 128 tokens:
flat, then with `regional=True` (one layer lowered, called once per layer). Each (model, mode)
runs in a fresh process; lower_s excludes importing torch and transformers. Writes
benchmarks/results/hf_lowering.csv. Usage: python benchmarks/hf_lowering.py [--regional-only]
"""

from __future__ import annotations

import csv
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = pathlib.Path(__file__).with_name("results") / "hf_lowering.csv"
MODELS = ("LLAMA_32_1B", "QWEN25_05B", "GPT2")  # configs in tests/reference/test_hf_config.py
TOKENS = 128

CHILD = """
import json, resource, sys, time
import torch, transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from pytorch_side.lower import lower_module
import pytorch_side.regional, torch_mlir.fx
import tests.reference.test_hf_config as published
raw = dict(getattr(published, sys.argv[1]))
raw.pop("model_type")
kind = getattr(published, sys.argv[1])["model_type"]
config = transformers.AutoConfig.for_model(kind, **raw)
start = time.perf_counter()
with FakeTensorMode(allow_non_fake_inputs=True):
    torch.set_default_dtype(torch.bfloat16)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    torch.set_default_dtype(torch.float32)
    built = time.perf_counter()
    lowering = lower_module(model, torch.empty((1, int(sys.argv[3])), dtype=torch.int64), name=kind, regional=sys.argv[2] == "regional")
seconds = time.perf_counter() - built
stats = lowering.stats()
print(json.dumps({"build_s": built - start, "lower_s": seconds, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
                  "flops": stats.flops, "param_bytes": stats.param_bytes, "ops": sum(stats.ops.values())}))
"""


def main(modes: tuple[str, ...]) -> None:
    rows = []
    for model in MODELS:
        for mode in modes:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, model, mode, str(TOKENS)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=False,
            )
            if done.returncode:
                print(f"{model} {mode}: failed: {done.stderr.strip().splitlines()[-1]}")
                continue
            row = {"model": model, "mode": mode, "tokens": TOKENS, **json.loads(done.stdout.strip().splitlines()[-1])}
            rows.append(row)
            print(
                f"{model:12} {mode:9} lower {row['lower_s']:6.2f} s  build {row['build_s']:5.2f} s  "
                f"{row['flops'] / 1e9:9.3f} GFLOP  {row['param_bytes'] / 1e9:6.3f} GB params  {row['ops']:5} ops  "
                f"peak {row['peak_rss_gb']:.2f} GB"
            )
    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main(("regional",) if "--regional-only" in sys.argv else ("flat", "regional"))
