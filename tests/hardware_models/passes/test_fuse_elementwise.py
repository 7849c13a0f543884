"""fuse_elementwise: Inductor-like on GPUs, XLA-like on TPUs; groups partition the ops in a topological order."""

from __future__ import annotations

import pytest

from hardware_models.pipelines import compile_plan
from hardware_models.plan import ValueGraph, group_inputs, is_kernel_op
from hardware_models.target import get_target
from tests.hardware_models.programs import linear_gelu, softmax


def _fused(module, target):
    return compile_plan(module, get_target(target), stop_after="fuse_elementwise")


def _ops(plan):
    return [[plan.ops[i].op.short_name for i in g.members] for g in plan.groups]


def test_gpu_keeps_the_matmul_extern_and_fuses_its_epilogue_into_one_kernel():
    assert _ops(_fused(linear_gelu(65, 129, 63), "h100")) == [["dot_general"], ["add", "logistic", "multiply"]]


def test_tpu_fuses_the_epilogue_into_the_mxu_fusion():
    assert _ops(_fused(linear_gelu(65, 129, 63), "tpu-v5e")) == [["dot_general", "add", "logistic", "multiply"]]


def test_softmax_is_one_kernel_on_gpu_and_two_fusions_on_tpu():
    assert _ops(_fused(softmax(8, 1000), "h100")) == [["reduce", "subtract", "exponential", "reduce", "divide"]]
    assert _ops(_fused(softmax(8, 1000), "tpu-v5e")) == [["reduce", "subtract", "exponential"], ["reduce", "divide"]]


@pytest.mark.parametrize("target", ["h100", "tpu-v5e"])
@pytest.mark.parametrize("module", [linear_gelu(1, 63, 65), softmax(129, 150)], ids=["linear_gelu", "softmax"])
def test_groups_partition_the_working_ops_in_topological_order(module, target):
    plan = _fused(module, target)
    graph = ValueGraph(plan.ops)
    members = sorted(i for g in plan.groups for i in g.members)
    assert members == [p.index for p in plan.ops if is_kernel_op(p, graph)]
    group_of = {i: g.id for g in plan.groups for i in g.members}
    for g in plan.groups:
        for value in group_inputs(plan, graph, g):
            producer = graph.producer.get(value)
            assert producer is None or group_of.get(producer, -1) < g.id


def test_fusion_is_idempotent():
    from hardware_models.passes.fuse_elementwise import XLA_TPU, fuse_elementwise

    module, target = softmax(8, 1000), get_target("tpu-v5e")
    plan = _fused(module, "tpu-v5e")
    assert fuse_elementwise(module, plan, target, rules=XLA_TPU) is plan
