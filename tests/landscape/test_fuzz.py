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


# -- the grammar's pieces

# Arguments are what a shell can pass: any text without NUL.
TEXT = st.text(st.characters(min_codepoint=1, blacklist_categories=("Cs",)), max_size=12)
JUNK_NAMES = [
    "",
    " ",
    "atention",
    "MATMUL",
    "matmul ",
    "llama",
    "gpt2_small",
    "../etc/passwd",
    "-",
    "ñ",
    "注意力",
    "\t",
    "a" * 300,
]
NAMES = st.one_of(st.sampled_from(sorted(CATALOGUE)), st.sampled_from(JUNK_NAMES), TEXT)
TARGET_NAMES = [
    "a100",
    "h100",
    "h200",
    "tpu-v4",
    "tpu-v5e",
    "tpu-v5p",
    "tpu-v6e",
    "spyre",
    "groq-lpu",
    "wse-2",
    "wse-3",
]
TARGETS = st.one_of(st.sampled_from(TARGET_NAMES), st.sampled_from(["", "H100", "h1000", "tpu", "all"]), TEXT)
DTYPES = st.one_of(
    st.sampled_from(
        ["float32", "bf16", "fp16", "half", "BF16", "f8E4M3FN", "fp8", "int8", "float64", "", "bfloat16 ", "f32\n"]
    ),
    TEXT,
)
# Sizes: ordinary, zero, negative, int64's edges and past them, and the spellings int() accepts
# but a size should not be (underscores, whitespace, signs, non-ASCII digits).
HUGE_SIZES = [str(2**63), str(2**63 - 1), str(2**64), str(10**12), str(10**30), str(2**62), str(2**31)]
ODD_SIZES = [
    "0",
    "-1",
    "-0",
    "00",
    "1_6",
    "0x10",
    "0b11",
    "1e3",
    "1.0",
    " 7 ",
    "7\n",
    "+3",
    "nan",
    "inf",
    "",
    "١٦",
    "１６",
    "٣",
]
SIZES = st.one_of(
    st.sampled_from(["1", "2", "3", "7", "16", "63", "65"] + HUGE_SIZES + ODD_SIZES), st.integers(-3, 70).map(str), TEXT
)
PARAMS = sorted({p.name for e in CATALOGUE.values() for p in e.params})
CHOICES = sorted({c for e in CATALOGUE.values() for p in e.params for c in p.choices})
SET_VALUES = [
    "inf",
    "-inf",
    "nan",
    "NaN",
    "-1",
    "0",
    "-0",
    "1e-310",
    "5e-324",
    "1e308",
    "1.7976931348623157e308",
    "1e309",
    "1.5",
    "2",
    "0.5",
    "1",
    "0.99",
    "abc",
    "",
    "0x10",
    "1_000",
    " 3",
    "1e3",
    "7e-9",
]
QUANTITY_KEYS = [
    "levels.hbm.bytes",
    "levels.hbm.bytes_per_s",
    "levels.hbm.usable_fraction",
    "levels.l2.resident_fraction",
    "chip.sm_count",
    "chip.clock_hz",
    "peak.bf16_flop_per_s",
    "schedule.launch_overhead_s",
    "fitted.gemm_efficiency",
    "host.flop_per_s",
    "peak",
    "",
    "levels..bytes",
    "chip.sm_count.extra",
]


def assignment(keys, values) -> st.SearchStrategy[str]:
    """KEY=VALUE, or the malformed spellings of one."""
    return st.one_of(
        st.builds(lambda k, v: f"{k}={v}", keys, values),
        st.sampled_from(["", "=", "=3", "m", "m==3", "m=3=4", " m = 3 "]),
        TEXT,
    )


@st.composite
def shape_options(draw, name: str) -> list[str]:
    """--shape P=V items for entry `name`: its parameters and others, valid and absurd values,
    duplicates (the same parameter twice) included."""
    entry = CATALOGUE.get(name)
    own = [p.name for p in entry.params] if entry else []
    choices = [c for p in entry.params for c in p.choices] if entry else []
    keys = st.one_of(st.sampled_from(own or PARAMS), st.sampled_from(PARAMS + ["bogus", "M", " m"]))
    values = st.one_of(SIZES, st.sampled_from(choices or CHOICES))
    items = draw(st.lists(assignment(keys, values), max_size=4))
    return [a for item in items for a in ("--shape", item)]


@st.composite
def set_options(draw) -> list[str]:
    items = draw(
        st.lists(assignment(st.one_of(st.sampled_from(QUANTITY_KEYS), TEXT), st.sampled_from(SET_VALUES)), max_size=3)
    )
    return [a for item in items for a in ("--set", item)]


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


# -- StableHLO programs and their mutations

T4 = "tensor<4xf32>"
MATMUL = """module {
  func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %1 = stablehlo.tanh %0 : tensor<4x16xf32>
    return %1 : tensor<4x16xf32>
  }
}
"""
LOOP = """module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<7> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %y = func.call @step(%acc) : (tensor<4xf32>) -> tensor<4xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %j, %y : tensor<i32>, tensor<4xf32>
    }
    return %0#1 : tensor<4xf32>
  }
  func.func private @step(%v: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.exponential %v : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""
REDUCE_CONV = """module {
  func.func @main(%x: tensor<1x8x8x3xbf16>, %w: tensor<3x3x3x4xbf16>) -> tensor<1xbf16> {
    %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x3xbf16>, tensor<3x3x3x4xbf16>) -> tensor<1x8x8x4xbf16>
    %init = stablehlo.constant dense<0.0> : tensor<bf16>
    %1 = stablehlo.reduce(%0 init: %init) applies stablehlo.add across dimensions = [1, 2, 3] : (tensor<1x8x8x4xbf16>, tensor<bf16>) -> tensor<1xbf16>
    %2 = "vendor.fused_magic"(%1) {level = 3 : i64} : (tensor<1xbf16>) -> tensor<1xbf16>
    return %2 : tensor<1xbf16>
  }
}
"""
CORPUS = [MATMUL, LOOP, REDUCE_CONV]


@functools.cache
def lowered_corpus() -> tuple[str, ...]:
    """Real programs: a few catalogue entries lowered by JAX, as `hlo --stage stablehlo` prints them."""
    from landscape.serving import lower_named

    return tuple(
        lower_named(name, "jax", {}, "float32").stages["stablehlo"] for name in ("softmax", "attention", "tiny")
    )


def _fn(name: str, body: str) -> str:
    return f"  func.func private @{name}(%x: {T4}) -> {T4} {{\n    %0 = {body}\n    return %0 : {T4}\n  }}\n"


def _call(callee: str) -> str:
    return f"func.call @{callee}(%x) : ({T4}) -> {T4}"


def _module(first_callee: str, functions: list[str]) -> str:
    main = f"  func.func @main(%x: {T4}) -> {T4} {{\n    %0 = {_call(first_callee)}\n    return %0 : {T4}\n  }}\n"
    return "module {\n" + main + "".join(functions) + "}\n"


def call_chain(depth: int) -> str:
    body = [_fn(f"f{i}", _call(f"f{i + 1}")) for i in range(depth - 1)] + [
        _fn(f"f{depth - 1}", f"stablehlo.tanh %x : {T4}")
    ]
    return _module("f0", body)


def call_cycle(length: int) -> str:
    return _module("r0", [_fn(f"r{i}", _call(f"r{(i + 1) % length}")) for i in range(length)])


def nested(kind: str, depth: int) -> str:
    if kind == "regions":
        inner = '"foo.wrap"() ({\n' * depth + '"foo.leaf"() : () -> ()' + "\n}) : () -> ()" * depth
        return f"module {{\n  func.func @main() {{\n{inner}\n    return\n  }}\n}}\n"
    if kind == "brackets":
        return f'module {{\n  func.func @main() {{\n    "foo.x"() {{a = {"[" * depth}{"]" * depth}}} : () -> ()\n    return\n  }}\n}}\n'
    if kind == "type aliases":
        aliases = ["!t0 = f32"] + [f"!t{i + 1} = tuple<!t{i}>" for i in range(depth)]
        return (
            "\n".join(aliases)
            + f'\nmodule {{\n  func.func @main() {{\n    "foo.x"() : () -> !t{depth}\n    return\n  }}\n}}\n'
        )
    aliases = ['#l0 = loc("x.py":1:1)'] + [f"#l{i + 1} = loc(callsite(#l{i} at #l{i}))" for i in range(depth)]
    return (
        f'module {{\n  func.func @main() {{\n    "foo.x"() : () -> () loc(#l{depth})\n    return\n  }}\n}}\n'
        + "\n".join(aliases)
        + "\n"
    )


UNKNOWN_OP_ATTRS = [
    "",
    "{dot_dimension_numbers = 1 : i64}",
    "{callee = @main}",
    '{comparison_direction = "LT"}',
    "{value = dense<1.0> : tensor<f32>}",
    "{dimension_numbers = [1, 2]}",
    '{x = "\\u001b[31m"}',
]


@st.composite
def stablehlo_files(draw) -> bytes:
    """A program, valid or mutated: truncated, bytes spliced in or flipped, lines dropped or
    repeated, random bytes, nested past every limit, recursive, with unknown ops or odd types."""
    kind = draw(
        st.sampled_from(
            [
                "valid",
                "lowered",
                "truncated",
                "splice",
                "flip",
                "drop line",
                "repeat line",
                "random bytes",
                "chain",
                "cycle",
                "nested",
                "unknown op",
                "odd type",
                "empty",
            ]
        )
    )
    base = draw(st.sampled_from(CORPUS))
    if kind == "valid":
        return base.encode()
    if kind == "lowered":
        return draw(st.sampled_from(lowered_corpus())).encode()
    if kind == "truncated":
        return base.encode()[: draw(st.integers(0, len(base)))]
    if kind == "splice":
        at = draw(st.integers(0, len(base)))
        return base.encode()[:at] + draw(st.binary(min_size=1, max_size=16)) + base.encode()[at:]
    if kind == "flip":
        data = bytearray(base.encode())
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(data)
    if kind in ("drop line", "repeat line"):
        lines = base.splitlines(keepends=True)
        i = draw(st.integers(0, len(lines) - 1))
        lines[i : i + 1] = [] if kind == "drop line" else [lines[i], lines[i]]
        return "".join(lines).encode()
    if kind == "random bytes":
        return draw(st.binary(max_size=400))
    if kind == "chain":
        return call_chain(draw(st.sampled_from([1, MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1, 300, 5000]))).encode()
    if kind == "cycle":
        return call_cycle(draw(st.integers(1, 5))).encode()
    if kind == "nested":
        how = draw(st.sampled_from(["regions", "brackets", "type aliases", "location aliases"]))
        depth = draw(
            st.sampled_from(
                [2, 30, MAX_NESTING + 1, 600, 3000, 100_000] if how != "location aliases" else [2, 20, 40, 3000]
            )
        )
        return nested(how, depth).encode()
    if kind == "unknown op":
        dialect = draw(st.sampled_from(["foo", "mydialect", "stablehlo", "chlo", "func", "x"]))
        short = draw(
            st.sampled_from(["dot_general", "while", "call", "frobnicate", "tanh", "constant", "return", "reduce"])
        )
        attrs = draw(st.sampled_from(UNKNOWN_OP_ATTRS))
        op = f'    %u = "{dialect}.{short}"(%1) {attrs} : (tensor<4x16xf32>) -> tensor<4x16xf32>\n'
        return MATMUL.replace("    return %1", op + "    return %u").encode()
    if kind == "odd type":
        old, new = draw(
            st.sampled_from(
                [  # every occurrence, so the program stays consistent
                    ("tensor<4x", "tensor<0x"),
                    ("tensor<4x", f"tensor<{2**63 - 1}x"),
                    ("tensor<4x", "tensor<?x"),
                    ("tensor<4x8xf32>", "tensor<*xf32>"),
                    ("f32>", "f64>"),
                    ("f32>", "f8E4M3FN>"),
                    ("f32>", "i4>"),
                    ("f32>", "complex<f32>>"),
                    ("f32>", "!foo.bar>"),
                    ("f32>", "ui64>"),
                ]
            )
        )
        return MATMUL.replace(old, new).encode()
    return b""


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
