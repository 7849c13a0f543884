"""`landscape calibrate host-cpu` and `landscape validate host-cpu`, end to end, and their refusals.
The timing itself is noisy on a shared machine, so these tests check what is computed and written,
not how close a row comes (benchmarks/host_cpu_validate.py measures that)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from landscape.cli import main


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["validate", "gpu"], "valid: host-cpu"),
        (["calibrate", "h100"], "valid: host-cpu"),
        (["validate", "host-cpu", "--kernels", "matmul,nope"], "unknown kernel 'nope'"),
        (["validate", "host-cpu", "--sizes", "huge"], "valid: small, large"),
        (["validate", "host-cpu", "--runtimes", "cuda"], "valid: eager, inductor, xla"),
        (["validate", "host-cpu", "--min-run-s", "0"], "from 0.01 to 10"),
        (["validate", "host-cpu", "--target-file", "/nonexistent/host-cpu.toml"], "calibrate host-cpu"),
        (["validate", "host-cpu", "--target-file", "hardware_models/targets/h100.toml"], '"cpu"'),
        (["validate", "host-cpu", "--target-file", ""], "needs a path"),
        (["validate", "host-cpu", "--target-file", "hardware_models/targets"], "is a folder"),
        (["validate", "host-cpu", "--kernels", "add,matmul,add"], "--kernels lists add more than once"),
        (["validate", "host-cpu", "--sizes", "small,small"], "--sizes lists small more than once"),
        (["validate", "host-cpu", "--runtimes", "eager,xla,eager"], "--runtimes lists eager more than once"),
        (["calibrate", "host-cpu", "--out", "/proc/x"], "cannot create files in /proc"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and needle in err and "Traceback" not in err


def _without(text: str, key: str) -> str:
    """A target file's text with the line that sets `key` taken out."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(f"{key} ="))


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"\xff\xfe[fitted]\n", "is not UTF-8"),
        (b"schema = [", "not valid TOML"),
        (b"", "field 'schema': missing"),
        (None, "field 'fitted.eager_gelu_s': missing"),  # a file from before ATen's GELU row
    ],
)
def test_a_target_file_that_is_not_one_is_refused_in_one_line_with_the_remedy(content, needle, tmp_path, capsys):
    from hardware_models.target import get_target

    path = tmp_path / "host-cpu.toml"
    path.write_bytes(
        content
        if content is not None
        else _without(Path(get_target("host-cpu").path).read_text(), "eager_gelu_s").encode()
    )
    assert main(["validate", "host-cpu", "--target-file", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and needle in err and "landscape calibrate host-cpu" in err and "Traceback" not in err


@pytest.mark.torch
@pytest.mark.jax
def test_validate_times_three_ways_and_predicts_from_the_model(capfd):
    from hardware_models.families.cpu.runtime import compiled_seconds
    from hardware_models.target import get_target
    from landscape.lowering import lower_named

    assert main(["validate", "host-cpu", "--kernels", "add", "--sizes", "small", "--min-run-s", "0.02", "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    rows = {r["runtime"]: r for r in out["rows"]}
    assert set(rows) == {"eager", "inductor", "xla"} and all(r["measured_s"] > 0 for r in rows.values())
    xla = compiled_seconds(lower_named("add", "jax", {}, "float32"), get_target("host-cpu"), "xla")
    assert rows["xla"]["predicted_s"] == pytest.approx(xla.seconds)
    assert out["summary"]["all"]["rows"] == 3
    # the calibration's anchor rows re-timed before and after: each call row and the f32 GEMM
    before, after = out["drift"]["before"], out["drift"]["after"]
    assert set(before) == set(after) == {"H01", "H03", "H05", "H15"} and all(v > 0 for v in before.values())


def test_drift_is_not_measured_for_a_target_file_without_rows_beside_it(tmp_path):
    import shutil

    from hardware_models.target import get_target, load_target_file
    from landscape.host_render import render_drift
    from landscape.host_validate import drift

    shutil.copy(get_target("host-cpu").path, tmp_path / "host-cpu.toml")
    assert drift(load_target_file(tmp_path / "host-cpu.toml")) == {}
    assert "not measured" in render_drift({}, {})
    assert render_drift({"H01": 1.5}, {"H01": 2.0}) == "machine drift (time now / at calibration): H01 1.50x then 2.00x"


@pytest.mark.torch
@pytest.mark.jax
def test_calibrate_writes_a_target_file_that_loads_and_cites_its_rows(tmp_path, capfd):
    from hardware_models.families.cpu.files import read_rows, refit
    from hardware_models.target import load_target_file

    assert main(["calibrate", "host-cpu", "--out", str(tmp_path), "--min-run-s", "0.01", "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    target = load_target_file(tmp_path / "host-cpu.toml")
    assert target.family == "cpu" and out["target_file"].endswith("host-cpu.toml")
    ids = {m.spec.id for m in read_rows(tmp_path / "host-cpu.csv")}
    for key, q in target.quantities.items():
        if q.tag == "F":
            assert set(q.source.split()[1:]) <= ids, key
    assert refit(target) == pytest.approx(
        {k: target[k] for k, q in target.quantities.items() if q.tag == "F"}, rel=1e-3
    )


def test_module_reads_counts_the_forwards_a_call_runs_and_the_parameters_they_read():
    """A module called twice counts twice, its parameters too; one the call never runs (an
    expert routing leaves idle) counts for nothing."""
    import torch
    from torch import nn

    from landscape.host_trace import module_reads

    class TwoLayers(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.idle = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.used(self.used(x))

    with torch.inference_mode():
        assert module_reads(TwoLayers(), [torch.ones(1, 2)]) == (
            3,
            4,
        )  # the outer forward, then used's twice (weight, bias)


def test_a_graph_break_splits_a_compiled_module_into_calls_each_costed():
    """compiled_graphs counts the regions dynamo makes (a graph break: two); compiled_seconds
    charges the runtime's call once per region, by hand."""
    import torch
    from torch import nn

    from hardware_models.families.cpu.cost import call_overhead_s
    from hardware_models.families.cpu.runtime import compiled_seconds
    from hardware_models.target import get_target
    from landscape.host_validate import compiled_graphs
    from landscape.lowering import lower_named

    class Broken(nn.Module):
        def forward(self, x):
            y = x + 1
            torch._dynamo.graph_break()
            return y * 2

    torch._dynamo.reset()
    assert compiled_graphs(torch.compile(Broken(), dynamic=False), [torch.ones(4)]) == 2
    t, ir = get_target("host-cpu"), lower_named("add", "torch", {}, "float32").module
    one, two = (compiled_seconds(ir, t, "inductor", graphs) for graphs in (1, 2))
    assert two.overhead_s - one.overhead_s == pytest.approx(call_overhead_s(t, "inductor", loops_only=True))
    assert two.work_s == one.work_s


def _machine(model: str, flags: str):
    from hardware_models.families.cpu.host import HostCpu

    return HostCpu(
        model=model, machine="x86_64", cores=2, clock_hz=2e9, memory_bytes=2**30, flags=frozenset(flags.split())
    )


@pytest.mark.parametrize(
    "model, flags, differs",
    [
        ("AMD EPYC", "sse2 avx avx2 fma f16c avx512f avx512_bf16", False),  # the file's own machine
        (
            "Intel(R) Xeon(R) Platinum 8480+",
            "sse2 avx avx2 fma f16c avx512f avx512_bf16 amx_tile",
            True,
        ),  # AMX: 8-16x off
        ("AMD EPYC", "sse2 avx avx2 fma f16c", True),  # the same name, no AVX-512
    ],
)
def test_estimate_on_host_cpu_says_when_this_machine_is_not_the_calibrated_one(
    model, flags, differs, tmp_path, monkeypatch, capsys
):
    """The committed host-cpu file describes the CPU it was calibrated on (model, cores, vector
    extensions); `estimate --target host-cpu` on another says so on stderr, naming both and the
    remedy, whose file then works as --target with no copying."""
    text = (Path(__file__).resolve().parents[2] / "hardware_models" / "targets" / "host-cpu.toml").read_text()
    mine = tmp_path / "host-cpu.toml"
    mine.write_text(
        "\n".join(
            ln
            if not ln.startswith("description =")
            else 'description = "AMD EPYC (2 cores, sse2 avx avx2 fma f16c avx512f avx512_bf16)"'
            for ln in text.splitlines()
        )
        + "\n"
    )
    monkeypatch.setattr("hardware_models.families.cpu.host.read_host", lambda *a, **k: _machine(model, flags))
    assert main(["estimate", "matmul", "--target", str(mine), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["target"] == "host-cpu"
    notes = [ln for ln in captured.err.splitlines() if ln.startswith("note:")]
    if not differs:
        assert not notes
        return
    (note,) = notes
    assert f"this machine is {model} (2 cores, {flags})" in note and "landscape calibrate host-cpu" in note
    assert "calibrated on AMD EPYC (2 cores, sse2 avx avx2 fma f16c avx512f avx512_bf16)" in note


@pytest.mark.parametrize(
    "path, needle", [("nope.toml", "no such file"), ("folder/", "is a folder"), ("bad.toml", "field 'schema': missing")]
)
def test_a_target_path_that_is_not_a_target_file_is_one_line(path, needle, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "bad.toml").write_text("x = 1\n")
    assert main(["estimate", "matmul", "--target", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]
