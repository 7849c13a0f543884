"""Target families, one package each, and the one registry that every other module reads.

A family (gpu, tpu, spyre, lpu, wafer, cpu) is hardware: its target files' schema and memory
levels, how a kernel is tiled, the ceilings its roofline draws, whether its compiler schedules
every cycle statically (then a plan has a Chrome trace), and what the landscape map reads. A
`Compiler` is one way to compile for it: an ordered pipeline of passes and the cost model of the
kernels they make. A family holds its compilers, the usual one first (the host CPU has Inductor's
and XLA:CPU's); a compilation names one (`compile_plan(..., compiler=)`, `estimate --compiler`),
and the plan records which. A target file names its family.

A family is one package here, found by discovery: `families/<name>/__init__.py` declares its
`Family` record (`NAME = register(Family(...))`); beside it sit its cost model (`cost.py`), the
passes only it runs (one module each, named by the verb), its own plan records, and `map.toml`,
its column's prose cells in the landscape map. A new compiler for a family is one module in its
package that calls `add_compiler`: nothing else changes. tests/hardware_models/test_families.py
adds a toy family, a second compiler for it and a sixth column that way.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from reference.errors import LandscapeError, UnknownName

# The families are found, not listed: every module or package in this package is imported once,
# on the first question to the registry, and registers its record; then every module of a
# family's package, so that one adding a compiler (`add_compiler`) is found too. BUILTIN (the accelerators the
# map and `compare` show, in the order of their records' `column`) and HOST (the families found
# here with no column: the host CPU, the machine this runs on) are read from the records.


class FamilyError(LandscapeError):
    """A family module that cannot be used: it fails to import, declares no registered family,
    or breaks a rule of the records (no compilers, two with one name, two families in one column)."""


@dataclass(frozen=True)
class Compiler:
    """One compiler of a family.

    name:       what a compilation names ("inductor", "xla")
    pipeline:   passes `verb(module, plan, target) -> Plan`, in order, each with its reason
    group_cost: its cost model: (module, plan, group, target) -> Cost of one execution
    stack:      the real compiler stack it models and what that stack decides, in a line
    """

    name: str
    pipeline: tuple
    group_cost: Callable
    stack: str = ""


@dataclass(frozen=True)
class Family:
    """One execution model, declared once.

    name:           the key a target file's `family` names ("gpu")
    vendor, noun:   how a person names a chip of it: "NVIDIA" + "GPU", "Google" + "TPU"
    representative: the target the map and `compare` use for the family by default
    schema:         required keys per section of its target files ([levels] excepted);
                    optional: keys a file may add
    levels:         the memory levels its files must declare, with the keys each needs
    compilers:      its `Compiler`s, the usual one first
    ceilings:       target -> (compute ceilings FLOP/s, memory ceilings bytes/s), sustained
    peak_16bit:     target -> the dense 16-bit peak (FLOP/s) `targets` and the ridge point read
    tiling:         (GemmShape, target, output bytes) -> Tiling, or None (no contraction tiles)
    scheduled:      the compiler fixes every op's cycle (the plan has a schedule to trace)
    off_chip:       target -> (what it is called, bytes/s): the map's off-chip bandwidth row
    chip_unit:      what `--chips` counts on it ("chip"; "wafer" on Cerebras)
    column:         its place among the map's and `compare`'s columns (0 first), or None: not
                    a column (the host CPU; a test's toy family)
    caveat:         target -> a note for whoever reads a prediction from the file ('' when none):
                    the host CPU's, when the file was calibrated on another machine
    view:           target -> the typed view of its file's quantities its cost model reads
                    (`target.view`; the GPU's `Simt`), or None where the model reads keys
    allreduce:      (target, bytes, chips, span) -> the Cost of a ring all-reduce of `bytes`
                    among `chips` of its chips (`span`: the consecutive chips the group covers,
                    for the networks beyond one domain), over its own links; None: its chips have
                    no network between them (the host CPU), so a step runs on one
    """

    name: str
    vendor: str
    noun: str
    representative: str
    schema: dict[str, tuple[str, ...]]
    levels: dict[str, tuple[str, ...]]
    compilers: tuple[Compiler, ...]
    ceilings: Callable
    peak_16bit: Callable
    off_chip: Callable
    tiling: Callable | None = None
    scheduled: bool = False
    optional: dict[str, tuple[str, ...]] = field(default_factory=dict)
    chip_unit: str = "chip"
    column: int | None = None
    caveat: Callable | None = None
    view: Callable | None = None
    allreduce: Callable | None = None

    def __post_init__(self):
        names = [c.name for c in self.compilers]
        if not names or len(set(names)) != len(names):
            raise FamilyError(f"family {self.name!r} needs compilers with distinct names, has {names}")

    def compiler(self, name: str | None = None) -> Compiler:
        """The compiler called `name`, or the usual one (the first) when None.

        Raises:
            UnknownName: a name none of its compilers has (the empty one too), with the ones it has.
        """
        if name is None:
            return self.compilers[0]
        for compiler in self.compilers:
            if compiler.name == name:
                return compiler
        shown = name if isinstance(name, str) else repr(name)
        raise UnknownName(f"compiler for the {self.name} family", shown, [c.name for c in self.compilers])

    def describe(self, target_description: str = "") -> str:
        """ "NVIDIA GPU", or with a target: "NVIDIA GPU: NVIDIA H100 SXM 80GB (Hopper)"."""
        return f"{self.vendor} {self.noun}" + (f": {target_description}" if target_description else "")


_REGISTRY: dict[str, Family] = {}
_HOMES: dict[str, Path] = {}  # family -> the directory of its package (none for a one-module family)


def register(family: Family) -> Family:
    """Add a family (a family module calls this once, at import); returns it."""
    _REGISTRY[family.name] = family
    return family


def add_compiler(family: str, compiler: Compiler) -> Compiler:
    """Add a compiler to a registered family, after the ones it has (a module of the family's
    package calls this once, at import: a new compiler is one module); returns it.

    Raises:
        FamilyError: no such family registered yet, or one of its compilers has that name.
    """
    if family not in _REGISTRY:
        raise FamilyError(f"no family {family!r} to add compiler {compiler.name!r} to; registered: {sorted(_REGISTRY)}")
    record = _REGISTRY[family]
    _REGISTRY[family] = replace(record, compilers=record.compilers + (compiler,))
    return compiler


def home(family: str) -> Path | None:
    """The directory of the family's package (where its map.toml lies), or None for a family
    declared in one module."""
    _discover()
    return _HOMES.get(family)


_FOUND: tuple[str, ...] | None = None  # the families this package's modules registered, once imported


def _discover() -> tuple[str, ...]:
    """Import every module and package of hardware_models/families once; the families they declare.

    Raises:
        FamilyError: a module that fails to import, or declares no family it registers.
    """
    global _FOUND
    if _FOUND is None:
        found: list[str] = []
        for info in pkgutil.iter_modules(__path__):
            where = f"hardware_models/families/{info.name}"
            try:
                module = importlib.import_module(f"{__name__}.{info.name}")
            except Exception as err:  # any failure of a family's code: named, in one line
                raise FamilyError(f"{where} cannot be imported: {type(err).__name__}: {err}") from err
            declared = [v for v in vars(module).values() if isinstance(v, Family)]
            mine = [f.name for f in declared if _REGISTRY.get(f.name) is f]
            if not mine:
                raise FamilyError(
                    f"{where} registers no family: a family module ends with NAME = register(Family(...))"
                )
            found += mine
            if info.ispkg:
                _HOMES.update({name: Path(module.__file__).parent for name in mine})
                for part in pkgutil.iter_modules(module.__path__):
                    try:
                        importlib.import_module(f"{module.__name__}.{part.name}")
                    except Exception as err:  # as above: named, in one line
                        raise FamilyError(
                            f"{where}/{part.name} cannot be imported: {type(err).__name__}: {err}"
                        ) from err
        _FOUND = tuple(dict.fromkeys(found))
    return _FOUND


def _builtin() -> tuple[str, ...]:
    _discover()
    columns = sorted((f.column, f.name) for f in _REGISTRY.values() if f.column is not None)
    taken = [c for c, _ in columns]
    if len(set(taken)) != len(taken):
        raise FamilyError(f"two families share a column: {', '.join(f'{n} {c}' for c, n in columns)}")
    return tuple(name for _, name in columns)


def __getattr__(name: str):
    """BUILTIN and HOST, read from the discovered records (module doc)."""
    if name == "BUILTIN":
        return _builtin()
    if name == "HOST":
        return tuple(n for n in _discover() if _REGISTRY[n].column is None)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def families() -> dict[str, Family]:
    """Every registered family by name: the built-in ones first, in their columns' order, then the rest."""
    builtin = _builtin()
    return {**{n: _REGISTRY[n] for n in builtin}, **{n: f for n, f in _REGISTRY.items() if n not in builtin}}


def get_family(name: str) -> Family:
    _discover()
    if name not in _REGISTRY:
        raise UnknownName("target family", name, _REGISTRY)
    return _REGISTRY[name]


def representative_targets() -> tuple[str, ...]:
    """One target per built-in family, in its columns' order: what `compare` and the map default to."""
    return tuple(get_family(name).representative for name in _builtin())
