"""Catalogue kernels and a model's prefill and decode step timed on a real NVIDIA GPU, for
`benchmarks/gpu_compare.py` to set beside the GPU model's predictions.

Run where a CUDA GPU is (this project's CI has none): every row is the PyTorch side's own
module (`pytorch_side.kernels.build`), built on the GPU with its weights drawn there, in
bfloat16, its inputs drawn from the catalogue's specs. Each row is timed with CUDA events
around REPEATS calls after WARMUP calls: eagerly (each op launched from Python), and replayed
from a CUDA graph of one call (the launches recorded once: the GPU's own time, as the model
costs it, with no framework between kernels). Median and interquartile range of the timed calls.

Usage: python benchmarks/gpu_measure.py OUT.csv
"""

from __future__ import annotations

import csv
import statistics
import sys
import time

# (entry, shapes): GEMMs from launch-bound to compute-bound and a decode-shaped GEMV, Llama-3.1-8B
# attention shapes, one Llama-3.1-8B layer's prefill and decode, and the whole model's decode step.
ROWS = (
    ("matmul", {"m": 256, "n": 256, "k": 256}),
    ("matmul", {"m": 1024, "n": 1024, "k": 1024}),
    ("matmul", {"m": 4096, "n": 4096, "k": 4096}),
    ("matmul", {"m": 8192, "n": 8192, "k": 8192}),
    ("matmul", {"m": 4096, "n": 14336, "k": 4096}),
    ("matmul", {"m": 16, "n": 14336, "k": 4096}),
    ("matmul", {"m": 1, "n": 8192, "k": 8192}),
    ("attention", {"batch": 1, "seq": 512, "n_heads": 32, "n_kv_heads": 8, "head_dim": 128}),
    ("attention", {"batch": 1, "seq": 4096, "n_heads": 32, "n_kv_heads": 8, "head_dim": 128}),
    ("attention", {"batch": 8, "seq": 2048, "n_heads": 32, "n_kv_heads": 8, "head_dim": 128}),
    ("llama-3.1-8b", {"batch": 1, "seq": 2048, "mode": "prefill", "layers": 1}),
    ("llama-3.1-8b", {"batch": 1, "seq": 2048, "mode": "decode", "layers": 1}),
    ("llama-3.1-8b", {"batch": 1, "seq": 2048, "mode": "decode", "layers": 32}),
    ("llama-3.1-8b", {"batch": 16, "seq": 2048, "mode": "decode", "layers": 32}),
)
# F.scaled_dot_product_attention itself, per backend, causal and not: (batch, seq, heads, head_dim).
# The first is kernels.csv G36's workload (FlashAttention-2's benchmark, whose H100 figure fits
# fitted.flash_attention_fraction); costed as the catalogue's attention with every head its own KV head.
SDPA_SHAPES = ((2, 8192, 16, 128), (1, 4096, 32, 128))
SDPA_BACKENDS = ("flash", "cudnn", "efficient")
DTYPE = "bfloat16"
WARMUP, REPEATS = 5, 30
COLUMNS = ("entry", "shapes", "dtype", "mode", "median_s", "iqr_s", "calls", "device", "note")


def label(shapes: dict) -> str:
    """The shapes as `landscape estimate --shape` takes them."""
    return " ".join(f"{k}={v}" for k, v in shapes.items())


def record(entry: str, shapes: str, mode: str, timed: tuple[float, float, int], device: str, note: str = "") -> dict:
    """One CSV row (COLUMNS) of a timing, `timed` as `_time` returns it, and its line printed."""
    median, iqr, calls = timed
    print(f"{entry:14s} {shapes:60s} {mode:5s} {median * 1e6:12.1f} us {note}", flush=True)
    return {
        "entry": entry,
        "shapes": shapes,
        "dtype": DTYPE,
        "mode": mode,
        "median_s": f"{median:.6e}",
        "iqr_s": f"{iqr:.3e}",
        "calls": calls,
        "device": device,
        "note": note,
    }


UNTIMED = (float("nan"), float("nan"), 0)  # a row that could not run: its note says why


def _inputs(entry, shapes, dtype):
    import torch

    out = []
    for spec in entry.inputs(shapes).values():
        if spec.kind == "index":
            out.append(torch.randint(0, spec.high, spec.shape, device="cuda"))
        else:
            out.append((torch.randn(spec.shape, device="cuda") * spec.std).to(dtype))
    return out


def _time(call, graph: bool) -> tuple[float, float, int]:
    import torch

    for _ in range(WARMUP):
        call()
    torch.cuda.synchronize()
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call()
        call = g.replay
        for _ in range(WARMUP):
            call()
        torch.cuda.synchronize()
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    q = statistics.quantiles(times, n=4)
    return statistics.median(times), q[2] - q[0], len(times)


def measure(rows=ROWS) -> list[dict]:
    import torch

    from pytorch_side.kernels import TORCH_DTYPES, build
    from reference.catalogue import get_entry

    device = torch.cuda.get_device_name()
    dtype = TORCH_DTYPES[DTYPE]
    out = []
    for name, given in rows:
        entry = get_entry(name)
        shapes = entry.resolve(given)
        t0 = time.perf_counter()
        with torch.device("cuda"), torch.inference_mode():
            module = build(name, shapes, DTYPE)
            inputs = _inputs(entry, shapes, dtype)
            for mode in ("eager", "graph"):
                try:
                    out.append(
                        record(
                            name, label(given), mode, _time(lambda m=module, i=inputs: m(*i), mode == "graph"), device
                        )
                    )
                except Exception as e:  # a module a CUDA graph cannot capture: said in the row
                    out.append(record(name, label(given), mode, UNTIMED, device, f"{type(e).__name__}: {str(e)[:120]}"))
        del module, inputs
        torch.cuda.empty_cache()
        print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    return out


def measure_sdpa() -> list[dict]:
    """SDPA per backend, causal and not, replayed from a CUDA graph; and the replay of a graph of
    one 1-element add (the floor every graph row pays)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    device = torch.cuda.get_device_name()
    one = torch.zeros(1, device="cuda")
    out = [record("sdpa", "floor=1", "graph", _time(lambda: one.add_(1), True), device)]
    for b, t, h, d in SDPA_SHAPES:
        q, k, v = (torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        for backend in SDPA_BACKENDS:
            for causal in (0, 1):
                shapes = f"batch={b} seq={t} n_heads={h} n_kv_heads={h} head_dim={d} causal={causal} backend={backend}"
                try:
                    with sdpa_kernel(
                        getattr(
                            SDPBackend,
                            {
                                "flash": "FLASH_ATTENTION",
                                "cudnn": "CUDNN_ATTENTION",
                                "efficient": "EFFICIENT_ATTENTION",
                            }[backend],
                        )
                    ):
                        timed = _time(
                            lambda q=q, k=k, v=v, c=bool(causal): F.scaled_dot_product_attention(q, k, v, is_causal=c),
                            True,
                        )
                    flops = (
                        4 * b * h * t * t * d
                    )  # the two dots, full (as FlashAttention's benchmark counts non-causal)
                    out.append(
                        record(
                            "sdpa",
                            shapes,
                            "graph",
                            timed,
                            device,
                            f"{flops / timed[0] / 1e12:.0f} TFLOP/s on the full dots' FLOPs",
                        )
                    )
                except Exception as e:  # a backend this build or GPU lacks
                    out.append(record("sdpa", shapes, "graph", UNTIMED, device, f"{type(e).__name__}: {str(e)[:100]}"))
        del q, k, v
    return out


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python benchmarks/gpu_measure.py OUT.csv", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print(
            "gpu_measure: no CUDA GPU here (torch.cuda.is_available() is False): run it where one is", file=sys.stderr
        )
        return 2
    rows = measure() + measure_sdpa()
    with open(argv[0], "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
