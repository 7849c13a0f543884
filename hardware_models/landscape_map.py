"""The Accelerator Landscape Map: one column per family, one row per question a user asks.

Prose cells come from each family's map.toml (hardware_models/families/<name>/map.toml); number rows from each family's
representative target file, read through the family registry (hardware_models/families/) and
the target's memory levels; rows computed by the models: the ridge point (peak over main memory
bandwidth), and, when the caller passes predictions, where a reference model's KV cache is
predicted to live and on how many chips.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from hardware_models.families import BUILTIN, get_family, home
from hardware_models.target import Target, get_target
from reference.errors import BadTargetFile, InvalidShape
from reference.units import format_bytes, format_rate

MAP_FILE = "map.toml"  # in each family's package: its column's prose cells
FAMILIES = BUILTIN  # its columns: the built-in families, each with its map.toml
PROSE = (
    ("execution model", "execution_model"),
    ("memory hierarchy", "memory_hierarchy"),
    ("programming model", "programming_model"),
    ("compiler strategy", "compiler_strategy"),
    ("key trade-off", "key_tradeoff"),
    ("graph capture", "graph_capture"),
    ("scheduling granularity", "scheduling_granularity"),
    ("fusion boundaries", "fusion_boundaries"),
    ("data-dependent control", "data_dependent_control"),
    ("IR stages", "ir_stages"),
    ("fusion strategy", "fusion_strategy"),
    ("tiling decision", "tiling_decision"),
    ("layout propagation", "layout_propagation"),
    ("alignment constraints", "alignment_constraints"),
    ("KV-cache strategy", "kv_cache_strategy"),
)


def on_chip_bytes(target: Target) -> float:
    """Memory a compiler can place data in on the die: every on-chip level but the registers
    (L2 and shared memory on a GPU; VMEM; LX; the SRAM that is all an LPU or a wafer has)."""
    return sum(target.level_capacity(lv) for lv in target.levels if lv.on_chip and lv.role != "register")


@dataclass(frozen=True)
class LandscapeMap:
    families: tuple[str, ...]
    names: dict[str, str]
    targets: dict[str, str]
    rows: tuple[tuple[str, dict[str, str]], ...]  # (row, family -> cell)

    def to_dict(self) -> dict:
        return {
            "families": [{"family": f, "name": self.names[f], "target": self.targets[f]} for f in self.families],
            "rows": [{"row": row, **{f: cells[f] for f in self.families}} for row, cells in self.rows],
        }

    def to_markdown(self) -> str:
        head = "| | " + " | ".join(f"{self.names[f]} ({self.targets[f]})" for f in self.families) + " |"
        lines = [head, "|---" * (len(self.families) + 1) + "|"]
        lines += [f"| {row} | " + " | ".join(cells[f] for f in self.families) + " |" for row, cells in self.rows]
        return "\n".join(lines)


def map_file(family: str) -> Path:
    """The file holding a family's prose cells: map.toml in its package.

    Raises:
        BadTargetFile: a family declared in one module, which has no package to hold it.
    """
    where = home(family)
    if where is None:
        raise BadTargetFile(f"hardware_models/families/{family}", None, f"a package holding {MAP_FILE}")
    return where / MAP_FILE


def _read_cells(family: str, path: Path) -> dict[str, str]:
    """One family's prose cells from `path`, every key the map has and no other.

    Raises:
        BadTargetFile: a missing file, TOML that does not parse, a key missing or unknown.
    """
    wanted = {key for _, key in PROSE} | {"name", "target"}
    if not path.is_file():
        raise BadTargetFile(path, family, f"a {MAP_FILE} with the family's prose cells")
    try:
        table = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise BadTargetFile(path, family, f"valid TOML ({err})") from None
    table.pop("schema", None)
    missing, unknown = wanted - set(table), set(table) - wanted
    if missing or unknown:
        raise BadTargetFile(
            path, family, f"keys {sorted(wanted)}; missing {sorted(missing)}, unknown {sorted(unknown)}"
        )
    return table


def _read_prose(files: dict[str, Path] | None = None) -> dict[str, dict[str, str]]:
    """family -> its prose cells, from each family's map.toml (or `files`: family -> path)."""
    files = files or {}
    return {family: _read_cells(family, files.get(family) or map_file(family)) for family in FAMILIES}


def column_targets(chosen: tuple[Target, ...] = ()) -> dict[str, Target]:
    """family -> the target its column shows: the family's representative (its map.toml's), or
    the one of `chosen` (targets by name or a user's file) of that family.

    Raises:
        InvalidShape: two chosen targets of one family, or one of a family with no column.
    """
    prose = _read_prose()
    targets: dict[str, Target] = {f: get_target(prose[f]["target"]) for f in FAMILIES}
    seen: dict[str, str] = {}
    for target in chosen:
        if target.family not in targets:
            raise InvalidShape(
                "map", "target", target.name, f"a target of a family the map shows: {', '.join(FAMILIES)}"
            )
        if target.family in seen:
            raise InvalidShape(
                "map",
                "target",
                target.name,
                f"one target a family; {seen[target.family]} is already the {target.family} column",
            )
        seen[target.family] = target.name
        targets[target.family] = target
    return targets


def landscape_map(kv_cache: dict[str, str] | None = None, targets: dict[str, Target] | None = None) -> LandscapeMap:
    """The map. `kv_cache`: family -> where a reference model's KV cache is placed (predicted
    by `predict_inference`), added as a row when given; `targets`: each column's target
    (`column_targets`; default: each family's representative)."""
    prose = _read_prose()
    targets = targets or column_targets()
    rows = [(label, {f: prose[f][key] for f in FAMILIES}) for label, key in PROSE]
    rows.append(("on-chip capacity", {f: format_bytes(on_chip_bytes(t)) for f, t in targets.items()}))
    off_chip = {f: get_family(f).off_chip(t) for f, t in targets.items()}
    rows.append(("off-chip bandwidth", {f: f"{off_chip[f][0]} {format_rate(off_chip[f][1], 'B/s')}" for f in FAMILIES}))
    rows.append(
        ("peak FLOP/s (16-bit)", {f: format_rate(t.peak_16bit_flop_per_s, "FLOP/s") for f, t in targets.items()})
    )
    rows.append(
        (
            "peak bandwidth",
            {
                f: f"{t.main_memory_level.upper()} {format_rate(t.main_memory_bytes_per_s, 'B/s')}"
                for f, t in targets.items()
            },
        )
    )
    rows.append(("ridge point", {f: f"{t.ridge_flop_per_byte:,.1f} FLOP/byte" for f, t in targets.items()}))
    if kv_cache:
        rows.append(("KV-cache placement (predicted)", {f: kv_cache.get(f, "-") for f in FAMILIES}))
    return LandscapeMap(
        FAMILIES, {f: prose[f]["name"] for f in FAMILIES}, {f: t.name for f, t in targets.items()}, tuple(rows)
    )
