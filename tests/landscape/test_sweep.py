"""landscape sweep: every point is what `predict` gives alone, the front is exactly the
non-dominated feasible points, --resume keeps what was costed, and a bad spec is one line, exit 2."""

from __future__ import annotations

import csv
import json

import pytest

from landscape import cli
from landscape.sweep import Spec, feasible, load_spec, pareto_front, parse_spec, run_sweep

pytestmark = [pytest.mark.jax]

SPEC = """model = "tiny"
[axes]
target = ["h100", "tpu-v5e"]
precision = ["bf16", "fp8"]
batch = [1, 4]
input_len = [64]
output_len = [16]
"set.levels.hbm.bytes_per_s" = [1e12, 2e12]
[objectives]
tokens_per_s_per_user = "max"
throughput_tokens_per_s_per_chip = "max"
[constraints]
decode_step_s = { max = 1.0 }
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "spec.toml"
    path.write_text(SPEC)
    return run_sweep(load_spec(path))


def test_a_sweeps_point_is_predicts_figure_to_the_last_digit(result, capsys):
    point = next(
        r
        for r in result.rows
        if r["target"] == "h100"
        and r["precision"] == "fp8"
        and r["batch"] == 4
        and r["set.levels.hbm.bytes_per_s"] == 2e12
    )
    args = ["predict", "--model", "tiny", "--target", "h100", "--precision", "fp8", "--batch", "4"]
    args += ["--input-len", "64", "--output-len", "16", "--set", "levels.hbm.bytes_per_s=2e12", "--json"]
    assert cli.main(args) == 0
    alone = json.loads(capsys.readouterr().out)
    for metric in ("ttft_s", "decode_step_s", "tokens_per_s_per_user", "throughput_tokens_per_s"):
        assert point[metric] == alone[metric], metric
    assert point["chips_used"] == alone["chips"]


def test_a_point_the_target_cannot_run_is_kept_with_its_reason(result):
    """The TPU v5e has no fp8: its 8 fp8 points stay in the table, said why, off the front."""
    refused = [r for r in result.rows if r["target"] == "tpu-v5e" and r["precision"] == "fp8"]
    assert len(result.rows) == 16 and len(refused) == 4
    assert all("tpu-v5e has no fp8" in r["error"] and r["decode_step_s"] is None for r in refused)
    assert not any(r in result.front for r in refused)


def test_the_front_is_the_feasible_points_no_other_point_dominates(result):
    ok = [r for r in result.rows if feasible(r, result.spec.constraints)]
    objectives = list(result.spec.objectives)

    def dominates(a, b):
        return all(a[m] >= b[m] for m in objectives) and any(a[m] > b[m] for m in objectives)

    assert result.front
    for r in ok:
        beaten = any(dominates(q, r) for q in ok)
        assert (r in result.front) == (not beaten)


def test_twice_the_hbm_bandwidth_never_slows_a_point(result):
    """A property of the roofline: doubling the main memory's bandwidth cannot make a decode slower."""
    rows = {(r["target"], r["precision"], r["batch"], r["set.levels.hbm.bytes_per_s"]): r for r in result.rows}
    for (target, precision, batch, bw), r in rows.items():
        if bw == 1e12 and not r["error"]:
            assert rows[target, precision, batch, 2e12]["decode_step_s"] <= r["decode_step_s"]


def test_pareto_front_keeps_ties_and_minimises_where_told():
    rows = [{"a": 1.0, "b": 3.0}, {"a": 2.0, "b": 2.0}, {"a": 2.0, "b": 2.0}, {"a": 3.0, "b": 3.0}]
    assert pareto_front(rows, {"a": "max", "b": "min"}) == rows[1:]
    assert pareto_front(rows, {"a": "min", "b": "min"}) == rows[:3]


def test_resume_costs_only_the_points_the_table_lacks(tmp_path, result, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    assert cli.main(["sweep", str(spec), "--out", str(out)]) == 0
    with (out / "points.csv").open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == 16
    marked = dict(table[0], ttft_s="123.0")  # a value no run gives: kept by --resume, not recomputed
    with (out / "points.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows([marked, *table[1:]])
    capsys.readouterr()
    assert cli.main(["sweep", str(spec), "--out", str(out)]) == 2  # never overwritten unasked
    assert "--resume to continue it, --force to overwrite it" in capsys.readouterr().err
    assert cli.main(["sweep", str(spec), "--out", str(out), "--resume", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rows"][0]["ttft_s"] == 123.0 and data["points"] == 16


BAD_SPECS = {
    "unknown axis": ('model = "tiny"\n[axes]\ntarget = ["h100"]\nbatchsize = [1]\n', "axes.batchsize: unknown axis"),
    "empty axis": ('model = "tiny"\n[axes]\nbatch = []\n', "axes.batch: give a non-empty list"),
    "one objective": ('model = "tiny"\n[axes]\nbatch = [1]\n[objectives]\nttft_s = "min"\n', "two or three"),
    "unknown metric": (
        'model = "tiny"\n[axes]\nbatch = [1]\n[objectives]\nttft_s = "min"\nspeed = "max"\n',
        "objectives.speed: unknown metric",
    ),
    "impossible constraint": (
        'model = "tiny"\n[axes]\nbatch = [1]\n[objectives]\nttft_s = "min"\ne2e_latency_s = "min"\n'
        "[constraints]\nttft_s = { min = 2, max = 1 }\n",
        "min is above max",
    ),
    "unknown knob": (
        'model = "tiny"\n[axes]\n"set.chip.sm_cont" = [1]\n[objectives]\nttft_s = "min"\ne2e_latency_s = "min"\n',
        "did you mean 'chip.sm_count'",
    ),
    "unknown target": (
        'model = "tiny"\n[axes]\ntarget = ["h1000"]\n[objectives]\nttft_s = "min"\ne2e_latency_s = "min"\n',
        "unknown target 'h1000'",
    ),
    "not toml": ("model = \n", "not TOML"),
    "too many points": (
        'model = "tiny"\n[axes]\nbatch = '
        + str(list(range(1, 1001)))
        + "\ninput_len = "
        + str(list(range(1, 201)))
        + '\n[objectives]\nttft_s = "min"\ne2e_latency_s = "min"\n',
        "pass --yes",
    ),
}


@pytest.mark.parametrize("case", BAD_SPECS, ids=list(BAD_SPECS))
def test_a_bad_spec_is_one_line_exit_2(case, tmp_path, capsys):
    text, needle = BAD_SPECS[case]
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    assert cli.main(["sweep", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("landscape: error:") and needle in err, err


def test_a_spec_as_python_data_sweeps_the_same():
    spec = parse_spec({"model": "tiny", "axes": {"batch": [1]}, "objectives": {"ttft_s": "min", "chips_used": "min"}})
    assert isinstance(spec, Spec) and spec.size == 1 and spec.axes["target"] == ("h100",)
    assert run_sweep(spec).rows[0]["error"] == ""


def test_the_shipped_example_spec_parses_and_names_what_it_sweeps():
    """examples/sweep.toml (examples/README.md): 3 targets x 2 precisions x 3 batches."""
    from pathlib import Path

    spec = load_spec(Path(__file__).resolve().parents[2] / "examples" / "sweep.toml")
    assert spec.size == 18 and spec.axes["target"] == ("h100", "h200", "b200")
