"""The importer reads ops, types, typed attributes, regions, calls, loops and provenance."""

import pytest

from reference.errors import MalformedIR
from reference.ir import DotDims, parse_stablehlo, print_module, verify

MATMUL = """
module {
  func.func @main(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) -> tensor<4x16xbf16> {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16> loc("jit(f)/layers.0.mlp/dot_general")
    return %0 : tensor<4x16xbf16>
  }
}
"""

LOOP = """
module {
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
    %0 = stablehlo.tanh %v : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def test_types_attributes_and_provenance_are_read():
    module = verify(parse_stablehlo(MATMUL))
    dot = module.main.ops[0]
    assert dot.name == "stablehlo.dot_general"
    assert str(dot.result_types[0]) == "bf16[4,16]" and dot.result_types[0].nbytes == 128
    assert dot.attr("dot_dimension_numbers") == DotDims((), (), (1,), (0,))
    assert dot.origin.scope == "jit(f)/layers.0.mlp/dot_general"


def test_while_trip_count_and_calls_are_kept():
    module = verify(parse_stablehlo(LOOP))
    loop = module.main.ops[1]
    assert loop.short_name == "while" and loop.trip_count == 7
    call = loop.regions[1].ops[0]
    assert call.callee == "step" and module.function("step").ops[0].short_name == "tanh"


def test_unknown_op_is_kept_opaque_not_dropped():
    text = MATMUL.replace(
        "return %0", '%1 = "mydialect.frobnicate"(%0) : (tensor<4x16xbf16>) -> tensor<4x16xbf16>\n    return %1'
    )
    module = parse_stablehlo(text.replace("module {", "module attributes {} {"))
    opaque = module.main.ops[1]
    assert opaque.name == "mydialect.frobnicate" and not opaque.known
    assert str(opaque.result_types[0]) == "bf16[4,16]"


def test_unparsable_text_reports_line_and_column():
    with pytest.raises(MalformedIR, match=r"line 3, column \d+"):
        parse_stablehlo("module {\n  func.func @main() {\n    %0 = stablehlo.bogus\n  }\n}\n")


def test_printer_is_stable_and_renumbers_values():
    first, second = print_module(parse_stablehlo(LOOP)), print_module(parse_stablehlo(LOOP))
    assert first == second
    assert "while(%0, %arg0) -> i32[], f32[4]  {trip_count=7}" in first


def test_verifier_rejects_a_dot_with_mismatched_contraction():
    bad = MATMUL.replace("contracting_dims = [1] x [0]", "contracting_dims = [0] x [0]")
    with pytest.raises(MalformedIR):
        verify(parse_stablehlo(bad))


def _with_a_call(argument_type: str) -> str:
    return f"""
func.func private @block(%w: tensor<64xf32>, %x: tensor<4x64xf32>) -> tensor<4x64xf32> {{
  %0 = stablehlo.broadcast_in_dim %w, dims = [1] : (tensor<64xf32>) -> tensor<4x64xf32>
  %1 = stablehlo.add %x, %0 : tensor<4x64xf32>
  return %1 : tensor<4x64xf32>
}}
func.func @main(%a: tensor<64xf32>, %b: {argument_type}) -> tensor<4x64xf32> {{
  %0 = call @block(%a, %b) : (tensor<64xf32>, {argument_type}) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}}
"""


def test_verify_checks_every_calls_argument_types_against_its_callee():
    """A call that passes a value of another type than the callee declares (Rotary's f32[64]
    inv_freq slot handed the bf16 hidden state, as a miswired regional block once was) is
    malformed, named with the call, the argument and both types. MLIR's own parser refuses the
    mismatch in text, so the IR is edited after parsing, as compose_regional builds it."""
    import dataclasses

    good = verify(parse_stablehlo(_with_a_call("tensor<4x64xf32>")))
    main = good.main
    wrong = main.args[1][0], type(main.args[1][1])((4, 64), "bf16")
    call = main.ops[0]
    bad_call = dataclasses.replace(call, operand_types=(call.operand_types[0], wrong[1]))
    bad_main = dataclasses.replace(main, args=(main.args[0], wrong), ops=(bad_call, *main.ops[1:]))
    bad = dataclasses.replace(good, functions=tuple(bad_main if f.name == "main" else f for f in good.functions))
    with pytest.raises(MalformedIR, match=r"call @block passes %\w+ : .*bf16.* as argument 1"):
        verify(bad)


def _bool_constant(literal: str, shape: tuple[int, ...]):
    """The constant's elements, as the importer keeps them (a bool splat too: Op.data)."""
    dims = "x".join(map(str, shape)) + "x" if shape else ""
    text = (
        f"func.func @main() -> tensor<{dims}i1> {{\n  %0 = stablehlo.constant dense<{literal}> : tensor<{dims}i1>\n"
        f"  return %0 : tensor<{dims}i1>\n}}"
    )
    (op,) = [o for o in parse_stablehlo(text).main.ops if o.short_name == "constant"]
    return op.data


@pytest.mark.parametrize("n", [1, 9, 63, 65, 129])
def test_dense_boolean_constants_read_in_every_encoding(n):
    """A rule of MLIR's text: an i1 constant may be a splat, a list, hex of one byte per element
    (today's storage), or hex of bits packed eight to a byte, least significant first (the older
    storage torch-xla 2.9 writes: a 2x2x16x16 cache mask as 128 bytes). Each reads as the same
    elements, at odd sizes; the packed bits are unpacked in element order."""
    import numpy as np

    want = (np.arange(n) % 3 == 0) | (np.arange(n) == n - 1)
    listed = "[" + ", ".join("true" if v else "false" for v in want) + "]"
    per_byte = '"0x' + want.astype(np.uint8).tobytes().hex() + '"'
    packed = '"0x' + np.packbits(want, bitorder="little").tobytes().hex().upper() + '"'
    for literal in (listed, per_byte) + ((packed,) if n > 1 else ()):
        got = _bool_constant(literal, (n,))
        assert got.dtype == np.bool_ and got.tolist() == want.tolist(), literal
    assert _bool_constant("true", (n,)).tolist() == [True] * n
    if n > 1:  # one byte 0xFF is a splat in both storages: every element true
        assert _bool_constant('"0xFF"', (n,)).tolist() == [True] * n


def test_packed_boolean_constant_of_a_cache_mask_keeps_its_shape():
    """torch-xla's decode-step mask: true at one cache position (15 of 16) across every head dim."""
    import numpy as np

    want = np.zeros((2, 2, 16, 16), bool)
    want[:, :, 15, :] = True
    got = _bool_constant('"0x' + np.packbits(want.ravel(), bitorder="little").tobytes().hex().upper() + '"', want.shape)
    assert got.shape == want.shape and (got == want).all()


def test_boolean_hex_of_neither_size_is_refused_by_name():
    with pytest.raises(MalformedIR, match="hex data size is invalid"):
        _bool_constant('"0x0102030405"', (65,))
