"""Targets as data: one TOML file per chip in hardware_models/targets/, loaded strictly.

Every number is a `Quantity` with its source, tagged as in ../shared/hardware/specs.md:
P primary, S secondary, D derived (the file carries the arithmetic over other keys, and
`check_derivations` recomputes it), U unpublished (an assumption, marked as such, and a knob
that `with_overrides` / `--set section.key=VALUE` replaces), F fitted (a coefficient fitted to
a measured row of the calibration table, which the source names: "F G23"; see
hardware_models/calibration.py, which refits it). Hardware limits sit in [chip], [peak],
[memory], [interconnect]; fitted coefficients in [fitted] and [schedule], apart.
A [dtypes] table lists the element types the chip runs natively, and the ones it emulates
with another (`emulated = { f16 = "f32" }`); anything else is refused with an error. Keys carry
their unit (`_hz`, `_bytes`, `_bytes_per_s`, `_flop_per_s`). Quantities that follow from others
are computed, not stored: the ridge point is peak FLOP/s over memory bandwidth.
"""

from __future__ import annotations

import ast
import functools
import operator
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from reference.errors import BadTargetFile, UnknownName, UnsupportedDtype

TARGETS_DIR = Path(__file__).with_name("targets")
TAGS = ("P", "S", "D", "U", "F")

# Required (section, key) per family; any other key in a file is an error.
SCHEMA: dict[str, dict[str, tuple[str, ...]]] = {
    "gpu": {
        "chip": ("sm_count", "clock_hz", "fp32_lanes_per_sm", "sfu_ops_per_cycle_per_sm", "mma_m", "mma_k_bytes"),
        "peak": ("bf16_flop_per_s", "fp16_flop_per_s"),
        "memory": ("hbm_bytes", "hbm_bytes_per_s", "l2_bytes", "smem_bytes_per_sm", "register_bytes_per_sm", "usable_fraction"),
        "interconnect": ("nvlink_bytes_per_s", "host_bytes_per_s"),
        "schedule": ("launch_overhead_s", "collective_latency_s"),
        "fitted": ("gemm_efficiency", "hbm_efficiency", "allreduce_bus_bytes_per_s"),
        "host": ("flop_per_s",),
    },
    "tpu": {
        "chip": ("tensorcores", "mxus_per_tensorcore", "mxu_rows", "mxu_cols", "clock_hz",
                 "vpu_sublanes", "vector_alus_per_tensorcore", "transcendentals_per_cycle_per_tensorcore"),
        "peak": ("bf16_flop_per_s", "int8_op_per_s"),
        "memory": ("hbm_bytes", "hbm_bytes_per_s", "vmem_bytes_per_tensorcore", "vmem_bytes_per_s", "usable_fraction"),
        "interconnect": ("ici_bytes_per_s_per_link", "host_bytes_per_s", "allreduce_bus_bytes_per_s"),
        "schedule": ("launch_overhead_s", "collective_latency_s"),
        "host": ("flop_per_s",),
    },
    "spyre": {
        "chip": ("cores", "corelets_per_core", "pe_rows", "pe_cols", "stick_bytes", "matmul_row_pass", "vector_ops_per_s_per_core"),
        "peak": ("fp16_mac_per_s_per_core",),
        "memory": ("lpddr5_bytes", "lpddr5_bytes_per_s", "lx_bytes_per_core", "lx_usable_bytes_per_core", "usable_fraction"),
        "interconnect": ("host_bytes_per_s", "allreduce_bus_bytes_per_s"),
        "schedule": ("launch_overhead_s", "collective_latency_s"),
        "fitted": ("matmul_mac_per_s_per_core", "bmm_mac_per_s_per_core", "bmm_small_batch_mac_per_s_per_core",
                   "lpddr5_one_way_bytes_per_s", "lpddr5_read_write_bytes_per_s", "restickify_bytes_per_s"),
        "host": ("flop_per_s",),
    },
    "lpu": {
        "chip": ("clock_hz", "vector_lanes", "vector_alus", "mxm_macs_per_cycle", "mxm_rows", "sxm_vectors_per_cycle"),
        "peak": ("int8_op_per_s", "fp16_flop_per_s"),
        "memory": ("sram_bytes", "sram_bytes_per_s", "sram_usable_fraction"),
        "interconnect": ("c2c_links", "c2c_bytes_per_s_per_link", "host_bytes_per_s"),
        "schedule": ("mem_latency_cycles", "vxm_latency_cycles", "sxm_latency_cycles", "mxm_latency_cycles", "c2c_hop_latency_s"),
        "host": ("flop_per_s",),
    },
    "wafer": {
        "chip": ("pes",),
        "peak": ("fp16_flop_per_s",),
        "memory": ("sram_bytes", "sram_bytes_per_s", "sram_usable_fraction"),
        "interconnect": ("fabric_bytes_per_s", "system_io_bytes_per_s", "host_bytes_per_s"),
        "schedule": ("region_latency_s", "wafer_hop_latency_s"),
        "fitted": ("compute_efficiency",),
        "host": ("flop_per_s",),
    },
}
# Per family: the 16-bit peak (FLOP/s) and the main memory (capacity key, bandwidth key) that
# `landscape targets` and the ridge point read; a function where the peak is a product of keys.
PEAK_16BIT = {
    "gpu": lambda t: t["peak.bf16_flop_per_s"],
    "tpu": lambda t: t["peak.bf16_flop_per_s"],
    "spyre": lambda t: 2 * t["chip.cores"] * t["peak.fp16_mac_per_s_per_core"],
    "lpu": lambda t: t["peak.fp16_flop_per_s"],
    "wafer": lambda t: t["peak.fp16_flop_per_s"],
}
MAIN_MEMORY = {"gpu": "memory.hbm", "tpu": "memory.hbm", "spyre": "memory.lpddr5", "lpu": "memory.sram", "wafer": "memory.sram"}
# Element types by MLIR name that are checked against [dtypes]: the floating types and int8 (a
# compute type for quantized matmuls); other integers are indices and masks every target handles.
COMPUTE_DTYPES = ("f64", "f32", "bf16", "f16", "f8E4M3FN", "f8E5M2", "i8")
OPTIONAL = {"gpu": {"peak": ("fp8_flop_per_s", "int8_op_per_s")}, "tpu": {"fitted": ("gemm_efficiency", "hbm_efficiency")}, "spyre": {}, "lpu": {}, "wafer": {}}
QUANTITY_FIELDS = {"value", "source", "note", "derivation"}


@dataclass(frozen=True)
class Quantity:
    value: float
    source: str
    note: str = ""
    derivation: str = ""

    @property
    def tag(self) -> str:
        return self.source.split()[0]

    @property
    def assumed(self) -> bool:
        return self.tag == "U"

    @property
    def calibration_row(self) -> str | None:
        """The kernels.csv row id a fitted (F) value cites: "F G23 ..." -> "G23"."""
        parts = self.source.split()
        return parts[1] if self.tag == "F" and len(parts) > 1 else None


@dataclass(frozen=True)
class Target:
    """A chip: name, family and its sourced quantities keyed "section.key"."""

    name: str
    family: str
    description: str
    quantities: dict[str, Quantity]
    path: str
    native_dtypes: tuple[str, ...] = ()
    emulated_dtypes: tuple[tuple[str, str], ...] = ()  # (dtype, the native dtype it runs as)

    def __getitem__(self, key: str) -> float:
        try:
            return self.quantities[key].value
        except KeyError:
            raise UnknownName(f"quantity of {self.name}", key, self.quantities) from None

    def get(self, key: str, default: float | None = None) -> float | None:
        return self.quantities[key].value if key in self.quantities else default

    def runs_as(self, dtype: str) -> str:
        """The element type `dtype` executes as: itself if native, its stand-in if emulated.

        Raises:
            UnsupportedDtype: a compute type the target neither runs nor emulates (f64 on a TPU).
        """
        if dtype in self.native_dtypes or dtype not in COMPUTE_DTYPES:
            return dtype
        emulated = dict(self.emulated_dtypes)
        if dtype in emulated:
            return emulated[dtype]
        raise UnsupportedDtype(f"target {self.name}", dtype, [*self.native_dtypes, *emulated])

    def with_overrides(self, overrides: dict[str, float]) -> "Target":
        """A copy with some quantities replaced (`--set memory.l2_bytes_per_s=6e12`).

        Raises:
            UnknownName: a key the target does not have.
            BadTargetFile: a non-positive value.
        """
        quantities = dict(self.quantities)
        for key, value in overrides.items():
            if key not in quantities:
                raise UnknownName(f"quantity of {self.name}", key, quantities)
            if not value > 0:
                raise BadTargetFile("--set", key, f"value must be a positive number, got {value!r}")
            quantities[key] = Quantity(float(value), "U --set on the command line", f"was {quantities[key].value:g}")
        return replace(self, quantities=quantities)

    @property
    def peak_16bit_flop_per_s(self) -> float:
        """The dense bf16 (fp16 on Spyre) peak."""
        return PEAK_16BIT[self.family](self)

    @property
    def main_memory_level(self) -> str:
        """The name of the main memory as a level in plans and costs: "hbm", "lpddr5"."""
        return MAIN_MEMORY[self.family].split(".", 1)[1]

    @property
    def main_memory_bytes(self) -> float:
        return self[f"{MAIN_MEMORY[self.family]}_bytes"]

    @property
    def main_memory_bytes_per_s(self) -> float:
        return self[f"{MAIN_MEMORY[self.family]}_bytes_per_s"]

    @property
    def ridge_flop_per_byte(self) -> float:
        """Arithmetic intensity where the 16-bit roofline turns from memory to compute bound."""
        return self.peak_16bit_flop_per_s / self.main_memory_bytes_per_s

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "family": self.family,
            "description": self.description,
            "ridge_flop_per_byte": self.ridge_flop_per_byte,
            "native_dtypes": list(self.native_dtypes),
            "emulated_dtypes": dict(self.emulated_dtypes),
            "quantities": {
                k: {"value": q.value, "source": q.source, **({"note": q.note} if q.note else {}), **({"derivation": q.derivation} if q.derivation else {})}
                for k, q in sorted(self.quantities.items())
            },
        }


def _quantity(path: Path, key: str, raw: object) -> Quantity:
    if not isinstance(raw, dict):
        raise BadTargetFile(path, key, "expected an inline table {value, source}")
    unknown = set(raw) - QUANTITY_FIELDS
    if unknown:
        raise BadTargetFile(path, key, f"unknown fields {sorted(unknown)}; valid: {sorted(QUANTITY_FIELDS)}")
    value, source = raw.get("value"), raw.get("source")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise BadTargetFile(path, key, f"value must be a positive number, got {value!r}")
    if not isinstance(source, str) or source.split()[:1] == [] or source.split()[0] not in TAGS:
        raise BadTargetFile(path, key, f"source must start with a tag {'/'.join(TAGS)}, got {source!r}")
    if source.split()[0] == "D" and not raw.get("derivation"):
        raise BadTargetFile(path, key, "a derived (D) value needs its derivation")
    return Quantity(float(value), source, raw.get("note", ""), raw.get("derivation", ""))


def load_target_file(path: Path) -> Target:
    """Load one target file strictly.

    Raises:
        BadTargetFile: naming the file, the field and what was expected.
    """
    try:
        raw = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as err:
        raise BadTargetFile(path, "<file>", f"not valid TOML: {err}") from None
    for key in ("schema", "name", "family", "description"):
        if key not in raw:
            raise BadTargetFile(path, key, "missing")
    if raw["schema"] != 1:
        raise BadTargetFile(path, "schema", "expected 1")
    family = raw["family"]
    if family not in SCHEMA:
        raise BadTargetFile(path, "family", f"expected one of {sorted(SCHEMA)}")
    quantities = {}
    native, emulated = _dtypes(path, raw.get("dtypes"))
    for section, table in raw.items():
        if section in ("schema", "name", "family", "description", "dtypes"):
            continue
        allowed = SCHEMA[family].get(section, ()) + OPTIONAL[family].get(section, ())
        if not isinstance(table, dict) or not allowed:
            raise BadTargetFile(path, section, f"unknown section; valid: {sorted(SCHEMA[family])}")
        for key, value in table.items():
            if key not in allowed:
                raise BadTargetFile(path, f"{section}.{key}", f"unknown key; valid: {', '.join(allowed)}")
            quantities[f"{section}.{key}"] = _quantity(path, f"{section}.{key}", value)
    for section, keys in SCHEMA[family].items():
        for key in keys:
            if f"{section}.{key}" not in quantities:
                raise BadTargetFile(path, f"{section}.{key}", "missing")
    return Target(raw["name"], family, raw["description"], quantities, str(path), native, emulated)


def _dtypes(path: Path, table: object) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The [dtypes] table: native = [...] and emulated = { dtype = "native dtype" }."""
    if not isinstance(table, dict) or not isinstance(table.get("native"), list) or not table["native"]:
        raise BadTargetFile(path, "dtypes.native", f"a non-empty list of element types from {COMPUTE_DTYPES}")
    unknown = set(table) - {"native", "emulated"}
    if unknown:
        raise BadTargetFile(path, f"dtypes.{sorted(unknown)[0]}", "unknown key; valid: native, emulated")
    native = tuple(table["native"])
    emulated = table.get("emulated", {})
    for dtype in native + tuple(emulated):
        if dtype not in COMPUTE_DTYPES:
            raise BadTargetFile(path, "dtypes", f"unknown element type {dtype!r}; valid: {', '.join(COMPUTE_DTYPES)}")
    for dtype, runs_as in emulated.items():
        if runs_as not in native:
            raise BadTargetFile(path, f"dtypes.emulated.{dtype}", f"must name a native type, one of {native}")
    return native, tuple(sorted(emulated.items()))


@functools.cache
def load_targets(directory: Path = TARGETS_DIR) -> dict[str, Target]:
    """Every target file in the directory, by name."""
    targets = {}
    for path in sorted(Path(directory).glob("*.toml")):
        target = load_target_file(path)
        if target.name != path.stem:
            raise BadTargetFile(path, "name", f"must match the file name {path.stem!r}")
        targets[target.name] = target
    return targets


def get_target(name: str) -> Target:
    targets = load_targets()
    if name not in targets:
        raise UnknownName("target", name, targets)
    return targets[name]


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def evaluate(expression: str, target: Target) -> float:
    """Evaluate a derivation: numbers, section.key names, + - * / and parentheses only."""

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return target[f"{node.value.id}.{node.attr}"]
        raise BadTargetFile(target.path, expression, "derivations use numbers, section.key and + - * / only")

    return walk(ast.parse(expression, mode="eval"))


def check_derivations(target: Target, rel_tol: float = 5e-3) -> dict[str, tuple[float, float]]:
    """Each D quantity against its recomputed derivation: key -> (stated, recomputed) where they differ."""
    off = {}
    for key, q in target.quantities.items():
        if q.derivation:
            recomputed = evaluate(q.derivation, target)
            if abs(recomputed - q.value) > rel_tol * abs(q.value):
                off[key] = (q.value, recomputed)
    return off
