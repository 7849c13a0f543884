"""The Landscape Map: every family, every row the issue names, numbers from the target files."""

from __future__ import annotations

import pytest

from hardware_models.landscape_map import FAMILIES, _read_prose, landscape_map
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


def test_the_map_has_every_row_for_all_five_families():
    result = landscape_map({"gpu": "measured"})
    assert set(result.families) == {"gpu", "tpu", "wafer", "lpu", "spyre"}
    assert set(ROWS) <= {row for row, _ in result.rows}
    assert all(cells[f] for _, cells in result.rows for f in FAMILIES)
    assert dict(result.rows)["KV-cache placement (predicted)"]["gpu"] == "measured"


def test_number_rows_are_read_from_the_target_files():
    result = dict(landscape_map().rows)
    assert result["peak FLOP/s (16-bit)"]["gpu"] == f"{get_target('h100').peak_16bit_flop_per_s / 1e12:,.0f} TFLOP/s"
    assert result["ridge point"]["tpu"] == f"{get_target('tpu-v5e').ridge_flop_per_byte:,.1f} FLOP/byte"


def test_a_map_file_missing_a_cell_names_the_family_and_the_key(tmp_path):
    text = (
        (_read_prose.__globals__["MAP_FILE"])
        .read_text()
        .replace('kv_cache_strategy = "in LPDDR5, sticked on the head dimension"\n', "")
    )
    path = tmp_path / "map.toml"
    path.write_text(text)
    with pytest.raises(BadTargetFile, match="spyre.*kv_cache_strategy"):
        _read_prose(path)
