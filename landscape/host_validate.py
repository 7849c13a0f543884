"""`landscape validate host-cpu`: the catalogue's kernels and blocks timed on this machine three
ways (PyTorch eager, torch.compile/Inductor, jax.jit) against the host-cpu model's predictions.

Each entry runs at two sizes: its catalogue defaults (small: the runtime's fixed costs dominate)
and LARGE (the work dominates: working sets of 0.1-8 MiB, from L2 to beyond L3). The
prediction for a row comes from the IR of the side that ran it (torch-mlir's for eager and
Inductor, JAX's for jax.jit) compiled by the cpu family's passes, or, eagerly, from the ATen
ops one call dispatches (`trace_eager`); both costed by hardware_models/host_runtime.py.
error = predicted / measured - 1; the summary gives the median |error| and the worst ratio
max(p/m, m/p) per runtime and overall. Measured: median of repeated calls (over PASSES
sweeps) and its interquartile range (landscape/host_measure.py).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
from dataclasses import asdict, dataclass

from hardware_models.cost.cpu import RUNTIMES
from hardware_models.host_runtime import compiled_seconds, eager_seconds
from landscape.host_measure import MIN_RUN_S, sweep

RUNTIME_LABELS = {"eager": "PyTorch eager", "inductor": "torch.compile (Inductor)", "xla": "jax.jit (XLA:CPU)"}
# Work-dominated sizes: each chosen by the same rule (a working set between L2 and a few MiB, or
# GEMMs of 10-100 MFLOP), not by how well a row came out.
LARGE = {
    "matmul": {"m": 256, "n": 256, "k": 256},
    "batched_matmul": {"batch": 2, "heads": 4, "m": 128, "n": 128, "k": 128},
    "linear": {"m": 256, "k": 256, "n": 256},
    "conv2d": {"batch": 2, "c_in": 32, "c_out": 32, "height": 32, "width": 32},
    "add": {"m": 512, "n": 512}, "mul": {"m": 512, "n": 512}, "relu": {"m": 512, "n": 512},
    "gelu": {"m": 512, "n": 512}, "silu": {"m": 512, "n": 512},
    "softmax": {"m": 512, "n": 512}, "log_softmax": {"m": 512, "n": 512},
    "layernorm": {"m": 512, "d": 512}, "rmsnorm": {"m": 512, "d": 512},
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


def module_reads(module, inputs) -> tuple[int, int]:
    """(nn.Module forwards one call runs, parameters those forwards read): counted by hooks on
    one call, so an MoE's experts that routing leaves idle count for nothing (each forward reads
    its module's own parameters)."""
    calls = [0, 0]

    def count(m, args):
        calls[0] += 1
        calls[1] += sum(1 for _ in m.parameters(recurse=False))

    handles = [m.register_forward_pre_hook(count) for m in module.modules()]
    try:
        module(*inputs)
    finally:
        for h in handles:
            h.remove()
    return calls[0], calls[1]


# ATen ops a GEMM library runs.
CONTRACTIONS = ("mm", "addmm", "bmm", "baddbmm", "convolution", "_scaled_dot_product_flash_attention_for_cpu")
# ATen ops that take one transcendental per output element, and the function whose rate each runs
# at (hardware_models/cost/cpu.py: gelu and silu are ATen kernels of their own; a softmax is exp's).
TRANSCENDENTAL = {"exp": "exponential", "log": "log", "sin": "sine", "cos": "cosine", "tanh": "tanh", "erf": "erf",
                  "erfc": "erfc", "sigmoid": "logistic", "silu": "silu", "gelu": "gelu", "rsqrt": "rsqrt", "sqrt": "sqrt",
                  "_softmax": "softmax", "_log_softmax": "softmax",  # not pow: ATen squares with a multiply
                  "native_layer_norm": "layer_norm"}  # an ATen kernel of its own (moments, then the scaling), its own row
# ATen reductions: each reads its input once at the reduction rate (cost/cpu.py reduce_rate), in place of FLOPs.
REDUCTIONS = ("sum", "mean", "amax", "amin", "max", "min", "prod", "norm", "linalg_vector_norm", "var", "std", "var_mean",
              "std_mean", "logsumexp", "argmax", "argmin", "all", "any")
# Ops that read only the rows their indices name (the table is not streamed), and ops that write
# into their first argument (no new output).
GATHERS = ("embedding", "index_select", "gather", "index")
# Bookkeeping the dispatcher answers without a kernel: not counted, no work.
BOOKKEEPING = ("result_type", "resolve_conj", "resolve_neg", "empty", "empty_strided", "empty_like", "detach",
               "alias", "lift_fresh", "_has_compatible_shallow_copy_type", "is_nonzero", "item", "_local_scalar_dense")
VIEWS = ("view", "_unsafe_view", "reshape", "transpose", "t", "permute", "as_strided", "expand", "slice", "select",
         "unsqueeze", "squeeze", "narrow", "chunk", "split", "split_with_sizes", "unbind", "contiguous", "to", "type_as")


def _flops(name: str, shapes: list[tuple], out: int) -> int:
    import math

    if name in ("mm", "bmm"):
        return 2 * math.prod(shapes[0]) * shapes[1][-1]
    if name in ("addmm", "baddbmm"):
        return 2 * math.prod(shapes[1]) * shapes[2][-1]
    if name == "convolution":
        return 2 * out * math.prod(shapes[1][1:])
    if "scaled_dot_product" in name:
        q, k = shapes[0], shapes[1]
        return 4 * math.prod(q[:-1]) * k[-2] * q[-1]
    return out


@contextlib.contextmanager
def _quiet_stderr():
    """Kineto prints a line on file descriptor 2 when the profiler starts and stops: not ours to show."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def trace_eager(module, inputs, element_bytes: int = 4) -> list:
    """The ATen ops one eager call runs, nested ones included, from the profiler's op tree (its
    shapes, not its timings), as `FrameworkOp`s. An op called from Python is a top-level
    dispatch, one called by another op's C++ a nested one; only a leaf (no op below it) does
    work (a GEMM always: a bias copied below it is its own op): its inputs' bytes plus one
    output the size of its largest input (a GEMM's: m x n),
    FLOPs from the shapes. Bookkeeping ops are left out; views and `to` without a copy below
    them move nothing."""
    import math

    import torch

    from hardware_models.host_runtime import FrameworkOp

    with _quiet_stderr(), torch.profiler.profile(record_shapes=True) as prof:
        module(*inputs)
    ops = []
    for event in prof.events():
        if not event.name.startswith("aten::"):
            continue
        name = event.name.removeprefix("aten::")
        if name in BOOKKEEPING:
            continue
        parent = event.cpu_parent
        nested = parent is not None and parent.name.startswith("aten::")
        children = [c for c in event.cpu_children
                    if c.name.startswith("aten::") and c.name.removeprefix("aten::") not in (*BOOKKEEPING, *VIEWS)]
        shapes = [tuple(s) for s in event.input_shapes if isinstance(s, (list, tuple)) and s]
        moved = flops = trans = out = reduced = depth = rhs = 0
        batch, mnk = 1, ()
        if (name in CONTRACTIONS or not children) and name not in VIEWS and shapes:
            sizes = [math.prod(s) for s in shapes]
            out = shapes[0][0] * shapes[1][-1] if name == "mm" else max(sizes)
            if name in ("bmm", "baddbmm", "addmm"):
                a, b = shapes[-2], shapes[-1]
                out = math.prod(a[:-1]) * b[-1]
            if name in GATHERS:  # indices, the rows they pick, and the output
                table, index = shapes[0], shapes[-1]
                out = math.prod(index) * (math.prod(table[1:]) if name in ("embedding", "index_select") else 1)
                moved = (math.prod(index) + 2 * out) * element_bytes
            elif name.endswith("_"):  # in place: reads its inputs, writes the first
                moved = sum(sizes) * element_bytes
            else:
                moved = (sum(sizes) + out) * element_bytes
            flops = _flops(name, shapes, out)
            trans = out if name in TRANSCENDENTAL else 0
            if name in REDUCTIONS:
                flops, reduced = 0, sizes[0]
            if name in ("bmm", "baddbmm"):
                batch = shapes[-2][0]
            if name in ("mm", "addmm", "bmm", "baddbmm") and len(shapes[-2]) >= 2 and len(shapes[-1]) >= 2:
                mnk = (shapes[-2][-2], shapes[-1][-1], shapes[-2][-1])  # A [.., m, k] @ B [.., k, n]
            if name in ("mm", "addmm"):  # a linear layer's weight, as the library reads it
                rhs = math.prod(shapes[-1]) * element_bytes
            elif name == "convolution":  # input [N, C, H, W], weight [O, C/groups, kh, kw]
                batch, depth = shapes[0][0], math.prod(shapes[1][1:])
            elif "scaled_dot_product" in name:
                batch = math.prod(shapes[0][:-2])
        rows = math.prod(shapes[0][:-1]) if "scaled_dot_product" in name and name in CONTRACTIONS and shapes else 0
        ops.append(FrameworkOp(name, moved, flops, trans, name in CONTRACTIONS, "f32", nested, out if moved else 0,
                               TRANSCENDENTAL.get(name, "exponential"), reduced=reduced, batch=batch, rows=rows,
                               rhs_bytes=rhs, depth=depth, mnk=mnk))
    return ops


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

    from pytorch_side.kernels import build
    from pytorch_side.lower import export_module, lower_exported
    from pytorch_side.params import load_weights, to_torch

    module = load_weights(build(name, case.shapes, case.dtype), dict(case.weights)).eval()
    inputs = [to_torch(x) for x in case.inputs.values()]
    ir = lower_exported(export_module(module, *inputs, name=name), module, len(inputs), name).module
    with torch.inference_mode():
        traced = trace_eager(module, inputs)
        calls, parameters = module_reads(module, inputs)
    weights = sum(p.numel() * p.element_size() for p in module.parameters())
    rows = [_Pending(name, size, "eager", _label(shapes), lambda: module(*inputs), eager_seconds(traced, target, calls, weights, parameters))]
    if "inductor" in runtimes:
        compiled = torch.compile(module, dynamic=False)
        graphs = compiled_graphs(compiled, inputs)
        rows.append(_Pending(name, size, "inductor", _label(shapes), lambda: compiled(*inputs),
                             compiled_seconds(ir, target, "inductor", graphs)))
    return rows


def _jax_row(name, shapes, size, case, target) -> _Pending:
    import jax
    from flax import nnx

    from jax_side.kernels import LAYOUTS, build
    from jax_side.params import load_weights
    from landscape.serving import lower_named

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


def validate(target, names: list[str] | None = None, sizes: tuple[str, ...] = SIZES, runtimes: tuple[str, ...] = RUNTIMES,
             min_run_s: float = MIN_RUN_S, progress=None, large: dict[str, dict] | None = None) -> list[Row]:
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
                    pending += [r for r in _torch_rows(name, given, size, case, target, runtimes) if r.runtime in runtimes]
                if "xla" in runtimes:
                    pending.append(_jax_row(name, given, size, case, target))
        measured = sweep([(row.runtime, row.call) for row in pending], min_run_s)
    rows = []
    for row, (median, iqr, _) in zip(pending, measured):
        rows.append(Row(row.entry, row.size, row.runtime, row.shapes, median, iqr, row.predicted.seconds, row.predicted.kernels))
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

    from hardware_models.host_calibration import read_rows
    from landscape.host_measure import measure_rows

    path = Path(target.path).with_suffix(".csv")
    if not path.is_file():
        return {}
    rows = [m for m in read_rows(path) if (m.spec.runtime, m.spec.workload, m.spec.size) in ANCHORS and m.spec.dtype == "f32"]
    now = measure_rows([m.spec for m in rows], min_run_s)
    return {m.spec.id: n.median_s / m.median_s for m, n in zip(rows, now)}


def summary(rows: list[Row]) -> dict:
    """Median |error| and worst ratio, per runtime and overall; rows within 2x."""
    def stats(rs):
        return {"rows": len(rs), "median_abs_error": statistics.median(abs(r.error) for r in rs),
                "worst_ratio": max(r.ratio for r in rs), "within_2x": sum(r.ratio <= 2 for r in rs)}

    out = {"all": stats(rows)} if rows else {}
    for runtime in RUNTIMES:
        rs = [r for r in rows if r.runtime == runtime]
        if rs:
            out[runtime] = stats(rs)
    return out
