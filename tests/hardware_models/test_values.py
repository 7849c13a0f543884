"""What a kernel reads and writes (hardware_models/values.py): rules of the memory traffic the
targets' compilers produce, checked on small programs with odd shapes."""

from __future__ import annotations

import pytest

from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from reference.ir import Function, Module, Op, TensorType
from reference.ir.counters import op_cost
from tests.hardware_models.programs import program, t


def _stacked_slice(layers: int):
    """y = slice(cache)[last layer] * 2: one layer's part of a stacked [L, 63, 65] cache."""
    cache, part, y = t((layers, 63, 65)), t((1, 63, 65)), t((63, 65))
    return program(
        {"cache": cache},
        [
            f"%0 = stablehlo.slice %cache [{layers - 1}:{layers}, 0:63, 0:65] : ({cache}) -> {part}",
            f"%1 = stablehlo.reshape %0 : ({part}) -> {y}",
            f"%2 = stablehlo.add %1, %1 : {y}",
        ],
        "%2",
        y,
    )


@pytest.mark.parametrize("layers", [1, 2, 65])
def test_a_slice_reads_the_elements_it_returns_not_its_whole_operand(layers):
    module = _stacked_slice(layers)
    assert op_cost(module.main.ops[0], module).bytes_read == 63 * 65 * 2
    for target in ("h100", "tpu-v5e", "spyre"):
        hbm = dict(estimate(module, target).total.bytes)[get_target(target).main_memory_level]
        assert hbm < 2 * (2 * 63 * 65 * 2) + 1024, target  # one layer in, one out (plus padding), for any L


def test_a_gather_of_one_row_reads_one_row_of_the_table():
    table, ids, row = t((129, 65)), t((1, 1), "i32"), t((1, 65))
    module = program(
        {"table": table, "ids": ids},
        [
            f'%0 = "stablehlo.gather"(%table, %ids) {{dimension_numbers = #stablehlo.gather<offset_dims = [1], '
            f"collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 65>}} "
            f": ({table}, {ids}) -> {row}",
        ],
        "%0",
        row,
    )
    assert op_cost(module.main.ops[0], module).bytes_read == 65 * 2 + 4


def _update(buffer_line: str, args: dict[str, str]):
    buf, upd = t((63, 65)), t((1, 65))
    return program(
        {**args, "u": upd, "i": t((), "i32")},
        [
            buffer_line,
            f"%1 = stablehlo.dynamic_update_slice %0, %u, %i, %i : ({buf}, {upd}, {t((), 'i32')}, {t((), 'i32')}) -> {buf}",
            f"%2 = stablehlo.multiply %1, %1 : {buf}",
        ],
        "%2",
        buf,
    )


def test_an_update_into_a_computed_buffer_that_dies_there_runs_in_place_and_into_a_broadcast_constant_does_not():
    computed = _update(f"%0 = stablehlo.negate %x : {t((63, 65))}", {"x": t((63, 65))})
    plan = compile_plan(computed, get_target("h100"))
    assert plan.in_place_updates == {1: 1}
    zeros = _update(f"%0 = stablehlo.constant dense<0.0> : {t((63, 65))}", {})
    assert compile_plan(zeros, get_target("h100")).in_place_updates == {}


def test_two_ops_reading_only_the_same_argument_fuse_as_siblings():
    """A norm converts its input twice (statistics, scale); in a block the input is an argument,
    so neither convert has a producer: they share one kernel and the input is read once."""
    x, f = t((65, 63)), t((65, 63), "f32")
    module = program(
        {"x": x},
        [
            f"%0 = stablehlo.convert %x : ({x}) -> {f}",
            f"%1 = stablehlo.multiply %0, %0 : {f}",
            f"%2 = stablehlo.convert %x : ({x}) -> {f}",
            f"%3 = stablehlo.add %1, %2 : {f}",
        ],
        "%3",
        f,
    )
    plan = compile_plan(module, get_target("h100"), stop_after="fuse_elementwise")
    assert [[plan.ops[i].op.short_name for i in g.members] for g in plan.groups] == [
        ["convert", "multiply", "convert", "add"]
    ]


def test_a_blocks_result_its_caller_never_reads_is_not_written():
    """A regional block returns (h, k); main returns only h's successor: k is dead, as XLA removes a
    loop's dead outputs, so the block's kernel writes h alone."""
    v = TensorType((63, 65), "bf16")
    body = Function(
        "block",
        (("%x", v),),
        (v, v),
        (
            Op("stablehlo.negate", ("%0",), (v,), ("%x",), (v,)),
            Op("stablehlo.exponential", ("%k",), (v,), ("%0",), (v,)),
            Op("stablehlo.add", ("%h",), (v,), ("%0", "%k"), (v, v)),
            Op("func.return", (), (), ("%h", "%k"), (v, v)),
        ),
    )
    call = Op("func.call", ("%1", "%2"), (v, v), ("%a",), (v,), callee="block", trip_count=3)
    main = Function("main", (("%a", v),), (v,), (call, Op("func.return", (), (), ("%1",), (v,))))
    est = estimate(Module((main, body)), "h100")
    (kernel,) = [g for g in est.groups if g.kind == "fusion"]
    assert kernel.repeats == 3
    assert dict(kernel.cost.bytes)["hbm"] == 2 * 63 * 65 * 2  # x in, h out; k stays in registers


@pytest.mark.parametrize("name", ["foo.call", "foo.while", "foo.reshape", "foo.constant"])
def test_an_unknown_dialects_op_named_like_a_known_one_is_a_costed_host_fallback(name):
    """`"foo.call"` has no callee and `"foo.reshape"` is not a view: an op the importer does not
    know is opaque whatever its short name, costed as a host fallback and reported, never a free
    op or a call (a seeded fuzz run found "foo.call" raising KeyError: None)."""
    from reference.ir import parse_stablehlo

    x = t((4, 16), "f32")
    module = parse_stablehlo(
        f"func.func @main(%a: {x}) -> {x} {{\n  %0 = stablehlo.tanh %a : {x}\n"
        f'  %u = "{name}"(%0) : ({x}) -> {x}\n  return %u : {x}\n}}\n'
    )
    for target in ("h100", "tpu-v5e", "spyre", "groq-lpu", "wse-3"):
        est = estimate(module, target)
        fallbacks = [g for g in est.groups if g.kind == "fallback"]
        assert len(fallbacks) == 1 and fallbacks[0].cost.time_s > 0, target
        assert any("host fallbacks" in note for note in est.notes), target


def _expert_dots(experts: int, columns: tuple[int, int] | None = None):
    """y_e = x @ w[e] for every e < experts of a stacked [experts, 65, 63] weight (HF's fused MoE
    experts' gate_up_proj[e]); with `columns`, each dot reads columns [lo:hi] of w[e] instead."""
    x, w = t((7, 65)), t((experts, 65, 63))
    lo, hi = columns or (0, 63)
    part, mat, y = t((1, 65, hi - lo)), t((65, hi - lo)), t((7, hi - lo))
    body, total = [], None
    for e in range(experts):
        body += [
            f"%s{e} = stablehlo.slice %w [{e}:{e + 1}, 0:65, {lo}:{hi}] : ({w}) -> {part}",
            f"%r{e} = stablehlo.reshape %s{e} : ({part}) -> {mat}",
            f"%y{e} = stablehlo.dot_general %x, %r{e}, contracting_dims = [1] x [0] : ({x}, {mat}) -> {y}",
        ]
        if total is not None:
            body.append(f"%a{e} = stablehlo.add {total}, %y{e} : {y}")
        total = f"%a{e}" if total is not None else f"%y{e}"
    return program({"x": x, "w": w}, body, total, y)


@pytest.mark.parametrize("experts", [1, 3, 65])
@pytest.mark.parametrize("target", ["h100", "tpu-v5e", "groq-lpu", "spyre"])
def test_a_contiguous_slice_read_only_by_a_matmul_is_an_offset_not_a_copy(experts, target):
    """HF's stacked experts, w[e] of [n, 65, 63], each read by its own dot: no kernel slices w
    (the 60 slices of Qwen2-MoE's experts were one fusion that read all of w and wrote it again,
    1.5x the layer's weights before its dots read them a third time); the dots read w once."""
    module = _expert_dots(experts)
    plan = compile_plan(module, get_target(target))
    assert all(plan.ops[i].op.short_name != "slice" for g in plan.groups for i in g.members)
    assert [g.kind for g in plan.groups].count("contraction") == experts
    hbm = dict(estimate(module, target).total.bytes)[get_target(target).main_memory_level]
    weights, padding = experts * 65 * 63 * 2, 1.25 if target == "spyre" else 1.0  # Spyre pads 63 to a 64-element stick
    assert weights <= hbm <= padding * weights + experts * 4 * 7 * 128 * 2 + 7 * 128 * 2, (hbm, weights)


def test_a_strided_slice_into_a_matmul_is_still_a_kernel():
    """Columns 0:31 of each w[e] are no contiguous block: the slice copies them (a kernel)."""
    plan = compile_plan(_expert_dots(3, columns=(0, 31)), get_target("h100"))
    assert any(plan.ops[i].op.short_name == "slice" for g in plan.groups for i in g.members)
