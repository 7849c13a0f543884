"""One width per element type: every type the IR holds has its bytes, a token none, and any other
type is refused on import in one line, never counted as 0 bytes or a guessed 4."""

from __future__ import annotations

import pytest

from reference.errors import UnsupportedDtype
from reference.ir import parse_stablehlo
from reference.ir.graph import ELEMENT_BYTES, TensorType, element_bytes


def _program(element: str) -> str:
    return f"""func.func @main(%arg0: tensor<4x8x{element}>) -> tensor<4x8x{element}> {{
  %0 = stablehlo.add %arg0, %arg0 : tensor<4x8x{element}>
  return %0 : tensor<4x8x{element}>
}}"""


@pytest.mark.parametrize(
    ("dtype", "width"), [("f32", 4), ("bf16", 2), ("f8E4M3FN", 1), ("i64", 8), ("complex<f32>", 8)]
)
def test_a_known_type_has_its_ieee_or_mlir_width(dtype, width):
    assert element_bytes(dtype) == width
    assert TensorType((3, 5), dtype).nbytes == 15 * width


def test_a_token_holds_no_bytes():
    assert element_bytes("!stablehlo.token") == 0


def test_fp4_is_half_a_byte_and_a_tensor_rounds_up_to_whole_bytes():
    """E2M1 packs two values a byte (NVFP4, MXFP4): 15 of them take 8 bytes, never 7.5."""
    assert element_bytes("f4E2M1FN") == 0.5
    assert TensorType((3, 5), "f4E2M1FN").nbytes == 8
    assert TensorType((8192, 8192), "f4E2M1FN").nbytes == 8192 * 8192 // 2


@pytest.mark.parametrize("dtype", ["i4", "f6E2M3FN", "index", "f80"])
def test_any_other_type_is_refused_naming_the_known_ones(dtype):
    with pytest.raises(UnsupportedDtype) as err:
        element_bytes(dtype)
    message = str(err.value)
    assert "\n" not in message and repr(dtype) in message and "bf16" in message


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f8E5M2"])
def test_a_program_in_a_known_type_imports_with_its_bytes(dtype):
    module = parse_stablehlo(_program(dtype))
    ((_, arg),) = module.main.args
    assert arg.nbytes == 32 * ELEMENT_BYTES[dtype]


def test_a_program_in_a_sub_byte_type_is_refused_on_import():
    with pytest.raises(UnsupportedDtype, match="'i4' is not supported"):
        parse_stablehlo(_program("i4"))


def test_the_cli_refuses_it_in_one_line_with_exit_2(tmp_path, capfd):
    from landscape.cli import main

    path = tmp_path / "int4.mlir"
    path.write_text(_program("i4"))
    assert main(["estimate", "--from-file", str(path), "--target", "h100"]) == 2
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'i4'" in err and "Traceback" not in err
