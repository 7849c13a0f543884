"""`make docs`: the measured tables and figures of docs/, regenerated from benchmarks/results/*.csv.

A generated block sits between `<!-- generated: NAME from benchmarks/docs_tables.py -->` and
`<!-- end generated: NAME -->`; BLOCKS maps each NAME to the CSV it reads and the function that
renders it. `python benchmarks/docs_tables.py` rewrites every block of README.md and docs/*.md;
`--check` exits 1 naming the stale ones (tests/test_docs_fresh.py asserts the same). A benchmark
that writes a new CSV changes the docs with one `make docs`, never by hand.
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SOURCE = "from benchmarks/docs_tables.py"
START = re.compile(r"^<!-- generated: (?P<name>[\w-]+) " + re.escape(SOURCE) + r" -->$")
END = re.compile(r"^<!-- end generated: (?P<name>[\w-]+) -->$")
MARKER = re.compile(r"<!--\s*(end\s+)?generated\b")  # anything that looks like a marker, well formed or not


class DocsError(SystemExit):
    """A page or CSV that cannot be rendered: one line naming the file (and line) and the problem."""

    def __init__(self, message: str):
        super().__init__(f"docs_tables: {message}")


def _rows(csv_name: str) -> list[dict[str, str]]:
    """The CSV's rows; DocsError when it is missing, unreadable or has none."""
    try:
        with open(RESULTS / csv_name, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise DocsError(f"benchmarks/results/{csv_name}: {err}") from err
    if not rows:
        raise DocsError(f"benchmarks/results/{csv_name} has no rows: rerun its benchmark (make bench)")
    return rows


def _sig(x: float, digits: int = 3) -> str:
    """x to `digits` significant figures, trailing zeros kept (0.070, 14.7, 0.300)."""
    return f"{x:#.{digits}g}".rstrip(".")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)]) + "\n"


def lowering() -> str:
    """lowering.csv (benchmarks/lowering_scale.py): one row per model and side."""
    header = ["model", "side", "seq", "import (s)", "lower + IR (s)", "peak RSS (GB)", "driver's peak (GB)"]
    header += ["IR ops", "FLOPs", "weight bytes"]
    return _table(
        header,
        [
            [
                r["model"],
                r["side"],
                r["seq"],
                f"{float(r['import_s']):.2f}",
                f"{float(r['lower_s']):.2f}",
                f"{float(r['peak_rss_gb']):.2f}",
                f"{float(r['driver_peak_rss_gb']):.2f}" if r["driver_peak_rss_gb"] else "-",
                r["ir_ops"],
                f"{float(r['flops']):.3e}",
                f"{int(r['param_bytes']) / 1e9:.1f} GB",
            ]
            for r in _rows("lowering.csv")
        ],
    )


def layer_scaling() -> str:
    """layer_scaling.csv (benchmarks/layer_scaling.py): regional against flat, by layer count."""
    rows = _rows("layer_scaling.csv")
    by = {(r["mode"], int(r["layers"])): r for r in rows}
    layers = sorted({int(r["layers"]) for r in rows})

    def line(label, mode, cell):
        return [label, *(cell(by[mode, n]) if (mode, n) in by else "-" for n in layers)]

    def timing(r):  # as the benchmark rounded them
        return f"{r['lower_s']} + {r['analyse_s']}"

    def both(n):
        r, f = by.get(("regional", n)), by.get(("flat", n))
        return f"{r['predicted_ms']} / {f['predicted_ms']}" if r and f else "-"

    return _table(
        ["layers", *map(str, layers)],
        [
            line("regional: lowering + analysis (s)", "regional", timing),
            line("regional: peak memory (GB)", "regional", lambda r: f"{float(r['peak_rss_gb']):.2f}"),
            line("flat: lowering + analysis (s)", "flat", timing),
            line("flat: peak memory (GB)", "flat", lambda r: f"{float(r['peak_rss_gb']):.2f}"),
            ["predicted prefill, regional / flat (ms)", *(both(n) for n in layers)],
        ],
    )


def seventy_b_decode() -> str:
    """estimates.csv (benchmarks/estimates.py): llama-3.1-70b's decode step from JAX's lowering,
    on every target, fastest first, each with the chips (wafers) it takes."""
    from hardware_models.target import get_target

    rows = [
        r for r in _rows("estimates.csv") if (r["model"], r["mode"], r["side"]) == ("llama-3.1-70b", "decode", "jax")
    ]
    parts = []
    for r in sorted(rows, key=lambda r: float(r["total_ms"])):
        chips, unit = int(r["chips"]), get_target(r["target"]).family_record.chip_unit
        parts.append(f"{r['target']} {_sig(float(r['total_ms']))} ms on {chips} {unit}{'s' if chips != 1 else ''}")
    return "For example `llama-3.1-70b` decode (JAX), fastest first: " + ", ".join(parts) + ".\n"


RUNTIMES = {"eager": "PyTorch eager", "inductor": "torch.compile (Inductor)", "xla": "jax.jit (XLA:CPU)"}


def host_cpu_validate() -> str:
    """host_cpu_validate.csv (benchmarks/host_cpu_validate.py): per runtime, the median |error|,
    the rows within 2x and the worst ratio (max of predicted / measured and its inverse)."""
    rows = _rows("host_cpu_validate.csv")

    def summary(label, group):
        ratios = [max(p / m, m / p) for m, p in ((float(r["measured_s"]), float(r["predicted_s"])) for r in group)]
        median = statistics.median(abs(float(r["error"])) for r in group)
        return [label, str(len(group)), f"{median:.1%}", str(sum(q <= 2 for q in ratios)), f"{max(ratios):.2f}x"]

    body = [summary(label, [r for r in rows if r["runtime"] == rt]) for rt, label in RUNTIMES.items()]
    return _table(["runtime", "rows", "median \\|error\\|", "within 2x", "worst ratio"], [*body, summary("all", rows)])


UNITS = {"per_gpu": "tok/s/GPU", "throughput": "tok/s", "per_user": "tok/s per user", "ttft": "s to first token"}


def _error(figure: str, published: float) -> str:
    if not figure:
        return "-"
    e = float(figure) / published - 1
    return f"{'+' if e >= 0 else '−'}{abs(e):.0%}"


def serving_accuracy() -> str:
    """serving_accuracy.csv (benchmarks/serving_accuracy.py): each published row's error for
    landscape and the two peers (a dash: the tool has no model of it), the comparable rows first
    with the medians, then the rows that cannot be compared, with why."""
    from hardware_models.serving_rows import ROWS

    spec = {r.id: r for r in ROWS}
    rows = _rows("serving_accuracy.csv")
    tools = (("landscape", "predicted"), ("GenZ", "genz"), ("llm-analysis", "llm-analysis"))

    def described(r):
        row = spec[r["id"]]
        chips = int(r["chips"])
        batch = "max load" if row.batch == "max" else r["batch"]
        system = f"{chips}× {r['target']}" if chips > 1 else r["target"]
        return (
            f"{system}, {r['model']} {r['precision']}, {batch}, {row.input_len}/{row.output_len} ({UNITS[r['metric']]})"
        )

    def cells(r):
        return [r["id"], described(r), r["published"], *(_error(r[col], float(r["published"])) for _, col in tools)]

    comparable = [r for r in rows if r["comparable"] == "True"]
    others = [r for r in rows if r["comparable"] != "True"]
    header = ["row", "system, model, precision, batch, in/out", "published", *(t for t, _ in tools)]

    def summary(group, label):
        parts = []
        for tool, col in tools:
            errors = [abs(float(r[col]) / float(r["published"]) - 1) for r in group if r[col]]
            if errors:
                within = sum(0.5 <= float(r[col]) / float(r["published"]) <= 2 for r in group if r[col])
                parts.append(
                    f"{tool} {within} of its {len(errors)} within 2x, median |error| {statistics.median(errors):.1%}"
                )
        return f"On the {len(group)} {label}: " + "; ".join(parts) + "."

    everyone = [r for r in comparable if all(r[col] for _, col in tools)]
    return (
        _table(header, [cells(r) for r in comparable])
        + "\n"
        + summary(comparable, "comparable rows")
        + " "
        + summary(everyone, f"comparable rows all three predict ({', '.join(r['id'] for r in everyone)})")
        + "\n\nThe rows that cannot be compared one-to-one, predicted and shown, never counted:\n\n"
        + _table([*header, "why not comparable"], [[*cells(r), r["reason"]] for r in others])
    )


def predict() -> str:
    """predict.csv (benchmarks/predict.py): tokens/s per user with the chips in brackets, per
    model and target, and the wall time of the largest model's `landscape predict`."""
    rows = _rows("predict.csv")
    models, targets = list(dict.fromkeys(r["model"] for r in rows)), list(dict.fromkeys(r["target"] for r in rows))
    by = {(r["model"], r["target"]): r for r in rows}

    def speed(r):
        x = float(r["tokens_per_s_per_user"])
        return f"{x:.0f} ({r['chips']})" if x >= 1000 else f"{x:.1f} ({r['chips']})"

    body = [[m, *(speed(by[m, t]) if (m, t) in by else "-" for t in targets)] for m in models]
    last = models[-1]
    body.append(
        [
            f"wall time of `landscape predict`, {last}",
            *(f"{by[last, t]['wall_s']} s" if (last, t) in by else "-" for t in targets),
        ]
    )
    return _table(["model", *targets], body)


def gpu_compare() -> str:
    """gpu_compare.csv (benchmarks/gpu_compare.py): each kernel timed on the lent GPU, replayed
    from a CUDA graph (the GPU's own time), beside the GPU model's prediction."""
    rows = [r for r in _rows("gpu_compare.csv") if r["mode"] == "graph"]
    return _table(
        ["entry", "shapes", "target", "measured (graph)", "predicted", "error"],
        [
            [
                r["entry"],
                r["shapes"],
                r["target"],
                f"{float(r['median_s']) * 1e6:.1f} µs",
                f"{float(r['predicted_s']) * 1e6:.1f} µs",
                _error(r["predicted_s"], float(r["median_s"])),
            ]
            for r in rows
        ],
    )


def _time(seconds: float) -> str:
    return f"{_sig(seconds * 1e3)} ms" if seconds >= 1e-3 else f"{_sig(seconds * 1e6)} µs"


def compare_paths() -> str:
    """compare.csv (benchmarks/compare_paths.py): `landscape compare`'s defaults, one Llama-3.1-8B
    layer's prefill (2048 tokens) and decode step on one target per family, both sides."""
    rows = _rows("compare.csv")
    by = {(r["phase"], r["target"], r["side"]): r for r in rows}
    targets = list(dict.fromkeys(r["target"] for r in rows))

    def cell(phase, target, side):
        r = by.get((phase, target, side))
        return _time(float(r["time_s"])) if r else "refused"

    def memory(phase, target):
        found = [by[phase, target, side] for side in ("torch", "jax") if (phase, target, side) in by]
        return " / ".join(f"{int(r['main_bytes']) / 1e9:.2f}" for r in found) + (
            f" ({found[0]['main_memory']})" if found else ""
        )

    table = _table(
        ["target", "prefill: torch", "prefill: jax", "decode: torch", "decode: jax", "prefill GB moved (torch / jax)"],
        [
            [
                t,
                cell("prefill", t, "torch"),
                cell("prefill", t, "jax"),
                cell("decode", t, "torch"),
                cell("decode", t, "jax"),
                memory("prefill", t),
            ]
            for t in targets
        ],
    )
    return table + f"\n`landscape compare` with these defaults took {_sig(float(rows[0]['wall_s']), 2)} s here.\n"


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(round(seconds % 60))} s"


def suite_time() -> str:
    """suite_time.csv (benchmarks/suite_time.py): the last `make test`, as it ran."""
    (r,) = _rows("suite_time.csv")
    ran = sum(int(r[k]) for k in ("passed", "skipped", "failed", "errors"))
    broke = ", ".join(f"{r[k]} {k}" for k in ("failed", "errors") if int(r[k]))
    return (
        f"The last `python benchmarks/suite_time.py` (`make test`, lint included) ran {ran:,} tests on "
        f"{r['date']}: {int(r['passed']):,} passed and {int(r['skipped']):,} skipped"
        + (f", {broke}" if broke else "")
        + f", in {_minutes(float(r['wall_s']))} on {r['cores']} cores, "
        + ("with" if r["torchxla"] == "True" else "without")
        + " `.venv-torchxla` (its tests run only where it is built, as in CI).\n"
    )


CLI_WORDS = {  # cli_times.csv's commands, as docs/cli.md says them
    "help": "`landscape --help` (torch and jax not imported)",
    "typo": "a misspelt model caught before torch or jax is imported (exit 2)",
    "gemm": "`landscape gemm 512 512 512`",
    "targets": "`landscape targets`",
    "map": "`landscape map` (it predicts a reference model's cache placement on every family)",
}


def cli_times() -> str:
    """cli_times.csv (benchmarks/cli_times.py): each command's wall time in a fresh process,
    fastest to slowest of its runs."""
    rows = _rows("cli_times.csv")
    return _table(
        ["command", "wall time, fresh process"],
        [
            [CLI_WORDS.get(r["command"], f"`landscape {r['args']}`"), _span([float(r["min_s"]), float(r["max_s"])])]
            for r in rows
        ],
    )


def your_model() -> str:
    """your_model.csv (benchmarks/your_model.py): the example config.json's `landscape predict` as a
    transcript, and the built-in entry's end to end beside it."""
    rows = {r["model"]: r for r in _rows("your_model.csv")}
    config, entry = rows["examples/llama-3.2-1b/config.json"], rows["llama-3.2-1b"]
    return (
        "```\n"
        f"$ landscape predict --model examples/llama-3.2-1b/config.json --target {config['target']}"
        f"      # {config['wall_s']} s here\n"
        f"examples/llama-3.2-1b/config.json on {config['target']} (1 chip, bf16, batch 1, 2048 in / 256 out, "
        "jax lowering)\n"
        f"  time to first token      {config['ttft_ms']} ms\n"
        f"  decode step (mean)       {config['decode_step_ms']} ms   (...)\n"
        f"  end to end                {config['e2e_ms']} ms\n"
        "$ landscape predict --model examples/bert/config.json --target h100\n"
        "landscape: error: examples/bert/config.json: model_type 'bert' is not supported; valid: llama, mistral, "
        "qwen2, qwen3, mixtral, gpt2\n"
        "```\n\n"
        f"The built-in `llama-3.2-1b` entry predicts {entry['e2e_ms']} ms end to end "
        f"(time to first token {entry['ttft_ms']} ms, decode step {entry['decode_step_ms']} ms).\n"
    )


# What each fitted value of kernels.csv is, formula and all (hardware_models/calibration.py's doc).
FIT_FORMULAS = {
    "fitted.hbm_efficiency": "STREAM triad bandwidth / HBM peak",
    "schedule.launch_overhead_s": "t(fp32 add, N = 65,536) − bytes / bandwidth (G41's note, H100)",
    "fitted.gemm_efficiency": "busy time at efficiency 1 / (measured time − launch − gemm overhead)",
    "schedule.gemm_overhead_s": "measured 1024³ GEMM time − the model's time without it (H100, carried over)",
    "fitted.allreduce_bus_bytes_per_s": "NCCL all-reduce bus bandwidth, 8 GB on 8 GPUs",
    "fitted.flash_attention_fraction": "FlashAttention-2's FLOP/s on the tiles it computes / dense bf16 peak "
    "(causal row; H100, carried over)",
}


def _quantity(key: str, value: float) -> str:
    if key.endswith("bytes_per_s"):
        return f"{_sig(value / 1e9, 4)} GB/s"
    if key.endswith("_s"):
        return f"{_sig(value * 1e6, 4)} µs"
    return _sig(value, 3 if value >= 0.5 else 4)


def calibration_fits() -> str:
    """calibration_fits.csv (benchmarks/calibration_rows.py): each GPU's fitted values, with the
    row each cites."""
    fits = [r for r in _rows("calibration_fits.csv") if r["key"] in FIT_FORMULAS]
    targets = list(dict.fromkeys(r["target"] for r in fits))
    cell = {(r["target"], r["key"]): f"{_quantity(r['key'], float(r['value']))} ({r['row']})" for r in fits}
    return "— : not fitted on a row; the target file gives its assumed (U) or derived (D) value.\n\n" + _table(
        ["fitted value", "formula", *targets],
        [
            [f"`{key.split('.')[-1]}`", formula, *(cell.get((t, key), "—") for t in targets)]
            for key, formula in FIT_FORMULAS.items()
        ],
    )


# How each unit of calibration_rows.csv is shown: (scale, unit).
ROW_UNITS = {
    "flop_per_s": (1e12, "TFLOP/s"),
    "bus_bytes_per_s": (1e9, "GB/s"),
    "mac_per_s_per_core": (1e9, "MAC/ns/core"),
    "s": (1e-3, "ms"),
}


def calibration_rows() -> str:
    """calibration_rows.csv (benchmarks/calibration_rows.py): the model against every row of
    kernels.csv, the held-out ones summarised first."""
    rows = _rows("calibration_rows.csv")
    out = [r for r in rows if r["sample"] == "out"]
    errors = [abs(float(r["error"])) for r in out]
    lines = [
        f"The {len(out)} held-out rows ({', '.join(dict.fromkeys(r['id'] for r in out))}) come within "
        f"{max(errors) * 100:.1f}%, median |error| {statistics.median(errors) * 100:.1f}%:",
        "",
        "",
    ]
    table = []
    for r in rows:
        unit = r["unit"]
        if unit == "bytes_per_s":
            scale, shown = (1e12, "TB/s") if r["id"].startswith("G") else (1e9, "GB/s")
        elif unit == "s" and float(r["measured"]) < 1e-3:
            scale, shown = 1e-6, "µs"
        else:
            scale, shown = ROW_UNITS[unit]
        table.append(
            [
                r["id"] + (" (fit)" if r["sample"] == "in" else ""),
                r["target"],
                r["workload"],
                f"{_sig(float(r['measured']) / scale, 4)} {shown}",
                _sig(float(r["predicted"]) / scale, 4),
                f"{float(r['error']) * 100:+.1f}%",
            ]
        )
    return "\n".join(lines) + _table(["row", "target", "workload", "measured", "predicted", "error"], table)


def _span(values: list[float], unit: str = "s") -> str:
    lo, hi = min(values), max(values)
    return f"{_sig(lo, 2)} {unit}" if _sig(lo, 2) == _sig(hi, 2) else f"{_sig(lo, 2)}–{_sig(hi, 2)} {unit}"


MODEL_ENTRIES = ("block", "decoder", "tiny", "gpt2-small")  # the catalogue's whole models, timed apart


def run_times() -> str:
    """run_times.csv, predict.csv and estimates.csv: the wall times the benchmarks measured, as
    ranges (the machine that ran `make bench`: a shared 2-core one here, so a row can be noisy)."""
    runs = _rows("run_times.csv")
    kernels = [float(r["second_run_s"]) for r in runs if r["entry"] not in MODEL_ENTRIES]
    models = ", ".join(
        f"`{name}` {_span([float(r['second_run_s']) for r in runs if r['entry'] == name])}"
        for name in MODEL_ENTRIES
        if any(r["entry"] == name for r in runs)
    )
    first = max(float(r["first_run_s"]) for r in runs if r["entry"] not in MODEL_ENTRIES)
    walls = [float(r["wall_s"]) for r in _rows("predict.csv")]
    compiles = [float(r["compile_s"]) for r in _rows("estimates.csv")]
    return (
        f"Measured by the last `make bench`: `landscape run` takes {_span(kernels)} a kernel once compiled "
        f"(its first run up to {_sig(first, 2)} s) and, per dtype, {models}; `landscape predict` "
        f"{_span(walls)} a model and target in a fresh process, imports included; the passes and cost model "
        f"{_span(compiles)} a model and target (`compile_s`, the plan verifier included).\n"
    )


def training_accuracy() -> str:
    """training_accuracy.csv (benchmarks/training_accuracy.py): `landscape train` against each
    published training step (hardware_models/training.csv), with the layout it chose; a row the
    model cannot hold says why; then the count within 2x and the median error."""
    rows = _rows("training_accuracy.csv")
    header = [
        "row",
        "system, model, global batch x seq",
        "layout chosen",
        "published step",
        "predicted",
        "error",
        "MFU published / predicted",
    ]

    def mfu(r):
        pub = f"{float(r['published_mfu']):.0%}" if r["published_mfu"] else "-"
        pred = f"{float(r['predicted_mfu']):.0%}" if r["predicted_mfu"] else "-"
        return f"{pub} / {pred}"

    table = _table(
        header,
        [
            [
                r["id"],
                f"{r['chips']}× {r['target']}, {r['model']}, {r['global_batch']} × {r['seq']}",
                r["layout"] if r["layout"] != "refused" else "refused: " + r["note"].split("; ", 1)[-1],
                f"{_sig(float(r['published_step_s']))} s",
                f"{_sig(float(r['predicted_step_s']))} s" if r["predicted_step_s"] else "-",
                _error(r["predicted_step_s"], float(r["published_step_s"])),
                mfu(r),
            ]
            for r in rows
        ],
    )
    costed = [r for r in rows if r["predicted_step_s"]]
    errors = sorted(abs(float(r["predicted_step_s"]) / float(r["published_step_s"]) - 1) for r in costed)
    within = sum(1 for r in costed if 0.5 <= float(r["predicted_step_s"]) / float(r["published_step_s"]) <= 2)
    median = statistics.median(errors)
    return table + (
        f"\n{within} of {len(costed)} costed rows within 2x, median |error| {median:.1%}"
        f" ({len(rows) - len(costed)} refused).\n"
    )


@dataclass(frozen=True)
class Block:
    csv: str
    render: Callable[[], str]


BLOCKS = {
    "lowering": Block("lowering.csv", lowering),
    "layer-scaling": Block("layer_scaling.csv", layer_scaling),
    "70b-decode": Block("estimates.csv", seventy_b_decode),
    "host-cpu-validate": Block("host_cpu_validate.csv", host_cpu_validate),
    "serving-accuracy": Block("serving_accuracy.csv", serving_accuracy),
    "predict": Block("predict.csv", predict),
    "gpu-compare": Block("gpu_compare.csv", gpu_compare),
    "compare-paths": Block("compare.csv", compare_paths),
    "cli-times": Block("cli_times.csv", cli_times),
    "suite-time": Block("suite_time.csv", suite_time),
    "calibration-fits": Block("calibration_fits.csv", calibration_fits),
    "calibration-rows": Block("calibration_rows.csv", calibration_rows),
    "run-times": Block("run_times.csv", run_times),
    "your-model": Block("your_model.csv", your_model),
    "training-accuracy": Block("training_accuracy.csv", training_accuracy),
}


def _render(name: str) -> str:
    block = BLOCKS[name]
    try:
        return block.render()
    except (KeyError, ValueError, IndexError, ZeroDivisionError, LookupError) as err:
        problem = f"{type(err).__name__}: {err}"
        raise DocsError(f"benchmarks/results/{block.csv} cannot be rendered as block {name!r} ({problem})") from err


def regenerate(text: str, where: str = "") -> str:
    """`text` with every generated block rendered again.

    Raises:
        DocsError: a marker of an unknown block, a start without its end (or an end without its
            start), a block inside another, a malformed marker, or a CSV that cannot be rendered.
    """
    out: list[str] = []
    lines = text.split("\n")
    open_block: tuple[str, int] | None = None
    for number, line in enumerate(lines, 1):
        start, end = START.match(line), END.match(line)
        at = f"{where}:{number}"
        if open_block is None:
            if start:
                if start["name"] not in BLOCKS:
                    raise DocsError(f"{at}: unknown generated block {start['name']!r}; valid: {', '.join(BLOCKS)}")
                open_block = (start["name"], number)
                out += [line, *_render(start["name"]).rstrip("\n").split("\n")]
            elif end:
                raise DocsError(f"{at}: an end marker of {end['name']!r} without its start")
            elif MARKER.search(line):
                raise DocsError(f"{at}: a malformed marker; write <!-- generated: NAME {SOURCE} --> alone on its line")
            else:
                out.append(line)
        elif end and end["name"] == open_block[0]:
            out.append(line)
            open_block = None
        elif start or end:
            raise DocsError(f"{at}: a marker inside block {open_block[0]!r} (opened at line {open_block[1]})")
    if open_block is not None:
        raise DocsError(f"{where}:{open_block[1]}: block {open_block[0]!r} has no end marker")
    return "\n".join(out)


def stale_pages() -> list[str]:
    """The pages whose generated blocks differ from what the CSVs make now."""
    return [str(p.relative_to(ROOT)) for p in PAGES if regenerate(p.read_text(), _name(p)) != p.read_text()]


def _name(page: pathlib.Path) -> str:
    return str(page.relative_to(ROOT))


def used_blocks() -> set[str]:
    return {m["name"] for p in PAGES for line in p.read_text().split("\n") if (m := START.match(line))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 naming the stale pages; write nothing")
    args = parser.parse_args(argv)
    stale = stale_pages()
    if args.check:
        if stale:
            print(f"stale generated blocks in {', '.join(stale)}: run make docs", file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        page = ROOT / name
        page.write_text(regenerate(page.read_text(), name))
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
