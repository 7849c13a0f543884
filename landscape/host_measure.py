"""Timing on this machine, the same way for every runtime: warm-up, then the median of repeated
calls, with the interquartile range as the spread (a shared 2-core machine is noisy).

    PyTorch (eager and torch.compile): torch.utils.benchmark.Timer.blocked_autorange, which
        runs blocks of calls long enough to time and reports per-call median and IQR, on all
        of PyTorch's threads (the Timer's default is one); compiled rows are compiled modules
    JAX (jax.jit): the same recipe by hand: calls in blocks of at least BLOCK_S, each block
        ended by block_until_ready (JAX dispatches asynchronously), per-call times per block

`measure_rows` times the calibration rows (hardware_models/families/cpu/calibration.py) in PASSES
sweeps over them all, keeping each row's median across the sweeps (the machine's speed drifts
over minutes), and `calibrate` writes the target file and its rows. torch and jax are imported here, inside the
functions, only when a command runs.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from datetime import date
from pathlib import Path

from hardware_models.families.cpu.calibration import (
    ANGLE_FUNCTIONS,
    CHAIN_N,
    COLD_GEMM,
    CONV_SHAPES,
    DOT_N,
    INDEX_ADD_SHAPE,
    POSITIVE,
    REDUCE_ROW,
    SDPA_SHAPE,
    STRIDED_ROWS,
    Measured,
    RowSpec,
    angle_table,
    conv_shape,
    fit,
    plan_rows,
)
from hardware_models.families.cpu.files import rows_csv, target_toml
from hardware_models.families.cpu.host import read_host

MIN_RUN_S = 0.25  # per timed kernel: long enough for a stable median here, short enough for CI
BLOCK_S = 2e-3  # a JAX block: long enough that the clock's resolution does not matter


def time_torch(fn, min_run_s: float = MIN_RUN_S) -> tuple[float, float, int]:
    """(median s, IQR s, timed blocks) of one call of `fn()`, after a warm-up call, on every
    thread PyTorch runs with (torch.utils.benchmark.Timer times on one thread unless told: ATen's
    parallel ops and MKL's GEMMs would run at a core's speed while jax.jit's ran on all of them)."""
    import warnings

    import torch

    with warnings.catch_warnings():  # its import touches torch.jit.script_method, deprecated in torch 2.13
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch.utils.benchmark as benchmark

    fn()
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    m = timer.blocked_autorange(min_run_time=min_run_s)
    return m.median, m.iqr, len(m.times)


def time_jax(fn, min_run_s: float = MIN_RUN_S) -> tuple[float, float, int]:
    """(median s, IQR s, blocks) of one call of `fn()` (returning JAX arrays), compiled first."""
    import jax

    jax.block_until_ready(fn())
    number, start = 1, time.perf_counter()
    while True:  # calls per block: enough to fill BLOCK_S
        t0 = time.perf_counter()
        for _ in range(number):
            out = fn()
        jax.block_until_ready(out)
        if time.perf_counter() - t0 >= BLOCK_S or number >= 1 << 20:
            break
        number *= 2
    times = []
    start = time.perf_counter()
    while len(times) < 7 or time.perf_counter() - start < min_run_s:
        t0 = time.perf_counter()
        for _ in range(number):
            out = fn()
        jax.block_until_ready(out)
        times.append((time.perf_counter() - t0) / number)
    q = statistics.quantiles(times, n=4)
    return statistics.median(times), q[2] - q[0], len(times)


def _torch_row(spec: RowSpec):
    """The call a PyTorch row times (its tensors made, torch.compile'd where compiled; compiled at its first call)."""
    import torch

    with torch.inference_mode():  # as pytorch_side runs modules, and as validate times them
        return _torch_row_call(spec)


def _add_module():
    """`a + b` inside an nn.Module's forward (torch is imported lazily, so it is built here)."""
    from torch import nn

    class Add(nn.Module):
        def forward(self, a, b):
            return a + b

    return Add()


def _param_module():
    """`a + p` inside an nn.Module's forward, p its own 1-element parameter."""
    import torch
    from torch import nn

    class AddParameter(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.Parameter(torch.ones(1))

        def forward(self, a):
            return a + self.p

    return AddParameter()


def _index_add_call():
    """The index_add row's call and its tensors (INDEX_ADD_SHAPE), for timing and for the tracer."""
    import torch

    rows, dst, width = INDEX_ADD_SHAPE
    x, y, index = torch.zeros(dst, width), torch.ones(rows, width), torch.arange(rows)
    return lambda: x.index_add(0, index, y)


def _domain(fn: str, x, from_numpy):
    """A function row's arguments (host_calibration.ANGLE_FUNCTIONS, POSITIVE): RoPE's angle table
    for sine and cosine, as `from_numpy` makes an array; else `x` (N(0, 1)), inside the domain."""
    if fn in ANGLE_FUNCTIONS:
        return from_numpy(angle_table(x.shape[0]))
    return abs(x) + 0.01 if fn in POSITIVE else x


def _torch_function(fn: str):
    """The ATen op of a calibration function (hardware_models/families/cpu/calibration.py FUNCTIONS)."""
    import torch
    import torch.nn.functional as F

    return {
        "exponential": torch.exp,
        "log": torch.log,
        "tanh": torch.tanh,
        "logistic": torch.sigmoid,
        "erf": torch.erf,
        "erfc": torch.erfc,
        "sqrt": torch.sqrt,
        "rsqrt": torch.rsqrt,
        "sine": torch.sin,
        "cosine": torch.cos,
        "gelu": F.gelu,
        "silu": F.silu,
        "layer_norm": lambda x: F.layer_norm(x.view(-1, REDUCE_ROW), (REDUCE_ROW,), *_affine()),
        "softmax": lambda x: torch.softmax(x.view(-1, REDUCE_ROW), -1),
    }[fn]


def _affine():
    """A LayerNorm's weight and bias, as nn.LayerNorm has them (ATen's kernel without them takes
    a path 3x slower here)."""
    import torch

    return torch.ones(REDUCE_ROW), torch.zeros(REDUCE_ROW)


def _jax_function(fn: str):
    import jax
    import jax.numpy as jnp

    return {
        "exponential": jnp.exp,
        "log": jnp.log,
        "tanh": jnp.tanh,
        "logistic": jax.nn.sigmoid,
        "erf": jax.lax.erf,
        "erfc": jax.lax.erfc,
        "sqrt": jnp.sqrt,
        "rsqrt": jax.lax.rsqrt,
        "sine": jnp.sin,
        "cosine": jnp.cos,
    }[fn]


def _torch_row_call(spec: RowSpec):
    import torch

    dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[spec.dtype]
    gen = torch.Generator().manual_seed(0)
    if spec.workload == "gemm":
        a, b = (torch.randn(spec.size, spec.size, generator=gen).to(dtype) for _ in range(2))
        return lambda: torch.mm(a, b)
    if spec.workload == "conv":
        return _torch_conv(spec)
    if spec.workload == "weights":  # 16 linears over `size` distinct weights, in turn
        m, k, n = COLD_GEMM
        x, weights = torch.randn(m, k, generator=gen), [torch.randn(n, k, generator=gen) for _ in range(spec.size)]
        order = [weights[i % spec.size] for i in range(16)]

        def linears():
            for w in order:
                torch.nn.functional.linear(x, w)

        return linears
    if spec.workload == "gemv":  # one row through a linear layer's weight
        x, w = torch.randn(1, spec.size, generator=gen), torch.randn(spec.size, spec.size, generator=gen)
        return lambda: torch.nn.functional.linear(x, w)
    if spec.workload == "sdpa":
        q, k, v = (torch.randn(*SDPA_SHAPE, generator=gen) for _ in range(3))
        return lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v)
    x = torch.randn(spec.size, generator=gen).to(dtype)
    if spec.workload == "reduce":  # a sum over each row of REDUCE_ROW elements
        rows, fn = x.view(-1, REDUCE_ROW), lambda a: a.sum(-1)
        fn = _compiled(fn) if spec.runtime == "inductor" else fn
        return lambda: fn(rows)
    if spec.workload == "mm-chain":
        return _torch_chain(spec)
    if spec.workload == "args":
        args = [torch.randn(1) for _ in range(spec.size)]
        total = _compiled(lambda *xs: sum(xs))
        return lambda: total(*args)
    if spec.workload == "mean":
        one = torch.randn(1, 1)
        return lambda: torch.mean(one, -1)
    if spec.workload == "index-add":
        return _index_add_call()
    if spec.workload == "kernel-call":  # ATen's own kernel on a few elements
        fn, small = _torch_function(spec.fn), torch.randn(spec.size, generator=gen)
        return lambda: fn(small)
    if spec.workload == "unary":
        fn, x = _torch_function(spec.fn), _domain(spec.fn, x, torch.from_numpy)
        fn = _compiled(fn) if spec.runtime == "inductor" else fn
        return lambda: fn(x)
    y, out = torch.randn(spec.size, generator=gen).to(dtype), torch.empty_like(x)
    if spec.workload == "module-add":
        module = _add_module()
        return lambda: module(x, y)
    if spec.workload == "module-param":
        module = _param_module()
        return lambda: module(x)
    if spec.runtime == "inductor":  # the call of a program of one loop
        add = _compiled(lambda a, b: a + b)
        return lambda: add(x, y)
    if spec.size == 1:  # the dispatch row: as eager code adds, allocating its result
        return lambda: x + y
    return lambda: torch.add(x, y, out=out)


def _compiled(fn):
    """torch.compile of `fn` inside an nn.Module (the call validate and a user time is a compiled
    module's, which dynamo enters through the module: a few us above a compiled function's
    here), compiled at its first call (measure_rows lets every row keep its own compile)."""
    import torch
    from torch import nn

    if isinstance(fn, nn.Module):
        return torch.compile(fn, dynamic=False)
    body = fn

    class Function(nn.Module):
        def forward(self, *xs):
            return body(*xs)

    return torch.compile(Function(), dynamic=False)


def _torch_conv(spec: RowSpec):
    """A 3 x 3 convolution, NCHW, padding 1 (host_calibration.CONV_SHAPES), eager or compiled."""
    import torch
    import torch.nn.functional as F

    batch, c_in, c_out, hw = CONV_SHAPES[spec.size]
    x, w = torch.randn(batch, c_in, hw, hw), torch.randn(c_out, c_in, 3, 3) / c_in
    fn = lambda a, b: F.conv2d(a, b, padding=1)  # noqa: E731
    fn = _compiled(fn) if spec.runtime == "inductor" else fn
    return lambda: fn(x, w)


def _torch_chain(spec: RowSpec):
    import torch
    from torch import nn

    class Chain(nn.Module):
        def forward(self, x, w):
            for _ in range(spec.size):
                x = torch.mm(x, w)
            return x

    x, w = torch.randn(CHAIN_N, CHAIN_N), torch.randn(CHAIN_N, CHAIN_N) / CHAIN_N
    module = torch.compile(Chain(), dynamic=False)
    return lambda: module(x, w)


def _jax_row(spec: RowSpec):
    """The call a JAX row times (jitted; compiled at its first call)."""
    import jax
    import jax.numpy as jnp

    dtype = {"f32": jnp.float32, "bf16": jnp.bfloat16, "f16": jnp.float16}[spec.dtype]
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    if spec.workload == "gemm":
        a, b = (jax.random.normal(k, (spec.size, spec.size), dtype) for k in keys)
        f = jax.jit(jnp.matmul)
        return lambda: f(a, b)
    if spec.workload == "dots":  # `size` independent dots (no two alike), summed into one output
        xs, ws = (jax.random.normal(k_, (spec.size, DOT_N, DOT_N)) for k_ in keys)
        f = jax.jit(lambda xs, ws: sum(xs[i] @ ws[i] for i in range(spec.size)))
        return lambda: f(xs, ws)
    if spec.workload == "weights":  # 16 dots of distinct rows over `size` distinct weights (no two alike: none merged)
        m, k, n = COLD_GEMM
        xs = jax.random.normal(keys[0], (16, m, k))
        weights = [jax.random.normal(k_, (k, n)) for k_ in jax.random.split(keys[1], spec.size)]
        f = jax.jit(lambda xs, *ws: tuple(xs[i] @ ws[i % len(ws)] for i in range(16)))
        return lambda: f(xs, *weights)
    if spec.workload == "mm-chain":

        def chain(x, w):
            for _ in range(spec.size):
                x = x @ w
            return x

        x, w = jax.random.normal(keys[0], (CHAIN_N, CHAIN_N)), jax.random.normal(keys[1], (CHAIN_N, CHAIN_N)) / CHAIN_N
        f = jax.jit(chain)
        return lambda: f(x, w)
    if spec.workload == "args":
        args = [jax.random.normal(k, (1,)) for k in jax.random.split(keys[0], spec.size)]
        f = jax.jit(lambda *xs: sum(xs))
        return lambda: f(*args)
    if spec.workload == "gemv":  # one row through a weight
        x, w = jax.random.normal(keys[0], (1, spec.size)), jax.random.normal(keys[1], (spec.size, spec.size))
        f = jax.jit(jnp.dot)
        return lambda: f(x, w)
    if spec.workload == "strided":  # a loop reading its operand transposed, `size` elements apart
        x = jax.random.normal(keys[0], (STRIDED_ROWS, spec.size))
        f = jax.jit(lambda a: a.T * 2)
        return lambda: f(x)
    if spec.workload == "conv":  # NHWC, as the JAX side's nnx.Conv runs it
        batch, c_in, c_out, hw = conv_shape(spec.size)
        x, w = jax.random.normal(keys[0], (batch, hw, hw, c_in)), jax.random.normal(keys[1], (3, 3, c_in, c_out)) / c_in
        f = jax.jit(
            lambda a, b: jax.lax.conv_general_dilated(
                a, b, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
        )
        return lambda: f(x, w)
    x, y = (jax.random.normal(k, (spec.size,), dtype) for k in keys)
    if spec.workload == "reduce":
        f, rows = jax.jit(lambda a: a.sum(-1)), x.reshape(-1, REDUCE_ROW)
        return lambda: f(rows)
    if spec.workload == "unary":
        f, x = jax.jit(_jax_function(spec.fn)), _domain(spec.fn, x, jnp.asarray)
        return lambda: f(x)
    f = jax.jit(jnp.add)
    return lambda: f(x, y)


PASSES = 5  # sweeps over the rows: each row timed once per sweep, for a fifth of its time
PARK_S = 0.05  # the pause between a PyTorch row and a JAX row, either way: the other's threads park


def sweep(calls: list[tuple[str, object]], min_run_s: float = MIN_RUN_S, done=None) -> list[tuple[float, float, int]]:
    """Time each (runtime, call) in PASSES sweeps over them all, min_run_s / PASSES each, and
    return each one's (median over the sweeps, median of its IQRs, timed blocks): a shared
    machine's speed drifts over minutes and another tenant's burst comes and goes (one slowed
    a row 15x in two sweeps of three), so a call timed once would carry its moment's speed.
    (The fastest sweep instead: the tiny calibration rows find the machine's quiet moments
    more often than a block's many ops do, and every block came out 2x under.) PyTorch's calls run in inference mode; a JAX
    call after a PyTorch one, or a PyTorch call after a JAX one, waits PARK_S for the other
    library's threads to park. `done(i, result)` is
    called as call i's last sweep ends. calibrate's rows and validate's catalogue rows time here."""
    import torch
    import torch._dynamo

    samples: list[list[tuple[float, float, int]]] = [[] for _ in calls]
    # Calls that compile the same Python function (a lambda made per row, one module class with
    # other weights) are each a guard-distinct entry of its one dynamo cache: allow them all, or
    # the later ones would silently run eagerly.
    with torch._dynamo.config.patch(recompile_limit=max(torch._dynamo.config.recompile_limit, len(calls))):
        previous = None  # across sweeps too: a sweep's first row follows the last one's
        for n in range(PASSES):
            for i, ((runtime, fn), got) in enumerate(zip(calls, samples)):
                if previous is not None and (previous == "xla") != (runtime == "xla"):
                    # PyTorch's OpenMP threads and XLA's pool spin for a while after their last
                    # op: on two cores a spinning thread would take a core from the other
                    # library's second thread
                    time.sleep(PARK_S)
                if runtime == "xla":
                    got.append(time_jax(fn, min_run_s / PASSES))
                else:
                    with torch.inference_mode():
                        got.append(time_torch(fn, min_run_s / PASSES))
                previous = runtime
                if done and n == PASSES - 1:
                    done(i, _median(got))
    return [_median(got) for got in samples]


def _median(got: list[tuple[float, float, int]]) -> tuple[float, float, int]:
    return statistics.median(m for m, _, _ in got), statistics.median(q for _, q, _ in got), sum(r for _, _, r in got)


def measure_rows(specs: list[RowSpec], min_run_s: float = MIN_RUN_S, progress=None) -> list[Measured]:
    """Time every calibration row (`sweep`: its median over PASSES sweeps of them all)."""
    import torch
    import torch._dynamo

    torch._dynamo.reset()  # a fresh cache: every compiled row compiles here
    rows, calls = [], []
    for spec in specs:
        if spec.workload in ("mean", "index-add"):  # its size: the nested ops the eager tracer sees in it
            from landscape.host_trace import trace_eager

            call, inputs = (
                ((lambda x: torch.mean(x, -1)), [torch.randn(1, 1)])
                if spec.workload == "mean"
                else (_index_add_call(), [])
            )
            with torch.inference_mode():
                ops = trace_eager(call, inputs)
            spec = replace(spec, size=sum(op.nested for op in ops))
        rows.append(spec)
        calls.append((spec.runtime, _jax_row(spec) if spec.runtime == "xla" else _torch_row(spec)))
    report = (lambda i, r: progress(Measured(rows[i], *r))) if progress else None
    return [Measured(spec, *r) for spec, r in zip(rows, sweep(calls, min_run_s, report))]


def calibrate(out_dir: Path, min_run_s: float = MIN_RUN_S, progress=None) -> tuple[Path, Path, dict]:
    """Time the calibration rows here and write `host-cpu.toml` and `host-cpu.csv` under
    `out_dir`; returns both paths and the fits (key -> (value, rows))."""
    from landscape.outputs import write_file

    host = read_host()
    measured = measure_rows(plan_rows(host), min_run_s, progress)
    fits = fit(measured, host.cores)
    toml_path, csv_path = out_dir / "host-cpu.toml", out_dir / "host-cpu.csv"
    write_file(csv_path, rows_csv(measured))
    write_file(toml_path, target_toml(host, fits, csv_path.name, date.today().isoformat()))
    return toml_path, csv_path, fits
