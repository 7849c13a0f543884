"""The Landscape Map: every family, every row the issue names, numbers from the target files."""

from __future__ import annotations

import pytest

from hardware_models.families import home
from hardware_models.landscape_map import FAMILIES, _read_prose, landscape_map, map_file
from hardware_models.target import get_target
from reference.errors import BadTargetFile

ROWS = (
    "execution model",
    "memory hierarchy",
    "programming model",
    "compiler strategy",
    "key trade-off",
    "graph capture",
    "scheduling granularity",
    "fusion boundaries",
    "data-dependent control",
    "IR stages",
    "fusion strategy",
    "tiling decision",
    "layout propagation",
    "on-chip capacity",
    "off-chip bandwidth",
    "alignment constraints",
    "KV-cache strategy",
    "peak FLOP/s (16-bit)",
    "peak bandwidth",
    "ridge point",
)


def test_the_map_has_every_row_for_every_family():
    result = landscape_map({"gpu": "measured"})
    assert set(result.families) == {"gpu", "tpu", "wafer", "lpu", "spyre", "cdna"}
    assert set(ROWS) <= {row for row, _ in result.rows}
    assert all(cells[f] for _, cells in result.rows for f in FAMILIES)
    assert dict(result.rows)["KV-cache placement (predicted)"]["gpu"] == "measured"


def test_number_rows_are_read_from_the_target_files():
    result = dict(landscape_map().rows)
    assert result["peak FLOP/s (16-bit)"]["gpu"] == f"{get_target('h100').peak_16bit_flop_per_s / 1e12:,.0f} TFLOP/s"
    assert result["ridge point"]["tpu"] == f"{get_target('tpu-v5e').ridge_flop_per_byte:,.1f} FLOP/byte"


def test_a_map_file_missing_a_cell_names_the_family_and_the_key(tmp_path):
    text = map_file("spyre").read_text().replace('kv_cache_strategy = "in LPDDR5, sticked on the head dimension"\n', "")
    path = tmp_path / "map.toml"
    path.write_text(text)
    with pytest.raises(BadTargetFile, match="spyre.*kv_cache_strategy"):
        _read_prose({"spyre": path})


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "a map.toml with the family's prose cells"),
        ("name = [", "valid TOML"),
        ('x = "1"\n', "unknown \\['x'\\]"),
    ],
    ids=["absent", "not TOML", "unknown key"],
)
def test_a_broken_map_file_names_its_problem_in_one_line(tmp_path, text, problem):
    path = tmp_path / "map.toml"
    if text is not None:
        path.write_text(text if text != 'x = "1"\n' else map_file("gpu").read_text() + text)
    with pytest.raises(BadTargetFile, match=problem) as err:
        _read_prose({"gpu": path})
    assert "\n" not in str(err.value)


def test_each_familys_prose_lives_in_its_own_package():
    """Rule: a column is one package's; no file outside the families holds another's cells."""
    for family in FAMILIES:
        assert map_file(family) == home(family) / "map.toml" and map_file(family).is_file()
