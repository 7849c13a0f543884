"""The host CPU's files: the measured rows as CSV (written and read back), the host-cpu target file
they make (the operating system's facts, the fits citing those rows, what follows from them),
and `refit`, which recomputes a written file's fits from the rows beside it."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from hardware_models.families.cpu.calibration import (
    COLUMNS,
    FLOOR,
    ROWS_CSV,
    UNMEASURABLE,
    Measured,
    RowSpec,
    fit,
    require_host,
)
from hardware_models.families.cpu.host import HostCpu


def rows_csv(measured: list[Measured]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for m in measured:
        s = m.spec
        writer.writerow(
            (
                s.id,
                s.runtime,
                s.workload + (f" {s.fn}" if s.fn else "") + (f" in {s.level}" if s.level else ""),
                s.dtype,
                s.size,
                s.bytes,
                s.flops,
                f"{m.median_s:.6e}",
                f"{m.iqr_s:.3e}",
                m.runs,
            )
        )
    return buffer.getvalue()


def read_rows(path: Path = ROWS_CSV) -> list[Measured]:
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            workload, _, level = r["workload"].partition(" in ")
            workload, _, fn = workload.partition(" ")  # "unary exponential"
            spec = RowSpec(r["id"], r["runtime"], workload, r["dtype"], int(r["size"]), level, fn)
            out.append(Measured(spec, float(r["median_s"]), float(r["iqr_s"]), int(r["runs"])))
    return out


def refit(target) -> dict[str, float]:
    """The target's fitted values recomputed from the rows file beside it (a regression guard)."""
    rows = read_rows(Path(target.path).with_suffix(".csv"))
    return {k: v for k, (v, _) in fit(rows, int(target["chip.cores"])).items()}


def _q(value: float, source: str, note: str = "", derivation: str = "") -> str:
    parts = [f"value = {value:.6g}", f'source = "{source}"']
    if derivation:
        parts.append(f'derivation = "{derivation}"')
    if note:
        parts.append(f'note = "{note}"')
    return "{ " + ", ".join(parts) + " }"


def target_toml(
    host: HostCpu, fits: dict[str, tuple[float, str]], rows_file: str, when: str, name: str = "host-cpu"
) -> str:
    """The host-cpu target file: the operating system's facts (P), the fits (F, citing rows of
    `rows_file`), and what follows from them (D)."""
    require_host(host)
    lines = [
        f"# The host CPU, calibrated by `landscape calibrate host-cpu` on {when}.",
        f"# {host.describe()}",
        f"# Fitted (F) values cite the rows of {rows_file} (hardware_models/families/cpu/calibration.py: the formulas).",
        "schema = 1",
        f'name = "{name}"',
        'family = "cpu"',
        f'description = "{host.summary}"',
        "",
        "[chip]",
        f"cores = {_q(host.cores, 'P os.sched_getaffinity', 'the CPUs this process may use')}",
        f"clock_hz = {_q(host.clock_hz, 'P /proc/cpuinfo cpu MHz', 'a reading: boost and power states move it')}",
        f"f32_lanes = {_q(host.f32_lanes, 'P /proc/cpuinfo flags', 'the widest vector extension: ' + (' '.join(host.features) or 'none'))}",
        f"fma_per_cycle = {_q(2, 'U', 'assumed two FMA pipes per core (Zen 2-4, Skylake-SP and later); only the derived peak reads it')}",
        f"l1_ways = {_q(host.l1_ways, 'P sysfs cpu0/cache/index0 ways_of_associativity', 'lines per set of the innermost data cache: which strides conflict')}",
        f"l1_line_bytes = {_q(host.l1_line, 'P sysfs cpu0/cache/index0 coherency_line_size', 'a read this far from the last one takes a line of its own')}",
        "",
        "[peak]",
        f"f32_flop_per_s = {_q(host.cores * host.clock_hz * host.f32_lanes * 2 * 2, 'D', 'an FMA is two FLOPs', 'chip.cores * chip.clock_hz * chip.f32_lanes * chip.fma_per_cycle * 2')}",
        "",
        "[fitted]",
    ]
    for key, (value, rows) in sorted(fits.items()):
        note = (
            "median of repeated calls on this machine"
            if FLOOR < value < UNMEASURABLE
            else f"at its floor ({FLOOR:g}): the row ran no slower than the row it is measured against (noise)"
            if value <= FLOOR
            else "no cost measured: the row ran no slower than the row it is measured against (noise), so this rate costs ~nothing"
        )
        lines.append(f"{key.removeprefix('fitted.')} = {_q(value, 'F ' + rows, note)}")
    dram = host.memory_bytes
    lines += [
        "",
        "[levels.dram]",
        'role = "main"',
        "on_chip = false",
        f"bytes = {_q(dram, 'P /proc/meminfo MemTotal')}",
        f"bytes_per_s = {_q(fits['fitted.dram_bytes_per_s'][0], 'D', '', 'fitted.dram_bytes_per_s')}",
        f"usable_fraction = {_q(0.5, 'U', 'assumed share of memory a model may take beside everything else')}",
    ]
    for cache in reversed(host.caches):
        per = host.cores // cache.shared_by
        lines += ["", f"[levels.{cache.name}]", 'role = "on-chip"'] + (
            ['per = "chip.cores"'] if per > 1 and per == host.cores else []
        )
        size = cache.bytes if per in (1, host.cores) else cache.bytes * per
        lines += [
            f"bytes = {_q(size, 'P sysfs cpu0/cache', 'one instance' if per == host.cores and per > 1 else 'every instance together')}",
            f"bytes_per_s = {_q(fits[f'fitted.{cache.name}_bytes_per_s'][0], 'D', '', f'fitted.{cache.name}_bytes_per_s')}",
        ]
    lines += ["", "[dtypes]", 'native = ["f64", "f32", "bf16", "f16", "i8"]', ""]
    return "\n".join(lines)
