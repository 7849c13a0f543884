"""Hostile input is an error naming the problem, never a crash, a hang or a traceback.

Files are read defensively (size cap, regular files, UTF-8); text that would crash MLIR's
recursive parser or make the importer print gigabytes is refused first; calls may not recurse
or nest past MAX_NESTING; ops the importer does not know stay opaque and cost what they move.
"""

import os
import threading

import pytest

from reference.errors import MalformedInput, MalformedIR
from reference.ir import Block, Function, Module, Op, TensorType, module_stats, parse_stablehlo, print_module, verify
from reference.ir.limits import (
    MAX_BRACKET_DEPTH,
    MAX_INPUT_BYTES,
    MAX_NESTING,
    check_calls,
    check_text,
    read_stablehlo_file,
)

T = "tensor<4xf32>"

MATMUL = """module {
  func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}
"""


def _function(name: str, body: str) -> str:
    return f"  func.func private @{name}(%x: {T}) -> {T} {{\n    %0 = {body}\n    return %0 : {T}\n  }}\n"


def _call(callee: str) -> str:
    return f"func.call @{callee}(%x) : ({T}) -> {T}"


def call_chain(depth: int) -> str:
    """main calls f0 calls f1 ... calls f{depth-1}, which computes tanh: `depth` nested calls."""
    functions = [_function(f"f{i}", _call(f"f{i + 1}")) for i in range(depth - 1)]
    functions.append(_function(f"f{depth - 1}", f"stablehlo.tanh %x : {T}"))
    main = f"  func.func @main(%x: {T}) -> {T} {{\n    %0 = {_call('f0')}\n    return %0 : {T}\n  }}\n"
    return "module {\n" + main + "".join(functions) + "}\n"


def call_cycle(names: list[str]) -> str:
    """main calls names[0], each calls the next, the last calls names[0] again."""
    functions = [_function(n, _call(names[(i + 1) % len(names)])) for i, n in enumerate(names)]
    main = f"  func.func @main(%x: {T}) -> {T} {{\n    %0 = {_call(names[0])}\n    return %0 : {T}\n  }}\n"
    return "module {\n" + main + "".join(functions) + "}\n"


def nested_regions(depth: int) -> str:
    """Opaque ops nested `depth` regions deep (generic syntax: two brackets a level)."""
    inner = '"foo.wrap"() ({\n' * depth + '"foo.leaf"() : () -> ()' + "\n}) : () -> ()" * depth
    return f"module {{\n  func.func @main() {{\n{inner}\n    return\n  }}\n}}\n"


def _write(tmp_path, data: bytes, name: str = "input.mlir"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


# -- reading files


def test_binary_file_error_names_offset_of_first_bad_byte(tmp_path):
    path = _write(tmp_path, b"module {\n" + bytes(range(256)))
    with pytest.raises(MalformedIR, match=r"line 3, column 118: .*is not UTF-8 text: byte 0x80 at offset 137"):
        read_stablehlo_file(path)


def test_empty_file_reads_and_is_refused_as_having_no_function(tmp_path):
    assert read_stablehlo_file(_write(tmp_path, b"")) == ""
    with pytest.raises(MalformedIR, match="no func.func"):
        parse_stablehlo("")


def test_byte_order_mark_is_dropped(tmp_path):
    text = read_stablehlo_file(_write(tmp_path, b"\xef\xbb\xbf" + MATMUL.encode()))
    assert text == MATMUL and parse_stablehlo(text).main.ops[0].short_name == "dot_general"


def test_directory_is_refused(tmp_path):
    with pytest.raises(MalformedInput, match="is a directory"):
        read_stablehlo_file(tmp_path)


def test_device_is_refused_without_reading_it():
    with pytest.raises(MalformedInput, match="/dev/zero: it is a device"):
        read_stablehlo_file("/dev/zero")


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(MalformedInput, match="No such file"):
        read_stablehlo_file(tmp_path / "absent.mlir")


def test_oversized_file_is_refused_naming_its_size_and_the_cap(tmp_path):
    path = tmp_path / "big.mlir"
    with open(path, "wb") as f:
        f.truncate(MAX_INPUT_BYTES + 1)  # sparse: no disk used
    with pytest.raises(
        MalformedInput, match=r"too large: 67,108,865 bytes \(64\.0 MiB\); the limit .* 67,108,864 bytes"
    ):
        read_stablehlo_file(path)


def test_a_pipe_is_read_up_to_the_cap(tmp_path):
    fifo = tmp_path / "pipe.mlir"
    os.mkfifo(fifo)

    def feed(data: bytes):
        with open(fifo, "wb") as f:
            try:
                f.write(data)
            except BrokenPipeError:  # the reader stopped at the cap
                pass

    writer = threading.Thread(target=feed, args=(MATMUL.encode(),))
    writer.start()
    assert read_stablehlo_file(fifo) == MATMUL
    writer.join()
    writer = threading.Thread(target=feed, args=(b"x" * 101,))
    writer.start()
    with pytest.raises(MalformedInput, match="too large: more than 100 bytes"):
        read_stablehlo_file(fifo, max_bytes=100)
    writer.join()


@pytest.mark.parametrize("cut", [1, 10, 40, 100, 150, len(MATMUL) - 3])
def test_truncated_text_is_malformed_ir_with_line_and_column(cut):
    with pytest.raises(MalformedIR, match=r"at line \d+, column \d+"):
        parse_stablehlo(MATMUL[:cut])


def test_lone_surrogate_in_text_is_malformed_ir():
    with pytest.raises(MalformedIR, match="not valid Unicode"):
        parse_stablehlo(MATMUL.replace("main", "ma\ud800in"))


def test_control_characters_in_mlir_messages_are_escaped():
    with pytest.raises(MalformedIR) as err:
        parse_stablehlo("module {\n  func.func @main() { \x1b[31m }\n}\n")
    assert "\x1b" not in str(err.value) and "\n" not in str(err.value)


# -- nesting, recursion and expansion


def test_recursive_calls_are_refused_naming_the_cycle():
    with pytest.raises(MalformedIR, match=r"recursive call: @a -> @b -> @a"):
        parse_stablehlo(call_cycle(["a", "b"]))


def test_a_function_calling_itself_is_refused():
    with pytest.raises(MalformedIR, match=r"recursive call: @self -> @self"):
        parse_stablehlo(call_cycle(["self"]))


def test_call_chain_at_the_limit_is_accepted_and_counted():
    module = verify(parse_stablehlo(call_chain(MAX_NESTING)))
    assert module_stats(module).transcendentals == 4


def test_call_chain_past_the_limit_names_the_deepest_function():
    with pytest.raises(
        MalformedIR,
        match=rf"nest {MAX_NESTING + 1} deep below @main, over the limit of {MAX_NESTING}, at @f{MAX_NESTING}:",
    ):
        parse_stablehlo(call_chain(MAX_NESTING + 1))


def test_five_thousand_deep_call_chain_is_refused_without_recursion_error():
    with pytest.raises(
        MalformedIR, match=r"nest 5000 deep below @main.*at @f64: @main -> @f0 -> @f1 -> \.\.\. \(4995 more\)"
    ):
        parse_stablehlo(call_chain(5000))


def test_regions_past_the_limit_are_refused_naming_the_function():
    verify(parse_stablehlo(nested_regions(MAX_NESTING)))
    with pytest.raises(MalformedIR, match=rf"func @main: regions nest more than {MAX_NESTING} deep"):
        parse_stablehlo(nested_regions(MAX_NESTING + 1))


@pytest.mark.parametrize("depth", [300, 3000, 100_000])
def test_brackets_too_deep_for_mlir_are_refused_before_it_parses(depth):
    # MLIR's parser crashes the process (SIGSEGV) past about 2,000 nested regions.
    with pytest.raises(MalformedIR, match=f"brackets nest more than {MAX_BRACKET_DEPTH} deep"):
        parse_stablehlo(nested_regions(depth))


def test_brackets_inside_strings_and_comments_do_not_count():
    text = MATMUL.replace(
        "return", "// " + "(" * 1000 + '\n    "foo.x"() {s = "' + "[" * 1000 + '"} : () -> ()\n    return'
    )
    check_text(text)
    assert parse_stablehlo(text).main.ops[1].name == "foo.x"


def test_arrows_are_not_closing_brackets():
    check_text("(" * MAX_BRACKET_DEPTH + "->" * 100 + ")" * MAX_BRACKET_DEPTH)


def test_nesting_hidden_in_type_aliases_is_refused():
    aliases = ["!t0 = f32"] + [f"!t{i + 1} = tuple<!t{i}>" for i in range(2 * MAX_BRACKET_DEPTH)]
    text = (
        "\n".join(aliases)
        + f'\nmodule {{\n  func.func @main() {{\n    "foo.x"() : () -> !t{2 * MAX_BRACKET_DEPTH}\n    return\n  }}\n}}\n'
    )
    with pytest.raises(MalformedIR, match=rf"alias !t{MAX_BRACKET_DEPTH + 1} nests more than {MAX_BRACKET_DEPTH} deep"):
        parse_stablehlo(text)


def test_exponentially_expanding_location_aliases_are_refused():
    # Each alias uses the previous one twice: 40 lines would print as terabytes.
    aliases = ['#l0 = loc("x.py":1:1)'] + [f"#l{i + 1} = loc(callsite(#l{i} at #l{i}))" for i in range(40)]
    text = (
        'module {\n  func.func @main() {\n    "foo.x"() : () -> () loc(#l40)\n    return\n  }\n}\n'
        + "\n".join(aliases)
        + "\n"
    )
    with pytest.raises(MalformedIR, match=r"aliases expand the text to more than 268,435,456 bytes"):
        parse_stablehlo(text)


def test_location_aliases_of_real_lowerings_are_accepted():
    aliases = ['#l0 = loc("model.py":1:1)'] + [f"#l{i + 1} = loc(callsite(#l{i} at #l0))" for i in range(30)]
    text = (
        MATMUL.replace("contracting_dims = [1] x [0]", "contracting_dims = [1] x [0]").replace(
            "-> tensor<4x16xf32>\n", "-> tensor<4x16xf32> loc(#l30)\n", 1
        )
        + "\n".join(aliases)
        + "\n"
    )
    assert parse_stablehlo(text).main.ops[0].origin.source == "model.py:1"


def test_verify_bounds_nesting_of_ir_built_directly():
    t = TensorType((4,), "f32")
    op = Op("foo.leaf", (), (), (), ())
    for _ in range(5000):
        op = Op("foo.wrap", (), (), (), (), regions=(Block((), (op,)),))
    with pytest.raises(MalformedIR, match="regions nest 5000 deep"):
        verify(Module((Function("main", (("%x", t),), (), (op,)),)))


def test_check_calls_finds_a_cycle_away_from_the_entry():
    t = TensorType((4,), "f32")

    def calling(name, callee):
        return Function(name, (("%x", t),), (t,), (Op("func.call", ("%y",), (t,), ("%x",), (t,), callee=callee),))

    module = Module((Function("main", (), (), ()), calling("p", "q"), calling("q", "p")))
    with pytest.raises(MalformedIR, match="recursive call: @p -> @q -> @p"):
        check_calls(module)


# -- what stays accepted: opaque ops, odd loops


def test_unknown_ops_stay_opaque_and_cost_only_what_they_move():
    text = MATMUL.replace(
        "    return %0 : tensor<4x16xf32>",
        '    %1 = "foo.dot_general"(%0) {dot_dimension_numbers = 3 : i64, comparison_direction = "up"} : (tensor<4x16xf32>) -> tensor<4x16xf32>\n'
        '    %2 = "foo.call"(%1) {callee = @main} : (tensor<4x16xf32>) -> tensor<4x16xf32>\n'
        '    %3 = "foo.while"(%2) ({\n      "foo.tanh"() : () -> ()\n    }) : (tensor<4x16xf32>) -> tensor<4x16xf32>\n'
        "    return %3 : tensor<4x16xf32>",
    )
    module = verify(parse_stablehlo(text))
    opaque = module.main.ops[1:4]
    assert [op.known for op in opaque] == [False, False, False] and opaque[1].callee is None
    assert opaque[0].attr("dot_dimension_numbers") == "3 : i64"
    stats = module_stats(module)
    assert stats.flops == 2 * 4 * 16 * 8 and stats.transcendentals == 0
    assert stats.unknown_ops == {"foo.call": 1, "foo.dot_general": 1, "foo.tanh": 1, "foo.while": 1}
    assert stats.bytes_accessed == (4 * 8 + 8 * 16 + 4 * 16) * 4 + 3 * 2 * 4 * 16 * 4
    assert "[opaque]" in print_module(module)


LOOP = """module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c0 = stablehlo.constant dense<START> : tensor<TYPE>
    %0:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<TYPE>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<LIMIT> : tensor<TYPE>
      %p = stablehlo.compare LT, %i, %n : (tensor<TYPE>, tensor<TYPE>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %y = stablehlo.tanh %acc : tensor<4xf32>
      %one = stablehlo.constant dense<STEP> : tensor<TYPE>
      %j = stablehlo.add %i, %one : tensor<TYPE>
      stablehlo.return %j, %y : tensor<TYPE>, tensor<4xf32>
    }
    return %0#1 : tensor<4xf32>
  }
}
"""


@pytest.mark.parametrize(
    "dtype, start, limit, step, trips",
    [
        ("i32", "0", "7", "1", 7),
        ("i32", "0", "7", "-1", None),  # never ends: no static count
        ("i32", "0", "7", "0", None),
        ("i32", "9", "7", "1", 0),
        ("i64", "0", "9223372036854775807", "1", 2**63 - 1),
        ("f32", "0.0", "7.0", "0.5", None),  # a float counter is not read as a count
        ("f32", "0.0", "0x7F800000", "1.0", None),  # up to +inf
    ],
)
def test_while_trip_count_is_read_only_from_integer_counters(dtype, start, limit, step, trips):
    text = LOOP.replace("TYPE", dtype).replace("START", start).replace("LIMIT", limit).replace("STEP", step)
    module = verify(parse_stablehlo(text))
    assert module.main.ops[1].trip_count == trips
    module_stats(module)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            f"module {{\n  func.func private @ext(%x: {T}) -> {T}\n}}\n".replace("(%x: ", "("),
            "func @ext is a declaration without a body",
        ),
        (
            "module {\n  func.func @main(%x: tensor<*xf32>) -> tensor<*xf32> {\n    return %x : tensor<*xf32>\n  }\n}\n",
            "unranked tensor",
        ),
        (
            "module {\n  func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n    return %x : tensor<?xf32>\n  }\n}\n",
            "dynamic shape",
        ),
        (
            'module {\n  func.func @main() {\n    "foo.br"()[^bb1] : () -> ()\n  ^bb1:\n    return\n  }\n}\n',
            "func @main has 2 blocks",
        ),
    ],
    ids=["declaration", "unranked", "dynamic", "blocks"],
)
def test_functions_and_types_the_ir_cannot_hold_are_refused(text, message):
    with pytest.raises(MalformedIR, match=message):
        parse_stablehlo(text)
