"""The host CPU's calibration: which kernels to time, how each fitted value follows from them,
and the target file they make. Timing itself is the application's (landscape/host_measure.py);
this module imports neither torch nor jax. The rows (H01...) and the formula of each fitted
value: docs/host-cpu.md, "The calibration rows". Nothing is fitted twice; `landscape validate
host-cpu` checks the fits on kernels none of these rows ran.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hardware_models.families.cpu.cost import (
    COMPILED,
    EAGER_KERNELS,
    FUNCTIONS,
    GEMM_CURVE,
    GRAIN,
    LARGE_GEMM_N,
    RUNTIMES,
    SHARED_LEVEL_SHARE,
    TINY_GEMM_N,
    XLA_GEMM_CURVE,
    host_runtime,
)
from hardware_models.families.cpu.host import HostCpu

if TYPE_CHECKING:
    import numpy as np

ROWS_CSV = Path(__file__).parents[2] / "targets" / "host-cpu.csv"
COLUMNS = ("id", "runtime", "workload", "dtype", "size", "bytes", "flops", "median_s", "iqr_s", "runs")
GEMM_SIZES = {"f32": LARGE_GEMM_N, "bf16": 512, "f16": 512}
REDUCE_ROW = 512  # elements per row of the reduction rows (and of ATen's layer_norm row): a model width
CHAIN = 16  # dependent matmuls in the per-kernel rows
ARGS = 16  # arguments of the per-argument rows
CHAIN_N = 8  # their side: tiny, so the rows time the runtime, not the arithmetic
UNARY_N = 16 * GRAIN  # elements of a function row: every core busy, in + out inside any L3 we know
# Functions timed on the arguments a transformer gives them, not on random ones: sine and cosine
# take RoPE's angle table (`angle_table`); XLA:CPU's sine branches on its argument's range, and
# random N(0, 1) arguments ran 1.4-1.7x the table's time here (Sleef's, under ATen and Inductor,
# are branch-free). The rest take x ~ N(0, 1), log and the square roots |x| + 0.01 (their domain).
ANGLE_FUNCTIONS = ("sine", "cosine")
POSITIVE = ("log", "sqrt", "rsqrt")  # functions timed on |x| + 0.01, inside their domain
ANGLE_HEAD_DIM = (
    128  # a choice: a Llama head's width (64 frequencies, each twice); positions 0, 1, 2, ... down the rows
)
# The convolution rows: channels -> (batch, height = width), 3 x 3 kernels, padding 1. The small
# one times the library's fixed cost of a call, the large one (151 MFLOP) its rate.
CONV_SHAPES = ((1, 4, 4, 4), (2, 4, 4, 4), (2, 4, 64, 32), (2, 64, 64, 32))  # (images, c_in, c_out, height = width)
EIGEN_CONV = len(CONV_SHAPES)  # the conv row's size (index) for XLA's own convolution's row, shape EIGEN_CONV_SHAPE
EIGEN_CONV_SHAPE = (
    2,
    16,
    16,
    32,
)  # the most channels XLA:CPU keeps from YNNPACK (families/cpu/cost.py YNN_CONV_MIN_CHANNELS), 2 x 32 x 32 pixels
DOT_N = 32  # the side of the independent dots whose fixed cost the "dots" rows time (65 kFLOP each)
KERNEL_CALL_N = 2 * REDUCE_ROW  # elements of the small rows of ATen's own kernels (two rows of a norm or softmax)
INDEX_ADD_SHAPE = (4, 16, 64)  # (rows added, rows of the destination, row width) of the index_add row: 4 KiB, in L1
COLD_GEMM = (32, 256, 512)  # (m, k, n) of the weight-streaming rows: a 512 KiB f32 weight, an MoE expert's
GEMV_N = 1024  # the one-row GEMM rows' width: a 4 MiB weight (past L2, inside L3)
STRIDED_ROWS = 1024  # rows of the strided rows' x: with a 4 KiB stride, 4 MiB (past L2, inside L3)
SDPA_SHAPE = (1, 16, 16, 8)  # (batch, heads, sequence, head dim) of the attention row: 256 query rows, 131 kFLOP
UNMEASURABLE = 1e15  # a rate (bytes or FLOPs per second) above any this machine has: its two rows did not differ
FLOOR = 1e-9  # a fitted time no smaller than this: timing noise can make a difference of rows negative
CALL_ROWS = {"eager": "H01", "inductor": "H03", "xla": "H05"}  # each runtime's call of one tiny GEMM program


def angle_table(n: int) -> np.ndarray:
    """n f32 RoPE angles, row after row: position p times each of a head's inverse frequencies
    (ROPE_THETA's, the half-split layout's two copies), as a model takes their sine and cosine."""
    import numpy as np

    from reference.catalogue.attention import ROPE_THETA, rope_inv_freq

    inv_freq = np.asarray(rope_inv_freq(ANGLE_HEAD_DIM, ROPE_THETA), dtype=np.float64)
    row = np.concatenate([inv_freq, inv_freq])
    positions = np.arange(math.ceil(n / row.size), dtype=np.float64)
    return np.outer(positions, row).reshape(-1)[:n].astype(np.float32)


def conv_shape(index: int) -> tuple[int, int, int, int]:
    """(images, c_in, c_out, height = width) of conv row `index`: CONV_SHAPES', or EIGEN_CONV's."""
    return EIGEN_CONV_SHAPE if index == EIGEN_CONV else CONV_SHAPES[index]


@dataclass(frozen=True)
class RowSpec:
    """A kernel to time: `workload` is "add" (size = elements of each of a, b, c; "module-add"
    inside an nn.Module), "mm-chain" (size = dependent CHAIN_N-square matmuls), "args" (a sum of `size` 1-element arguments), "mean" (of one element; size = the
    nested ops ATen runs for it), "gemm"
    (size = n of an n x n x n GEMM), "unary" (y = fn(x); size = elements), "conv" (size =
    the index of its shape in CONV_SHAPES), "reduce" (a sum over rows of REDUCE_ROW; size = elements)
    or "sdpa" (attention of SDPA_SHAPE), "weights" (16 GEMMs of COLD_GEMM over `size` distinct weights), "dots" (`size` independent DOT_N^3 dots, summed),
    "module-param" (a + p, p a module's own 1-element parameter), "index-add" (of INDEX_ADD_SHAPE;
    size: its nested ops), "strided" (x.T * 2 of x [STRIDED_ROWS, size]), "gemv" (x [1, size] @ W [size, size]). A compiled "add" of size 1 is the loop program's call."""

    id: str
    runtime: str  # "eager", "inductor", "xla"
    workload: str
    dtype: str
    size: int
    level: str = ""  # the level a stream row measures
    fn: str = ""  # the function a unary row applies

    @property
    def bytes(self) -> int:
        e = {"f32": 4, "bf16": 2, "f16": 2}[self.dtype]
        if self.workload == "mm-chain":
            return (self.size + 2) * CHAIN_N**2 * e
        if self.workload == "conv":
            b, ci, co, hw = conv_shape(self.size)
            return (b * (ci + co) * hw * hw + 9 * ci * co) * e
        if self.workload == "sdpa":  # q, k, v and the output, SDPA_SHAPE
            return 4 * math.prod(SDPA_SHAPE) * e
        if self.workload == "dots":  # `size` pairs of operands and one output
            return (2 * self.size + 1) * DOT_N**2 * e
        if self.workload == "weights":  # `size` distinct weights, each read by one of 16 GEMMs
            m, k, n = COLD_GEMM
            return (self.size * k * n + 16 * (m * k + m * n)) * e
        if self.workload == "reduce":
            return (self.size + self.size // REDUCE_ROW) * e
        if self.workload == "strided":  # x read, its transpose written
            return 2 * STRIDED_ROWS * self.size * e
        if self.workload == "gemv":  # the weight, the row in and the row out
            return (self.size + 2) * self.size * e
        if self.workload in ("mean", "args"):
            return 2 * e * (self.size if self.workload == "args" else 1)
        if self.workload == "module-param":  # a and p read, the sum written
            return 3 * e
        if self.workload == "index-add":  # the destination copied, its rows read and written, the rows added, the index
            rows, dst, width = INDEX_ADD_SHAPE
            return (2 * dst * width + 3 * rows * width) * e + rows * 8
        return {
            "add": 3 * self.size * e,
            "module-add": 3 * self.size * e,
            "gemm": 3 * self.size**2 * e,
            "unary": 2 * self.size * e,
            "kernel-call": 2 * self.size * e,
        }[self.workload]

    @property
    def flops(self) -> int:
        if self.workload == "mm-chain":
            return 2 * self.size * CHAIN_N**3
        if self.workload == "conv":
            b, ci, co, hw = conv_shape(self.size)
            return 2 * b * hw * hw * ci * co * 9
        if self.workload == "sdpa":
            b, h, t, d = SDPA_SHAPE
            return 4 * b * h * t * t * d
        if self.workload == "weights":
            return 16 * 2 * math.prod(COLD_GEMM)
        if self.workload == "dots":
            return self.size * 2 * DOT_N**3
        if self.workload == "reduce":
            return self.size
        if self.workload == "strided":
            return STRIDED_ROWS * self.size
        if self.workload == "gemv":
            return 2 * self.size**2
        if self.workload == "index-add":
            return INDEX_ADD_SHAPE[0] * INDEX_ADD_SHAPE[2]
        return (
            2 * self.size**3
            if self.workload == "gemm"
            else (1 if self.workload in ("mean", "module-param") else self.size - (self.workload == "args"))
        )


@dataclass(frozen=True)
class Measured:
    spec: RowSpec
    median_s: float
    iqr_s: float
    runs: int


def _level_sizes(host: HostCpu) -> list[tuple[str, float, float]]:
    """(level, low bytes, high bytes) of each stream pair: inside each cache, then beyond the last."""
    pairs, capacity = [], 0.0
    for cache in host.caches:
        capacity = cache.bytes * max(1, host.cores // cache.shared_by)
        # a cache several cores share (on a virtual machine, other tenants too) holds less of it
        # for us: its rows stay at 1/16 and 1/4, a private cache's at 1/8 and 1/2
        low, high = (4 / SHARED_LEVEL_SHARE, 1 / SHARED_LEVEL_SHARE) if cache.shared_by > 1 else (8, 2)
        pairs.append((cache.name, capacity / low, capacity / high))
    pairs.append(("dram", 2 * capacity, 8 * capacity))  # 2x and 8x the last level's capacity
    return pairs


def plan_rows(host: HostCpu) -> list[RowSpec]:
    """The rows to time on `host`, sized from its caches (BadTargetFile where the OS gave none)."""
    require_host(host)
    rows = [
        RowSpec("H01", "eager", "add", "f32", 1),
        RowSpec("H02", "eager", "module-add", "f32", 1),
        RowSpec("H03", "inductor", "mm-chain", "f32", 1),
        RowSpec("H04", "inductor", "mm-chain", "f32", CHAIN),
        RowSpec("H05", "xla", "mm-chain", "f32", 1),
        RowSpec("H06", "xla", "mm-chain", "f32", CHAIN),
    ]
    for level, lo, hi in _level_sizes(host):
        for total in (lo, hi):
            rows.append(RowSpec(f"H{len(rows) + 1:02d}", "eager", "add", "f32", max(1, int(total // 12)), level))
    for dtype, n in GEMM_SIZES.items():
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", "eager", "gemm", dtype, n))
    rows.append(RowSpec(f"H{len(rows) + 1:02d}", "xla", "gemm", "f32", GEMM_SIZES["f32"]))
    rows.append(RowSpec(f"H{len(rows) + 1:02d}", "eager", "mean", "f32", 0))  # size: its nested ops, once counted
    for runtime in ("inductor", "xla"):
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", runtime, "args", "f32", ARGS))
    for runtime in RUNTIMES:
        for fn in FUNCTIONS + (EAGER_KERNELS if runtime == "eager" else ()):
            rows.append(RowSpec(f"H{len(rows) + 1:02d}", runtime, "unary", "f32", UNARY_N, fn=fn))
    for runtime in RUNTIMES:
        for index in range(len(CONV_SHAPES)):
            rows.append(RowSpec(f"H{len(rows) + 1:02d}", runtime, "conv", "f32", index))
    for runtime in COMPILED:  # the call of a program of loops alone (no GEMM library)
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", runtime, "add", "f32", 1))
    for runtime in RUNTIMES:
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", runtime, "reduce", "f32", UNARY_N))
    for n, _ in XLA_GEMM_CURVE[:-1]:  # the small and middle f32 GEMMs (the large one is H15, H18)
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", "eager", "gemm", "f32", n))
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", "xla", "gemm", "f32", n))
    rows.append(RowSpec(f"H{len(rows) + 1:02d}", "eager", "sdpa", "f32", 1))
    for count in (1, CHAIN):  # XLA:CPU's library dots: 1 and 16 independent DOT_N^3 dots, summed into one output
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", "xla", "dots", "f32", count))
    weights = max(2, math.ceil(4 * private_bytes(host) / cold_weight_bytes()))  # 4x the private caches
    for runtime in ("eager", "xla"):
        for count in (1, weights):
            rows.append(RowSpec(f"H{len(rows) + 1:02d}", runtime, "weights", "f32", count))
    rows.append(RowSpec(f"H{len(rows) + 1:02d}", "eager", "gemm", "f32", TINY_GEMM_N))
    rows.append(RowSpec(f"H{len(rows) + 1:02d}", "eager", "module-param", "f32", 1))
    rows.append(RowSpec(f"H{len(rows) + 1:02d}", "eager", "index-add", "f32", 0))  # size: its nested ops, once counted
    last_cache = max((r for r in rows if r.level and r.level != "dram"), key=lambda r: r.size)
    for fn in EAGER_KERNELS:  # ATen's own kernels, small: their fixed cost per call
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", "eager", "kernel-call", "f32", KERNEL_CALL_N, fn=fn))
    stream = 1 << (last_cache.size.bit_length() - 1)  # a power of two at most its size, as a model's tensors are
    rows.append(RowSpec(f"H{len(rows) + 1:02d}", "xla", "add", "f32", stream))  # XLA:CPU's loop, streaming
    span = host.caches[0].bytes // host.l1_ways  # the L1's set span: a stride of it maps every read to one set
    for columns in (span // 4, (span + host.l1_line) // 4):  # a conflicting stride, and one line more
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", "xla", "strided", "f32", columns))
    for runtime in ("eager", "xla"):
        rows.append(RowSpec(f"H{len(rows) + 1:02d}", runtime, "gemv", "f32", GEMV_N))
    rows.append(RowSpec(f"H{len(rows) + 1:02d}", "xla", "conv", "f32", EIGEN_CONV))  # XLA's own convolution
    return rows


def private_bytes(host: HostCpu) -> int:
    """The caches each core has to itself, every core's together (L1d and L2 here)."""
    return sum(c.bytes * host.cores for c in host.caches if c.shared_by == 1)


def cold_weight_bytes() -> int:
    m, k, n = COLD_GEMM
    return 4 * k * n


def _loop_call(measured: list[Measured], runtime: str) -> Measured:
    """The row timing `runtime`'s call of one tiny kernel of loops: H01 eagerly, the one-add
    program compiled."""
    if not host_runtime(runtime).compiled:
        return next(m for m in measured if m.spec.id == "H01")
    return next(m for m in measured if m.spec.runtime == runtime and m.spec.workload == "add" and m.spec.size == 1)


def _row(measured: list[Measured], what: str, wanted) -> Measured:
    """The one row `wanted(spec)` picks; a rows file from before that row existed is refused by name."""
    return _rows(measured, what, wanted, 1)[0]


def _rows(measured: list[Measured], what: str, wanted, count: int) -> list[Measured]:
    """The `count` rows `wanted(spec)` picks, smallest size first; refused by name where they are not all there."""
    found = sorted((m for m in measured if wanted(m.spec)), key=lambda m: m.spec.size)
    if len(found) < count:
        from reference.errors import BadTargetFile

        raise BadTargetFile(
            "host-cpu rows",
            what,
            "missing: the rows predate this version's calibration; run `landscape calibrate host-cpu` again",
        )
    return found[:count]


def fit(measured: list[Measured], cores: int) -> dict[str, tuple[float, str]]:
    """Every fitted value (key -> (value, the rows it came from)), by the formulas of docs/host-cpu.md's calibration rows;
    `cores`: the machine's (a small kernel's row runs on one of them)."""
    by = {m.spec.id: m for m in measured}
    t = {k: m.median_s for k, m in by.items()}
    out: dict[str, tuple[float, str]] = {
        "fitted.eager_dispatch_s": (t["H01"], "H01"),
        "fitted.eager_module_call_s": (max(t["H02"] - t["H01"], FLOOR), "H02 H01"),
    }
    for runtime, one, many in (("inductor", "H03", "H04"), ("xla", "H05", "H06")):
        kernel = max((t[many] - t[one]) / (CHAIN - 1), FLOOR)
        out[f"fitted.{runtime}_kernel_s"] = (kernel, f"{many} {one}")
        out[f"fitted.{runtime}_call_s"] = (max(t[one] - kernel, FLOOR), f"{one} {many}")
    streams: dict[str, list[Measured]] = {}
    for m in measured:
        if m.spec.level:
            streams.setdefault(m.spec.level, []).append(m)
    for level, (lo, hi) in ((k, sorted(v, key=lambda m: m.spec.size)) for k, v in streams.items()):
        dt = hi.median_s - lo.median_s
        if dt > max(lo.iqr_s, hi.iqr_s):
            out[f"fitted.{level}_bytes_per_s"] = ((hi.spec.bytes - lo.spec.bytes) / dt, f"{lo.spec.id} {hi.spec.id}")
        else:  # the difference is inside the rows' spread (noise): the larger row less one dispatch
            out[f"fitted.{level}_bytes_per_s"] = (
                hi.spec.bytes / max(hi.median_s - t["H01"], 1e-12),
                f"{hi.spec.id} H01",
            )
    for runtime in COMPILED:
        loop, (kernel, rows) = _loop_call(measured, runtime), out[f"fitted.{runtime}_kernel_s"]
        out[f"fitted.{runtime}_loop_call_s"] = (max(loop.median_s - kernel, FLOOR), f"{loop.spec.id} {rows}")
    for m in measured:
        s = m.spec
        if s.workload == "gemm":
            base = "H05" if s.runtime == "xla" else "H01"
            suffix = dict(GEMM_CURVE).get(s.size, "") if s.dtype == "f32" else ""
            key = f"{host_runtime(s.runtime).library}gemm_{s.dtype}{suffix}_flop_per_s"  # XLA's: f32 rows only
            out[key] = (s.flops / max(m.median_s - t[base], 1e-12), f"{s.id} {base}")
        elif s.workload == "weights" and s.size > 1:  # against the row of one weight, read 16 times
            hot = next(
                h for h in measured if h.spec.workload == "weights" and h.spec.runtime == s.runtime and h.spec.size == 1
            )
            key = f"{host_runtime(s.runtime).library}gemm_cold_bytes_per_s"
            out[key] = (16 * cold_weight_bytes() / max(m.median_s - hot.median_s, 1e-12), f"{s.id} {hot.spec.id}")
        elif s.workload == "sdpa":
            rows = math.prod(SDPA_SHAPE[:-1])
            out["fitted.eager_sdpa_row_s"] = (max(m.median_s - t["H01"], FLOOR) / rows, f"{s.id} H01")
    one, many = sorted((m for m in measured if m.spec.workload == "dots"), key=lambda m: m.spec.size)
    rate, rows = out[
        "fitted.xla_gemm_f32_small_flop_per_s"
    ]  # each dot beyond the first, less its FLOPs at the small row's rate
    per_dot = (many.median_s - one.median_s) / (many.spec.size - 1) - 2 * DOT_N**3 / rate
    out["fitted.xla_dot_s"] = (max(per_dot, FLOOR), f"{many.spec.id} {one.spec.id} {rows}")
    for m in (m for m in measured if m.spec.workload in ("unary", "reduce", "args")):
        base = _loop_call(measured, m.spec.runtime).spec.id
        if m.spec.workload == "args":
            out[f"fitted.{m.spec.runtime}_arg_s"] = (
                max(m.median_s - t[base], FLOOR) / (m.spec.size - 2),
                f"{m.spec.id} {base}",
            )
            continue
        name = m.spec.fn if m.spec.workload == "unary" else "reduce"
        out[f"fitted.{m.spec.runtime}_{name}_per_s"] = (
            m.spec.size / max(m.median_s - t[base], 1e-12),
            f"{m.spec.id} {base}",
        )
    for runtime in RUNTIMES:
        tiny, batched, shallow, deep = sorted(
            (
                m
                for m in measured
                if m.spec.workload == "conv" and m.spec.runtime == runtime and m.spec.size != EIGEN_CONV
            ),
            key=lambda m: m.spec.size,
        )
        base, depth, rate = t[CALL_ROWS[runtime]], 0.0, float("inf")

        def work(m):  # a row's own arithmetic at the current fit
            k = CONV_SHAPES[m.spec.size][1] * 9
            return m.spec.flops * (1 + depth / k) / rate  # noqa: B023 - the fit of this round, by design

        for _ in range(3):  # the tiny rows' own work (9 kFLOP) taken out of their fixed costs: 3 rounds converge
            fixed = max(batched.median_s - base - work(batched), FLOOR)
            (k_s, f_s, t_s), (k_d, f_d, t_d) = (
                (CONV_SHAPES[m.spec.size][1] * 9, m.spec.flops, max(m.median_s - base - fixed, 1e-12))
                for m in (shallow, deep)
            )
            r = (t_s / f_s) / (t_d / f_d)
            depth = max((r - 1) / (1 / k_s - r / k_d), 0.0) if 1 / k_s > r / k_d else 0.0
            rate = f_d * (1 + depth / k_d) / t_d
        rows = f"{shallow.spec.id} {deep.spec.id} {batched.spec.id} {CALL_ROWS[runtime]}"
        out[f"fitted.{runtime}_conv_s"] = (max(tiny.median_s - base - work(tiny), FLOOR), f"{tiny.spec.id} {rows}")
        out[f"fitted.{runtime}_conv_batched_s"] = (fixed, rows)
        out[f"fitted.{runtime}_conv_depth"] = (max(depth, FLOOR), rows)
        out[f"fitted.{runtime}_conv_flop_per_s"] = (rate, rows)
    mean = _row(measured, "mean", lambda s: s.workload == "mean")
    nested = max(mean.median_s - t["H01"], FLOOR) / max(mean.spec.size, 1)
    out["fitted.eager_nested_s"] = (nested, f"{mean.spec.id} H01")
    param = _row(measured, "module-param", lambda s: s.workload == "module-param")
    out["fitted.eager_param_s"] = (max(param.median_s - t["H02"], FLOOR), f"{param.spec.id} H02")
    stream = _row(measured, "xla add (stream)", lambda s: s.runtime == "xla" and s.workload == "add" and s.size > 1)
    loop = _loop_call(measured, "xla")
    out["fitted.xla_stream_bytes_per_s"] = (
        stream.spec.bytes / max(stream.median_s - loop.median_s, 1e-12),
        f"{stream.spec.id} {loop.spec.id}",
    )
    strided = _rows(measured, "strided", lambda s: s.workload == "strided", 2)  # the set span's stride first
    for key, m in zip(("fitted.xla_conflict_per_s", "fitted.xla_strided_per_s"), strided):
        out[key] = (m.spec.flops / max(m.median_s - loop.median_s, 1e-12), f"{m.spec.id} {loop.spec.id}")
    out.update(_gemm_shapes(measured, out))
    eigen = _row(measured, "xla eigen conv", lambda s: s.workload == "conv" and s.size == EIGEN_CONV)
    b, _, _, hw = EIGEN_CONV_SHAPE
    fixed, rows = out["fitted.xla_conv_batched_s"]
    out["fitted.xla_conv_pixel_s"] = (
        max(eigen.median_s - t[CALL_ROWS["xla"]] - fixed, FLOOR) / (b * hw * hw),
        f"{eigen.spec.id} {rows}",
    )
    index_add = _row(measured, "index-add", lambda s: s.workload == "index-add")
    out["fitted.eager_index_add_s"] = (
        max(index_add.median_s - t["H01"] - index_add.spec.size * nested, FLOOR),
        f"{index_add.spec.id} H01 {mean.spec.id}",
    )
    for fn in EAGER_KERNELS:
        small = _row(measured, f"kernel-call {fn}", lambda s, fn=fn: s.workload == "kernel-call" and s.fn == fn)
        rate, rows = out[f"fitted.eager_{fn}_per_s"]
        work = small.spec.size * cores / rate  # below the grain: one core
        out[f"fitted.eager_{fn}_s"] = (
            max(small.median_s - t["H01"] - work, FLOOR),
            f"{small.spec.id} H01 {rows.split()[0]}",
        )
    return out


class _Fits(dict):
    """The fits so far, read as a target (families/cpu/cost.py gemm_rate reads `quantities` and items)."""

    @property
    def quantities(self):
        return self


def _gemm_shapes(measured: list[Measured], out: dict[str, tuple[float, str]]) -> dict[str, tuple[float, str]]:
    """The GEMM library's packing and one-row rates (docs/host-cpu.md's calibration rows), per library."""
    from hardware_models.families.cpu.cost import gemm_rate

    fits = _Fits({k: v for k, (v, _) in out.items()})
    t = {m.spec.id: m.median_s for m in measured}
    m_, k_, n_ = COLD_GEMM
    flops = 2 * m_ * k_ * n_
    extra = (k_ * max(m_, n_) - (m_ * n_ * k_) ** (2 / 3)) * 4
    found = {}
    for runtime in ("eager", "xla"):  # MKL's rows (eager) and XLA:CPU's own library's
        record = host_runtime(runtime)
        base = CALL_ROWS[runtime]
        hot = _row(
            measured,
            f"{runtime} weights",
            lambda s, r=runtime: s.workload == "weights" and s.runtime == r and s.size == 1,
        )
        # per GEMM: XLA's 16 dots are one call (each + its dot's fixed cost), eager's 16 calls
        per = (hot.median_s - t[base]) / 16 - fits[record.dot_call] if record.dot_call else hot.median_s / 16 - t[base]
        left = per - flops / gemm_rate(fits, "f32", runtime, flops)
        # inside one GEMM's share of the row's spread, the difference is noise: no cost measured
        found[f"{record.library}gemm_pack_bytes_per_s"] = (
            extra / left if left > max(FLOOR, hot.iqr_s / 16) else UNMEASURABLE,
            f"{hot.spec.id} {base}",
        )
        gemv = _row(measured, f"{runtime} gemv", lambda s, r=runtime: s.workload == "gemv" and s.runtime == r)
        found[f"{record.library}gemv_bytes_per_s"] = (
            gemv.spec.size**2 * 4 / max(gemv.median_s - t[base], 1e-12),
            f"{gemv.spec.id} {base}",
        )
    return found


def require_host(host: HostCpu) -> None:
    if host.missing:
        from reference.errors import BadTargetFile

        raise BadTargetFile(
            "host",
            ", ".join(host.missing),
            "read from /proc and /sys (Linux); set them in the target file by hand elsewhere",
        )
