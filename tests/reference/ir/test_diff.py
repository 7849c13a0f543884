"""The path diff anchors on contractions and names why segments differ."""

from reference.ir import parse_stablehlo
from reference.ir.diff import diff_modules

TORCH_LIKE = """
module {
  func.func @main(%w: tensor<16x8xf32>, %x: tensor<4x8xf32>) -> tensor<4x16xf32> {
    %t = stablehlo.transpose %w, dims = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32> loc("linear.py":134:0)
    %0 = stablehlo.dot_general %x, %t, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %one = stablehlo.constant dense<1.0> : tensor<4x16xf32>
    %1 = stablehlo.multiply %0, %one : tensor<4x16xf32> loc("linear.py":134:0)
    return %1 : tensor<4x16xf32>
  }
}
"""
JAX_LIKE = """
module {
  func.func @main(%w: tensor<8x16xf32>, %x: tensor<4x8xf32>) -> tensor<4x16xf32> {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
}
"""


def test_diff_finds_the_transpose_and_the_materialized_constant_with_provenance():
    result = diff_modules(parse_stablehlo(TORCH_LIKE), parse_stablehlo(JAX_LIKE))
    assert result.histogram["stablehlo.transpose"] == (1, 0)
    assert result.histogram["stablehlo.dot_general"] == (1, 1)
    before, after = result.divergences
    assert before.segment == 0 and "transposes" in before.reasons[0]
    assert before.scopes["torch"] == ("linear.py:134",)
    assert after.after.startswith("dot_general") and any("materialized" in r for r in after.reasons)


def test_identical_programs_have_no_divergence():
    module = parse_stablehlo(JAX_LIKE)
    assert diff_modules(module, module).divergences == ()
