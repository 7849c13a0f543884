"""What the command-line fuzzer (tests/landscape/test_fuzz.py) draws: the grammar's pieces (names,
targets, dtypes, sizes, settings) and StableHLO programs with their mutations."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from reference.catalogue import CATALOGUE
from reference.ir.limits import MAX_NESTING

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
    from landscape.lowering import lower_named

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
