"""The CLI: fast help, JSON output with the documented keys, one-line errors with exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hardware_models.families import representative_targets
from landscape import cli


def _landscape(*args):
    # Without the log level that an in-process call to the CLI leaves in this process's environment.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run(
        [sys.executable, "-m", "landscape.cli", *args], capture_output=True, text=True, timeout=300, env=env
    )


def test_help_imports_neither_torch_nor_jax():
    code = "import sys; from landscape.cli import main; main(['--help']); print(sorted(m for m in ('torch', 'jax') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert out.stdout.strip().endswith("[]")


@pytest.mark.parametrize(
    "command",
    [
        ["--help"],
        *(
            [c, "--help"]
            for c in (
                "kernels",
                "run",
                "hlo",
                "stats",
                "diff",
                "gemm",
                "targets",
                "estimate",
                "roofline",
                "predict",
                "map",
                "compare",
            )
        ),
    ],
)
def test_every_command_has_help(command, capsys):
    assert cli.main(command) == 0
    assert "Usage" in capsys.readouterr().out


def test_kernels_json_lists_kernels_and_models_with_parameters(capsys):
    assert cli.main(["kernels", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["attention"]["params"]["n_kv_heads"]["default"] == 2
    assert rows["llama-3.1-70b"]["kind"] == "model"
    assert rows["matmul"]["sides"] == ["reference", "torch", "jax"]
    assert rows["conv2d"]["layout"]


def test_kernels_table_keeps_brackets_rich_would_read_as_markup(capsys):
    assert cli.main(["kernels"]) == 0
    assert "C[m,n] = A[m,k] @ B[k,n]" in capsys.readouterr().out


@pytest.mark.torch
@pytest.mark.jax
def test_run_json_has_the_documented_keys(capsys):
    assert cli.main(["run", "clone", "--shape", "n=65", "--dtype", "float16", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"kernel", "dtype", "shapes", "errors", "tolerance", "ok"} <= set(data)
    assert set(data["errors"]) == {"torch_vs_ref", "jax_vs_ref", "torch_vs_jax"}
    assert {"max_abs", "max_rel"} <= set(data["errors"]["torch_vs_jax"])
    assert data["shapes"] == {"n": 65} and data["ok"] is True


@pytest.mark.torch
@pytest.mark.jax
def test_run_prints_a_table_and_is_repeatable(capsys):
    assert cli.main(["run", "softmax", "--shape", "n=129", "--dtype", "bfloat16"]) == 0
    first = capsys.readouterr().out
    assert "torch_vs_jax" in first and "pass" in first
    cli.main(["run", "softmax", "--shape", "n=129", "--dtype", "bfloat16"])
    assert capsys.readouterr().out == first


def test_a_failed_check_exits_1(monkeypatch, capsys):
    wrong = lambda case: tuple(o + 1.0 for o in case.reference())
    monkeypatch.setattr(cli, "default_runners", lambda sides=("torch", "jax"): {"torch": wrong, "jax": wrong})
    assert cli.main(["run", "relu", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["ok"] is False


BAD_INPUTS = {
    "unknown name": (["run", "atention"], "did you mean 'attention'"),
    "unknown parameter": (["run", "matmul", "--shape", "q=3"], "valid: m, n, k"),
    "zero size": (["run", "matmul", "--shape", "m=0"], "must be >= 1"),
    "negative size": (["run", "matmul", "--shape", "k=-1"], "must be >= 1"),
    "heads not divisible": (["run", "attention", "--shape", "n_heads=6", "--shape", "n_kv_heads=4"], "divisible"),
    "unsupported dtype": (["run", "matmul", "--dtype", "float64"], "float32"),
    "bad choice": (["run", "block", "--shape", "mode=train"], "prefill, decode"),
    "malformed shape": (["run", "matmul", "--shape", "m"], "PARAM=VALUE"),
    "too large": (["run", "llama-3.1-405b"], "too large"),
    "unknown command": (["runn"], "No such command"),
    "unknown target": (["estimate", "matmul", "--target", "h10"], "did you mean 'h100'"),
    "missing target": (["estimate", "matmul"], "--target"),
    "malformed --set": (
        ["estimate", "matmul", "--target", "h100", "--set", "fitted.gemm_efficiency"],
        "SECTION.KEY=NUMBER",
    ),
    "unknown --set key": (
        ["estimate", "matmul", "--target", "h100", "--set", "chip.sm_cont=3"],
        "did you mean 'chip.sm_count'",
    ),
    "non-positive --set": (["estimate", "matmul", "--target", "h100", "--set", "chip.sm_count=0"], "> 0"),
    "roofline format": (["roofline", "matmul", "--target", "h100", "--out", "r.pdf"], "valid: .png, .svg"),
    "trace of an unscheduled target": (
        ["estimate", "matmul", "--target", "h100", "--trace", "t.json"],
        "valid: groq-lpu",
    ),
    "predict fp8 on a tpu": (
        ["predict", "--model", "tiny", "--target", "tpu-v5e", "--precision", "fp8"],
        "tpu-v5e has no fp8; choose --precision bf16|fp16|int8",
    ),
    "predict int8 on an h100": (
        ["predict", "--model", "tiny", "--target", "h100", "--precision", "int8"],
        "h100 has no int8; choose --precision bf16|fp16|fp8",
    ),
    "predict fp8 on an a100 names no internal op": (
        ["predict", "--model", "tiny", "--target", "a100", "--precision", "fp8"],
        "a100 has no fp8; choose --precision bf16|fp16|int8",
    ),
    "predict fp4 on a hopper": (
        ["predict", "--model", "tiny", "--target", "h200", "--precision", "nvfp4"],
        "h200 has no fp4; choose --precision bf16|fp16|fp8",
    ),
    "predict a kernel": (["predict", "--model", "matmul", "--target", "h100"], "unknown model config 'matmul'"),
    "predict on too few chips": (
        ["predict", "--model", "llama-3.1-70b", "--target", "h100", "--chips", "1"],
        "at least 2 chips",
    ),
    "compare on an unknown target": (["compare", "--targets", "h100,tpu-v9"], "unknown target 'tpu-v9'"),
    "compare with a bad mode": (["compare", "--shape", "mode=train"], "prefill, decode"),
    "predict fp8 spelled as MLIR": (
        ["predict", "--model", "tiny", "--target", "tpu-v5e", "--precision", "f8E4M3FN"],
        "tpu-v5e has no fp8",
    ),
    "unknown precision": (
        ["predict", "--model", "tiny", "--target", "h100", "--precision", "float32"],
        "valid: bf16, fp16, fp8, int8",
    ),
    "unknown model config": (["predict", "--model", "llama-3.1-8", "--target", "h100"], "did you mean 'llama-3.1-8b'"),
    "float64 on a tpu under --strict-dtypes": (
        ["estimate", "layernorm", "--side", "torch", "--target", "tpu-v5e", "--strict-dtypes"],
        "drop --strict-dtypes",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_bad_input_is_one_line_exit_2_no_traceback(case, capsys):
    args, needle = BAD_INPUTS[case]
    assert cli.main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("landscape: error:") and needle in lines[0]
    assert "Traceback" not in captured.err + captured.out


def test_console_script_exits_2_on_bad_input():
    out = _landscape("run", "matmul", "--shape", "m=0")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


@pytest.mark.torch
@pytest.mark.jax
def test_stats_json_has_the_documented_keys(capsys):
    assert cli.main(["stats", "matmul", "--side", "torch", "--shape", "m=65", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"flops", "transcendentals", "bytes_accessed", "param_bytes", "ops"} <= set(data)
    assert data["flops"] == 2 * 65 * 64 * 64 and data["ops"]["stablehlo.dot_general"] == 1


@pytest.mark.jax
def test_hlo_writes_every_jax_stage_under_out(tmp_path, capsys):
    for stage in ("jaxpr", "stablehlo", "ir", "xla"):
        assert cli.main(["hlo", "softmax", "--side", "jax", "--stage", stage, "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"softmax.jax.{s}" for s in ("ir.txt", "jaxpr.txt", "stablehlo.mlir", "xla.txt")
    ]
    # the StableHLO file is what --from-file reads
    assert cli.main(["stats", "--from-file", str(tmp_path / "softmax.jax.stablehlo.mlir")]) == 0


@pytest.mark.torch
def test_hlo_prints_the_torch_fx_graph(capsys):
    assert cli.main(["hlo", "linear", "--side", "torch", "--stage", "fx"]) == 0
    assert "aten.linear" in capsys.readouterr().out


@pytest.mark.torch
@pytest.mark.jax
def test_diff_reports_the_erf_polynomial_against_one_op(capsys):
    assert cli.main(["diff", "gelu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["histogram"]["chlo.erfc"] == [0, 1]
    assert any("composite op kept whole" in r for d in data["divergences"] for r in d["reasons"])


def test_stats_of_a_stablehlo_file(tmp_path, capsys):
    path = tmp_path / "m.mlir"
    path.write_text(
        "module {\n func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {\n"
        "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>\n"
        "  return %0 : tensor<2x5xf32>\n }\n}\n"
    )
    assert cli.main(["stats", "--from-file", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["flops"] == 2 * 2 * 3 * 5


def test_unparsable_file_is_one_line_with_line_and_column(tmp_path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text("module {\n  func.func @main() {\n    %0 = stablehlo.bogus\n  }\n}\n")
    assert cli.main(["hlo", "--from-file", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 3, column" in err[0]


def test_a_stage_the_side_lacks_is_rejected_before_lowering(capsys):
    assert cli.main(["hlo", "matmul", "--side", "torch", "--stage", "xla"]) == 2
    assert "valid: fx, stablehlo, ir" in capsys.readouterr().err


def test_gemm_json_and_bad_array(capsys):
    assert cli.main(["gemm", "8", "8", "8", "--array", "4x4", "--dataflow", "os", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["compute_cycles"] == 55 and data["folds"] == 4
    assert cli.main(["gemm", "8", "8", "8", "--array", "4by4"]) == 2
    assert "ROWSxCOLS" in capsys.readouterr().err


def test_gemm_imports_neither_torch_nor_jax():
    code = (
        "import sys; from landscape.cli import main; main(['gemm', '4096', '4096', '4096']);"
        "print(sorted(m for m in ('torch', 'jax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip().endswith("[]")


def test_targets_json_lists_sourced_quantities(capsys):
    assert cli.main(["targets", "--json"]) == 0
    rows = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    assert rows["h100"]["quantities"]["chip.sm_count"]["source"].startswith("P")
    assert rows["h100"]["quantities"]["peak.bf16_flop_per_s"]["derivation"] == "chip.sm_count * chip.clock_hz * 4096"


GEMM_FILE = (
    "module {\n func.func @main(%a: tensor<256x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<256x1024xbf16> {\n"
    "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<256x512xbf16>, tensor<512x1024xbf16>) -> tensor<256x1024xbf16>\n"
    "  return %0 : tensor<256x1024xbf16>\n }\n}\n"
)


def test_estimate_json_has_the_documented_keys_and_is_repeatable(tmp_path, capsys):
    path = tmp_path / "gemm.mlir"
    path.write_text(GEMM_FILE)
    assert cli.main(["estimate", "--from-file", str(path), "--target", "h100", "--json"]) == 0
    first = capsys.readouterr().out
    data = json.loads(first)
    assert {"total_time_s", "compute_s", "memory_s", "schedule_s", "bytes", "bottleneck_counts", "ops"} <= set(data)
    (row,) = data["ops"]
    assert {"op", "group", "flops", "bytes", "time_s", "bottleneck"} <= set(row)
    assert row["flops"] == 2 * 256 * 512 * 1024 and set(data["bytes"]) == {"hbm", "l2"}
    assert cli.main(["estimate", "--from-file", str(path), "--target", "h100", "--json"]) == 0
    assert capsys.readouterr().out == first


def test_estimate_of_a_file_imports_neither_torch_nor_jax(tmp_path):
    path = tmp_path / "gemm.mlir"
    path.write_text(GEMM_FILE)
    code = (
        f"import sys; from landscape.cli import main; main(['estimate', '--from-file', {str(path)!r}, '--target', 'tpu-v5e']);"
        "print(sorted(m for m in ('torch', 'jax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip().endswith("[]")


def test_estimate_table_and_plan_name_the_kernels_and_the_emulation(capsys):
    assert cli.main(["estimate", "linear", "--target", "tpu-v5e", "--dtype", "float16", "--plan"]) == 0
    out = capsys.readouterr().out
    assert "plan for tpu-v5e" in out and "dot_general" in out and "f16 is emulated on tpu-v5e" in out
    assert "bottlenecks:" in out


def test_set_turns_an_assumed_knob(capsys):
    base = ["estimate", "add", "--target", "tpu-v5e", "--json"]
    assert cli.main(base) == 0
    before = json.loads(capsys.readouterr().out)["total_time_s"]
    assert cli.main([*base, "--set", "schedule.launch_overhead_s=1e-3"]) == 0
    after = json.loads(capsys.readouterr().out)["total_time_s"]
    assert after == pytest.approx(before - 5e-7 + 1e-3)


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_roofline_writes_the_figure(tmp_path, suffix, capsys):
    out = tmp_path / f"roof{suffix}"
    assert (
        cli.main(["roofline", "mlp", "--target", "h100", "--side", "torch", "--dtype", "bfloat16", "--out", str(out)])
        == 0
    )
    assert out.stat().st_size > 1000 and "kernels" in capsys.readouterr().out


def test_estimate_writes_a_chrome_trace_for_the_lpu(tmp_path, capsys):
    path = tmp_path / "trace.json"
    assert cli.main(["estimate", "mlp", "--target", "groq-lpu", "--dtype", "float16", "--trace", str(path)]) == 0
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert {e["args"]["name"] for e in events if e["name"] == "thread_name"} >= {"MXM", "VXM"}
    assert trace["displayTimeUnit"] == "ms" and trace["otherData"]["ts_unit"] == "us"  # ts in µs, shown as µs


def test_estimate_traces_each_chip_of_a_partitioned_lpu_plan_as_its_own_process(tmp_path, capsys):
    path = tmp_path / "trace.json"
    assert (
        cli.main(
            ["estimate", "mlp", "--target", "groq-lpu", "--dtype", "float16", "--chips", "3", "--trace", str(path)]
        )
        == 0
    )
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert sorted(names) == [0, 1, 2] and all(names[c].startswith(f"chip {c} ") for c in names)
    assert {e["pid"] for e in events if e["ph"] == "X" and e["cat"] != "transfer"} == {0, 1, 2}
    assert [e["pid"] for e in events if e.get("name") == "stage hop"] == [0, 1]


DTYPE_SPELLINGS = [
    ("bf16", "bfloat16"),
    ("BF16", "bfloat16"),
    ("fp16", "float16"),
    ("f16", "float16"),
    ("f32", "float32"),
    ("float32", "float32"),
]


@pytest.mark.parametrize("spelling, canonical", DTYPE_SPELLINGS)
def test_dtype_options_accept_every_spelling_in_the_table(spelling, canonical):
    assert cli.DTYPE.convert(spelling, None, None) == canonical


@pytest.mark.parametrize(
    "spelling, short",
    [
        ("bf16", "bf16"),
        ("bfloat16", "bf16"),
        ("float16", "fp16"),
        ("fp8", "fp8"),
        ("f8E4M3FN", "fp8"),
        ("i8", "int8"),
        ("int8", "int8"),
    ],
)
def test_predict_precision_accepts_every_spelling_in_the_table(spelling, short):
    precision = next(p for p in cli.predict.params if p.name == "precision")
    assert precision.type.convert(spelling, None, None) == short


def test_every_dtype_option_draws_its_choices_from_reference_dtypes():
    from reference.dtypes import FLOAT_DTYPES

    for command in (cli.run, cli.hlo, cli.stats, cli.diff, cli.estimate, cli.roofline, cli.compare):
        (dtype,) = [p for p in command.params if p.name == "dtype"]
        assert dtype.type.allowed == FLOAT_DTYPES, command.name


# Each command given a misspelt name (or target): exit 2 at once, before torch or jax is imported.
TYPOS = {
    "run": ["run", "atention"],
    "hlo": ["hlo", "atention"],
    "stats": ["stats", "atention"],
    "diff": ["diff", "atention"],
    "estimate": ["estimate", "atention", "--target", "h100"],
    "roofline": ["roofline", "atention", "--target", "h100", "--out", "r.svg"],
    "compare": ["compare", "atention"],
    "compare target": ["compare", "--targets", "h10"],
    "predict": ["predict", "--model", "lama-3.1-8b", "--target", "h100"],
    "map": ["map", "--model", "lama-3.1-8b"],
}


@pytest.mark.parametrize("case", TYPOS, ids=list(TYPOS))
def test_a_typo_is_reported_before_torch_or_jax_is_imported(case):
    code = (
        "import sys; from landscape.cli import main; code = main(sys.argv[1:]);"
        "print(code, sorted(m for m in ('torch', 'jax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, *TYPOS[case]], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "2 []", (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("landscape: error: unknown")


@pytest.mark.torch
@pytest.mark.jax
def test_compare_writes_nothing_on_stderr_unless_verbose():
    # XLA's C++ INFO lines (pjrt_client.cc ... PjRt-IFRT device count) used to follow torch-mlir's lowering.
    quiet = _landscape("compare", "mlp", "--targets", "h100")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    loud = _landscape("--verbose", "compare", "mlp", "--targets", "h100")
    assert loud.returncode == 0 and "PjRt-IFRT" in loud.stderr


@pytest.mark.jax
def test_hlo_xla_prints_no_source_metadata_unless_verbose():
    quiet = _landscape("hlo", "softmax", "--stage", "xla")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert quiet.stdout.startswith("HloModule") and "ENTRY" in quiet.stdout
    assert not any(word in quiet.stdout for word in ("FileNames", "StackFrames", "FileLocations", "stack_frame_id"))
    loud = _landscape("--verbose", "hlo", "softmax", "--stage", "xla")
    assert "StackFrames" in loud.stdout


@pytest.mark.torch
@pytest.mark.jax
def test_compare_defaults_to_a_llama_layer_in_both_phases_with_every_bound(capsys):
    assert cli.main(["compare", "--targets", "h100,wse-3", "--json"]) == 0
    prefill, decode = json.loads(capsys.readouterr().out)["comparisons"]
    assert prefill["workload"]["shapes"]["seq"] == decode["workload"]["shapes"]["seq"] == 2048
    assert (prefill["workload"]["phase"], decode["workload"]["phase"]) == ("prefill", "decode")
    assert prefill["workload"]["shapes"]["d_ff"] == 14336 and prefill["workload"]["dtype"] == "bfloat16"
    bounds = {b for c in (prefill, decode) for r in c["results"] for b, n in r["bottleneck_counts"].items() if n}
    assert bounds == {"compute", "memory", "schedule"}


@pytest.mark.torch
@pytest.mark.jax
def test_compare_gpt2_block_costs_both_sides_on_every_familys_target_and_shows_the_artifacts(capsys):
    """The issue's "done when": a LayerNorm model's PyTorch side (f64 statistics, f32 dots over bf16
    upcasts) is costed on every family, beside the JAX side, and the artifacts are reported."""
    assert cli.main(["compare", "block", "--shape", "style=gpt2", "--phase", "prefill", "--json"]) == 0
    (comparison,) = json.loads(capsys.readouterr().out)["comparisons"]
    rows = comparison["results"]
    assert len(rows) == 2 * len(representative_targets()) == 12  # six families, two sides
    assert all("refused" not in r and r["time_s"] > 0 for r in rows)
    torch_rows = {r["target"]: r for r in rows if r["side"] == "torch"}
    assert torch_rows["h100"]["artifacts"]["upcasts_folded"] > 0
    assert any("has no f64" in n for n in torch_rows["tpu-v5e"]["artifacts"]["emulated"])
    assert cli.main(["compare", "block", "--shape", "style=gpt2", "--phase", "prefill", "--targets", "tpu-v5e"]) == 0
    assert "would have cost" in capsys.readouterr().out


@pytest.mark.torch
def test_estimate_costs_f64_on_a_tpu_with_a_note_and_plan_lists_the_folds(capsys):
    assert cli.main(["estimate", "layernorm", "--side", "torch", "--target", "tpu-v5e"]) == 0
    assert "tpu-v5e has no f64" in capsys.readouterr().out
    assert (
        cli.main(
            [
                "estimate",
                "block",
                "--shape",
                "style=gpt2",
                "--side",
                "torch",
                "--dtype",
                "bfloat16",
                "--target",
                "h100",
                "--plan",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "fold: dot_general at" in out and "artifacts compiled away:" in out


def test_targets_check_names_what_a_users_file_lacks_and_exits_2(tmp_path, capsys):
    import pathlib

    ROOT = pathlib.Path(__file__).resolve().parents[1]
    text = (ROOT / "hardware_models" / "targets" / "mi300x.toml").read_text()
    bad = tmp_path / "mine.toml"
    bad.write_text(text.replace("xcd_count", "xcd_cnt"))
    assert cli.main(["targets", "--check", str(bad)]) == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert any("field 'chip.xcd_count': missing; the cdna family needs it" in line for line in out)
    assert any("field 'chip.xcd_cnt': unknown key; valid: cu_count, xcd_count" in line for line in out)
    assert cli.main(["targets", "--check", str(ROOT / "hardware_models" / "targets" / "mi300x.toml"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "file": str(ROOT / "hardware_models" / "targets" / "mi300x.toml"),
        "ok": True,
        "problems": [],
    }
