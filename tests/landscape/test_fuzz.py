"""Fuzzing the command line and the StableHLO files it reads, with hypothesis.

Whatever the arguments or the input file, `landscape` answers with exit code 0 or 2 (1 only from
`run`, when a numeric check fails), never a traceback, exactly one line on stderr when it
refuses (exit 2), and --json output that parses with no NaN or Infinity.

The CLI runs in-process (`landscape.cli.main`), in a scratch directory, and only commands that
answer quickly: `gemm`, `targets`, `kernels`, `estimate` with `--side jax` (abstract lowering, no
torch), `stats`, `hlo`, `estimate` and `roofline` with `--from-file`, and `run` on small kernels
at tiny sizes or at sizes it must refuse (never at sizes that would really allocate).

Replaying a failure: the `ci` profile (tests/conftest.py) draws its examples from the run's seed,
which `make test` takes from the commit (new examples for every commit) and prints (`make test HYPOTHESIS_SEED=N` or
`pytest --hypothesis-seed=N` replays the run); HYPOTHESIS_PROFILE=dev draws ten times as many. In
both, a failure names the command line and prints a `@reproduce_failure(...)` line that replays
that example when pasted above the test.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import json
import os
import shlex
import shutil
import signal
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from landscape.cli import main
from reference.catalogue import CATALOGUE, KERNELS
from reference.ir.limits import MAX_NESTING
from tests.landscape.fuzz_inputs import (
    CORPUS,
    DTYPES,
    HUGE_SIZES,
    JUNK_NAMES,
    MATMUL,
    NAMES,
    ODD_SIZES,
    PARAMS,
    REDUCE_CONV,
    SIZES,
    TARGET_NAMES,
    TARGETS,
    TEXT,
    assignment,
    call_chain,
    call_cycle,
    nested,
    set_options,
    shape_options,
    stablehlo_files,
)

pytestmark = pytest.mark.jax

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")


def examples(n: int) -> settings:
    """The profile's settings (tests/conftest.py), with n examples under `ci` and 10 n otherwise."""
    return settings(settings.get_profile(PROFILE), max_examples=n if PROFILE == "ci" else 10 * n)


# -- calling the CLI

CALL_LIMIT_S = 60  # one command; a hang is a bug, reported with its command line


@functools.cache
def scratch() -> Path:
    """The working directory of every call (so a relative or empty path writes nowhere else),
    with the obstacles the output-path strategy points at."""
    root = Path(tempfile.mkdtemp(prefix="landscape-fuzz-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    (root / "a_file").write_text("not a directory\n")
    (root / "a_dir").mkdir()
    (root / "read_only").mkdir(mode=0o555)  # read-only to anyone but root
    (root / "inputs").mkdir()
    return root


def _timeout(signum, frame):
    raise TimeoutError(f"no answer within {CALL_LIMIT_S} s")


def landscape(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `landscape ARGV`, run in-process in the scratch directory.

    An exception escaping main() is a bug: it fails the test with the command line.
    """
    out, err = io.StringIO(), io.StringIO()
    timed = threading.current_thread() is threading.main_thread()  # signals reach the main thread only
    if timed:
        previous = signal.signal(signal.SIGALRM, _timeout)
        signal.alarm(CALL_LIMIT_S)
    here = os.getcwd()
    os.chdir(scratch())
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException as exc:  # noqa: BLE001 - reported, with the command that raised it
        last = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        raise AssertionError(f"`landscape {shlex.join(argv)}` raised {last}") from exc
    finally:
        if timed:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        os.chdir(here)
    return code, out.getvalue(), err.getvalue()


def _no_constant(name: str):
    raise ValueError(f"JSON holds {name}")


def check(argv: list[str], as_json: bool = False) -> tuple[int, str, str]:
    """Run `landscape ARGV` and assert the properties every answer has."""
    code, out, err = landscape(argv)
    command = f"landscape {shlex.join(argv)}"
    allowed = {0, 1, 2} if argv[:1] == ["run"] else {0, 2}
    assert code in allowed, f"{command}: exit {code}; stderr: {err[-400:]!r}"
    assert "Traceback" not in err, f"{command}: traceback on stderr: {err[-400:]!r}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, f"{command}: {len(lines)} lines on stderr, want one: {err[-400:]!r}"
    if as_json and code in (0, 1):
        try:
            json.loads(out, parse_constant=_no_constant)
        except ValueError as bad:
            raise AssertionError(f"{command}: --json output is not strict JSON: {bad}; {out[:200]!r}") from None
    return code, out, err


def output_paths(suffixes: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Where an output may be asked to go: fine, missing parents, a file used as a directory, a
    directory used as a file, a read-only directory, /proc, a full device, nothing at all."""
    root = scratch()
    return st.builds(
        lambda place, suffix: place.replace("SUFFIX", suffix),
        st.sampled_from(
            [
                f"{root}/out/planSUFFIX",
                f"{root}/new/deeper/fileSUFFIX",
                f"{root}/a_file/insideSUFFIX",
                f"{root}/a_dir",
                f"{root}/read_only/xSUFFIX",
                "/proc/landscape/xSUFFIX",
                "/proc/version",
                "/dev/full",
                "",
                "SUFFIX",
                f"{root}/a_dir/",
                "/",
                "relative/xSUFFIX",
            ]
        ),
        st.sampled_from(suffixes),
    )


def _input_file(data: bytes) -> str:
    path = scratch() / "inputs" / f"program{len(os.listdir(scratch() / 'inputs'))}.mlir"
    path.write_bytes(data)
    return str(path)


FILE_COMMANDS = st.one_of(
    st.just(["stats", "--json"]),
    st.just(["hlo"]),
    st.just(["hlo", "--stage", "stablehlo"]),
    st.builds(lambda t: ["estimate", "--target", t, "--json"], st.sampled_from(TARGET_NAMES)),
    st.builds(lambda t: ["estimate", "--target", t, "--plan"], st.sampled_from(TARGET_NAMES)),
)


# -- the properties


@pytest.mark.parametrize(
    "argv",
    [["targets"], ["targets", "--json"], ["kernels"], ["kernels", "--json"], ["--help"], ["estimate", "--help"], []],
    ids=shlex.join,
)
def test_listing_commands_answer(argv):
    code, out, _ = check(argv, as_json="--json" in argv)
    assert code in (0, 2) and (out or code == 2)


@examples(100)
@given(data=st.data(), hostile=st.sampled_from(["none", "sizes", "array", "dataflow", "all"]), as_json=st.booleans())
def test_gemm_answers_any_arguments(data, hostile, as_json):
    def part(label, tame, wild):
        return data.draw(wild if hostile in (label, "all") else tame, label)

    sizes = part(
        "sizes", st.lists(st.sampled_from(["1", "7", "64", "129"]), min_size=3, max_size=3), st.lists(SIZES, max_size=4)
    )
    array = part(
        "array",
        st.sampled_from(["128x128", "1x1", "32x8"]),
        st.one_of(
            st.sampled_from(
                ["0x4", "4x0", "-1x4", "4x", "x", "", "1e3x1", f"{2**63}x1", f"{2**62}x{2**62}", "8X8", "٣x٣", " 8x8"]
            ),
            TEXT,
        ),
    )
    dataflow = part("dataflow", st.sampled_from(["os", "ws", "is"]), st.sampled_from(["", "OS", "xs", "o s"]))
    check(["gemm", *sizes, "--array", array, "--dataflow", dataflow] + (["--json"] if as_json else []), as_json)


# What each example makes hostile: one part of the command line (so the parts after it are
# reached too), all of them at once, or none.
HOSTILE = st.sampled_from(["none", "name", "target", "dtype", "shapes", "settings", "chips", "all"])
FAST_NAMES = sorted(KERNELS) + ["tiny", "gpt2-small", "llama-3.1-8b", "mixtral-8x7b"]


@examples(80)
@given(data=st.data(), hostile=HOSTILE, as_json=st.booleans(), plan=st.booleans())
def test_estimate_answers_any_name_shape_dtype_and_setting(data, hostile, as_json, plan):
    def part(label, tame, wild):
        return data.draw(wild if hostile in (label, "all") else tame, label)

    name = part("name", st.sampled_from(FAST_NAMES), NAMES)
    target = part("target", st.sampled_from(TARGET_NAMES), TARGETS)
    dtype = part("dtype", st.sampled_from(["float32", "bf16", "fp16"]), DTYPES)
    shapes = part("shapes", st.just([]), shape_options(name))
    settings_ = part("settings", st.just([]), set_options())
    chips = part(
        "chips",
        st.sampled_from([None, "1", "2"]),
        st.sampled_from(["0", "-1", "64", "1000000", str(2**63), str(2**64), "1e3", "x", "", "٣"]),
    )
    argv = ["estimate", name, "--side", "jax", "--target", target, "--dtype", dtype, *shapes, *settings_]
    argv += (
        (["--chips", chips] if chips is not None else [])
        + (["--plan"] if plan else [])
        + (["--json"] if as_json else [])
    )
    check(argv, as_json)


@examples(100)
@given(program=stablehlo_files(), command=FILE_COMMANDS)
def test_commands_answer_any_stablehlo_file(program, command):
    check([*command, "--from-file", _input_file(program)], as_json="--json" in command)


@pytest.mark.parametrize(
    "path",
    ["/dev/zero", "/dev/null", "DIR", "MISSING", "BIG", "", "/proc/self/mem"],
)
@pytest.mark.parametrize(
    "command", [["stats", "--json"], ["hlo"], ["estimate", "--target", "h100", "--json"]], ids=shlex.join
)
def test_unreadable_input_files_are_one_line_errors(command, path):
    root = scratch()
    if path == "DIR":
        path = str(root / "a_dir")
    elif path == "MISSING":
        path = str(root / "absent.mlir")
    elif path == "BIG":
        path = str(root / "big.mlir")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.truncate(64 * 2**20 + 1)
    code, _, err = check([*command, "--from-file", path], as_json="--json" in command)
    assert code == 2, f"{command} --from-file {path!r}: exit {code}"


@pytest.mark.parametrize(
    "program, message",
    [
        (bytes(range(256)), "is not UTF-8 text: byte 0x80 at offset 128"),
        (MATMUL.encode()[:150], "malformed IR at line"),
        (b"", "no func.func in the module"),
        (call_cycle(2).encode(), "recursive call: @r0 -> @r1 -> @r0"),
        (call_chain(5000).encode(), f"over the limit of {MAX_NESTING}, at @f{MAX_NESTING}"),
        (nested("regions", 100_000).encode(), "brackets nest more than 512 deep"),
        (nested("location aliases", 40).encode(), "aliases expand the text to more than"),
    ],
    ids=["binary", "truncated", "empty", "recursive", "deep chain", "deep regions", "alias bomb"],
)
def test_hostile_files_give_one_line_naming_the_problem(program, message):
    code, _, err = check(["stats", "--from-file", _input_file(program)])
    assert code == 2 and message in err, err


def test_unknown_ops_are_costed_as_fallbacks_not_errors():
    path = _input_file(REDUCE_CONV.encode())
    code, out, _ = check(["estimate", "--from-file", path, "--target", "h100", "--json"], as_json=True)
    assert code == 0
    result = json.loads(out)
    assert any("vendor.fused_magic" in note and "falls back" in note for note in result["notes"])
    assert any(row["kind"] == "fallback" for row in result["ops"])
    code, out, _ = check(["stats", "--from-file", path, "--json"], as_json=True)
    assert json.loads(out)["unknown_ops"] == {"vendor.fused_magic": 1}


@examples(25)
@given(
    program=st.sampled_from(CORPUS),
    target=st.sampled_from(TARGET_NAMES),
    out=output_paths((".png", ".svg", ".pdf", "")),
    settings_=set_options(),
)
def test_roofline_answers_any_output_path(program, target, out, settings_):
    check(["roofline", "--from-file", _input_file(program.encode()), "--target", target, "--out", out, *settings_])


@examples(15)
@given(trace=output_paths((".json", "")), target=st.sampled_from(["groq-lpu", "h100"]))
def test_estimate_trace_answers_any_output_path(trace, target):
    check(["estimate", "--from-file", _input_file(MATMUL.encode()), "--target", target, "--trace", trace])


@examples(15)
@given(
    out=output_paths(("", "/sub")),
    name=st.sampled_from(["softmax", "matmul", ""]),
    stage=st.sampled_from(["ir", "stablehlo", "jaxpr"]),
)
def test_hlo_out_answers_any_directory(out, name, stage):
    check(
        [
            "hlo",
            *([name] if name else ["--from-file", _input_file(MATMUL.encode())]),
            "--side",
            "jax",
            "--stage",
            stage,
            "--out",
            out,
        ]
    )


# Programs with nothing to do, or with absurd extents: an empty entry function, a zero-sized
# tensor, an extent of 2^63 - 1, only opaque ops (fallbacks that move no bytes).
NO_WORK = {
    "empty": "module {\n  func.func @main() {\n    return\n  }\n}\n",
    "zero-sized": MATMUL.replace("tensor<4x8xf32>", "tensor<0x8xf32>").replace("tensor<4x16xf32>", "tensor<0x16xf32>"),
    "int64 extent": MATMUL.replace("tensor<4x8xf32>", f"tensor<{2**63 - 1}x8xf32>").replace(
        "tensor<4x16xf32>", f"tensor<{2**63 - 1}x16xf32>"
    ),
    "opaque only": nested("regions", 2),
}


@pytest.mark.parametrize("target", TARGET_NAMES)
@pytest.mark.parametrize("program", sorted(NO_WORK))
def test_programs_with_no_work_or_absurd_extents_are_costed_or_refused(program, target):
    check(
        ["estimate", "--from-file", _input_file(NO_WORK[program].encode()), "--target", target, "--json"], as_json=True
    )


@pytest.mark.parametrize(
    "sizes, array",
    [
        (("1", "1", "1"), "1x1"),
        (("1", "1", "1"), "128x128"),
        (("129", "1", "1"), "1x1"),
        ((str(2**62),) * 3, "1x1"),
        ((str(2**63 - 1),) * 3, f"{2**63 - 1}x{2**63 - 1}"),
        (("7", "7", "7"), f"{2**62}x1"),
    ],
    ids=lambda v: shlex.join(v) if isinstance(v, tuple) else v,
)
@pytest.mark.parametrize("dataflow", ["os", "ws", "is"])
def test_gemm_at_edge_sizes_answers(sizes, array, dataflow):
    check(["gemm", *sizes, "--array", array, "--dataflow", dataflow, "--json"], as_json=True)


# Each quantity of each target at the edges of what a float holds: subnormal, the largest
# double, the edges of the domains (target.py). Either refused or costed, never a traceback.
EXTREMES = ["5e-324", "1e-310", "1e-12", "1e21", "1.7976931348623157e308"]


@pytest.mark.parametrize("value", EXTREMES)
@pytest.mark.parametrize("target", TARGET_NAMES)
def test_every_quantity_at_extreme_values_is_refused_or_costed(target, value):
    from hardware_models.target import get_target

    path = _input_file(MATMUL.encode())
    failures = []
    for key in get_target(target).quantities:
        try:
            check(
                ["estimate", "--from-file", path, "--target", target, "--set", f"{key}={value}", "--json"], as_json=True
            )
        except AssertionError as bad:
            failures.append(str(bad).splitlines()[0])
    assert not failures, "\n".join(failures)


# Integers are plain decimal digits: int() also reads these, as other numbers or as numbers
# the user did not mean, so each is refused with one line.
NOT_DECIMAL = ["1_6", "0x10", "0b11", "1e3", "1.0", "nan", "١٦", "１６", "٣"]
INTEGER_OPTIONS = {
    "shape": ["estimate", "matmul", "--side", "jax", "--target", "h100", "--shape", "m=V"],
    "gemm size": ["gemm", "V", "4", "4"],
    "gemm array": ["gemm", "4", "4", "4", "--array", "Vx4"],
    "chips": ["estimate", "--from-file", "MATMUL", "--target", "h100", "--chips", "V"],
    "seed": ["run", "add", "--shape", "m=1", "--shape", "n=1", "--seed", "V"],
    "predict batch": ["predict", "--model", "tiny", "--target", "h100", "--batch", "V"],
}


@pytest.mark.parametrize("value", NOT_DECIMAL)
@pytest.mark.parametrize(
    "option", [pytest.param(o, marks=[pytest.mark.torch] if o == "seed" else []) for o in sorted(INTEGER_OPTIONS)]
)
def test_integer_options_refuse_spellings_that_are_not_plain_decimal(option, value):
    path = _input_file(MATMUL.encode())
    argv = [
        a.replace("MATMUL", path).replace("V", value) if a in ("V", "m=V", "Vx4", "MATMUL") else a
        for a in INTEGER_OPTIONS[option]
    ]
    code, _, err = check(argv)
    assert code == 2, f"landscape {shlex.join(argv)}: exit {code}, accepted {value!r}"


# `run` allocates what it is asked for: only tiny sizes, and sizes it must refuse before allocating.
RUN_KERNELS = [
    "add",
    "mul",
    "relu",
    "silu",
    "gelu",
    "softmax",
    "log_softmax",
    "layernorm",
    "rmsnorm",
    "matmul",
    "linear",
    "clone",
]
REFUSED_MODELS = ["llama-3.1-405b", "llama-2-70b", "mixtral-8x7b"]
RUN_SIZES = st.sampled_from(["1", "2", "3"] + [s for s in HUGE_SIZES if int(s) >= 10**12] + ODD_SIZES)


@pytest.mark.torch
@pytest.mark.slow
@examples(40)
@given(
    data=st.data(), hostile=st.sampled_from(["none", "name", "dtype", "seed", "shapes", "all"]), as_json=st.booleans()
)
def test_run_answers_tiny_and_absurd_sizes(data, hostile, as_json):
    def part(label, tame, wild):
        return data.draw(wild if hostile in (label, "all") else tame, label)

    name = part(
        "name",
        st.sampled_from(RUN_KERNELS),
        st.one_of(st.sampled_from(RUN_KERNELS + REFUSED_MODELS), st.sampled_from(JUNK_NAMES), TEXT),
    )
    dtype = part("dtype", st.sampled_from(["float32", "bf16", "fp16"]), DTYPES)
    seed = part(
        "seed",
        st.sampled_from(["0", "1", str(2**32 - 1)]),
        st.sampled_from(["-1", str(2**32), str(2**63), str(2**64), "x", "1.5", "", " 3", "٣", "nan"]),
    )
    entry = CATALOGUE.get(name)
    params = entry.params if entry else ()
    sizes = RUN_SIZES if hostile in ("shapes", "all") else st.sampled_from(["1", "2", "3"])
    # Every size of a kernel is set, tiny or refused, so no default makes a run big; hostile
    # shapes add one more item, which may name a parameter twice or be malformed.
    items = [
        f"{p.name}={data.draw(st.sampled_from(p.choices) if p.choices else sizes, p.name)}"
        for p in params
        if name in KERNELS
    ]
    keys = st.sampled_from([p.name for p in params] or PARAMS)
    items += part("shapes", st.just([]), st.lists(assignment(keys, RUN_SIZES), max_size=1))
    argv = ["run", name, "--dtype", dtype, "--seed", seed]
    argv += [a for item in items for a in ("--shape", item)] + (["--json"] if as_json else [])
    check(argv, as_json)


def test_scratch_directory_is_outside_the_repository():
    repo = Path(__file__).resolve().parents[2]
    assert repo not in scratch().resolve().parents and scratch().is_dir()
