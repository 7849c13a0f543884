"""Counting rules, each on a program small enough to check by hand."""

from reference.ir import module_stats, parse_stablehlo
from reference.ir.counters import XLA_CHLO_EXPANSION
from tests.reference.ir.test_from_stablehlo import LOOP, MATMUL

CONV = """
module {
  func.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x5x5x4xf32> {
    %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x5x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x5x5x4xf32>
    return %0 : tensor<1x5x5x4xf32>
  }
}
"""

SOFTMAX_ROW = """
module {
  func.func @main(%x: tensor<3x10xf32>) -> tensor<3x10xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %e = stablehlo.exponential %x : tensor<3x10xf32>
    %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<3x10xf32>, tensor<f32>) -> tensor<3xf32>
    %b = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<3xf32>) -> tensor<3x10xf32>
    %y = stablehlo.divide %e, %b : tensor<3x10xf32>
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %ones = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> tensor<3x10xf32>
    %same = stablehlo.multiply %y, %ones : tensor<3x10xf32>
    return %same : tensor<3x10xf32>
  }
}
"""


def test_dot_is_two_flops_per_multiply_add():
    assert module_stats(parse_stablehlo(MATMUL)).flops == 2 * 4 * 16 * 8


def test_bytes_are_operands_plus_results_at_op_boundaries():
    # bf16: read 4x8 + 8x16, write 4x16, two bytes each
    assert module_stats(parse_stablehlo(MATMUL)).bytes_accessed == 2 * (32 + 128 + 64)


def test_parameter_bytes_count_the_weight_arguments():
    assert module_stats(parse_stablehlo(MATMUL), param_args=(1,)).param_bytes == 8 * 16 * 2


def test_loop_body_counts_trip_count_times_but_once_under_xla_rules():
    module = parse_stablehlo(LOOP)
    executed, xla = module_stats(module), module_stats(module, policy="xla")
    assert executed.transcendentals == 7 * 4 and xla.transcendentals == 4
    assert executed.flops == 7 * (1 + 1)  # the compare and the counter increment, each iteration


def test_reduction_and_elementwise_rules():
    stats = module_stats(parse_stablehlo(SOFTMAX_ROW))
    # reduce: (30 - 3) adds; divide 30; multiply-by-one 30; exp is a transcendental
    assert stats.flops == 27 + 30 + 30 and stats.transcendentals == 30
    assert stats.categories["reduction"] == 1 and stats.ops["stablehlo.exponential"] == 1


def test_xla_rules_fold_multiplication_by_one():
    assert module_stats(parse_stablehlo(SOFTMAX_ROW), policy="xla").flops == 27 + 30


def test_convolution_counts_full_windows_and_xla_counts_real_input_only():
    stats = parse_stablehlo(CONV)
    full = module_stats(stats).flops
    assert full == 2 * (5 * 5 * 4) * (3 * 3 * 2)
    # Per spatial dim, 5 outputs x 3 taps = 15 pairs, 2 of which read padding: 13.
    assert module_stats(stats, policy="xla").flops == 2 * 4 * 13 * 13 * 2


def test_chlo_expansion_table_is_per_element_flops_and_transcendentals():
    assert all(len(v) == 2 and v[1] == 1 for v in XLA_CHLO_EXPANSION.values())
