"""`landscape serve` end to end: bad input is one line and exit 2 before any framework loads; on
lowered models the simulator agrees with `predict` and with direct costing, and serves the
configurations that run in practice."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from landscape import cli

SERVE = ["serve", "--model", "llama-3.1-8b", "--target", "h100"]
BAD = {
    "zero rate": (SERVE + ["--rate", "0"], "'0' must be a finite number > 0"),
    "negative rate": (SERVE + ["--rate", "-2"], "must be a finite number > 0"),
    "nan rate": (SERVE + ["--rate", "nan"], "must be a finite number > 0"),
    "zero concurrency": (SERVE + ["--concurrency", "0"], "0 is below 1"),
    "rate and concurrency": (SERVE + ["--rate", "1", "--concurrency", "4"], "give one of --concurrency, --rate"),
    "negative SLO": (SERVE + ["--slo-ttft", "-1"], "must be a finite number > 0"),
    "SLO beside a load": (SERVE + ["--slo-ttft", "1", "--rate", "2"], "drop --concurrency/--rate"),
    "a list without an SLO": (SERVE + ["--max-batch", "64,128"], "searched only with an SLO"),
    "a bad list": (SERVE + ["--max-batch", "64,x"], "give integers >= 1"),
    "a request beyond the context": (
        SERVE + ["--input-len", "200000"],
        "200,128 tokens exceeds its context of 131,072",
    ),
    "a missing trace": (SERVE + ["--trace", "/nonexistent.csv"], "/nonexistent.csv: no such file"),
    "weights that fill the chip": (
        ["serve", "--model", "llama-3.1-70b", "--target", "h100", "--chips", "1"],
        "less than one request",
    ),
    "unknown target": (["serve", "--model", "llama-3.1-8b", "--target", "h1000"], "did you mean 'h100'"),
    "--force without --out": (SERVE + ["--force"], "--force applies only with --out"),
    "a precision the target lacks": (SERVE + ["--precision", "int8"], "h100 has no int8"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_input_is_one_line_and_exit_2(case, capsys):
    args, needle = BAD[case]
    assert cli.main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("landscape: error:"), captured.err
    assert needle in lines[0], lines[0]


def test_a_bad_trace_row_names_its_line(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_len,output_len\n0,100,10\n0.1,-5,10\n")
    assert cli.main(SERVE + ["--trace", str(trace)]) == 2
    assert f"{trace} line 3: input_len must be an integer >= 1, got '-5'" in capsys.readouterr().err


def test_bad_input_is_refused_before_torch_or_jax_is_imported():
    code = (
        "import sys, json; from landscape.cli import main\n"
        "codes = [main(args) for args in json.loads(sys.argv[1])]\n"
        "print(json.dumps([codes, sorted(m for m in ('torch', 'jax') if m in sys.modules)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps([a for a, _ in BAD.values()])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    codes, imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(codes) == {2} and imported == []


@pytest.mark.jax
@pytest.mark.xdist_group("serve-llama-8b")
def test_one_request_in_flight_equals_predicts_batch_1_figures(capsys):
    assert (
        cli.main(
            [
                "predict",
                "--model",
                "llama-3.1-8b",
                "--target",
                "h100",
                "--input-len",
                "1000",
                "--output-len",
                "65",
                "--json",
            ]
        )
        == 0
    )
    predicted = json.loads(capsys.readouterr().out)
    assert (
        cli.main(
            SERVE + ["--concurrency", "1", "--requests", "2", "--input-len", "1000", "--output-len", "65", "--json"]
        )
        == 0
    )
    served = json.loads(capsys.readouterr().out)
    assert served["ttft_s"]["mean"] == pytest.approx(predicted["ttft_s"], rel=1e-6)  # the same prefill graph
    assert served["tpot_s"]["mean"] == pytest.approx(predicted["decode_step_s"], rel=0.01)
    assert served["e2e_s"]["mean"] == pytest.approx(predicted["e2e_latency_s"], rel=0.01)


@pytest.mark.jax
@pytest.mark.xdist_group("serve-llama-8b")
def test_the_step_grid_matches_direct_costing_off_its_points():
    from hardware_models.serving import Workload
    from hardware_models.serving.step_cost import split_attention
    from hardware_models.target import get_target
    from landscape.serve_load import _lowering, deployment

    target = get_target("h100")
    placed = deployment("llama-3.1-8b", target, Workload(requests=1, input_len=1000, output_len=100))
    lower = _lowering("llama-3.1-8b", "jax", "bf16")
    # prefill steps within 10% (a GEMM's 128-row tiles make dense time a staircase the line cuts),
    # decode steps within 3%
    for shapes, chunks, decodes, cached, within in (
        ({"batch": 1, "seq": 700}, [(700, 0)], 0, 0, 0.10),
        ({"batch": 1, "seq": 3000}, [(3000, 0)], 0, 0, 0.10),
        ({"batch": 1, "seq": 65}, [(65, 0)], 0, 0, 0.10),
        ({"batch": 5, "seq": 900, "mode": "decode"}, [], 5, 4500, 0.03),
        ({"batch": 40, "seq": 2000, "mode": "decode"}, [], 40, 80000, 0.03),
        ({"batch": 3, "seq": 1, "mode": "decode"}, [], 3, 3, 0.03),
    ):
        rest, attention, _, _ = split_attention(lower(shapes), target, 1)
        assert placed.costs.step_s(chunks, decodes, cached) == pytest.approx(rest + attention, rel=within), shapes


@pytest.mark.jax
@pytest.mark.parametrize(
    "args",
    [
        [
            "--model",
            "llama-3.1-70b",
            "--target",
            "h100",
            "--chips",
            "2",
            "--precision",
            "fp8",
            "--concurrency",
            "128",
            "--requests",
            "256",
            "--input-len",
            "2048",
            "--output-len",
            "256",
        ],
        [
            "--model",
            "llama-2-7b",
            "--target",
            "tpu-v5e",
            "--chips",
            "8",
            "--concurrency",
            "96",
            "--requests",
            "192",
            "--input-len",
            "1024",
            "--output-len",
            "256",
        ],
    ],
    ids=["llama-3.1-70b c128 on 2 h100", "llama-2-7b c96 on 8 tpu-v5e"],
)
def test_configurations_that_run_in_practice_are_simulated(args, capsys):
    assert cli.main(["serve", *args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["requests"] == int(args[args.index("--requests") + 1])
    assert max(row["running"] for row in out["timeline"]) > 32  # more than a reserved cache would hold at once
    assert 0 < out["kv_cache"]["peak_occupancy"] <= 1


@pytest.mark.jax
@pytest.mark.xdist_group("serve-llama-8b")
def test_out_writes_the_report_and_a_capacity_search_answers(tmp_path, capsys):
    out = tmp_path / "serve"
    assert cli.main(SERVE + ["--concurrency", "8", "--requests", "32", "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} >= {"report.json", "requests.csv", "timeline.csv", "timeline.png"}
    assert len((out / "requests.csv").read_text().splitlines()) == 33
    capsys.readouterr()
    assert cli.main(SERVE + ["--requests", "100", "--slo-ttft", "0.5", "--slo-tpot", "0.03", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["best"]["ttft_s"]["p90"] <= 0.5 and found["best"]["tpot_s"]["p90"] <= 0.03
    assert cli.main(SERVE + ["--requests", "20", "--slo-ttft", "0.0001"]) == 2
    assert "no load meets it" in capsys.readouterr().err
