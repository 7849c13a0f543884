"""The plan's workload view: calls and loops expanded with repeats, GEMM shapes, ceil_div padding."""

from __future__ import annotations

import pytest

from hardware_models.plan import ceil_div, gemm_shape, round_up
from hardware_models.workload import expand_workload
from reference.ir import Function, Module, Op, TensorType
from reference.ir.counters import contraction_flops
from tests.hardware_models.programs import program, t


@pytest.mark.parametrize("n", [1, 63, 64, 65, 129, 150])
def test_round_up_covers_with_less_than_one_tile_of_padding(n):
    padded = round_up(n, 64)
    assert padded % 64 == 0 and n <= padded < n + 64
    assert ceil_div(n, 64) * 64 == padded


def test_a_call_made_l_times_runs_its_ops_l_times():
    v = TensorType((4,), "f32")
    body = Function(
        "block",
        (("%x", v),),
        (v,),
        (Op("stablehlo.add", ("%0",), (v,), ("%x", "%x"), (v, v)), Op("func.return", (), (), ("%0",), (v,))),
    )
    call = Op("func.call", ("%1",), (v,), ("%a",), (v,), callee="block", trip_count=7)
    main = Function("main", (("%a", v),), (v,), (call, Op("func.return", (), (), ("%1",), (v,))))
    ops, notes = expand_workload(Module((main, body)))
    add = next(p for p in ops if p.op.short_name == "add")
    assert add.repeats == 7 and add.instance == "main/0:block" and notes == ()
    assert add.qualified("%0") == "main/0:block%0"


def test_batched_dot_is_a_batched_gemm_with_the_same_flops():
    a, b, c = t((3, 65, 63)), t((3, 63, 129)), t((3, 65, 129))
    module = program(
        {"a": a, "b": b},
        [
            f"%0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : ({a}, {b}) -> {c}"
        ],
        "%0",
        c,
    )
    dot = module.main.ops[0]
    shape = gemm_shape(dot, "bf16")
    assert (shape.batch, shape.m, shape.n, shape.k) == (3, 65, 129, 63)
    assert shape.flops == contraction_flops(dot)


def test_convolution_is_an_implicit_gemm_with_the_same_flops():
    x, w, y = t((2, 9, 9, 5), "f32"), t((3, 3, 5, 7), "f32"), t((2, 7, 7, 7), "f32")
    module = program(
        {"x": x, "w": w},
        [
            f"%0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], "
            f"window = {{stride = [1, 1]}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : ({x}, {w}) -> {y}"
        ],
        "%0",
        y,
    )
    shape = gemm_shape(module.main.ops[0], "f32")
    assert (shape.m, shape.n, shape.k) == (2 * 7 * 7, 7, 3 * 3 * 5)


def test_a_blocks_arguments_bound_to_the_programs_are_arguments_and_its_activations_are_not():
    from hardware_models.plan import Plan
    from hardware_models.workload import program_arguments

    v = TensorType((4,), "f32")
    body = Function(
        "block",
        (("%x", v), ("%w", v)),
        (v,),
        (Op("stablehlo.add", ("%0",), (v,), ("%x", "%w"), (v, v)), Op("func.return", (), (), ("%0",), (v,))),
    )
    first = Op("stablehlo.negate", ("%h",), (v,), ("%a",), (v,))
    call = Op("func.call", ("%1",), (v,), ("%h", "%w"), (v, v), callee="block", trip_count=3)
    main = Function("main", (("%a", v), ("%w", v)), (v,), (first, call, Op("func.return", (), (), ("%1",), (v,))))
    module = Module((main, body))
    ops, _ = expand_workload(module)
    arguments = program_arguments(Plan("x", ops), module)
    assert "main/1:block%w" in arguments and "main/1:block%x" not in arguments
