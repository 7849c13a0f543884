"""Targets as data: one TOML file per chip in hardware_models/targets/, loaded strictly.

Every number is a `Quantity` with its source, tagged as in ../shared/hardware/specs.md:
P primary, S secondary, D derived (the file carries the arithmetic over other keys, and
`check_derivations` recomputes it), U unpublished (an assumption, marked as such). Keys carry
their unit (`_hz`, `_bytes`, `_bytes_per_s`, `_flop_per_s`). Quantities that follow from others
are computed, not stored: the ridge point is peak FLOP/s over memory bandwidth.
"""

from __future__ import annotations

import ast
import functools
import operator
import tomllib
from dataclasses import dataclass
from pathlib import Path

from reference.errors import BadTargetFile, UnknownName

TARGETS_DIR = Path(__file__).with_name("targets")
TAGS = ("P", "S", "D", "U")

# Required (section, key) per family; any other key in a file is an error.
SCHEMA: dict[str, dict[str, tuple[str, ...]]] = {
    "gpu": {
        "chip": ("sm_count", "clock_hz"),
        "peak": ("bf16_flop_per_s", "fp16_flop_per_s"),
        "memory": ("hbm_bytes", "hbm_bytes_per_s", "l2_bytes", "smem_bytes_per_sm", "register_bytes_per_sm"),
        "interconnect": ("nvlink_bytes_per_s",),
    },
    "tpu": {
        "chip": ("tensorcores", "mxus_per_tensorcore", "mxu_rows", "mxu_cols", "clock_hz"),
        "peak": ("bf16_flop_per_s", "int8_op_per_s"),
        "memory": ("hbm_bytes", "hbm_bytes_per_s", "vmem_bytes_per_tensorcore"),
        "interconnect": ("ici_bytes_per_s_per_link",),
    },
}
OPTIONAL = {"gpu": {"peak": ("fp8_flop_per_s", "int8_op_per_s")}, "tpu": {}}
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


@dataclass(frozen=True)
class Target:
    """A chip: name, family and its sourced quantities keyed "section.key"."""

    name: str
    family: str
    description: str
    quantities: dict[str, Quantity]
    path: str

    def __getitem__(self, key: str) -> float:
        try:
            return self.quantities[key].value
        except KeyError:
            raise UnknownName(f"quantity of {self.name}", key, self.quantities) from None

    def get(self, key: str, default: float | None = None) -> float | None:
        return self.quantities[key].value if key in self.quantities else default

    @property
    def peak_bf16_flop_per_s(self) -> float:
        return self["peak.bf16_flop_per_s"]

    @property
    def hbm_bytes_per_s(self) -> float:
        return self["memory.hbm_bytes_per_s"]

    @property
    def ridge_flop_per_byte(self) -> float:
        """Arithmetic intensity where the bf16 roofline turns from memory to compute bound."""
        return self.peak_bf16_flop_per_s / self.hbm_bytes_per_s

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "family": self.family,
            "description": self.description,
            "ridge_flop_per_byte": self.ridge_flop_per_byte,
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
    for section, table in raw.items():
        if section in ("schema", "name", "family", "description"):
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
    return Target(raw["name"], family, raw["description"], quantities, str(path))


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
