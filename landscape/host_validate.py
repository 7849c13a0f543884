"""`landscape validate host-cpu`: the catalogue's kernels and blocks timed on this machine three
ways (PyTorch eager, torch.compile/Inductor, jax.jit) against the host-cpu model's predictions.

Each entry runs at two sizes: its catalogue defaults (small: the runtime's fixed costs dominate)
and LARGE (the work dominates: working sets of 0.1-8 MiB, from L2 to beyond L3). The
prediction for a row comes from the IR of the side that ran it (torch-mlir's for eager and
Inductor, JAX's for jax.jit) compiled by the cpu family's passes, or, eagerly, from the ATen
ops one call dispatches (`trace_eager`); both costed by hardware_models/families/cpu/runtime.py.
error = predicted / measured - 1; the summary gives the median |error| and the worst ratio
max(p/m, m/p) per runtime and overall. Measured: median of repeated calls (over PASSES
sweeps) and its interquartile range (landscape/host_measure.py).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from hardware_models.families.cpu.cost import RUNTIMES
from hardware_models.families.cpu.runtime import compiled_seconds, eager_seconds
from landscape.host_measure import MIN_RUN_S, sweep
from landscape.host_trace import module_reads, trace_eager

RUNTIME_LABELS = {"eager": "PyTorch eager", "inductor": "torch.compile (Inductor)", "xla": "jax.jit (XLA:CPU)"}
# Work-dominated sizes: each chosen by the same rule (a working set between L2 and a few MiB, or
# GEMMs of 10-100 MFLOP), not by how well a row came out.
LARGE = {
    "matmul": {"m": 256, "n": 256, "k": 256},
    "batched_matmul": {"batch": 2, "heads": 4, "m": 128, "n": 128, "k": 128},
    "linear": {"m": 256, "k": 256, "n": 256},
    "conv2d": {"batch": 2, "c_in": 32, "c_out": 32, "height": 32, "width": 32},
    "add": {"m": 512, "n": 512},
    "mul": {"m": 512, "n": 512},
    "relu": {"m": 512, "n": 512},
    "gelu": {"m": 512, "n": 512},
    "silu": {"m": 512, "n": 512},
    "softmax": {"m": 512, "n": 512},
    "log_softmax": {"m": 512, "n": 512},
    "layernorm": {"m": 512, "d": 512},
    "rmsnorm": {"m": 512, "d": 512},
    "rope": {"batch": 2, "seq": 256, "n_heads": 8, "head_dim": 64},
    "attention": {"batch": 2, "seq": 256, "n_heads": 8, "n_kv_heads": 2, "head_dim": 64},
    "mlp": {"m": 128, "d_model": 256, "d_ff": 1024},
    "moe": {"m": 128, "d_model": 256, "d_ff": 512},
    "embedding": {"m": 1024, "vocab": 8000, "d": 256},
    "clone": {"n": 262144},
    "block": {"batch": 2, "seq": 128, "n_heads": 8, "n_kv_heads": 2, "head_dim": 32, "d_ff": 512},
    "decoder": {"batch": 2, "seq": 64, "n_heads": 8, "n_kv_heads": 2, "head_dim": 32, "d_ff": 512},
}
SIZES = ("small", "large")


@dataclass(frozen=True)
class Row:
    entry: str
    size: str
    runtime: str
    shapes: str
    measured_s: float
    iqr_s: float
    predicted_s: float
    kernels: int  # eager: ATen ops dispatched; compiled: the plan's kernels

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1

    @property
    def ratio(self) -> float:
        r = self.predicted_s / self.measured_s
        return max(r, 1 / r)

    def to_dict(self) -> dict:
        return {**asdict(self), "error": self.error}


def entries() -> list[str]:
    from reference.catalogue import CATALOGUE

    return [name for name, e in CATALOGUE.items() if e.kind == "kernel"]


def _label(shapes: dict) -> str:
    """The sizes a row was run at, as `--shape` spells them ("" for the catalogue's defaults)."""
    return " ".join(f"{k}={v}" for k, v in shapes.items())


@dataclass(frozen=True)
class _Pending:
    """A row prepared for timing: its call (built, compiled at its first call) and its prediction."""

    entry: str
    size: str
    runtime: str
    shapes: str
    call: object
    predicted: object  # a host_runtime.RuntimeTime


def compiled_graphs(compiled, inputs) -> int:
    """The graphs dynamo makes of one call of `compiled` (a torch.compile'd module), compiling it
    here: a graph break splits a module into regions, each a compiled call of its own, with
    Python between them."""
    import torch
    from torch._dynamo.utils import counters

    before = counters["stats"]["unique_graphs"]
    with torch.inference_mode():
        compiled(*inputs)
    return max(1, counters["stats"]["unique_graphs"] - before)


def _torch_rows(name, shapes, size, case, target, runtimes=RUNTIMES) -> list[_Pending]:
    import torch

    from pytorch_side.export import export_module
    from pytorch_side.kernels import build
    from pytorch_side.lower import lower_exported
    from pytorch_side.params import load_weights, to_torch

    module = load_weights(build(name, case.shapes, case.dtype), dict(case.weights)).eval()
    inputs = [to_torch(x) for x in case.inputs.values()]
    ir = lower_exported(export_module(module, *inputs, name=name), module, len(inputs), name).module
    with torch.inference_mode():
        traced = trace_eager(module, inputs)
        calls, parameters = module_reads(module, inputs)
    weights = sum(p.numel() * p.element_size() for p in module.parameters())
    rows = [
        _Pending(
            name,
            size,
            "eager",
            _label(shapes),
            lambda: module(*inputs),
            eager_seconds(traced, target, calls, weights, parameters),
        )
    ]
    if "inductor" in runtimes:
        compiled = torch.compile(module, dynamic=False)
        graphs = compiled_graphs(compiled, inputs)
        rows.append(
            _Pending(
                name,
                size,
                "inductor",
                _label(shapes),
                lambda: compiled(*inputs),
                compiled_seconds(ir, target, "inductor", graphs),
            )
        )
    return rows


def _jax_row(name, shapes, size, case, target) -> _Pending:
    import jax
    from flax import nnx

    from jax_side.kernels import LAYOUTS, build
    from jax_side.params import load_weights
    from landscape.lowering import lower_named

    fn = build(name, case.shapes, case.dtype)
    if case.weights:
        load_weights(fn, dict(case.weights))
    in_perms, _ = LAYOUTS.get(name, ({}, None))
    inputs = [jax.device_put(x.transpose(in_perms[k]) if k in in_perms else x) for k, x in case.inputs.items()]
    if isinstance(fn, nnx.Module):  # weights as arguments, as jax_side.run_module calls it
        graphdef, state = nnx.split(fn)
        jitted = jax.jit(lambda st, *xs: nnx.merge(graphdef, st)(*xs))
        call = lambda: jitted(state, *inputs)  # noqa: E731
    else:
        jitted = jax.jit(fn)
        call = lambda: jitted(*inputs)  # noqa: E731
    ir = lower_named(name, "jax", case.shapes, case.dtype).module
    return _Pending(name, size, "xla", _label(shapes), call, compiled_seconds(ir, target, "xla"))


def validate(
    target,
    names: list[str] | None = None,
    sizes: tuple[str, ...] = SIZES,
    runtimes: tuple[str, ...] = RUNTIMES,
    min_run_s: float = MIN_RUN_S,
    progress=None,
    large: dict[str, dict] | None = None,
) -> list[Row]:
    """Predict every (entry, size, runtime), then time them all (host_measure.sweep: each row's
    median over PASSES sweeps of them all). Every row runs routed (MoE: as the costed IR routes
    its tokens). `large`: the "large" size's shapes per entry (default LARGE)."""
    import torch
    import torch._dynamo

    from reference.catalogue import get_entry
    from reference.catalogue.mlp import routed_moe
    from reference.inputs import make_case

    torch._dynamo.reset()
    pending: list[_Pending] = []
    names = names or entries()
    # every row's module compiles here (its graphs counted): one module class per entry, compiled
    # at two sizes, and the catalogue's lambdas share code; allow them all, as sweep does
    limit = max(torch._dynamo.config.recompile_limit, 4 * len(names) * len(sizes))
    with routed_moe(), torch._dynamo.config.patch(recompile_limit=limit):  # the lowerings and dynamo's traces route
        for name in names:
            entry = get_entry(name)
            for size in sizes:
                given = (LARGE if large is None else large).get(name, {}) if size == "large" else {}
                case = make_case(entry, entry.resolve(given), "float32")
                if {"eager", "inductor"} & set(runtimes):
                    pending += [
                        r for r in _torch_rows(name, given, size, case, target, runtimes) if r.runtime in runtimes
                    ]
                if "xla" in runtimes:
                    pending.append(_jax_row(name, given, size, case, target))
        measured = sweep([(row.runtime, row.call) for row in pending], min_run_s)
    rows = []
    for row, (median, iqr, _) in zip(pending, measured):
        rows.append(
            Row(row.entry, row.size, row.runtime, row.shapes, median, iqr, row.predicted.seconds, row.predicted.kernels)
        )
        if progress:
            progress(rows[-1])
    return rows


# The calibration rows re-timed before and after a validation, to say how far the machine has moved
# since it was calibrated: each runtime's call of a tiny kernel, and the f32 GEMM.
ANCHORS = (("eager", "add", 1), ("inductor", "mm-chain", 1), ("xla", "mm-chain", 1), ("eager", "gemm", 1024))


def drift(target, min_run_s: float = MIN_RUN_S) -> dict[str, float]:
    """Row id -> its time now / its time in the target's rows file (> 1: slower than when
    calibrated). Empty when the target has no rows file beside it. A shared machine's speed moves
    by tens of percent within minutes; every prediction moves with it."""
    from pathlib import Path

    from hardware_models.families.cpu.files import read_rows
    from landscape.host_measure import measure_rows

    path = Path(target.path).with_suffix(".csv")
    if not path.is_file():
        return {}
    rows = [
        m
        for m in read_rows(path)
        if (m.spec.runtime, m.spec.workload, m.spec.size) in ANCHORS and m.spec.dtype == "f32"
    ]
    now = measure_rows([m.spec for m in rows], min_run_s)
    return {m.spec.id: n.median_s / m.median_s for m, n in zip(rows, now)}


def summary(rows: list[Row]) -> dict:
    """Median |error| and worst ratio, per runtime and overall; rows within 2x."""

    def stats(rs):
        return {
            "rows": len(rs),
            "median_abs_error": statistics.median(abs(r.error) for r in rs),
            "worst_ratio": max(r.ratio for r in rs),
            "within_2x": sum(r.ratio <= 2 for r in rs),
        }

    out = {"all": stats(rows)} if rows else {}
    for runtime in RUNTIMES:
        rs = [r for r in rows if r.runtime == runtime]
        if rs:
            out[runtime] = stats(rs)
    return out
