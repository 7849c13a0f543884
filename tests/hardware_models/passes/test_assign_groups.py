"""assign_groups: one kernel per working op; views and folded constants make none; unknown ops fall back."""

from __future__ import annotations

from hardware_models.passes.assign_groups import assign_groups
from hardware_models.plan import Plan
from hardware_models.target import get_target
from hardware_models.workload import expand_workload
from tests.hardware_models.programs import linear_gelu, program, t


def _assign(module, target="h100"):
    ops, _ = expand_workload(module)
    return assign_groups(module, Plan(target, ops), get_target(target))


def test_each_working_op_is_one_group_and_views_are_none():
    plan = _assign(linear_gelu(65, 129, 63))
    kinds = [(g.kind, plan.ops[g.members[0]].op.short_name) for g in plan.groups]
    assert kinds == [("contraction", "dot_general"), ("fusion", "add"), ("fusion", "logistic"), ("fusion", "multiply")]


def test_arithmetic_on_constants_is_folded_at_compile_time():
    s, v = t((), "f32"), t((4,), "f32")
    module = program(
        {"a": v},
        [
            f"%c = stablehlo.constant dense<2.0> : {s}",
            f"%d = stablehlo.sqrt %c : {s}",
            f"%e = stablehlo.broadcast_in_dim %d, dims = [] : ({s}) -> {v}",
            f"%0 = stablehlo.multiply %a, %e : {v}",
        ],
        "%0",
        v,
    )
    plan = _assign(module)
    assert [plan.ops[g.members[0]].op.short_name for g in plan.groups] == ["multiply"]


def test_an_op_the_target_cannot_run_falls_back_to_the_host_and_is_noted():
    v = t((4,), "f32")
    module = program({"a": v}, [f"%0 = stablehlo.custom_call @my_kernel(%a) : ({v}) -> {v}"], "%0", v)
    plan = _assign(module)
    assert [g.kind for g in plan.groups] == ["fallback"]
    assert any("custom_call" in note and "host" in note for note in plan.notes)


def test_an_op_on_an_empty_tensor_forms_no_kernel_and_is_noted():
    """A matmul of a 0 x 8 by 8 x 4 tensor has nothing to compute: no kernel (a GPU tiling of it
    divided by zero, Spyre's verifier saw an empty tile), and the plan says why."""
    from hardware_models.pipelines import compile_plan
    from hardware_models.target import load_targets
    from tests.hardware_models.programs import program, t

    a, b, c = t((0, 8), "f32"), t((8, 4), "f32"), t((0, 4), "f32")
    module = program(
        {"a": a, "b": b},
        [f"%0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({a}, {b}) -> {c}"],
        "%0",
        c,
    )
    for target in load_targets().values():
        plan = compile_plan(module, target)
        assert plan.groups == () and any("empty tensors" in n for n in plan.notes), target.name
