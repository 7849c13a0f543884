"""Calibration: the measured kernels the GPU models are fitted to, and the fits.

hardware_models/kernels.csv is a verbatim copy of the GPU and Spyre rows of
../shared/calibration/kernels.csv (same ids; a test checks the copy where the shared file
exists), and the AMD rows this project added with their sources (ADDED: AMD's max-achievable
GEMM FLOPs, fitted as the NVIDIA GEMM rows are: gemm_efficiency on each chip's bf16 row). Each fitted value in a target file cites its row ("F G23"), and `refit` recomputes it.
Spyre's fitted rates are the rows' own figures (S01-S06: bandwidths, MAC/ns per core). GPUs:

    hbm_efficiency    = STREAM triad bandwidth / hbm_bytes_per_s                         (G30, G31, G32)
    launch_overhead_s = t(fp32 add, N = 65,536) - 3 * 4 * N / (hbm_bytes_per_s * hbm_efficiency)
                        (G41's note, measured on an H100: 1.5 us)
    gemm_efficiency   = busy_s at efficiency 1 / (measured time - launch_overhead_s - gemm_overhead_s)
                        measured time = 2 M N K / measured FLOP/s                          (G23, G27, G28)
    gemm_overhead_s   = measured time - the model's time without it, for the 1024^3 GEMM   (G26, an H100;
                        its tiles and split-K chosen as families/gpu/cost.py and families/gpu/__init__.py say)  carried over)
    allreduce_bus_bytes_per_s = NCCL's bus bandwidth for 8 GB on 8 GPUs                    (G33, G34, G35)
    flash_attention_fraction  = FlashAttention-2's FLOP/s on the tiles it computes / the    (G36, an H100;
                                dense bf16 peak (flash_fraction: causal, fwd + bwd figure)  carried over)

`check` runs the model on every row, fitted or not (the other GEMM sizes, the large vector
add), and reports prediction against measurement.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from reference.ir.graph import Block, DotDims, Function, Module, Op, TensorType

KERNELS_CSV = Path(__file__).with_name("kernels.csv")


@dataclass(frozen=True)
class Row:
    """One measured row, as the model reads it."""

    id: str
    target: str
    workload: str  # "gemm", "bmm<B>", "triad", "add", "negate", "reduce", "transpose"
    size: int  # M = N = K for a GEMM, elements for a stream, the side of a square matrix
    dtype: str
    measured: float
    unit: str  # "flop_per_s", "bytes_per_s", "s", "mac_per_s_per_core" or "bus_bytes_per_s"
    shape: tuple[int, int, int] = ()  # a GEMM's (M, N, K) when not M = N = K = size

    @property
    def mnk(self) -> tuple[int, int, int]:
        return self.shape or (self.size, self.size, self.size)


# Which workload each row measured (its "model" and "precision" columns, read once by hand).
# Spyre's rows give no sizes; the ones here are large enough to be compute-dominant (matmuls)
# or streaming-dominant (the rest), as the rows were fitted.
ROWS = (
    Row("G23", "h100", "gemm", 8192, "f8E4M3FN", 1290.1e12, "flop_per_s"),
    Row("G24", "h100", "gemm", 16384, "f8E4M3FN", 1377.3e12, "flop_per_s"),
    Row("G25", "h100", "gemm", 4096, "f8E4M3FN", 1216.9e12, "flop_per_s"),
    Row("G26", "h100", "gemm", 1024, "f8E4M3FN", 274.1e12, "flop_per_s"),
    Row("G27", "h200", "gemm", 8192, "f8E4M3FN", 1300.6e12, "flop_per_s"),
    Row("G28", "a100", "gemm", 8192, "f16", 253.7e12, "flop_per_s"),
    Row("G29", "a100", "gemm", 16384, "f16", 256.5e12, "flop_per_s"),
    Row("G30", "h100", "triad", 2**28, "f32", 2.97e12, "bytes_per_s"),
    Row("G31", "h200", "triad", 2**28, "f32", 4.15e12, "bytes_per_s"),
    Row("G32", "a100", "triad", 2**28, "f32", 1.70e12, "bytes_per_s"),
    Row("G41", "h100", "add", 1024**3, "f32", 4.1e-3, "s"),
    Row("G41", "h100", "add", 65536, "f32", 1.5e-6, "s"),  # the row's note: "N=65,536 measured ~1.5 us"
    Row("G33", "h100", "allreduce", 8 * 10**9, "bf16", 478.87e9, "bus_bytes_per_s"),
    Row("G34", "h200", "allreduce", 8 * 10**9, "bf16", 479.98e9, "bus_bytes_per_s"),
    Row("G35", "a100", "allreduce", 8 * 10**9, "bf16", 231.58e9, "bus_bytes_per_s"),
    # G36: FlashAttention-2, batch 2, seq 8192, head_dim 128, 16 heads (the FlashAttention
    # benchmark's width 2048), causal, the fwd + bwd figure (the Azure guide's FlashAttention.py keeps
    # the causal=True, headdim 128 row of benchmark_flash_attention.py); its H100 figure fits
    # families/gpu/cost.py's attention fraction, its H200 figure (329.3, the row's note) is checked, not fitted.
    Row("G36", "h100", "attention", 8192, "bf16", 327.9e12, "flop_per_s"),
    Row("G36", "h200", "attention", 8192, "bf16", 329.3e12, "flop_per_s"),
    # A01-A06: AMD's max-achievable GEMM FLOPs (hipBLASLt), rows this project added beyond the
    # shared table (ADDED); each chip's bf16 row fits its gemm_efficiency, the other types check it.
    Row("A01", "mi300x", "gemm", 4096, "bf16", 708e12, "flop_per_s", (4096, 4864, 32896)),
    Row("A02", "mi300x", "gemm", 4096, "f16", 654e12, "flop_per_s", (4096, 4864, 32896)),
    Row("A03", "mi300x", "gemm", 4096, "f8E4M3FNUZ", 1273e12, "flop_per_s", (4096, 3648, 32896)),
    Row("A04", "mi325x", "gemm", 4096, "bf16", 843e12, "flop_per_s", (4096, 4864, 32896)),
    Row("A05", "mi325x", "gemm", 4096, "f16", 794e12, "flop_per_s", (4096, 4864, 32896)),
    Row("A06", "mi325x", "gemm", 4096, "f8E4M3FNUZ", 1519e12, "flop_per_s", (4096, 3648, 32896)),
    Row("S01", "spyre", "reduce", 4096, "f16", 150e9, "bytes_per_s"),
    Row("S02", "spyre", "negate", 4096, "f16", 105e9, "bytes_per_s"),
    Row("S03", "spyre", "gemm", 4096, "f16", 1140e9, "mac_per_s_per_core"),
    Row("S04", "spyre", "bmm8", 2048, "f16", 160e9, "mac_per_s_per_core"),
    Row("S05", "spyre", "bmm2", 2048, "f16", 705e9, "mac_per_s_per_core"),
    Row("S06", "spyre", "transpose", 4096, "f16", 116e9, "bytes_per_s"),
)
# Which fitted key each Spyre row sets, in the row's own unit (bytes/s or MAC/s per core).
SPYRE_FITS = {
    "S01": "fitted.lpddr5_one_way_bytes_per_s",
    "S02": "fitted.lpddr5_read_write_bytes_per_s",
    "S03": "fitted.matmul_mac_per_s_per_core",
    "S04": "fitted.bmm_mac_per_s_per_core",
    "S05": "fitted.bmm_small_batch_mac_per_s_per_core",
    "S06": "fitted.restickify_bytes_per_s",
}
# Rows of kernels.csv this project added beyond ../shared/calibration/kernels.csv, each with its source.
ADDED = ("A01", "A02", "A03", "A04", "A05", "A06")
# Rows the model does not reproduce yet, each with the reason (a test checks that every other row is checked):
NOT_MODELED: dict[str, str] = {
    "G38": "NCCL all-reduce at ~10 GB/device with SHARP off (370 GB/s): the model has one bus bandwidth per target, "
    "fitted on G33's nccl-tests figure (478.87 GB/s); the SHARP on/off difference is not modelled",
    "G39": "all-reduce of a 58 MB tensor at 150 GB/s: the size dependence of NCCL's bus bandwidth below ~1 GB (protocol "
    "and channel choice) is not modelled; a latency plus bandwidth model would need a 0.46 ms latency to fit it",
    "G40": "all-gather: no partition here issues an all-gather (tensor parallelism all-reduces the hidden state)",
}
ATTENTION_HEADS, ATTENTION_HEAD_DIM, ATTENTION_BATCH = 16, 128, 2  # G36's workload (row and FlashAttention's benchmark)
ALLREDUCE_GPUS = 8  # G33-G35 ran on 8-GPU nodes


def read_csv(path: Path = KERNELS_CSV) -> dict[str, dict]:
    with open(path, newline="") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def gemm_module(m: int, n: int, k: int, dtype: str) -> Module:
    """C[m, n] = A[m, k] @ B[k, n] as IR, built directly (no framework needed)."""
    a, b, c = TensorType((m, k), dtype), TensorType((k, n), dtype), TensorType((m, n), dtype)
    dot = Op(
        "stablehlo.dot_general",
        ("%0",),
        (c,),
        ("%a", "%b"),
        (a, b),
        (("dot_dimension_numbers", DotDims((), (), (1,), (0,))),),
    )
    ret = Op("func.return", (), (), ("%0",), (c,))
    return Module((Function("main", (("%a", a), ("%b", b)), (c,), (dot, ret)),))


def stream_module(kind: str, n: int, dtype: str) -> Module:
    """add: c = a + b; triad (STREAM): a = b + s * c, with s a scalar broadcast to n."""
    v, s = TensorType((n,), dtype), TensorType((), dtype)
    ops = []
    if kind == "triad":
        ops.append(Op("stablehlo.broadcast_in_dim", ("%sb",), (v,), ("%s",), (s,), (("broadcast_dimensions", ()),)))
        ops.append(Op("stablehlo.multiply", ("%sc",), (v,), ("%sb", "%c"), (v, v)))
        ops.append(Op("stablehlo.add", ("%0",), (v,), ("%b", "%sc"), (v, v)))
        args = (("%b", v), ("%c", v), ("%s", s))
    else:
        ops.append(Op("stablehlo.add", ("%0",), (v,), ("%b", "%c"), (v, v)))
        args = (("%b", v), ("%c", v))
    ops.append(Op("func.return", (), (), ("%0",), (v,)))
    return Module((Function("main", args, (v,), tuple(ops)),))


def bmm_module(batch: int, size: int, dtype: str) -> Module:
    """C[b, s, s] = A[b, s, s] @ B[b, s, s]."""
    t = TensorType((batch, size, size), dtype)
    dims = DotDims((0,), (0,), (2,), (1,))
    dot = Op("stablehlo.dot_general", ("%0",), (t,), ("%a", "%b"), (t, t), (("dot_dimension_numbers", dims),))
    return Module((Function("main", (("%a", t), ("%b", t)), (t,), (dot, Op("func.return", (), (), ("%0",), (t,)))),))


def matrix_module(kind: str, size: int, dtype: str) -> Module:
    """negate (one read, one write), reduce (row sums: read only, a small write) or transpose."""
    x = TensorType((size, size), dtype)
    if kind == "reduce":
        r, s = TensorType((size,), dtype), TensorType((), dtype)
        body = Op("stablehlo.add", ("%s",), (s,), ("%p", "%q"), (s, s))
        region = Block((("%p", s), ("%q", s)), (body, Op("stablehlo.return", (), (), ("%s",), (s,))))
        zero = Op("stablehlo.constant", ("%z",), (s,), (), (), (("value", ("splat", 0.0)),))
        ops = (zero, Op("stablehlo.reduce", ("%0",), (r,), ("%x", "%z"), (x, s), (("dimensions", (1,)),), (region,)))
        out = r
    else:
        name = "stablehlo.negate" if kind == "negate" else "stablehlo.transpose"
        attrs = (("permutation", (1, 0)),) if kind == "transpose" else ()
        ops, out = (Op(name, ("%0",), (x,), ("%x",), (x,), attrs),), x
    return Module((Function("main", (("%x", x),), (out,), (*ops, Op("func.return", (), (), ("%0",), (out,)))),))


def attention_module(batch: int, heads: int, seq: int, head_dim: int, dtype: str, causal: bool = False) -> Module:
    """softmax(Q K^T / sqrt(d)) V over [batch * heads, seq, head_dim], as an SDPA lowers (causal:
    the scores a key after the query would give set to -inf by a positional mask, key <= query):
    the pattern fuse_attention recognizes."""
    bh = batch * heads
    q = TensorType((bh, seq, head_dim), dtype)
    scores, f32 = TensorType((bh, seq, seq), "f32"), TensorType((), "f32")
    row_t = TensorType((bh, seq), "f32")
    positions, square = TensorType((seq, seq), "i32"), TensorType((seq, seq), "i1")
    mask = (
        (
            Op("stablehlo.iota", ("%qi",), (positions,), (), (), (("iota_dimension", 0),)),
            Op("stablehlo.iota", ("%ki",), (positions,), (), (), (("iota_dimension", 1),)),
            Op(
                "stablehlo.compare",
                ("%allow",),
                (square,),
                ("%ki", "%qi"),
                (positions, positions),
                (("comparison_direction", "LE"),),
            ),
            Op(
                "stablehlo.broadcast_in_dim",
                ("%allowb",),
                (TensorType((bh, seq, seq), "i1"),),
                ("%allow",),
                (square,),
                (("broadcast_dimensions", (1, 2)),),
            ),
            Op(
                "stablehlo.broadcast_in_dim",
                ("%ninfb",),
                (scores,),
                ("%ninf",),
                (f32,),
                (("broadcast_dimensions", ()),),
            ),
            Op(
                "stablehlo.select",
                ("%sm",),
                (scores,),
                ("%allowb", "%ss", "%ninfb"),
                (TensorType((bh, seq, seq), "i1"), scores, scores),
            ),
        )
        if causal
        else ()
    )
    logits = "%sm" if causal else "%ss"

    def reduce(name: str, source: str, init: str, combine: str) -> tuple[Op, ...]:
        body = Op(f"stablehlo.{combine}", ("%r",), (f32,), ("%p", "%q"), (f32, f32))
        region = Block((("%p", f32), ("%q", f32)), (body, Op("stablehlo.return", (), (), ("%r",), (f32,))))
        return (
            Op(
                "stablehlo.reduce", (name,), (row_t,), (source, init), (scores, f32), (("dimensions", (2,)),), (region,)
            ),
            Op(
                "stablehlo.broadcast_in_dim",
                (f"{name}b",),
                (scores,),
                (name,),
                (row_t,),
                (("broadcast_dimensions", (0, 1)),),
            ),
        )

    dims_qk, dims_pv = DotDims((0,), (0,), (2,), (2,)), DotDims((0,), (0,), (2,), (1,))
    ops = (
        Op(
            "stablehlo.dot_general",
            ("%s",),
            (TensorType((bh, seq, seq), dtype),),
            ("%q", "%k"),
            (q, q),
            (("dot_dimension_numbers", dims_qk),),
        ),
        Op("stablehlo.convert", ("%sf",), (scores,), ("%s",), (TensorType((bh, seq, seq), dtype),)),
        Op("stablehlo.constant", ("%scale",), (f32,), (), (), (("value", ("splat", head_dim**-0.5)),)),
        Op("stablehlo.broadcast_in_dim", ("%scaleb",), (scores,), ("%scale",), (f32,), (("broadcast_dimensions", ()),)),
        Op("stablehlo.multiply", ("%ss",), (scores,), ("%sf", "%scaleb"), (scores, scores)),
        Op("stablehlo.constant", ("%ninf",), (f32,), (), (), (("value", ("splat", float("-inf"))),)),
        *mask,
        *reduce("%max", logits, "%ninf", "maximum"),
        Op("stablehlo.subtract", ("%d",), (scores,), (logits, "%maxb"), (scores, scores)),
        Op("stablehlo.exponential", ("%e",), (scores,), ("%d",), (scores,)),
        Op("stablehlo.constant", ("%zero",), (f32,), (), (), (("value", ("splat", 0.0)),)),
        *reduce("%sum", "%e", "%zero", "add"),
        Op("stablehlo.divide", ("%pf",), (scores,), ("%e", "%sumb"), (scores, scores)),
        Op("stablehlo.convert", ("%p",), (TensorType((bh, seq, seq), dtype),), ("%pf",), (scores,)),
        Op(
            "stablehlo.dot_general",
            ("%0",),
            (q,),
            ("%p", "%v"),
            (TensorType((bh, seq, seq), dtype), q),
            (("dot_dimension_numbers", dims_pv),),
        ),
    )
    return Module(
        (Function("main", (("%q", q), ("%k", q), ("%v", q)), (q,), (*ops, Op("func.return", (), (), ("%0",), (q,)))),)
    )


def row_module(row: Row) -> Module:
    if row.workload == "attention":
        return attention_module(ATTENTION_BATCH, ATTENTION_HEADS, row.size, ATTENTION_HEAD_DIM, row.dtype, causal=True)
    if row.workload == "gemm":
        return gemm_module(*row.mnk, row.dtype)
    if row.workload.startswith("bmm"):
        return bmm_module(int(row.workload[3:]), row.size, row.dtype)
    if row.workload in ("negate", "reduce", "transpose"):
        return matrix_module(row.workload, row.size, row.dtype)
    return stream_module(row.workload, row.size, row.dtype)


def row_amount(row: Row, target) -> float:
    """What the row's figure counts, per run: FLOPs, bytes, MACs per core, or 1 for a time."""
    element = 4 if row.dtype == "f32" else 2
    if row.workload in ("triad", "add"):
        return 3 * row.size * element
    if row.workload in ("negate", "transpose"):
        return 2 * row.size**2 * element  # read and write: the rows count both
    if row.workload == "reduce":
        return row.size**2 * element  # the read; the row-sum output is 1/size of it
    if (
        row.workload == "attention"
    ):  # the two dots' FLOPs, halved for the causal mask, as FlashAttention's benchmark counts
        return 4 * ATTENTION_BATCH * ATTENTION_HEADS * row.size**2 * ATTENTION_HEAD_DIM // 2
    batch = int(row.workload[3:]) if row.workload.startswith("bmm") else 1
    m, n, k = row.mnk
    flops = 2 * batch * m * n * k
    return flops / 2 / target["chip.cores"] if row.unit == "mac_per_s_per_core" else flops


def predict(row: Row, target) -> float:
    """The model's figure for the row, in the row's unit."""
    from hardware_models.cost.model import allreduce_cost
    from hardware_models.estimate import estimate

    if row.workload == "allreduce":  # the collective a tensor-parallel partition adds, as NCCL reports it
        n = ALLREDUCE_GPUS
        time_s = allreduce_cost(
            row.size, n, target["fitted.allreduce_bus_bytes_per_s"], target["schedule.collective_latency_s"]
        ).time_s
        return 2 * (n - 1) / n * row.size / time_s
    time_s = estimate(row_module(row), target).total.time_s
    return time_s if row.unit == "s" else row_amount(row, target) / time_s


def flash_fraction(row: Row, target) -> float:
    """fitted.flash_attention_fraction from an attention row: the kernel's rate on the FLOPs it
    computes (the dots over the score tiles it does not skip) over the dense 16-bit peak,

        fraction = measured FLOP/s x (computed FLOPs / the row's counted FLOPs) / peak

    where the row counts half the square (causal) and the kernel computes computed_share of it
    (fuse_attention: 65/128 for seq 8192 in 128 x 64 blocks)."""
    from hardware_models.pipelines import compile_plan

    plan = compile_plan(row_module(row), target)
    (shape,) = plan.attention.values()
    full = 4 * ATTENTION_BATCH * ATTENTION_HEADS * row.size**2 * ATTENTION_HEAD_DIM
    return row.measured * full * shape.computed_share / row_amount(row, target) / target["peak.bf16_flop_per_s"]


def measured_time_s(row: Row, target) -> float:
    return row.measured if row.unit == "s" else row_amount(row, target) / row.measured


def refit(target, used: list | None = None) -> dict[str, float]:
    """Recompute the target's fitted values from the rows they cite (formulas in the module doc);
    `used`, when given, receives every row a value was fitted on (its in-sample rows)."""
    used = [] if used is None else used
    from hardware_models.estimate import estimate
    from hardware_models.target import get_target

    cited = {key: q.calibration_row for key, q in target.quantities.items() if q.calibration_row}
    rows = {(r.id, r.target): r for r in ROWS}
    direct = [
        (key, rows[(row, target.name)])
        for key, row in cited.items()
        if SPYRE_FITS.get(row) == key or key == "fitted.allreduce_bus_bytes_per_s"
    ]
    used.extend(r for _, r in direct)
    out = {key: r.measured for key, r in direct}
    if "fitted.hbm_efficiency" in cited:
        row = rows[(cited["fitted.hbm_efficiency"], target.name)]
        used.append(row)
        out["fitted.hbm_efficiency"] = row.measured / target.main_memory_bytes_per_s
    if "schedule.launch_overhead_s" in cited:
        h100 = get_target("h100")
        small = next(r for r in ROWS if r.id == cited["schedule.launch_overhead_s"] and r.size == 65536)
        used.append(small)
        out["schedule.launch_overhead_s"] = small.measured - 3 * 4 * small.size / (
            h100.main_memory_bytes_per_s * h100["fitted.hbm_efficiency"]
        )
    if "schedule.gemm_overhead_s" in cited:  # fitted on an H100's row, carried over to the other GPUs
        h100 = get_target("h100")
        row = rows[(cited["schedule.gemm_overhead_s"], h100.name)]
        used.append(row)
        rest_s = estimate(row_module(row), h100).total.time_s - h100["schedule.gemm_overhead_s"]
        out["schedule.gemm_overhead_s"] = measured_time_s(row, h100) - rest_s
    if "fitted.flash_attention_fraction" in cited:  # fitted on an H100's row, carried over to the other GPUs
        h100 = get_target("h100")
        row = rows[(cited["fitted.flash_attention_fraction"], h100.name)]
        used.append(row)
        out["fitted.flash_attention_fraction"] = flash_fraction(row, h100)
    if "fitted.gemm_efficiency" in cited:
        row = rows[(cited["fitted.gemm_efficiency"], target.name)]
        used.append(row)
        at_one = target.with_overrides({"fitted.gemm_efficiency": 1.0})
        launch = out.get("schedule.launch_overhead_s", target["schedule.launch_overhead_s"])
        overhead = target.get("schedule.gemm_overhead_s") or 0.0  # a family without it has none
        busy = estimate(row_module(row), at_one).total
        busy_s = busy.time_s - target["schedule.launch_overhead_s"] - overhead
        out["fitted.gemm_efficiency"] = busy_s / (measured_time_s(row, target) - launch - overhead)
    return out


def fitted_rows(targets: dict) -> list[Row]:
    """Every row some target's fitted value was fitted on (in sample); the others are held out."""
    used: list[Row] = []
    for target in targets.values():
        if any(q.tag == "F" for q in target.quantities.values()):
            refit(target, used)
    return used


def check(targets: dict) -> list[dict]:
    """Every modelled row: measured, predicted, the relative error, and whether the row is in
    sample (a fitted value of its target was fitted on it) or out of sample (held out)."""
    fitted = fitted_rows(targets)
    results = []
    for row in ROWS:
        target = targets[row.target]
        predicted = predict(row, target)
        results.append(
            {
                "id": row.id,
                "target": row.target,
                "workload": f"{row.workload} {'x'.join(map(str, row.shape)) if row.shape else row.size} {row.dtype}",
                "unit": row.unit,
                "measured": row.measured,
                "predicted": predicted,
                "error": predicted / row.measured - 1,
                "sample": "in" if any(r is row for r in fitted) else "out",
            }
        )
    return results
