"""`landscape debug`: every planted fault is found at its layer, its rung and its originating op, on
every family where it applies; clean programs raise no alarm; the stick fault hides behind a
softmax's argmax; capture failures name the user's line; the CLI's exits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reference.faults import FAULTS, LAYERS, get_fault

pytestmark = [pytest.mark.torch, pytest.mark.jax]

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "docs" / "debug" / "clone_softmax.mlir"
FAMILY_TARGET = {"gpu": "h100", "tpu": "tpu-v5e", "wafer": "wse-3", "lpu": "groq-lpu", "spyre": "spyre"}

# fault -> (program, shapes, dtype, sides, the origin's op, the families where it shows)
CASES = {
    "softmax-no-max": ("softmax", {}, "float16", ("torch", "jax"), "exponential", ("gpu",)),
    "host-sync": ("softmax", {}, "float32", ("torch", "jax"), "the user's line", ("gpu",)),
    "shape-branch": ("softmax", {}, "float32", ("torch", "jax"), "the user's line", ("gpu",)),
    "layernorm-eps-outside-sqrt": ("layernorm", {}, "float32", ("torch", "jax"), "rsqrt", ("gpu", "spyre")),
    "fused-reduce-wrong-axis": ("softmax", {}, "float32", ("torch",), "reduce", ("gpu", "tpu", "wafer", "spyre")),
    "floor-stick-count": (
        "clone",
        {"n": 65},
        "float16",
        ("torch", "jax"),
        "copy of an argument onto the chip",
        ("spyre", "lpu"),
    ),
    "drop-remainder-tile": (
        "matmul",
        {"m": 130, "n": 130},
        "float32",
        ("torch",),
        "dot_general",
        ("gpu", "tpu", "spyre"),
    ),
    "early-consumer": ("softmax", {}, "float32", ("torch",), "exponential", ("lpu",)),
    "free-at-first-use": ("layernorm", {}, "float32", ("torch",), None, ("lpu",)),
    "dma-length-elements": (
        "matmul",
        {},
        "float32",
        ("torch",),
        "copy of an argument onto the chip",
        tuple(FAMILY_TARGET),
    ),
    "fp16-accumulate": ("matmul", {"k": 1024}, "float32", ("torch",), "dot_general", tuple(FAMILY_TARGET)),
}


def test_every_fault_has_a_case_and_every_layer_a_fault():
    """Each of the eight layers has at least one plantable fault, and each fault a test case here."""
    assert set(CASES) == {f.name for f in FAULTS}
    assert {f.layer for f in FAULTS} == {layer.number for layer in LAYERS}


def _params():
    for name, (_, _, _, sides, _, families) in CASES.items():
        for family in families:
            for side in sides:
                yield pytest.param(name, family, side, id=f"{name}-{family}-{side}")


@pytest.mark.parametrize("fault, family, side", list(_params()))
def test_planted_fault_is_found_at_its_layer_and_origin(fault, family, side):
    """Rule: a planted fault makes its own rung the first divergent one, names its layer, and the
    teacher-forced run names the op that computes the fault; bisection lands on the same op."""
    from landscape.debug import debug

    program, shapes, dtype, _, origin_op, _ = CASES[fault]
    f = debug(program, FAMILY_TARGET[family], side, shapes, dtype, (fault,))
    planted = get_fault(fault)
    assert f.first == planted.rung.split("/")[0] or f.first == planted.rung, f.to_dict()
    assert f.layer.startswith(f"{planted.layer} "), f.layer
    assert f.origin is not None
    if origin_op is not None:
        assert f.origin.op == origin_op, f.origin
    if planted.rung not in ("R1", "R2"):
        assert not f.accumulated  # the planted op is wrong on its own, fed the rung below's inputs
        assert f.bisect and f"({f.origin.key})" in f.bisect, (f.bisect, f.origin)
        assert any(e.startswith(fault + ":") for e in f.events)
    assert not [n for n in f.not_planted if n.startswith(fault)]


def test_fault_on_a_family_it_does_not_apply_to_is_reported_not_planted():
    """A fault asked of a family without its mechanism (no SRAM planner on a GPU) is said to be not
    planted, and the program then agrees at every rung."""
    from landscape.debug import debug

    f = debug("softmax", "h100", "torch", {}, "float32", ("early-consumer",))
    assert f.first is None
    assert f.not_planted and "lpu" in f.not_planted[0]


def test_stick_fault_originates_at_the_copy_and_hides_behind_the_argmax(tmp_path):
    """The course's case: a 65-element fp16 copy onto Spyre whose stick count is floor-divided loses
    element 64; the softmax and argmax downstream hide it, so the output agrees, and the ladder
    still finds it at R5, originating at the copy."""
    from landscape.debug import debug

    f = debug(target="spyre", inject=("floor-stick-count",), from_file=str(DEMO), repro_dir=str(tmp_path))
    assert f.first == "R5" and f.layer == "5 lowering and layout"
    assert f.origin.op == "copy of an argument onto the chip"
    assert f.reaches_output is False
    assert any("elements 64..64" in e for e in f.events)
    r5 = next(r for r in f.rungs if r.rung == "R5")
    assert r5.error <= r5.gate and r5.ops_differ > 0  # the output check passes; the ops do not
    clean = debug(target="spyre", from_file=str(DEMO))
    assert clean.first is None
    # the repro runs again and finds the same divergence
    again = debug(target="spyre", inject=("floor-stick-count",), from_file=f.repro)
    assert again.first == "R5" and again.origin.op == f.origin.op


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize(
    "name, shapes",
    [
        ("softmax", {}),
        ("layernorm", {"m": 63, "d": 65}),
        ("matmul", {"m": 129, "n": 1, "k": 65}),
        ("clone", {"n": 129}),
        ("attention", {}),
        ("block", {}),
    ],
)
def test_clean_programs_raise_no_alarm(name, shapes, dtype):
    """Property: with no fault planted, no rung diverges on any of the five families (the full sweep
    over the catalogue and sizes 1/63/65/129 is benchmarks/debug_false_alarms.py)."""
    from hardware_models.families import representative_targets
    from landscape.debug import debug

    cache: dict = {}
    for target in representative_targets():
        f = debug(name, target, "torch", shapes, dtype, cache=cache)
        assert f.first is None, (target, [r.to_dict() for r in f.rungs if not r.ok])


def test_capture_failure_names_the_line_and_the_fix():
    """The course's `.item()` block: the message names the user's file and line, the call, the fix,
    and what it means on each kind of target."""
    import inspect

    import pytorch_side.faults as faults
    from pytorch_side.capture import capture
    from reference.catalogue import get_entry
    from reference.errors import CaptureFailed
    from reference.inputs import make_case

    case = make_case(get_entry("softmax"), get_entry("softmax").resolve({}), "float32", 0)
    with pytest.raises(CaptureFailed) as err:
        capture(case, faults.SoftmaxWithHostSync())
    lines, start = inspect.getsourcelines(faults.SoftmaxWithHostSync.forward)
    line = start + next(i for i, text in enumerate(lines) if ".item()" in text)
    message = str(err.value)
    assert message.startswith(f"line {line} of faults.py calls `.item()` inside forward")
    assert "torch.where" in message and "compile rejection" in message and "graph break" in message
    assert "\n" not in message


@pytest.mark.parametrize("side", ["torch", "jax"])
def test_shape_branch_is_found_at_a_second_shape_naming_the_users_line(side):
    """The course's third framework bug: forward branches on the row length. Captured at n=64 (a
    multiple of 8) and again at n=65, the graphs part at their first op; R2 names the line of the
    branch taken at capture, and the rungs below it agree (each branch is a right softmax). Where
    the second shape takes the same branch (n=65 -> 66) the graphs agree: one second shape sees
    only the branches it crosses."""
    import inspect

    from landscape.debug import debug

    faults = __import__(f"{'pytorch' if side == 'torch' else 'jax'}_side.faults", fromlist=["x"])
    fn = faults.SoftmaxWithShapeBranch.forward if side == "torch" else faults.softmax_with_shape_branch
    lines, start = inspect.getsourcelines(fn)
    line = start + next(i for i, text in enumerate(lines) if "reshape" in text)
    f = debug("softmax", "h100", side, {}, "float32", ("shape-branch",))
    assert f.first == "R2" and f.layer == "2 graph capture"
    assert f.origin.key == f"faults.py:{line}" and "reshape" in f.origin.source
    assert "captured again at m=65, n=65 (was m=64, n=64)" in f.specialized and "op 1:" in f.specialized
    r1, r2 = (next(r for r in f.rungs if r.rung == k) for k in ("R1", "R2"))
    assert r1.ok and r2.error <= r2.gate and r2.ops_differ > 0
    assert all(r.ok for r in f.rungs if r.rung not in ("R2",))
    assert debug("softmax", "h100", side, {"n": 65}, "float32", ("shape-branch",)).first is None


def test_second_shapes_grow_extents_and_keep_counts_choices_and_unit_axes():
    """Rule: the second capture grows each extent by its step where the entry accepts it; a size-1
    axis, a choice, and a count that adds tensors (layers) keep their values; all-1 shapes have
    no second shape."""
    from landscape.debug import second_shapes
    from reference.catalogue import get_entry

    softmax = get_entry("softmax")
    assert second_shapes(softmax, softmax.resolve({"m": 1, "n": 63})) == {"m": 1, "n": 64}
    assert second_shapes(softmax, softmax.resolve({"m": 1, "n": 1})) is None
    gelu = get_entry("gelu")
    assert second_shapes(gelu, gelu.resolve({}))["approximate"] == gelu.resolve({})["approximate"]
    tiny = get_entry("tiny")
    base = tiny.resolve({})
    grown = second_shapes(tiny, base)
    layers = next(p.name for p in tiny.params if "layer" in p.name)
    assert grown is not None and grown[layers] == base[layers]
    assert set(tiny.tensor_shapes(grown)) == set(tiny.tensor_shapes(base))


@pytest.mark.parametrize("side", ["torch", "jax"])
def test_no_clean_graph_changes_at_its_second_shape(side):
    """Property: every catalogue kernel and `tiny`, at the false-alarm sweep's shape sets
    (benchmarks/debug_false_alarms.py), captures the same ops at its second shape: the R2
    re-capture raises no alarm on code without a shape branch."""
    import importlib

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from debug_false_alarms import shape_sets

    from landscape.debug import second_shapes
    from reference.catalogue import CATALOGUE
    from reference.inputs import make_case

    capture = importlib.import_module(f"{'pytorch' if side == 'torch' else 'jax'}_side.capture")
    checked, changed = 0, []
    for name, entry in CATALOGUE.items():
        if entry.kind != "kernel" and name != "tiny":
            continue
        for shapes in shape_sets(name):
            resolved = entry.resolve(shapes)
            second = second_shapes(entry, resolved)
            if second is None:  # every extent 1 (what is left is a choice or a count)
                assert all(resolved[p.name] == 1 for p in entry.params if p.name in ("m", "n")), (name, resolved)
                continue
            ops = [
                [op for op, _, _ in capture.recapture_ops(make_case(entry, s, "float32", 0))]
                for s in (resolved, second)
            ]
            checked += 1
            if ops[0] != ops[1]:
                changed.append((name, resolved))
    assert checked >= 80 and changed == []


def test_cli_exits_and_json(tmp_path):
    """Exit 1 when a rung diverges, 0 when none does, 2 with one line for a bad fault name; --json
    carries the first rung and the origin; --list-faults lists every fault with its layer."""
    run = lambda *a: subprocess.run(
        [sys.executable, "-m", "landscape.cli", "debug", *a],  # noqa: E731
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    bad = run("softmax", "--inject", "no-such-fault")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "valid: softmax-no-max" in bad.stderr
    listed = run("--list-faults", "--json")
    assert listed.returncode == 0 and {r["name"] for r in json.loads(listed.stdout)} == {f.name for f in FAULTS}
    found = run(
        "--from-file", str(DEMO), "--target", "spyre", "--inject", "floor-stick-count", "--json", "--repro-dir", "r"
    )
    assert found.returncode == 1
    data = json.loads(found.stdout)
    assert data["first_divergent_rung"] == "R5" and data["reaches_output"] is False
    assert (tmp_path / "r" / "clone_softmax-spyre-floor-stick-count.npz").is_file()
    clean = run("--from-file", str(DEMO), "--target", "spyre")
    assert clean.returncode == 0 and "no rung diverges" in clean.stdout


def test_lowering_a_users_module_names_the_line_too():
    """The ordinary lowering path (`hlo`, `estimate` on a user's module) raises the same one-line
    CaptureFailed for data-dependent control flow, on both sides, and prints no partial graph."""
    import contextlib
    import io

    import jax.numpy as jnp
    import torch

    from jax_side.faults import softmax_with_host_sync
    from jax_side.lower import lower_function
    from pytorch_side.faults import SoftmaxWithHostSync
    from pytorch_side.lower import lower_module
    from reference.errors import CaptureFailed

    stderr = io.StringIO()
    with (
        contextlib.redirect_stderr(stderr),
        pytest.raises(CaptureFailed, match=r"^line \d+ of faults.py calls `.item\(\)`"),
    ):
        lower_module(SoftmaxWithHostSync(), torch.zeros(4, 4))
    assert "def forward" not in stderr.getvalue()
    with pytest.raises(CaptureFailed, match=r"compile rejection on every target"):
        lower_function(softmax_with_host_sync, jnp.zeros((4, 4)))


def test_shrunk_repro_ends_at_the_origin_and_still_diverges(tmp_path):
    """The repro cut after the originating op returns that op's value, and debugging it again
    finds the same rung and the same kind of op; a fault that needs the ops after its origin (a
    fusion's neighbours) is cut after the last op it shows in instead."""
    from landscape.debug import debug
    from reference.ir import parse_stablehlo

    f = debug("layernorm", "h100", "torch", {}, "float32", ("layernorm-eps-outside-sqrt",), repro_dir=str(tmp_path))
    assert f.shrunk and f.origin.op == "rsqrt"
    shrunk = parse_stablehlo(Path(f.shrunk).read_text())
    assert shrunk.main.ops[-2].short_name == "rsqrt"
    assert len(shrunk.main.ops) < len(parse_stablehlo(Path(f.repro).read_text()).main.ops)
    again = debug(target="h100", inject=("layernorm-eps-outside-sqrt",), from_file=f.shrunk)
    assert again.first == "R3" and again.origin.op == "rsqrt"
    fused = debug("softmax", "h100", "torch", {}, "float32", ("fused-reduce-wrong-axis",), repro_dir=str(tmp_path))
    assert fused.shrunk == "" or debug(target="h100", inject=fused.faults, from_file=fused.shrunk).first == "R4"


WHILE = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c3 = stablehlo.constant dense<3> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4xf32>
   cond {
    %p = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %n = stablehlo.add %i, %c1 : tensor<i32>
    %y = stablehlo.add %x, %x : tensor<4xf32>
    stablehlo.return %n, %y : tensor<i32>, tensor<4xf32>
  }
  return %r#1 : tensor<4xf32>
}
"""


@pytest.mark.parametrize("damage", ["cut 30", "cut 200", "cut half", "flip"])
def test_a_damaged_npz_beside_the_file_is_one_line(tmp_path, capsys, damage):
    """A truncated archive (its central directory gone, or its data) or a corrupt compressed one:
    one line naming the file, exit 2, no traceback."""
    import numpy as np

    from landscape.cli import main

    program = tmp_path / "loop.mlir"
    program.write_text(WHILE)
    npz = tmp_path / "loop.npz"
    np.savez_compressed(npz, arg0=np.arange(4, dtype=np.float32))
    data = bytearray(npz.read_bytes())
    if damage == "flip":
        data[60:64] = bytes(b ^ 0xFF for b in data[60:64])
    else:
        data = data[: len(data) // 2 if damage == "cut half" else len(data) - int(damage.split()[1])]
    npz.write_bytes(bytes(data))
    assert main(["debug", "--from-file", str(program)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "loop.npz: not a readable .npz" in err[0] and "Traceback" not in err[0]


def test_hostile_files_and_arguments(tmp_path, monkeypatch):
    """A loop body reading values from outside runs (and raises no false alarm on any family: teacher
    forcing stops at loops); an endless loop, a bad .npz, a bad side or seed are one-line errors;
    a repro never replaces a file already there; a framework fault asked of a file is not planted."""
    import numpy as np

    from hardware_models.families import representative_targets
    from landscape.debug import debug
    from reference.errors import LandscapeError, UnknownName
    from reference.ir.interpret import CannotInterpret

    loop = tmp_path / "loop.mlir"
    loop.write_text(WHILE)
    for target in representative_targets():
        assert debug(target=target, from_file=str(loop)).first is None
    endless = tmp_path / "endless.mlir"
    endless.write_text(
        WHILE.replace("%c3 = stablehlo.constant dense<3>", "%c3 = stablehlo.constant dense<-1>").replace(
            "compare LT", "compare GT"
        )
    )
    monkeypatch.setattr("reference.ir.interpret.MAX_TRIPS", 1000)  # the rule, not the limit's size, is tested
    with pytest.raises(CannotInterpret, match="ran 1,000 trips"):
        debug(from_file=str(endless))
    for content, match in ((b"junk", "not a readable .npz"), (None, "no array arg0"), ("shape", "arg0 is float64")):
        npz = tmp_path / "loop.npz"
        if content is None:
            np.savez(npz, other=np.ones(4))
        elif content == "shape":
            np.savez(npz, arg0=np.ones(3))
        else:
            npz.write_bytes(content)
        with pytest.raises(LandscapeError, match=match):
            debug(from_file=str(loop))
    (tmp_path / "loop.npz").unlink()
    with pytest.raises(UnknownName, match="side"):
        debug("softmax", side="Torch")
    assert debug("softmax", seed=2**32 - 1).first is None
    f = debug(from_file=str(DEMO), inject=("host-sync",))
    assert f.first is None and f.not_planted == ["host-sync: a file has no framework code to plant it in"]
    mine = tmp_path / "clone_softmax-spyre-floor-stick-count.mlir"
    mine.write_text("the user's own file")
    found = debug(target="spyre", inject="floor-stick-count", from_file=str(DEMO), repro_dir=str(tmp_path))
    assert mine.read_text() == "the user's own file" and found.repro.endswith("-2.mlir")
