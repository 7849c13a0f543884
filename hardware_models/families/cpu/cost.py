"""The host-CPU model: cores with vector units behind a cache hierarchy, caches kept warm.

Every rate is the target file's, each fitted one measured on the machine (`landscape calibrate
host-cpu`; hardware_models/families/cpu/calibration.py names its rows). The formulas, rate by rate and
kernel by kernel (GEMM, reductions, vector, transcendentals, levels, transposed reads, threads,
the working set, a compiled kernel, an eager op, recomputation in fused loops):
docs/host-cpu.md, "The cost model, formula by formula".

Worked number (this repository's host-cpu.toml): a 1024^3 f32 GEMM is 2.147e9 FLOPs; at the
fitted rate r its time is 2.147e9 / r + the kernel's fixed cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hardware_models.cost.attention import dot_flops
from hardware_models.cost.model import Cost, roofline_cost
from hardware_models.plan import Group, Plan, group_work, shard_factor
from hardware_models.target import Level, Target
from reference.errors import UnknownName
from reference.ir import Module
from reference.ir.counters import op_cost
from reference.ir.graph import element_bytes

GRAIN = 32768  # a runtime choice: at::internal::GRAIN_SIZE, the elements below which ATen runs an op on one thread
# The transcendental functions timed through every runtime (the IR's names; families/cpu/calibration.py);
# one without a row of its own (power, tan, atan2, ...) costs what exponential costs.
FUNCTIONS = ("exponential", "log", "tanh", "logistic", "erf", "erfc", "sqrt", "rsqrt", "sine", "cosine")
# ATen kernels of their own, timed eagerly (aten::gelu, ::silu, ::native_layer_norm, ::_softmax; _log_softmax is
# the same kernel's shape, max then exp-sum then scale, and costs softmax's rate)
EAGER_KERNELS = ("gelu", "silu", "layer_norm", "softmax")
GEMM_DTYPES = {"f32": "f32", "bf16": "bf16", "f16": "f16", "f64": "f32"}
# ATen ops that scatter-add rows through an index expanded over each row (index_add: MoE's
# routed experts add their rows back this way): ATen sorts the index and runs threaded regions
# at any size, a fixed cost far above a dispatch (fitted.eager_index_add_s).
SORTED_SCATTERS = frozenset({"index_add", "index_add_"})
# Ops whose element index decides where it reads from: a loop holding one runs scalar (docs/host-cpu.md);
# concatenate is not among them (its sources are whole slices).
SCALAR_LOOP_OPS = frozenset({"gather", "scatter", "pad", "dynamic_slice", "dynamic_update_slice", "select_and_scatter"})
# The share of a cache that several cores share (on a virtual machine, other tenants' cores too)
# that a working set can count on: a choice, the one the calibration's stream rows are sized by
# (a shared level's larger row holds a quarter of it; host_calibration._level_sizes), and beyond
# which a GEMM's packed operand is read from main memory (`gemm_seconds`).
SHARED_LEVEL_SHARE = 0.25
# XLA:CPU hands a 2-D f32 convolution to YNNPACK only when it has more than this many input or
# output channels (a runtime rule: xla/backends/cpu/ynn_support.cc IsConvolutionOpSupportedByYnn,
# "if this convolution is small, our overhead is probably too significant"); below it XLA's own
# (Eigen's) convolution runs, at a cost per output pixel (`xla_eigen_conv`).
YNN_CONV_MIN_CHANNELS = 16


# n of the calibration's square f32 GEMM rows per library (families/cpu/calibration.py times them), and
# the key suffix of each rate: between their FLOPs the rate follows them (`size_factor`).
TINY_GEMM_N, SMALL_GEMM_N, MID_GEMM_N, LARGE_GEMM_N = (
    32,
    128,
    256,
    1024,
)  # choices: 65 kFLOP (an expert's few routed rows), 4.2 MFLOP (decode-sized), 34 MFLOP, 2.1 GFLOP (compute-bound)
GEMM_CURVE = (
    (TINY_GEMM_N, "_tiny"),
    (SMALL_GEMM_N, "_small"),
    (MID_GEMM_N, "_mid"),
    (LARGE_GEMM_N, ""),
)  # MKL's, under eager and Inductor
# XLA:CPU's curve starts at the small row: its tiny dots' fixed cost is fitted.xla_dot_s, measured apart.
XLA_GEMM_CURVE = GEMM_CURVE[1:]
TINY_GEMM_FLOPS, SMALL_GEMM_FLOPS, MID_GEMM_FLOPS, LARGE_GEMM_FLOPS = (2 * n**3 for n, _ in GEMM_CURVE)


@dataclass(frozen=True)
class HostRuntime:
    """What one runtime of the host CPU does its own way, as data: the cost model reads these
    fields, never the runtime's name. Its fitted rates are keyed "fitted.<name>_..." (`RuntimeRates`).

    compiled:       a compiler's program (kernels, one call) rather than ATen ops dispatched one by one
    library:        the key prefix of its GEMM library's rows: MKL/oneDNN's "fitted." (eager,
                    Inductor), XLA:CPU's own "fitted.xla_"
    gemm_curve:     the library's square f32 rows (n, key suffix) its rate follows (`size_factor`)
    dot_call:       the fixed cost of a dot that is a library call of its own (XLA's, to Eigen)
    stream_cap:     a rate its loops stream no faster than (XLA:CPU's own stream row)
    eigen_conv:     the cost per output pixel of the small convolutions it runs in its own loop
                    (XLA's Eigen kernel below YNN_CONV_MIN_CHANNELS; `xla_eigen_conv`)
    shares_sincos:  a cosine of a value the loop also takes the sine of is free (`fused_work`)
    strided_reads:  its loops read a transposed operand element by element, at these rates
                    ("strided", "conflict": `strided_read`)
    """

    name: str
    compiled: bool
    library: str = "fitted."
    gemm_curve: tuple[tuple[int, str], ...] = GEMM_CURVE
    dot_call: str | None = None
    stream_cap: str | None = None
    eigen_conv: str | None = None
    shares_sincos: bool = False
    strided_reads: tuple[tuple[str, str], ...] = ()


# Who runs the program (hardware_models/families/cpu/runtime.py; XLA's compiler: families/cpu/xla.py).
HOST_RUNTIMES = {
    r.name: r
    for r in (
        HostRuntime("eager", compiled=False),
        HostRuntime("inductor", compiled=True),
        HostRuntime(
            "xla",
            compiled=True,
            library="fitted.xla_",
            gemm_curve=XLA_GEMM_CURVE,
            dot_call="fitted.xla_dot_s",
            stream_cap="fitted.xla_stream_bytes_per_s",
            eigen_conv="fitted.xla_conv_pixel_s",
            shares_sincos=True,
            strided_reads=(("strided", "fitted.xla_strided_per_s"), ("conflict", "fitted.xla_conflict_per_s")),
        ),
    )
}
RUNTIMES = tuple(HOST_RUNTIMES)
COMPILED = tuple(name for name, r in HOST_RUNTIMES.items() if r.compiled)


def host_runtime(runtime: str) -> HostRuntime:
    """The record of `runtime`.

    Raises:
        UnknownName: a runtime other than eager, inductor and xla.
    """
    try:
        return HOST_RUNTIMES[runtime]
    except KeyError:
        raise UnknownName("CPU runtime", runtime, RUNTIMES) from None


class RuntimeRates:
    """One runtime's fitted quantities on a host-CPU target (`runtime_rates`): the one place that
    spells their keys from the runtime's name (families/cpu/calibration.py writes them). Each is read
    when asked for, so a file being calibrated can be costed with the values fitted so far. The
    GEMM library is MKL/oneDNN under eager and Inductor ("fitted.gemm_..."), XLA:CPU's own under
    xla ("fitted.xla_gemm_..."); kernel_s, call_s, loop_call_s and arg_s are the compiled
    runtimes' (eager's own costs are its dispatch's: eager_op_seconds)."""

    def __init__(self, target: Target, runtime: str):
        self.record = host_runtime(runtime)
        self.target, self.runtime = target, runtime
        self._own = f"fitted.{runtime}_"
        self._lib, self._curve = self.record.library, self.record.gemm_curve

    def _compiled(self, key: str) -> float:
        if not self.record.compiled:
            raise UnknownName("compiled CPU runtime", self.runtime, COMPILED)
        return self.target[self._own + key]

    reduce_per_s = property(lambda self: self.target[self._own + "reduce_per_s"], doc="a row reduction's reads")
    conv_flop_per_s = property(
        lambda self: self.target[self._own + "conv_flop_per_s"], doc="the convolution library's f32 rate"
    )
    conv_depth = property(lambda self: self.target[self._own + "conv_depth"], doc="K0: the depth at which it halves")
    conv_s = property(lambda self: self.target[self._own + "conv_s"], doc="its fixed cost, one image")
    conv_batched_s = property(lambda self: self.target[self._own + "conv_batched_s"], doc="its fixed cost, a batch")
    gemm_f32_flop_per_s = property(
        lambda self: self.target[self._lib + "gemm_f32_flop_per_s"], doc="the GEMM library's large square f32 row"
    )
    gemm_pack_bytes_per_s = property(
        lambda self: self.target[self._lib + "gemm_pack_bytes_per_s"], doc="a skinny GEMM's packing"
    )
    gemv_bytes_per_s = property(lambda self: self.target[self._lib + "gemv_bytes_per_s"], doc="a one-row GEMM's pass")
    gemm_cold_bytes_per_s = property(
        lambda self: self.target[self._lib + "gemm_cold_bytes_per_s"], doc="a weight beyond the private caches"
    )
    kernel_s = property(lambda self: self._compiled("kernel_s"), doc="a compiled kernel's fixed cost")
    call_s = property(lambda self: self._compiled("call_s"), doc="a call of a program that calls the GEMM library")
    loop_call_s = property(lambda self: self._compiled("loop_call_s"), doc="a call of a program of loops only")
    arg_s = property(lambda self: self._compiled("arg_s"), doc="each argument beyond two")

    @property
    def gemm_curve(self) -> tuple[tuple[float, float], ...]:
        """(FLOPs, FLOP/s) of the library's square f32 rows, smallest first (`size_factor`)."""
        return tuple((2 * n**3, self.target[f"{self._lib}gemm_f32{suffix}_flop_per_s"]) for n, suffix in self._curve)


def runtime_rates(target: Target, runtime: str) -> RuntimeRates:
    """`runtime`'s fitted quantities on `target`, as attributes.

    Raises:
        UnknownName: a runtime other than eager, inductor and xla.
    """
    return RuntimeRates(target, runtime)


def size_factor(target: Target, runtime: str, flops: float | None) -> float:
    """The GEMM library's rate at `flops` (one GEMM: one batch member) over its rate at the
    large row, from its measured square f32 rows (MKL: 32^3, 128^3, 256^3, 1024^3; XLA:CPU from
    128^3, XLA_GEMM_CURVE): straight in log(FLOPs) between two neighbouring rows, flat outside
    them. Between rows a (F_a, r_a) and b (F_b, r_b):
        f = ln(flops / F_a) / ln(F_b / F_a);   rate = r_a + f * (r_b - r_a)
    A small GEMM runs below the large one's rate (fewer threads busy, its packing and edges a
    larger share; MKL's 32^3 at an eighth of its 128^3 rate here, on two threads); XLA:CPU's dots stay at
    about one core's rate up to the middle row, then use both. 1 without `flops`."""
    if flops is None:
        return 1.0
    points = runtime_rates(target, runtime).gemm_curve
    flops = min(max(flops, points[0][0]), points[-1][0])
    for (fa, ra), (fb, rb) in zip(points, points[1:]):
        if flops <= fb:
            f = math.log(flops / fa) / math.log(fb / fa)
            return (ra + f * (rb - ra)) / points[-1][1]
    return 1.0


def gemm_rate(target: Target, dtype: str, runtime: str = "inductor", flops: float | None = None) -> float:
    """FLOP/s of a GEMM in `dtype` through `runtime`'s GEMM library (measured); with `flops`
    (one batch member's), at that size (`size_factor`)."""
    key = f"fitted.gemm_{GEMM_DTYPES.get(dtype, 'f32')}_flop_per_s"
    rate = target[key] if key in target.quantities else target["fitted.gemm_f32_flop_per_s"]
    rates = runtime_rates(target, runtime)
    if rates.record.library != "fitted.":  # its own library (XLA:CPU's), at MKL's ratio between this type and f32
        rate *= rates.gemm_f32_flop_per_s / target["fitted.gemm_f32_flop_per_s"]
    rate *= size_factor(target, runtime, flops)
    return rate / 2 if dtype == "f64" else rate  # an f64 vector holds half the lanes


def gemm_seconds(target: Target, dtype: str, runtime: str, m: int, n: int, k: int, batch: int = 1) -> float:
    """Time of a GEMM C[m, n] = A[m, k] @ B[k, n] (each of `batch` members) through `runtime`'s
    library (<lib>: "xla_" under XLA, "" for MKL under eager and Inductor). A BLAS packs the
    operand of the larger free dimension, P = k * max(m, n) elements, once per call, and streams
    the other's min(m, n) rows through it; or, for very few rows, runs a matrix-vector product
    per row, each reading P whole:
        pass    = P * bytes / fitted.<lib>gemv_bytes_per_s
        square  = 2mnk / gemm_rate at its FLOPs                  (the square rows' curve, `size_factor`)
                  + (P - (mnk)^(2/3)) * bytes / fitted.<lib>gemm_pack_bytes_per_s
                  + P * bytes / main memory's bandwidth, when P outgrows `shared_cache_bytes`
        time    = batch * max(pass, min(square, min(m, n) * pass))
    The square term's second part is the packing a skinny GEMM does beyond a square one of its
    FLOPs (MKL's [32, 256] @ [256, 512] ran 1.35x a square GEMM of its FLOPs here); its third,
    a packed operand read from memory before the arithmetic (XLA's [m, 2048] @ [2048, 2048],
    16 MiB, took 0.5 ms + its FLOPs at 180 GFLOP/s for m = 8 to 64, where 4 MiB added about
    nothing). MKL ran m = 1 and 2 row by row (1024 x 1024 at 76 us a row), and no GEMM takes less
    than one pass over P (XLA's one-row GEMM, which the curve alone put at a third of its time)."""
    flops = 2 * m * n * k
    e = element_bytes(dtype)
    rates = runtime_rates(target, runtime)
    square = flops / gemm_rate(target, dtype, runtime, flops)
    extra = k * max(m, n) - (m * n * k) ** (2 / 3)
    if extra > 0:
        square += extra * e / rates.gemm_pack_bytes_per_s
    packed = k * max(m, n) * e
    if packed > shared_cache_bytes(target):  # packed from main memory, before the arithmetic that reads it
        square += packed / target.level_value(target.main_memory_level, "bytes_per_s")
    one_pass = packed / rates.gemv_bytes_per_s
    return batch * max(min(square, min(m, n) * one_pass), one_pass)


def shared_cache_bytes(target: Target) -> float:
    """What a working set can count on in the outermost cache: SHARED_LEVEL_SHARE of it when the
    cores share it (its `per` unset), all of it when each core has its own."""
    last = next(lv for lv in target.levels if lv.role != "main")
    return target.level_capacity(last) * (1.0 if last.per else SHARED_LEVEL_SHARE)


def reduce_rate(target: Target, runtime: str) -> float:
    """Elements per second a row reduction reads through `runtime` (measured: a sum over rows of
    512, host_calibration's reduce rows)."""
    return runtime_rates(target, runtime).reduce_per_s


def conv_rate(target: Target, dtype: str, runtime: str, depth: int | None = None) -> float:
    """FLOP/s of a convolution through `runtime`'s library (measured in f32; other types at the
    GEMM's ratio); with its reduction depth K (c_in * kernel taps), times K / (K + K0)."""
    rates = runtime_rates(target, runtime)
    rate = rates.conv_flop_per_s * gemm_rate(target, dtype, runtime) / gemm_rate(target, "f32", runtime)
    return rate if depth is None else rate * depth / (depth + rates.conv_depth)


def xla_eigen_conv(conv) -> int:
    """Output pixels (images x positions) of a convolution XLA:CPU runs with its own Eigen kernel
    rather than YNNPACK (YNN_CONV_MIN_CHANNELS, or not 2-D); 0 for one YNNPACK takes. Its time
    there followed the pixels, not the FLOPs: 2 x 16 x 16 pixels took 33-72 us at 4 -> 4, 8 -> 8,
    8 -> 16 and 16 -> 16 channels alike (0.15 to 2.4 MFLOP)."""
    dims = conv.attr("dimension_numbers")
    out, kernel = conv.result_types[0].shape, conv.operand_types[1].shape
    channels = max(kernel[dims.kernel_input_feature], kernel[dims.kernel_output_feature])
    if channels > YNN_CONV_MIN_CHANNELS and len(dims.output_spatial) == 2:
        return 0
    return out[dims.output_batch] * math.prod(out[d] for d in dims.output_spatial)


def conv_fixed_s(target: Target, runtime: str, images: int) -> float:
    """The convolution library's fixed cost of one call: one image's, or a batch's (measured apart)."""
    rates = runtime_rates(target, runtime)
    return rates.conv_batched_s if images > 1 else rates.conv_s


def transcendental_rate(target: Target, runtime: str, function: str = "exponential") -> float:
    """Elements per second of `function` (the IR's name, or an eager ATen kernel's) through `runtime`, on every core."""
    key = f"fitted.{runtime}_{function}_per_s"
    return target[key if key in target.quantities else f"fitted.{runtime}_exponential_per_s"]


def vector_rate(target: Target) -> float:
    return target["chip.cores"] * target["chip.f32_lanes"] * target["chip.clock_hz"]


def threads(target: Target, elements: float) -> float:
    """The share of the cores an op or loop of `elements` results uses: all above GRAIN, one below."""
    return 1.0 if elements >= GRAIN else 1.0 / target["chip.cores"]


def level_for(target: Target, footprint: float) -> Level:
    """The innermost level whose capacity (every instance) holds `footprint` bytes; else main memory."""
    for level in reversed(target.levels):
        if level.role != "main" and footprint <= target.level_capacity(level):
            return level
    return target.level("main")


def _broadcast_factor(op) -> int:
    """How often a broadcast_in_dim re-reads each operand element from loops outside its own."""
    dims = tuple(op.attr("broadcast_dimensions") or ())
    out, shape = op.result_types[0].shape, op.operand_types[0].shape
    varies = {d for i, d in enumerate(dims) if shape[i] > 1}  # result dims the operand moves along
    last = max(varies, default=-1)
    return math.prod(out[d] for d in range(last) if d not in varies)


def evaluations(plan: Plan, group: Group) -> dict[int, int]:
    """Member op index -> how many times the fused loop evaluates each of its elements
    (docs/host-cpu.md, "Recomputation in fused loops").
    Broadcasts and reshapes form no kernel of their own (plan.value_graph sees through them), so
    an operand is followed back through them to the member that produced it."""
    members = list(group.members)
    produced = {v: i for i in members for v in plan.ops[i].results}
    producer_op = {v: p for p in plan.ops for v in p.results}
    demand = {i: 1 for i in members}
    for i in reversed(members):
        p = plan.ops[i]
        factor = _broadcast_factor(p.op) if p.op.short_name == "broadcast_in_dim" else 1
        for v in p.operands:
            f, seen = factor, 0
            while v not in produced and v in producer_op and seen < 16:  # through the views outside the group
                q = producer_op[v]
                if q.op.short_name == "broadcast_in_dim":
                    f *= _broadcast_factor(q.op)
                elif q.op.short_name not in ("reshape", "transpose", "convert", "bitcast_convert"):
                    break
                v, seen = (q.operands[0] if q.operands else v), seen + 1
            if v in produced:
                j = produced[v]
                demand[j] = max(demand[j], demand[i] * f)
    return demand


def loop_elements(plan: Plan, group: Group) -> int:
    """The fused loop's iteration space: its largest result, or a reduction's operand."""
    sizes = [
        t.elements for i in group.members for t in (*plan.ops[i].op.result_types, *plan.ops[i].op.operand_types[:1])
    ]
    return max(sizes, default=1)


def fused_work(module: Module, plan: Plan, group: Group, runtime: str = "inductor") -> tuple[float, dict[str, float]]:
    """(FLOPs, function -> evaluations) a fused loop performs, recomputation included; "reduce"
    counts the elements its reductions read (priced at `reduce_rate`, not as FLOPs). Under
    XLA, a cosine of a value the loop also takes the sine of is free: XLA:CPU inlines both
    polynomials and LLVM shares their range reduction (RoPE's cos and sin of one angle ran in
    the time of the sines alone here); Inductor calls Sleef's two functions apart."""
    flops, trans, shares_sincos = 0.0, {}, host_runtime(runtime).shares_sincos
    sines = {plan.ops[i].operands[:1] for i in group.members if plan.ops[i].op.short_name == "sine"}
    for i, times in evaluations(plan, group).items():
        op = plan.ops[i].op
        cost = op_cost(op, module)
        if op.short_name == "reduce":  # the elements it reads, at the runtime's reduction rate
            trans["reduce"] = trans.get("reduce", 0.0) + op.operand_types[0].elements * times
            continue
        flops += cost.flops * plan.flop_factor(op) * times
        if shares_sincos and op.short_name == "cosine" and plan.ops[i].operands[:1] in sines:
            continue
        if cost.transcendentals:
            trans[op.short_name] = trans.get(op.short_name, 0.0) + cost.transcendentals * times
    return flops, trans


def strided_read(op, target: Target) -> tuple[int, bool]:
    """(elements a transpose reads a cache line or more apart, whether that stride conflicts in
    the L1): its result's innermost dimension (of more than one element) comes from an operand
    dimension of stride s bytes. 0 when s < the L1's line (chip.l1_line_bytes: the line's next
    elements are read next), or when the operand fits in one core's L1 (every line it walks
    stays there). With the L1's set span S = its bytes / its ways (the bytes that map to distinct sets),
        sets the walk touches = min(S / line, S / gcd(s, S))
    and the stride conflicts when ways * sets touched <= f32 lanes: the lines one vector of
    reads needs do not all fit in the sets they map to (s = 4 KiB here: one set of 8 lines)."""
    if op.short_name != "transpose":
        return 0, False
    perm, source, out = tuple(op.attr("permutation") or ()), op.operand_types[0], op.result_types[0]
    inner = [d for d in range(len(out.shape)) if out.shape[d] > 1]
    if not inner or len(perm) != len(out.shape):
        return 0, False
    stride = math.prod(source.shape[perm[inner[-1]] + 1 :]) * element_bytes(source.dtype)
    l1 = target.levels[-1]  # the innermost level: one core's
    l1_bytes, ways, line = (
        int(target.level_value(l1, "bytes")),
        int(target["chip.l1_ways"]),
        int(target["chip.l1_line_bytes"]),
    )
    if stride < line or source.nbytes <= l1_bytes:
        return 0, False
    span = l1_bytes // max(ways, 1)
    touched = min(span // line, span // math.gcd(stride, span))
    return out.elements, ways * touched <= target["chip.f32_lanes"]


def scalar_loop(op, target: Target) -> bool:
    """Whether `op` makes its fused loop scalar (SCALAR_LOOP_OPS), except a gather that copies
    rows of at least a vector along the operand's innermost dimension (an embedding's: each index
    picks a whole row, copied with vector loads and stores under Inductor and XLA alike; the
    1024 x 256 embedding ran in 26-62 us, where one element op per cycle would take 50)."""
    if op.short_name not in SCALAR_LOOP_OPS:
        return False
    sizes = tuple(op.attr("slice_sizes") or ())
    return not (op.short_name == "gather" and sizes and sizes[-1] >= target["chip.f32_lanes"])


def stream_bandwidth(target: Target, runtime: str, level: Level) -> float:
    """Bytes per second a kernel streams through `level`: the level's (ATen's stream rows, on
    every core), XLA:CPU's kernels no faster than its own stream row (fitted.xla_stream_bytes_per_s)."""
    bandwidth = target.level_value(level, "bytes_per_s")
    cap = host_runtime(runtime).stream_cap
    return min(bandwidth, target[cap]) if cap else bandwidth


def cpu_group_cost(module: Module, plan: Plan, group: Group, target: Target, runtime: str = "inductor") -> Cost:
    record = host_runtime(runtime)
    if not record.compiled:
        raise UnknownName("compiled CPU runtime", runtime, COMPILED)
    placement = plan.placements[group.id]
    work = group_work(plan, module, group)
    footprint = placement.at(target.main_memory_level)
    level = level_for(target, footprint)
    memory_s = {level.name: footprint / stream_bandwidth(target, runtime, level)}
    bytes_ = {level.name: footprint}
    overhead_s = runtime_rates(target, runtime).kernel_s
    if group.kind == "attention":  # fuse_attention: ATen's flash attention, as eagerly (`attention_seconds`)
        shape = plan.attention[group.id]
        flops = group_work(plan, module, group).flops
        compute_s = attention_seconds(target, shape.dtype, dot_flops(plan, group), shape.kv_heads, shape.query_rows)
        return roofline_cost(flops, flops, compute_s, bytes_, memory_s, compute_s, overhead_s)
    if group.kind == "contraction":
        tiling = plan.tilings[group.id]
        shape = tiling.shape
        rate = gemm_rate(target, shape.dtype, runtime, shape.flops / max(shape.batch, 1))
        conv = next((plan.ops[i].op for i in group.members if plan.ops[i].op.short_name == "convolution"), None)
        if record.dot_call and conv is None:  # XLA:CPU's dot is a library call with a fixed cost of its own
            overhead_s += target[record.dot_call]
        if conv is not None:  # its own library kernel: K = shape.k, the images from its dimension numbers
            images = conv.result_types[0].shape[conv.attr("dimension_numbers").output_batch]
            rate = conv_rate(target, shape.dtype, runtime, shape.k)
            overhead_s += conv_fixed_s(target, runtime, images)
        epilogue_s = work.epilogue_flops / vector_rate(target) + work.transcendentals / transcendental_rate(
            target, runtime
        )
        pixels = xla_eigen_conv(conv) if conv is not None and record.eigen_conv else 0
        gemm_s = (
            pixels * target[record.eigen_conv]
            if pixels
            else tiling.shape.flops / rate
            if conv is not None
            else gemm_seconds(target, shape.dtype, runtime, shape.m, shape.n, shape.k, shape.batch)
        )
        compute_s = gemm_s + epilogue_s
        busy_s = (
            gemm_s if pixels else gemm_s * tiling.padded_flops / max(tiling.shape.flops, 1)
        ) + epilogue_s  # a pixel's cost is measured whole
        padded = tiling.padded_flops * shard_factor(plan, group) + work.epilogue_flops
        return roofline_cost(work.flops, padded, compute_s, bytes_, memory_s, busy_s, overhead_s)
    flops, trans = fused_work(module, plan, group, runtime)
    if record.strided_reads:  # XLA:CPU's loop reads a transposed operand element by element (docs/host-cpu.md)
        for i, n in evaluations(plan, group).items():
            elements, conflict = strided_read(plan.ops[i].op, target)
            if elements:
                key = "conflict" if conflict else "strided"
                trans[key] = trans.get(key, 0.0) + elements * n
    scalar = any(scalar_loop(plan.ops[i].op, target) for i in group.members)
    rate = target["chip.cores"] * target["chip.clock_hz"] if scalar else vector_rate(target)
    share = threads(target, loop_elements(plan, group))
    compute_s = (flops / rate + sum(n / _element_rate(target, runtime, fn) for fn, n in trans.items())) / share
    return roofline_cost(work.flops, int(flops), compute_s, bytes_, memory_s, compute_s, overhead_s)


def _element_rate(target: Target, runtime: str, what: str) -> float:
    """Elements per second of a fused loop's `what`: a reduction's reads, XLA's strided reads, or a function."""
    if what == "reduce":
        return reduce_rate(target, runtime)
    strided = dict(host_runtime(runtime).strided_reads)
    if what in strided:  # XLA's transposed reads (only its loops count them)
        return target[strided[what]]
    return transcendental_rate(target, runtime, what)


def private_bytes(target: Target) -> float:
    """The caches each core has to itself, every core's together (the levels counted per core)."""
    return sum(target.level_capacity(lv) for lv in target.levels if lv.per == "chip.cores")


def cold_weight_seconds(target: Target, runtime: str, read_bytes: float, weight_bytes: float) -> float:
    """Time a program's GEMMs spend streaming `read_bytes` of their arguments (weights) when all
    it reads as weights, `weight_bytes`, outgrows the private caches: a call then finds them in
    the shared cache or beyond, and the library reads them, as it packs them, at the measured
    fitted.gemm_cold_bytes_per_s (XLA's: fitted.xla_gemm_cold_bytes_per_s); 0 when they fit."""
    if weight_bytes <= private_bytes(target):
        return 0.0
    return read_bytes / runtime_rates(target, runtime).gemm_cold_bytes_per_s


def attention_seconds(target: Target, dtype: str, flops: float, members: int, rows: int) -> float:
    """ATen's flash attention for CPU (eager, and Inductor's extern call): its two dots' FLOPs at
    the GEMM library's rate for one member's size (a batch x head; GQA's KV head in a fused
    group), + fitted.eager_sdpa_row_s per query row (its online softmax's bookkeeping)."""
    return flops / gemm_rate(target, dtype, "eager", flops / max(members, 1)) + rows * target["fitted.eager_sdpa_row_s"]


def eager_op_seconds(op, target: Target) -> float:
    """One eagerly dispatched ATen op (a host_runtime.FrameworkOp): max(compute, memory) + dispatch."""
    level = level_for(target, op.bytes)
    memory_s = op.bytes / target.level_value(level, "bytes_per_s")
    if op.name == "convolution":  # oneDNN's convolution: its own rate (at its depth) and fixed cost per call
        compute_s = op.flops / conv_rate(target, op.dtype, "eager", op.depth or None) + conv_fixed_s(
            target, "eager", op.batch
        )
    elif op.contraction:
        compute_s = (
            attention_seconds(target, op.dtype, op.flops, op.batch, op.rows)
            if "scaled_dot_product" in op.name
            else gemm_seconds(target, op.dtype, "eager", *op.mnk, op.batch)
            if op.mnk
            else op.flops / gemm_rate(target, op.dtype, "eager", op.flops / max(op.batch, 1))
        )
    else:
        share = threads(target, op.elements)
        compute_s = (
            op.flops / vector_rate(target)
            + op.reduced / reduce_rate(target, "eager")
            + op.transcendentals / transcendental_rate(target, "eager", op.function)
        ) / share
    fixed_s = target["fitted.eager_index_add_s"] if op.name in SORTED_SCATTERS else 0.0
    if op.function in EAGER_KERNELS and op.transcendentals:  # ATen's own kernel: its measured fixed cost per call
        fixed_s += target[f"fitted.eager_{op.function}_s"]
    return (
        max(compute_s, memory_s) + fixed_s + target["fitted.eager_nested_s" if op.nested else "fitted.eager_dispatch_s"]
    )


def call_overhead_s(target: Target, runtime: str, loops_only: bool = False) -> float:
    """The fixed cost of one call of a compiled program through `runtime` (guards, wrapper,
    dispatch): measured on a one-GEMM program (fitted.R_call_s), and on a one-loop program for a
    program that calls no library kernel (fitted.R_loop_call_s; a GEMM program's call costs more:
    the library's threads are woken and its buffers allocated)."""
    rates = runtime_rates(target, runtime)
    return rates.loop_call_s if loops_only else rates.call_s
