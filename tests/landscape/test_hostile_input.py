"""Hostile input and absurd knobs: every case the issue saw ends in one line and exit 2, checked
before torch or jax is imported; no answer is silently wrong (context lengths, NaN in JSON).

Each BAD_INPUTS case once failed with a traceback or answered silently; the needle is what the
line must now name.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from landscape import cli
from landscape.comparison_workload import plan_workloads
from landscape.options import INT64_MAX, SEED_RANGE
from reference import agreement
from reference.catalogue import get_entry
from reference.errors import MalformedInput, NonFiniteResult, TooLargeToRun

BAD_INPUTS = {
    # tracebacks
    "negative seed": (["run", "matmul", "--seed", "-1"], "choose an integer >= 0 and <= 4,294,967,295"),
    "seed past 32 bits": (["run", "matmul", "--seed", str(2**32)], "choose an integer >= 0 and <= 4,294,967,295"),
    "run that would not fit in memory": (["run", "matmul", "--shape", "m=1000000000000"], "more than the"),
    "extent product beyond int64": (["estimate", "matmul", "--target", "h100", "--shape", f"m={2**63 - 1}"], "int64"),
    "extent beyond int64": (["estimate", "matmul", "--target", "h100", "--shape", f"m={2**63}"], "(int64)"),
    "--out under /proc": (["compare", "mlp", "--out", "/proc/x"], "cannot create files in /proc"),
    "--trace under /proc": (
        ["estimate", "mlp", "--target", "groq-lpu", "--trace", "/proc/x.json"],
        "cannot create files in /proc",
    ),
    "--out under a file": (["compare", "mlp", "--out", "README.md/sub"], "README.md is a file"),
    "roofline under a file": (
        ["roofline", "mlp", "--target", "h100", "--out", "README.md/r.svg"],
        "README.md is a file",
    ),
    # two lines on stderr: a control character in a value, echoed back (a seeded fuzz run found it)
    "a carriage return as --array": (
        ["gemm", "1", "1", "1", "--array", "\r"],
        "array=\\r is invalid; expected ROWSxCOLS",
    ),
    "a newline as --array": (["gemm", "1", "1", "1", "--array", "1\n2"], "array=1\\n2 is invalid"),
    # silent wrong answers
    "llama-2-7b beyond its context": (
        ["predict", "--model", "llama-2-7b", "--target", "h100", "--input-len", "5000"],
        "5,256 tokens exceeds its context of 4,096",
    ),
    "llama-3.1-8b at a million tokens": (
        ["predict", "--model", "llama-3.1-8b", "--target", "h100", "--input-len", "1000000"],
        "--allow-beyond-context",
    ),
    "gpt2-small at the default lengths": (
        ["predict", "--model", "gpt2-small", "--target", "h100"],
        "--input-len + --output-len <= 1024",
    ),
    "estimate beyond context": (
        ["estimate", "llama-2-7b", "--target", "h100", "--shape", "seq=5000"],
        "--shape seq <= 4096",
    ),
    "run beyond context": (["run", "tiny", "--shape", "seq=5000"], "context of 4,096"),
    "compare beyond context": (["compare", "llama-2-7b", "--shape", "seq=5000"], "--allow-beyond-context"),
    "default compare beyond llama-3.1-8b's context": (["compare", "--shape", "seq=200000"], "llama-3.1-8b"),
    "map of a model with a short context": (["map", "--model", "gpt2-small"], "valid: llama-2-13b"),
    "empty --targets": (["compare", "--targets", ""], "valid: a100, b200, b300, groq-lpu, h100"),
    "blank --targets": (["compare", "--targets", " , "], "--targets is empty"),
    "duplicate --targets": (["compare", "--targets", "h100,h100"], "h100 more than once"),
    "--set inf": (["estimate", "matmul", "--target", "h100", "--set", "chip.sm_count=inf"], "finite"),
    "--set nan": (["estimate", "matmul", "--target", "h100", "--set", "chip.sm_count=nan"], "finite"),
    "--set 1e-305": (["estimate", "matmul", "--target", "h100", "--set", "levels.hbm.bytes_per_s=1e-305"], "1e-305"),
    "--set one PE": (["predict", "--model", "llama-3.1-8b", "--target", "wse-3", "--set", "chip.pes=1"], "chip.pes"),
    "--set a billion cores": (
        ["predict", "--model", "llama-3.1-8b", "--target", "spyre", "--set", "chip.cores=1000000000"],
        "chip.cores",
    ),
    "--set a 3-byte stick": (
        ["predict", "--model", "llama-3.1-8b", "--target", "spyre", "--set", "chip.stick_bytes=3"],
        "power of two",
    ),
    "--set abc": (["estimate", "matmul", "--target", "h100", "--set", "chip.sm_count=abc"], "'abc' is not a number"),
    "--set empty value": (["estimate", "matmul", "--target", "h100", "--set", "chip.sm_count="], "'' is not a number"),
    "--set empty key": (["estimate", "matmul", "--target", "h100", "--set", "=3"], "SECTION.KEY=NUMBER"),
    "--set twice": (
        ["estimate", "matmul", "--target", "h100", "--set", "chip.sm_count=3", "--set", "chip.sm_count=4"],
        "chip.sm_count twice",
    ),
    # minor
    "negative gemm size": (["gemm", "-1", "4", "4"], "-1 is not a valid size; sizes are integers >= 1"),
    "zero gemm size": (["gemm", "0", "4", "4"], "0 is below 1; choose an integer >= 1"),
    "underscore in a size": (["run", "matmul", "--shape", "m=1_6"], "plain decimal digits"),
    "duplicate --shape": (["run", "matmul", "--shape", "m=3", "--shape", "m=4"], "m twice"),
    "NAME and --from-file": (["hlo", "matmul", "--from-file", "x.mlir"], "not both"),
    "--json with --markdown": (["map", "--json", "--markdown"], "--json and --markdown cannot be given together"),
    "empty --trace": (["estimate", "mlp", "--target", "groq-lpu", "--trace", ""], "--trace needs a path"),
    "empty --out": (["compare", "mlp", "--out", ""], "--out needs a path"),
    "--phase decode on a kernel": (["compare", "matmul", "--phase", "decode"], "matmul has no phases"),
    "--phase against --shape mode": (
        ["compare", "block", "--phase", "decode", "--shape", "mode=prefill"],
        "contradicts",
    ),
    "unknown model lists models only": (["predict", "--model", "llama-4", "--target", "h100"], "valid: gpt2-small"),
    "--force without --out": (["compare", "mlp", "--force"], "--force applies only with --out"),
    "zero --chips": (
        ["predict", "--model", "tiny", "--target", "h100", "--chips", "0"],
        "0 is below 1; choose an integer >= 1",
    ),
    "zero --batch": (
        ["predict", "--model", "tiny", "--target", "h100", "--batch", "0"],
        "0 is below 1; choose an integer >= 1, or max",
    ),
    # --sides, the three compilation paths
    "one path to compare": (["compare", "mlp", "--sides", "torch"], "--sides takes 2 or more different paths"),
    "a path twice": (["compare", "mlp", "--sides", "jax,jax"], "--sides takes 2 or more different paths"),
    "an unknown path": (["diff", "mlp", "--sides", "torch,pallas"], "valid: torch, jax, torch-xla, all"),
    "three paths to diff": (["diff", "mlp", "--sides", "torch,jax,torch-xla"], "diff compares 2 paths"),
    "an empty --sides to run": (["run", "mlp", "--sides", ","], "--sides takes 1 or more different paths"),
    "all beside another path": (["compare", "mlp", "--sides", "all,torch"], "--sides all stands alone"),
    "--sides with --from-file": (
        ["compare", "--from-file", "a.mlir", "b.mlir", "--sides", "torch,jax"],
        "--sides does not apply",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_each_case_is_one_line_and_exit_2(case, capsys):
    args, needle = BAD_INPUTS[case]
    assert cli.main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("landscape: error:"), captured.err
    assert needle in lines[0], lines[0]
    assert "Traceback" not in captured.err + captured.out and captured.out == ""


def test_every_case_is_refused_before_torch_or_jax_is_imported():
    """Sizes, seeds, counts, lengths and paths are checked before any framework loads or any array
    is allocated: all the cases above, run in one fresh process."""
    code = (
        "import sys, json; from landscape.cli import main\n"
        "codes = [main(args) for args in json.loads(sys.argv[1])]\n"
        "print(json.dumps([codes, sorted(m for m in ('torch', 'jax') if m in sys.modules)]))"
    )
    cases = json.dumps([args for args, _ in BAD_INPUTS.values()])
    out = subprocess.run([sys.executable, "-c", code, cases], capture_output=True, text=True, timeout=120)
    codes, imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(codes) == {2} and imported == []


def test_the_cli_states_the_library_limits_without_importing_numpy():
    """landscape.options repeats INT64_MAX and SEED_RANGE so `--help` stays numpy-free; they must agree."""
    from reference.inputs import SEED_RANGE as LIBRARY_SEEDS
    from reference.spec import INT64_MAX as LIBRARY_INT64

    assert (INT64_MAX, SEED_RANGE) == (LIBRARY_INT64, LIBRARY_SEEDS)


def test_help_answers_in_under_a_second_without_torch_jax_or_numpy():
    code = (
        "import sys, time; t = time.perf_counter(); from landscape.cli import main; main(['--help']);"
        "print(time.perf_counter() - t, sorted(m for m in ('torch', 'jax', 'numpy') if m in sys.modules))"
    )
    best = min(
        float(
            subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.split()[-2]
        )
        for _ in range(3)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert best < 1.0 and out.strip().endswith("[]")


# ------------------------------------------------------------------------- run: memory and seeds


def test_the_memory_estimate_follows_its_formula():
    """matmul 64x64x64 in float32: N_io = 2 * 4096, N_big = 4096 (the output):
    (4 + 8 + 8) * 8192 + (8 + 8 + 16) * 4096 + 1 GB."""
    entry = get_entry("matmul")
    assert (
        agreement.run_memory_bytes(entry, entry.resolve(), "float32")
        == 20 * 8192 + 32 * 4096 + agreement.FRAMEWORK_BYTES
    )


def test_a_run_beyond_the_available_memory_is_refused_with_the_estimate_and_the_limit(monkeypatch):
    """Nothing is allocated: the runners would fail the test if they were called. 8192^3 in float32:
    20 * 2 * 8192^2 + 32 * 8192^2 + 1e9 = 5.83 GB."""
    monkeypatch.setattr(agreement, "available_memory_bytes", lambda: 2_000_000_000)

    def never(case):
        raise AssertionError("ran")

    with pytest.raises(TooLargeToRun, match=r"needs about 5\.83 GB .* more than the 2\.00 GB of memory available"):
        agreement.check_agreement(
            "matmul", {"m": "8192", "n": "8192", "k": "8192"}, runners={"torch": never, "jax": never}
        )


def test_available_memory_is_read_at_run_time():
    available = agreement.available_memory_bytes()
    assert available is None or available > 0


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, True])
def test_the_library_refuses_a_seed_outside_its_range(seed):
    with pytest.raises(MalformedInput, match=r"\[0, 4294967295\]"):
        agreement.check_agreement("relu", {}, seed=seed, runners={})


# ------------------------------------------------------------------------------ NaN-free JSON


def test_the_json_printer_names_a_non_finite_field():
    from landscape.outputs import dump_json

    with pytest.raises(NonFiniteResult, match=r"'decode\.ops\[1\]\.time_s' is inf"):
        dump_json({"decode": {"ops": [{"time_s": 1.0}, {"time_s": float("inf")}]}})
    assert json.loads(dump_json({"a": [1.0, None]})) == {"a": [1.0, None]}


def test_a_run_whose_side_returns_nan_prints_valid_json_and_fails(monkeypatch, capsys):
    """Errors against a NaN output are null in JSON (json.loads would take NaN; strict parsers do not)."""
    nan = lambda case: tuple(o * float("nan") for o in case.reference())  # noqa: E731
    monkeypatch.setattr(cli, "default_runners", lambda sides=("torch", "jax"): {"torch": nan, "jax": nan})
    assert cli.main(["run", "relu", "--json"]) == 1
    out = capsys.readouterr().out
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert data["errors"]["torch_vs_ref"]["max_abs"] is None and data["ok"] is False


class _InfinitePrediction:
    def to_dict(self):
        summary = {"total_time_s": 1e-3, "notes": []}
        return {
            "model": "tiny",
            "target": "h100",
            "ttft_s": 1e-3,
            "decode_step_s": float("inf"),
            "tokens_per_s_per_user": 0.0,
            "prefill": summary,
            "decode": summary,
        }


@pytest.mark.parametrize("as_json", [True, False])
def test_predict_refuses_to_print_inf(monkeypatch, capsys, as_json):
    """`predict` once printed `inf ms` and `0.0 tokens/s`: a non-finite answer is a bug upstream, named."""
    import hardware_models.predict
    from landscape import serve_cli

    monkeypatch.setattr(serve_cli, "lower_for_serving", lambda *a, **k: (None, None, 0))
    monkeypatch.setattr(hardware_models.predict, "predict_inference", lambda *a, **k: _InfinitePrediction())
    args = ["predict", "--model", "tiny", "--target", "h100", "--input-len", "16", "--output-len", "8"]
    assert cli.main(args + (["--json"] if as_json else [])) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "'decode_step_s' is inf" in captured.err


# ------------------------------------------------------------------- phases and beyond-context notes


def test_the_default_phase_still_works_for_an_entry_without_phases():
    (mlp,) = plan_workloads("mlp", {}, "bfloat16")
    assert mlp.phase is None
    assert [w.phase for w in plan_workloads("mlp", {}, "bfloat16", "both")] == [None]


def test_a_workload_beyond_its_context_carries_a_note_when_allowed():
    (w,) = plan_workloads("llama-2-7b", {"seq": "5000", "mode": "decode"}, "bfloat16", allow_beyond_context=True)
    assert w.to_dict()["notes"] and "4,096" in w.to_dict()["notes"][0]
    (default,) = plan_workloads(None, {"seq": "512", "mode": "prefill"}, "bfloat16")
    assert default.to_dict()["notes"] == []


@pytest.mark.jax
def test_predict_beyond_the_context_answers_with_a_note_when_allowed(capsys):
    args = ["predict", "--model", "tiny", "--target", "h100", "--input-len", "4090", "--output-len", "16", "--json"]
    assert cli.main(args) == 2 and "--allow-beyond-context" in capsys.readouterr().err
    assert cli.main([*args, "--allow-beyond-context"]) == 0
    (note,) = json.loads(capsys.readouterr().out)["notes"]
    assert "beyond context" in note and "4,106 tokens" in note


@pytest.mark.jax
def test_estimate_beyond_the_context_notes_it_in_json_and_text(capsys):
    args = [
        "estimate",
        "tiny",
        "--target",
        "h100",
        "--shape",
        "seq=4100",
        "--shape",
        "mode=decode",
        "--allow-beyond-context",
    ]
    assert cli.main([*args, "--json"]) == 0
    assert any(n.startswith("beyond context") for n in json.loads(capsys.readouterr().out)["notes"])
    assert cli.main(args) == 0
    assert "note: beyond context" in capsys.readouterr().out
