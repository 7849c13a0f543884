"""No user file lost, no partial report that looks complete, clean ends: landscape/outputs.py and
landscape/exits.py, through the library and through the console script."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from landscape import cli
from landscape.exits import Interrupted
from landscape.outputs import MANIFEST, REPORT_NAMES, OutputDir, check_output_dir, check_output_file, write_file
from reference.errors import BadOutput

ROOT = Path(__file__).resolve().parents[2]


def _report(root: str, names=("report.json", "report.html", "plans/h100.jax.txt", "plans/tpu-v5e.jax.txt")) -> None:
    for name in names:
        path = Path(root) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"new {name}")


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------------- path checks


@pytest.mark.parametrize(
    "path, needle",
    [("", "needs a path"), ("/proc/x", "cannot create files in /proc"), ("README.md/sub", "README.md is a file")],
)
def test_an_output_folder_that_cannot_be_created_is_refused_before_work(path, needle, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(BadOutput, match=needle):
        check_output_dir(path, "--out")


def test_an_output_file_is_checked_the_same_way_and_leaves_no_probe(tmp_path):
    with pytest.raises(BadOutput, match="is a folder"):
        check_output_file(tmp_path, "--trace")
    with pytest.raises(BadOutput, match="cannot create files in /proc"):
        check_output_file("/proc/x.json", "--trace")
    assert check_output_file(tmp_path / "new" / "deeper" / "t.json", "--trace")  # missing folders are fine
    assert list(tmp_path.iterdir()) == []  # the probe was removed, nothing was created


def test_a_single_file_is_replaced_only_when_complete(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text("the earlier trace")

    def failing(tmp):
        Path(tmp).write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(BadOutput, match="cannot write .*No space left on device"):
        write_file(path, writer=failing)
    assert path.read_text() == "the earlier trace" and _files(tmp_path) == {"trace.json"}
    write_file(path, "the new trace")
    assert path.read_text() == "the new trace" and _files(tmp_path) == {"trace.json"}


# ------------------------------------------------------------------------------ report folders


def test_a_new_folder_is_moved_into_place_whole_with_a_manifest(tmp_path):
    out = tmp_path / "out"
    with OutputDir(out) as target:
        assert (tmp_path / "out.lock").exists() and not out.exists()  # locked before the work, nothing in place yet
        written = target.write(_report)
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no staging folder, no lock left
    assert json.loads((out / MANIFEST).read_text())["files"] == written == sorted(_files(out) - {MANIFEST})


def test_a_folder_holding_a_report_is_refused_without_force(tmp_path):
    """`compare --out DIR` used to replace an earlier report.json/report.html without a word."""
    out = tmp_path / "out"
    with OutputDir(out) as target:
        target.write(_report)
    before = {p: (out / p).read_text() for p in _files(out)}
    with pytest.raises(BadOutput, match="already holds a report .*pass --force"):
        OutputDir(out)
    assert {p: (out / p).read_text() for p in _files(out)} == before


def test_force_replaces_only_our_files_and_removes_stale_ones(tmp_path):
    """A rerun with fewer targets used to leave the dropped target's plans beside a report that no
    longer listed them; files landscape did not write stay."""
    out = tmp_path / "out"
    with OutputDir(out) as target:
        target.write(_report)
    (out / "notes.txt").write_text("mine")
    (out / "plans" / "my-plan.txt").write_text("mine too")
    with OutputDir(out, force=True) as target:
        target.write(lambda root: _report(root, ("report.json", "report.html", "plans/h100.jax.txt")))
    assert _files(out) == {
        "report.json",
        "report.html",
        "plans/h100.jax.txt",
        MANIFEST,
        "notes.txt",
        "plans/my-plan.txt",
    }
    assert (out / "notes.txt").read_text() == "mine" and (out / "report.json").read_text() == "new report.json"
    assert sorted(os.listdir(tmp_path)) == ["out"]


@pytest.mark.parametrize("manifest", [False, True])
def test_force_refuses_a_users_file_where_the_report_writes_one(tmp_path, manifest):
    """`compare --out DIR --force` overwrote a user's hlo/jax.ir.txt in a folder whose report had no
    manifest. --force replaces only what an earlier run wrote (its manifest, and the report's own
    report.json and report.html); a user's file at a colliding path is refused by name, and
    nothing in the folder changes."""
    out = tmp_path / "out"
    with OutputDir(out) as target:
        target.write(_report)
    if not manifest:
        (out / MANIFEST).unlink()
    (out / "hlo").mkdir()
    (out / "hlo" / "jax.ir.txt").write_text("the user's own IR")
    before = {p: (out / p).read_text() for p in _files(out)}
    with pytest.raises(BadOutput, match=r"hlo/jax\.ir\.txt is not a file an earlier run wrote"):
        with OutputDir(out, force=True) as target:
            target.write(lambda root: _report(root, ("report.json", "report.html", "hlo/jax.ir.txt")))
    assert {p: (out / p).read_text() for p in _files(out)} == before
    assert sorted(os.listdir(tmp_path)) == ["out"]
    with OutputDir(out, force=True) as target:  # a report that does not collide replaces the earlier one
        target.write(lambda root: _report(root, ("report.json", "report.html", "traces/h100.json")))
    assert (out / "hlo" / "jax.ir.txt").read_text() == "the user's own IR"
    assert (out / "report.json").read_text() == "new report.json"


def test_an_interrupted_run_leaves_no_partial_folder_and_the_earlier_report_intact(tmp_path):
    out = tmp_path / "out"
    with OutputDir(out) as target:
        target.write(_report)
    before = {p: (out / p).read_text() for p in _files(out)}

    def interrupted(root):
        _report(root, ("plans/half-written.txt",))
        raise Interrupted()

    with pytest.raises(Interrupted):
        with OutputDir(out, force=True) as target:
            target.write(interrupted)
    assert sorted(os.listdir(tmp_path)) == ["out"]  # staging folder and lock removed
    assert {p: (out / p).read_text() for p in _files(out)} == before


def test_a_second_run_into_the_same_folder_fails_at_once_naming_the_lock(tmp_path, capsys):
    out = tmp_path / "out"
    with OutputDir(out):
        with pytest.raises(BadOutput, match=r"another landscape run is writing it \(lock .*out\.lock is held\)"):
            OutputDir(out).__enter__()
        start = time.perf_counter()
        assert cli.main(["compare", "mlp", "--targets", "h100", "--out", str(out)]) == 2  # before any lowering
        assert time.perf_counter() - start < 5 and "out.lock" in capsys.readouterr().err
    with OutputDir(out):  # released: the next run proceeds
        pass


def test_every_top_level_name_the_report_writes_is_known_as_ours(tmp_path):
    from hardware_models.target import get_target
    from landscape.report import write_report
    from tests.landscape.comparisons import small_comparison

    phases = [small_comparison(("h100", "groq-lpu"), phase=p) for p in ("prefill", "decode")]
    write_report(phases, [get_target("h100"), get_target("groq-lpu")], str(tmp_path))
    assert set(os.listdir(tmp_path)) <= set(REPORT_NAMES)


# ------------------------------------------------------------------- exits, through the script

_CODE = "import sys; from landscape.cli import main; sys.exit(main(sys.argv[1:]))"


def _script(*args, **kwargs):
    return subprocess.run([sys.executable, "-c", _CODE, *args], capture_output=True, text=True, timeout=60, **kwargs)


def test_a_full_stdout_ends_with_141_and_one_line():
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-c", _CODE, "kernels", "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert out.returncode == 141 and out.stderr.strip().splitlines() == [
        "landscape: stdout: No space left on device (output lost)"
    ]


@pytest.mark.parametrize("args", [["kernels"], ["targets", "--json"]])
def test_a_closed_pipe_ends_quietly_with_141(args):
    """`landscape kernels | head -1` once ended in a BrokenPipeError traceback."""
    with subprocess.Popen([sys.executable, "-c", _CODE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        proc.stdout.close()  # the reader is gone before the first write
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 141 and err == ""


def test_a_closed_stdout_ends_with_141():
    out = subprocess.run(
        f"{sys.executable} -c '{_CODE}' gemm 8 8 8 >&-", shell=True, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 141 and "Traceback" not in out.stderr


_SLOW_RUN = textwrap.dedent("""
    import signal  # SIGINT at its default, as at a terminal: a suite started with `&` or nohup passes it down ignored
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    import sys, time
    from landscape import cli
    def slow(case):
        print("ready", file=sys.stderr, flush=True)
        time.sleep(30)
    cli.default_runners = lambda sides=("torch", "jax"): {"torch": slow, "jax": slow}
    sys.exit(cli.main(["run", "relu"]))
""")


@pytest.mark.parametrize(
    "sig, code, line", [(signal.SIGINT, 130, "landscape: interrupted"), (signal.SIGTERM, 143, "landscape: terminated")]
)
def test_sigint_and_sigterm_print_one_line_and_exit_130_and_143(sig, code, line):
    with subprocess.Popen(
        [sys.executable, "-c", _SLOW_RUN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stderr.readline().strip() == "ready"
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == code
        assert proc.stderr.read().strip().splitlines() == [line]


_SLOW_COMPARE = textwrap.dedent("""
    import signal  # SIGINT at its default, as at a terminal: a suite started with `&` or nohup passes it down ignored
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    import sys, time
    from pathlib import Path
    import landscape.report, landscape.comparison_workload
    from landscape.cli import main
    from tests.landscape.comparisons import small_comparison
    landscape.comparison_workload.compare_workload = lambda workload, targets, *a, **k: small_comparison(("h100",))
    def slow_report(done, targets, root, verbose=False):
        (Path(root) / "report.json").write_text("{}")
        print("ready", file=sys.stderr, flush=True)
        time.sleep(30)
    landscape.report.write_report = slow_report
    sys.exit(main(["compare", "mlp", "--targets", "h100", "--out", sys.argv[1]]))
""")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_report_interrupted_while_written_leaves_nothing_behind(tmp_path, sig, code):
    """The staging folder DIR.tmp-PID and the lock DIR.lock go; DIR never appears half-written."""
    with subprocess.Popen(
        [sys.executable, "-c", _SLOW_COMPARE, str(tmp_path / "out")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stderr.readline().strip() == "ready"
        assert {p.name for p in tmp_path.iterdir()} == {"out.lock", f"out.tmp-{proc.pid}"}
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == code
        assert proc.stderr.read().strip().splitlines() == [
            f"landscape: {'interrupted' if code == 130 else 'terminated'}"
        ]
    assert list(tmp_path.iterdir()) == []


def test_a_device_given_as_an_output_file_is_written_in_place_never_replaced(tmp_path):
    """Writing beside a path and renaming over it would turn /dev/full into a regular file (a
    fuzz case did, as root): a device is written in place, and /dev/full's refusal is one line."""
    from landscape.outputs import check_output_file, write_file
    from reference.errors import BadOutput

    assert check_output_file("/dev/null", "--trace") == Path("/dev/null")
    write_file("/dev/null", "{}")
    assert Path("/dev/null").is_char_device()
    with pytest.raises(BadOutput, match="cannot write /dev/full"):
        write_file("/dev/full", "{}")
    assert Path("/dev/full").is_char_device()
