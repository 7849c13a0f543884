"""Targets as data: one TOML file per chip in hardware_models/targets/, loaded strictly.

Every number is a `Quantity` with its source, tagged as in ../shared/hardware/specs.md:
P primary, S secondary, D derived (the file carries the arithmetic over other keys, and
`check_derivations` recomputes it), U unpublished (an assumption, marked as such, and a knob
that `with_overrides` / `--set section.key=VALUE` replaces), F fitted (a coefficient fitted to
a measured row of the calibration table, which the source names: "F G23"; see
hardware_models/calibration.py, which refits it). Hardware limits sit in [chip], [peak],
[interconnect]; fitted coefficients in [fitted] and [schedule], apart.
Memory levels are data: `[levels.NAME]` tables, outermost first, each with a `role` ("main":
the main memory; "on-chip": a cache or scratchpad; "register"), an optional `per` (the chip
key that counts its instances: "chip.sm_count"), an optional `keeps_producer_output` and
`on_chip` flag, and sourced quantities (`bytes` per instance, `bytes_per_s`, and its policies:
`usable_fraction`, `usable_bytes`, `resident_fraction`, `buffer_fraction`), keyed
"levels.NAME.KEY" like every other quantity, so `--set levels.l2.resident_fraction=0.3` turns one.
What each family's files must hold is declared by the family (hardware_models/families/).
A [dtypes] table lists the element types the chip runs natively, and the ones it emulates
with another (`emulated = { f16 = "f32" }`); anything else is refused with an error. Keys carry
their unit (`_hz`, `_bytes`, `_bytes_per_s`, `_flop_per_s`). Quantities that follow from others
are computed, not stored: the ridge point is peak FLOP/s over memory bandwidth.
"""

from __future__ import annotations

import functools
import math
import os
import tomllib
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from hardware_models.derivations import (  # noqa: F401 (DERIVATION_TOLERANCE, derivation_inputs, evaluate: re-exported)
    DERIVATION_TOLERANCE,
    check_derivations,
    check_derived,
    derivation_inputs,
    evaluate,
    rederive,
)
from reference.errors import BadTargetFile, UnknownName, UnsupportedDtype

TARGETS_DIR = Path(__file__).with_name("targets")
TAGS = ("P", "S", "D", "U", "F")

# Element types by MLIR name that are checked against [dtypes]: the floating types and int8 (a
# compute type for quantized matmuls); other integers are indices and masks every target handles.
COMPUTE_DTYPES = ("f64", "f32", "bf16", "f16", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "i8", "f4E2M1FN")
QUANTITY_FIELDS = {"value", "source", "note", "derivation"}
ROLES = ("main", "on-chip", "register")
LEVEL_QUANTITIES = ("bytes", "bytes_per_s", "usable_fraction", "usable_bytes", "resident_fraction", "buffer_fraction")
LEVEL_FIELDS = {"role", "per", "keeps_producer_output", "on_chip"}


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
class Level:
    """One memory level of a chip (its numbers are quantities "levels.NAME.KEY" of the target).

    role: "main" (the main memory, one per chip), "on-chip" (a cache or scratchpad) or
    "register"; per: the chip key that counts its instances ("chip.sm_count"), "" for one per
    chip; keeps_producer_output: a kernel's output may still be here for the next kernel (a
    GPU's L2), within resident_fraction of it; on_chip: on the die (every level but a main
    memory off the die: HBM, LPDDR5).
    """

    name: str
    role: str
    per: str = ""
    keeps_producer_output: bool = False
    on_chip: bool = True

    def key(self, quantity: str) -> str:
        return f"levels.{self.name}.{quantity}"


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
    levels: tuple[Level, ...] = ()  # outermost first
    loaded: Target | None = field(default=None, compare=False, repr=False)  # before any --set

    @property
    def as_loaded(self) -> Target:
        """The target as its file states it: what its fitted values were fitted on."""
        return self.loaded or self

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

    def with_overrides(self, overrides: dict[str, float]) -> Target:
        """A copy with some quantities replaced (`--set levels.l2.resident_fraction=0.3`).

        Raises:
            UnknownName: a key the target does not have.
            BadTargetFile: a value outside the key's domain (`domain`): not finite, not > 0, a
                fraction above 1, a count that is not a whole number.
        """
        quantities = dict(self.quantities)
        for key, value in overrides.items():
            if key not in quantities:
                raise UnknownName(f"quantity of {self.name}", key, quantities)
            problem = domain_problem(key, value) or override_problem(key, value, quantities[key].value)
            if problem:
                raise BadTargetFile("--set", key, problem)
            quantities[key] = Quantity(float(value), "U --set on the command line", f"was {quantities[key].value:g}")
        for key, (value, follows) in rederive(replace(self, quantities=quantities), set(overrides)).items():
            problem = domain_problem(key, value)
            if problem:
                raise BadTargetFile("--set", key, f"follows from {', '.join(follows)}: {problem}")
            q = quantities[key]
            quantities[key] = Quantity(value, q.source, f"recomputed after --set; was {q.value:g}", q.derivation)
        return replace(self, quantities=quantities, loaded=self.as_loaded)

    @cached_property
    def view(self):
        """The family's typed view of this file's quantities (`Family.view`: the GPU's `Simt`),
        built once per target; a `--set` makes a new target and so a new view.

        Raises:
            FamilyError: a family whose cost model reads keys, and declares no view.
        """
        from hardware_models.families import FamilyError

        build = self.family_record.view
        if build is None:
            raise FamilyError(f"the {self.family} family declares no typed view of its target files")
        return build(self)

    @property
    def family_record(self):
        """The target's `Family` (hardware_models/families/): pipeline, cost model, ceilings."""
        from hardware_models.families import get_family

        return get_family(self.family)

    @property
    def peak_16bit_flop_per_s(self) -> float:
        """The dense bf16 (fp16 on Spyre) peak."""
        return self.family_record.peak_16bit(self)

    def level(self, role: str) -> Level:
        """The outermost level of a role ("main", "on-chip")."""
        for level in self.levels:
            if level.role == role:
                return level
        raise UnknownName(f"memory level role of {self.name}", role, sorted({lv.role for lv in self.levels}))

    def has_level(self, role: str) -> bool:
        return any(level.role == role for level in self.levels)

    def level_value(self, level: Level | str, quantity: str, default: float | None = None) -> float:
        """A level's quantity ("bytes", "bytes_per_s", a policy); `default` where the file has none."""
        name = level.name if isinstance(level, Level) else level
        key = f"levels.{name}.{quantity}"
        if default is not None and key not in self.quantities:
            return default
        return self[key]

    def level_capacity(self, level: Level) -> float:
        """All instances of a level together: bytes x the count its `per` key names."""
        return self.level_value(level, "bytes") * (self[level.per] if level.per else 1)

    @property
    def main_memory_level(self) -> str:
        """The name of the main memory as a level in plans and costs: "hbm", "lpddr5"."""
        return self.level("main").name

    @property
    def main_memory_bytes(self) -> float:
        return self.level_value(self.level("main"), "bytes")

    @property
    def main_memory_bytes_per_s(self) -> float:
        return self.level_value(self.level("main"), "bytes_per_s")

    @property
    def usable_main_memory_bytes(self) -> float:
        """What weights, inputs and caches may fill: main memory x its usable_fraction."""
        return self.main_memory_bytes * self.level_value(self.level("main"), "usable_fraction")

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
            "levels": [
                {
                    "name": lv.name,
                    "role": lv.role,
                    "per": lv.per,
                    "keeps_producer_output": lv.keeps_producer_output,
                    "on_chip": lv.on_chip,
                }
                for lv in self.levels
            ],
            "quantities": {
                k: {
                    "value": q.value,
                    "source": q.source,
                    **({"note": q.note} if q.note else {}),
                    **({"derivation": q.derivation} if q.derivation else {}),
                }
                for k, q in sorted(self.quantities.items())
            },
        }


# A quantity's domain follows from its key. A fraction (a share, an efficiency) lies in [1e-6, 1];
# a count (a [chip] quantity that is not a rate or a clock, a latency in cycles, a number of
# links) is a whole number in [1, 1e12]; a memory size (a level's bytes) lies in [1, 1e21] bytes;
# everything else (a rate, a time) lies in [1e-12, 1e21]: wider than any chip's (a picosecond
# to a zettabyte per second), narrow enough that no product or quotient of two of them
# overflows a float or loses it to a subnormal.
RATE_SUFFIXES = ("_hz", "_per_s", "_per_s_per_core", "_per_s_per_link")
POSITIVE_RANGE = (1e-12, 1e21)
FRACTION_RANGE = (1e-6, 1.0)
SIZE_RANGE = (1.0, 1e21)
MAX_COUNT = 1e12
# A granule (a stick, a cache line, an MMA or MXU edge, a vreg's sublanes) is a power of two: the
# hardware addresses it by bits (Spyre's 128-byte stick; a 64-byte line). One in bytes holds at
# least one element of the widest type, 8 bytes (Spyre's 65-element clone bug class: a stick of 3
# bytes holds no element, and the element count per stick divides by zero).
GRANULES = (
    "stick_bytes",
    "line_bytes",
    "mma_m",
    "mma_k_bytes",
    "mfma_m",
    "mfma_k_bytes",
    "mxu_rows",
    "mxu_cols",
    "vpu_sublanes",
)
MIN_GRANULE_BYTES = 8
# An override of a count stays within this factor of the target's own value (900,000 PEs take
# 879 to 921 million; 32 cores 1 to 32,768): a what-if of the same kind of chip, not one PE
# holding a model or a billion cores (issue: both answered with numbers).
COUNT_OVERRIDE_FACTOR = 1024


def domain(key: str) -> str:
    """ "fraction", "count", "size" or "positive": the values a quantity may take (see above)."""
    name = key.rsplit(".", 1)[-1]
    if name.endswith("_fraction") or name.endswith("efficiency"):
        return "fraction"
    section = key.split(".", 1)[0]
    if name.endswith(("_cycles", "_links", "_chips")) or (section == "chip" and not name.endswith(RATE_SUFFIXES)):
        return "count"
    if section == "levels" and name.endswith("bytes"):
        return "size"
    return "positive"


def domain_problem(key: str, value: object) -> str | None:
    """Why `value` is outside the domain of `key`, or None when it is inside."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"value must be a number, got {value!r}"
    if not math.isfinite(value) or value <= 0:
        return f"value must be a finite number > 0, got {value!r}"
    kind = domain(key)
    if kind == "fraction" and not FRACTION_RANGE[0] <= value <= FRACTION_RANGE[1]:
        return f"a fraction lies in [{FRACTION_RANGE[0]:g}, 1], got {value!r}"
    if kind == "size" and not SIZE_RANGE[0] <= value <= SIZE_RANGE[1]:
        return f"a memory size lies in [1, {SIZE_RANGE[1]:g}] bytes, got {value!r}"
    if kind == "count" and (value != int(value) or value > MAX_COUNT):
        return f"a count is a whole number in [1, {MAX_COUNT:g}], got {value!r}"
    name = key.rsplit(".", 1)[-1]
    if name.endswith(GRANULES):
        least = MIN_GRANULE_BYTES if name.endswith("bytes") else 1
        if value != int(value) or int(value) & (int(value) - 1) or value < least:
            return f"a granule is a power of two{f' of at least {least} bytes' if least > 1 else ''}, got {value:g}"
    lo, hi = POSITIVE_RANGE
    if kind == "positive" and not lo <= value <= hi:
        return f"a rate, size or time lies in [{lo:g}, {hi:g}], got {value!r}"
    return None


def override_problem(key: str, value: float, own: float) -> str | None:
    """Why an override of `key` (the target's own value `own`) leaves the hardware's plausible
    range, or None: a count within COUNT_OVERRIDE_FACTOR of its own value."""
    if domain(key) != "count":
        return None
    lo, hi = max(1, math.ceil(own / COUNT_OVERRIDE_FACTOR)), own * COUNT_OVERRIDE_FACTOR
    if not lo <= value <= hi:
        return (
            f"a count within {COUNT_OVERRIDE_FACTOR}x of this target's {own:g} lies in [{lo:g}, {hi:g}], got {value:g}"
        )
    return None


def _quantity(path: Path, key: str, raw: object) -> Quantity:
    if not isinstance(raw, dict):
        raise BadTargetFile(path, key, "expected an inline table {value, source}")
    unknown = set(raw) - QUANTITY_FIELDS
    if unknown:
        raise BadTargetFile(path, key, f"unknown fields {sorted(unknown)}; valid: {sorted(QUANTITY_FIELDS)}")
    value, source = raw.get("value"), raw.get("source")
    problem = domain_problem(key, value)
    if problem:
        raise BadTargetFile(path, key, problem)
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
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise BadTargetFile(path, None, f"not valid TOML: {err}") from None
    except RecursionError:
        raise BadTargetFile(path, None, "not a target file: its TOML nests too deep to read") from None
    except UnicodeDecodeError as err:
        raise BadTargetFile(path, None, f"not a TOML text file (byte {err.start} is not UTF-8)") from None
    except IsADirectoryError:
        raise BadTargetFile(path, None, "is a folder; give a target file (.toml)") from None
    except OSError as err:
        raise BadTargetFile(path, None, f"cannot be read: {err.strerror or err}") from None
    for key in ("schema", "name", "family", "description"):
        if key not in raw:
            raise BadTargetFile(path, key, "missing")
    if raw["schema"] != 1:
        raise BadTargetFile(path, "schema", "expected 1")
    from hardware_models.families import families

    known = families()
    if raw["family"] not in known:
        raise BadTargetFile(path, "family", f"expected one of {sorted(known)}")
    family = known[raw["family"]]
    quantities = {}
    native, emulated = _dtypes(path, raw.get("dtypes"))
    levels = _levels(path, raw.get("levels"), family, quantities)
    for section, table in raw.items():
        if section in ("schema", "name", "family", "description", "dtypes", "levels"):
            continue
        allowed = family.schema.get(section, ()) + family.optional.get(section, ())
        if not isinstance(table, dict) or not allowed:
            raise BadTargetFile(
                path, section, f"unknown section; valid: {', '.join(sorted([*family.schema, 'levels', 'dtypes']))}"
            )
        for key, value in table.items():
            if key not in allowed:
                raise BadTargetFile(path, f"{section}.{key}", f"unknown key; valid: {', '.join(allowed)}")
            quantities[f"{section}.{key}"] = _quantity(path, f"{section}.{key}", value)
    for section, keys in family.schema.items():
        for key in keys:
            if f"{section}.{key}" not in quantities:
                raise BadTargetFile(path, f"{section}.{key}", "missing")
    for level in levels:
        if level.per and level.per not in quantities:
            raise BadTargetFile(path, f"levels.{level.name}.per", f"names no quantity of this file: {level.per!r}")
    target = Target(raw["name"], family.name, raw["description"], quantities, str(path), native, emulated, levels)
    check_derived(path, target)
    if family.view is not None:
        target.view  # noqa: B018 (built now, so a file its family's view refuses is refused as it loads)
    return target


def _levels(path: Path, table: object, family, quantities: dict) -> tuple[Level, ...]:
    """The [levels.NAME] tables, in file order; their quantities go into `quantities`."""
    if not isinstance(table, dict) or not table:
        raise BadTargetFile(
            path, "levels", f"a [levels.NAME] table per memory level; this family needs {', '.join(family.levels)}"
        )
    levels = []
    for name, raw in table.items():
        if not isinstance(raw, dict):
            raise BadTargetFile(path, f"levels.{name}", "expected a table")
        role = raw.get("role")
        if role not in ROLES:
            raise BadTargetFile(path, f"levels.{name}.role", f"one of {', '.join(ROLES)}, got {role!r}")
        for key, value in raw.items():
            if key in LEVEL_FIELDS:
                continue
            if key not in LEVEL_QUANTITIES:
                raise BadTargetFile(
                    path,
                    f"levels.{name}.{key}",
                    f"unknown key; valid: {', '.join(sorted(LEVEL_FIELDS) + list(LEVEL_QUANTITIES))}",
                )
            quantities[f"levels.{name}.{key}"] = _quantity(path, f"levels.{name}.{key}", value)
        for flag in ("keeps_producer_output", "on_chip"):
            if flag in raw and not isinstance(raw[flag], bool):
                raise BadTargetFile(path, f"levels.{name}.{flag}", f"true or false, got {raw[flag]!r}")
        per = raw.get("per", "")
        if not isinstance(per, str):
            raise BadTargetFile(path, f"levels.{name}.per", f'a chip key such as "chip.cores", got {per!r}')
        level = Level(name, role, per, raw.get("keeps_producer_output", False), raw.get("on_chip", role != "main"))
        if level.keeps_producer_output and f"levels.{name}.resident_fraction" not in quantities:
            raise BadTargetFile(
                path,
                f"levels.{name}.resident_fraction",
                "missing: a level that keeps a producer's output says how much of it",
            )
        levels.append(level)
    if [lv.role for lv in levels].count("main") != 1:
        raise BadTargetFile(path, "levels", 'exactly one level has role = "main"')
    for name, keys in family.levels.items():
        if name not in table:
            raise BadTargetFile(
                path, f"levels.{name}", f"missing; the {family.name} family needs {', '.join(family.levels)}"
            )
        for key in keys:
            if f"levels.{name}.{key}" not in quantities:
                raise BadTargetFile(path, f"levels.{name}.{key}", "missing")
    return tuple(levels)


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


def check_target_file(path: Path | str) -> list[str]:
    """Every problem of a target file a user brings (`landscape targets --check FILE`), a line
    each: every key its family needs that it lacks, at once; else the loader's objection (an
    unknown key, a value out of its domain, a bad level, a derivation that does not hold).
    [] for a file every command takes.
    """
    path = Path(path)
    try:
        load_target_file(path)
    except BadTargetFile as err:
        return _missing_keys(path) or [str(err)]
    return []


def _missing_keys(path: Path) -> list[str]:
    """Each key the file's family needs and the file lacks ([] when it cannot tell: no TOML, or
    no known family)."""
    from hardware_models.families import families

    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return []
    family = families().get(raw.get("family")) if isinstance(raw.get("family"), str) else None
    if family is None:
        return []
    missing = [k for k in ("schema", "name", "description") if k not in raw]
    sections = sorted([*family.schema, "levels", "dtypes"])  # as the loader names them
    unknown = [  # a misspelt key or section is usually the missing one's twin: both are said
        str(BadTargetFile(path, name, f"unknown section; valid: {', '.join(sections)}"))
        for name, value in raw.items()
        if isinstance(value, dict) and name not in sections
    ]
    for section, keys in family.schema.items():
        table = raw.get(section) if isinstance(raw.get(section), dict) else {}
        missing += [f"{section}.{key}" for key in keys if key not in table]
        allowed = keys + family.optional.get(section, ())
        unknown += [
            str(BadTargetFile(path, f"{section}.{key}", f"unknown key; valid: {', '.join(allowed)}"))
            for key in table
            if key not in allowed
        ]
    levels = raw.get("levels") if isinstance(raw.get("levels"), dict) else {}
    for name, keys in family.levels.items():
        level = levels.get(name)
        if not isinstance(level, dict):
            missing.append(f"levels.{name}")
            continue
        missing += [f"levels.{name}.{key}" for key in keys if key not in level]
    if "dtypes" not in raw:
        missing.append("dtypes.native")
    if not missing:
        return []
    return [str(BadTargetFile(path, key, f"missing; the {family.name} family needs it")) for key in missing] + unknown


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
    """A packaged target by name, or a target file of the user's by path (a name ending in .toml or
    holding a /: the file `landscape calibrate host-cpu` writes works so, uncopied).

    Raises:
        UnknownName: no such packaged target.
        BadTargetFile: a path that is no file, or a file that is not a valid target.
    """
    if name.endswith(".toml") or "/" in name or os.sep in name:
        path = Path(name)
        if not path.is_file():
            raise BadTargetFile(
                path,
                None,
                f"{'is a folder' if path.is_dir() else 'no such file'}; give a target "
                f"file (.toml) or a packaged target: {', '.join(load_targets())}",
            )
        return load_target_file(path)
    targets = load_targets()
    if name not in targets:
        raise UnknownName("target", name, targets)
    return targets[name]
