"""The host CPU as the operating system describes it, read at run time and never assumed.

Linux's sysfs and /proc give everything the host-cpu target needs that is not a measurement:
    cores       the CPUs this process may run on (os.sched_getaffinity), what torch and XLA use
    caches      /sys/devices/system/cpu/cpu0/cache/index*/{level,type,size,shared_cpu_list,
                ways_of_associativity,coherency_line_size}: one level per data or unified cache,
                its size per instance, how many CPUs share one (L1d and L2 per core, L3 per socket
                or CCX here), its ways (the lines one set holds) and its line (a strided read's
                cost and conflicts follow from the L1's)
    memory      MemTotal of /proc/meminfo (the DRAM level's capacity)
    clock       "cpu MHz" of /proc/cpuinfo (a reading, not a guarantee: boost and idle vary it)
    features    the flags line: the vector width follows from them
                    avx512f -> 16 f32 lanes, avx2 or avx -> 8, sse2 -> 4, else 1
                amx_tile (AMX tiles: a small on-core systolic array) and avx512_bf16 are named
                where present; the GEMM rates are measured (landscape calibrate host-cpu), so
                a feature changes a prediction only through what it measures.
Elsewhere (macOS, a container without sysfs) the fields that cannot be read are absent, and
`missing` names them: the target file then needs them set by hand.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
PROC_CPUINFO = Path("/proc/cpuinfo")
PROC_MEMINFO = Path("/proc/meminfo")
FEATURES_OF_INTEREST = (
    "sse2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
)


@dataclass(frozen=True)
class Cache:
    level: int  # 1, 2, 3
    name: str  # "l1d", "l2", "l3"
    bytes: int  # one instance's capacity
    shared_by: int  # CPUs sharing one instance
    ways: int = 0  # lines per set (ways_of_associativity); 0 where sysfs does not say
    line: int = 0  # bytes per line (coherency_line_size); 0 where sysfs does not say


@dataclass(frozen=True)
class HostCpu:
    model: str
    machine: str
    cores: int
    clock_hz: float | None
    memory_bytes: int | None
    caches: tuple[Cache, ...] = ()
    flags: frozenset[str] = field(default_factory=frozenset)

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(f for f in FEATURES_OF_INTEREST if f in self.flags)

    @property
    def f32_lanes(self) -> int:
        """f32 elements per vector register, from the widest vector extension present."""
        if "avx512f" in self.flags:
            return 16
        if "avx2" in self.flags or "avx" in self.flags:
            return 8
        if "sse2" in self.flags or self.machine in ("x86_64", "AMD64"):
            return 4
        return 4 if self.machine in ("aarch64", "arm64") else 1  # NEON: 128-bit

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(
            name
            for name, value in (
                ("clock", self.clock_hz),
                ("memory", self.memory_bytes),
                ("caches", self.caches),
                ("cache ways", self.l1_ways or not self.caches),
                ("cache line", self.l1_line or not self.caches),
            )
            if not value
        )

    @property
    def l1_ways(self) -> int:
        """The innermost cache's ways (0 when unknown)."""
        return self.caches[0].ways if self.caches else 0

    @property
    def l1_line(self) -> int:
        """The innermost cache's line in bytes (0 when unknown)."""
        return self.caches[0].line if self.caches else 0

    @property
    def summary(self) -> str:
        """What a host-cpu target file's description says of its machine: the CPU model, the cores
        and the vector extensions (hardware_models/families/cpu/files.py writes it; a machine whose
        summary differs is another machine)."""
        return f"{self.model} ({self.cores} cores, {' '.join(self.features)})"

    def describe(self) -> str:
        caches = ", ".join(
            f"{c.name.upper()} {c.bytes // 1024} KiB"
            + (f" x{self.cores // c.shared_by}" if self.cores // c.shared_by > 1 else "")
            for c in self.caches
        )
        return f"{self.model} ({self.machine}), {self.cores} cores, {' '.join(self.features) or 'no vector extensions read'}; {caches}"


def _size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def _cpu_count(cpu_list: str) -> int:
    count = 0
    for part in cpu_list.strip().split(","):
        lo, _, hi = part.partition("-")
        count += int(hi or lo) - int(lo) + 1 if lo else 0
    return count


def _optional_int(path: Path) -> int:
    """A sysfs number, 0 where the file is absent or not a number."""
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return 0


def read_caches(root: Path = SYSFS_CACHE) -> tuple[Cache, ...]:
    """Data and unified caches, innermost first (instruction caches are left out)."""
    caches = []
    for index in sorted(root.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            if kind not in ("Data", "Unified"):
                continue
            level = int((index / "level").read_text())
            size = _size((index / "size").read_text())
            shared = _cpu_count((index / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        ways, line = (_optional_int(index / name) for name in ("ways_of_associativity", "coherency_line_size"))
        caches.append(Cache(level, f"l{level}d" if kind == "Data" else f"l{level}", size, max(shared, 1), ways, line))
    return tuple(sorted(caches, key=lambda c: c.level))


def read_host(cpuinfo: Path = PROC_CPUINFO, meminfo: Path = PROC_MEMINFO, cache_root: Path = SYSFS_CACHE) -> HostCpu:
    """This machine's CPU, as far as the operating system tells it."""
    fields: dict[str, str] = {}
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    memory = None
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        clock = float(fields["cpu MHz"]) * 1e6
    except (KeyError, ValueError):
        clock = None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return HostCpu(
        model=fields.get("model name") or platform.processor() or "unknown CPU",
        machine=platform.machine(),
        cores=cores,
        clock_hz=clock,
        memory_bytes=memory,
        caches=read_caches(cache_root),
        flags=frozenset(fields.get("flags", "").split()),
    )
