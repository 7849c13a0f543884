"""The host-CPU model's rules for what a CPU library or compiler does to one kernel, checked by
hand on the committed target: which loops run scalar (gathers of single elements) or vector
(concatenates, gathers of whole rows), XLA:CPU's transposed reads and the L1 sets a stride maps
to, a GEMM's packing and its row-by-row form, and which convolutions XLA runs with its own kernel."""

from __future__ import annotations

import pytest

from hardware_models.families.cpu.cost import vector_rate
from hardware_models.families.cpu.runtime import FrameworkOp, eager_seconds
from hardware_models.target import get_target


@pytest.mark.jax
def test_a_concatenate_is_vector_work_a_gather_runs_one_element_op_per_cycle_by_hand():
    """rotate_half's concatenate of two slices is vector work (Inductor's ConcatKernel stores
    whole vectors into each slice; XLA:CPU's loop selects whole vectors), and so is a gather of
    whole rows (an embedding's: each index picks a row of 64, copied a vector at a time); a
    gather of single elements (columns) loads an index per element: its loop runs at cores * clock."""
    import jax
    import jax.numpy as jnp

    from hardware_models.families.cpu.cost import cpu_group_cost, fused_work, reduce_rate
    from hardware_models.pipelines import compile_plan
    from jax_side.lower import lower_function

    t = get_target("host-cpu")
    rows, width = 2048, 64  # 131072 elements: above the grain, every core busy
    cases = (
        (
            lambda x: jnp.concatenate([-x[:, width // 2 :], x[:, : width // 2]], axis=1) * 2.0,
            (jax.ShapeDtypeStruct((rows, width), jnp.float32),),
            rows * width // 2 + rows * width,
            vector_rate(t),
        ),
        (
            lambda x, i: jnp.take(x, i, axis=0) * 2.0,
            (jax.ShapeDtypeStruct((rows, width), jnp.float32), jax.ShapeDtypeStruct((rows,), jnp.int32)),
            None,
            vector_rate(t),
        ),
        (
            lambda x, i: jnp.take(x, i, axis=1) * 2.0,
            (jax.ShapeDtypeStruct((rows, width), jnp.float32), jax.ShapeDtypeStruct((width,), jnp.int32)),
            None,
            t["chip.cores"] * t["chip.clock_hz"],
        ),  # FLOPs as counted: jnp.take clamps its indices too
    )
    for fn, shapes, flops, rate in cases:  # the concatenate's: the negate's half and the multiply
        lowering = lower_function(fn, *shapes)
        module = getattr(lowering, "module", lowering)
        plan = compile_plan(lowering, t)
        group = max((g for g in plan.groups if g.kind == "fusion"), key=lambda g: fused_work(module, plan, g)[0])
        assert flops is None or fused_work(module, plan, group)[0] == flops
        flops, reads = fused_work(module, plan, group)
        assert set(reads) <= {"reduce"}  # jnp.take's bounds check reduces its indices' flags
        for runtime in ("inductor", "xla"):
            cost = cpu_group_cost(module, plan, group, t, runtime)
            compute_s = flops / rate + reads.get("reduce", 0) / reduce_rate(t, runtime)
            memory_s = max(s for _, s in cost.memory_s)
            assert cost.time_s == pytest.approx(max(compute_s, memory_s) + t[f"fitted.{runtime}_kernel_s"], rel=1e-6)


@pytest.mark.parametrize(
    "shape, perm, conflict",
    [
        (
            (1024, 1024),
            (1, 0),
            True,
        ),  # a 4 KiB stride: every read maps to one L1 set of 8 lines (16 lanes read at once)
        ((1024, 512), (1, 0), True),  # 2 KiB: two sets, 16 lines, no more than one vector's reads
        ((1024, 1040), (1, 0), False),  # 4,160 B: one line past the set span, the reads spread over every set
        ((1024, 1000), (1, 0), False),  # 4,000 B: not a whole number of lines
        ((1024, 256), (1, 0), False),  # 1 KiB: four sets, 32 lines
        (
            (8, 256, 256, 4),
            (0, 3, 2, 1),
            True,
        ),  # an attention's scores [b, keys, queries, heads] -> [b, heads, queries, keys]: 4 KiB
    ],
)
def test_a_transpose_read_a_line_or_more_apart_is_strided_and_conflicts_by_the_l1s_sets(shape, perm, conflict):
    """XLA's transposed reads by hand on the committed target (L1: 32 KiB, 8 ways, so a set span
    of 4 KiB; 16 f32 lanes): sets touched = min(64, 4096 / gcd(stride, 4096)); conflicting
    when 8 * sets <= 16. The elements are the transpose's."""
    import math

    from hardware_models.families.cpu.cost import strided_read
    from reference.ir.graph import Op, TensorType

    t = get_target("host-cpu")
    assert t["chip.l1_ways"] == 8 and t.level_value(t.levels[-1], "bytes") == 32 * 1024 and t["chip.f32_lanes"] == 16
    out = tuple(shape[p] for p in perm)
    op = Op(
        "stablehlo.transpose",
        ("%1",),
        (TensorType(out, "f32"),),
        ("%0",),
        (TensorType(shape, "f32"),),
        (("permutation", perm),),
    )
    assert strided_read(op, t) == (math.prod(shape), conflict)


@pytest.mark.parametrize(
    "shape, perm",
    [
        ((256, 4, 1024), (1, 0, 2)),  # the innermost dimension kept: whole lines
        ((4, 256, 64, 4), (0, 3, 1, 2)),  # the result's innermost read 16 B apart: four to a line
        ((32, 32), (1, 0)),  # 4 KiB: inside one core's L1
        ((1024, 1), (1, 0)),  # a reshape in all but name
    ],
)
def test_a_transpose_that_reads_whole_lines_or_stays_in_l1_costs_no_strided_reads(shape, perm):
    from hardware_models.families.cpu.cost import strided_read
    from reference.ir.graph import Op, TensorType

    out = tuple(shape[p] for p in perm)
    op = Op(
        "stablehlo.transpose",
        ("%1",),
        (TensorType(out, "f32"),),
        ("%0",),
        (TensorType(shape, "f32"),),
        (("permutation", perm),),
    )
    assert strided_read(op, get_target("host-cpu")) == (0, False)


@pytest.mark.jax
def test_xlas_loop_pays_its_transposed_reads_inductors_streams_by_hand():
    """x.T * 2 of [1024, 1024] and of [1024, 1040]: XLA's loop costs its elements at the
    conflicting or the plain strided rate on top of its FLOPs; Inductor's is the same loop at
    vector speed (its tiles transpose in registers)."""
    import jax
    import jax.numpy as jnp

    from hardware_models.families.cpu.cost import cpu_group_cost, fused_work
    from hardware_models.pipelines import compile_plan
    from jax_side.lower import lower_function

    t = get_target("host-cpu")
    for columns, key in ((1024, "fitted.xla_conflict_per_s"), (1040, "fitted.xla_strided_per_s")):
        lowering = lower_function(lambda x: x.T * 2.0, jax.ShapeDtypeStruct((1024, columns), jnp.float32))
        module = getattr(lowering, "module", lowering)
        for runtime in ("xla", "inductor"):
            plan = compile_plan(lowering, t, compiler=runtime)
            (group,) = [g for g in plan.groups if g.kind == "fusion"]
            cost = cpu_group_cost(module, plan, group, t, runtime)
            flops, reads = fused_work(module, plan, group, runtime)
            assert flops == 1024 * columns and not reads
            strided = 1024 * columns / t[key] if runtime == "xla" else 0.0
            memory_s = max(s for _, s in cost.memory_s)
            assert cost.time_s == pytest.approx(
                max(flops / vector_rate(t) + strided, memory_s) + t[f"fitted.{runtime}_kernel_s"], rel=1e-6
            )


def test_a_skinny_gemm_pays_its_packing_a_one_row_gemm_reads_its_weight_per_row_by_hand():
    """gemm_seconds on the committed target: a square GEMM is the curve's; 32 x 256 x 512 adds
    (256 * 512 - (32 * 256 * 512)^(2/3)) * 4 bytes at the packing rate; one row of a 1024 x 1024
    weight is the weight at the one-row rate, which is less than the square term there."""
    from hardware_models.families.cpu.cost import gemm_rate, gemm_seconds

    t = get_target("host-cpu")
    n = 256
    assert gemm_seconds(t, "f32", "eager", n, n, n) == pytest.approx(
        2 * n**3 / gemm_rate(t, "f32", "eager", 2 * n**3), rel=1e-9
    )
    m, k, n = 32, 256, 512
    flops = 2 * m * k * n
    square = (
        flops / gemm_rate(t, "f32", "eager", flops)
        + (k * n - (m * k * n) ** (2 / 3)) * 4 / t["fitted.gemm_pack_bytes_per_s"]
    )
    assert gemm_seconds(t, "f32", "eager", m, n, k) == pytest.approx(square, rel=1e-9)
    assert gemm_seconds(t, "f32", "eager", m, n, k, batch=3) == pytest.approx(3 * square, rel=1e-9)
    one_row = 1024 * 1024 * 4 / t["fitted.gemv_bytes_per_s"]
    assert gemm_seconds(t, "f32", "eager", 1, 1024, 1024) == pytest.approx(one_row, rel=1e-9)
    assert (
        one_row
        < 2 * 1024**2 / gemm_rate(t, "f32", "eager", 2 * 1024**2)
        + (1024**2 - 1024 ** (4 / 3)) * 4 / t["fitted.gemm_pack_bytes_per_s"]
    )
    # an eager op with its shape is costed so; one without (a hand-made op) by its FLOPs alone
    op = FrameworkOp("mm", 0, flops, contraction=True, mnk=(m, n, k))
    assert eager_seconds([op], t).work_s == pytest.approx(square + t["fitted.eager_dispatch_s"], rel=1e-9)


@pytest.mark.jax
@pytest.mark.parametrize(
    "c_in, c_out, eigen",
    [(8, 16, True), (16, 16, True), (4, 4, True), (4, 64, False), (32, 16, False), (32, 32, False)],
)
def test_xla_runs_a_convolution_of_at_most_16_channels_with_its_own_kernel_at_a_cost_per_pixel(c_in, c_out, eigen):
    """XLA:CPU's rule (xla/backends/cpu/ynn_support.cc): YNNPACK takes a 2-D convolution with more
    than 16 input or output channels; below, XLA's own runs, costed per output pixel."""
    import jax
    import jax.numpy as jnp

    from hardware_models.families.cpu.cost import cpu_group_cost, xla_eigen_conv
    from hardware_models.pipelines import compile_plan
    from jax_side.lower import lower_function

    conv = lambda a, b: jax.lax.conv_general_dilated(
        a, b, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC")
    )  # noqa: E731
    lowering = lower_function(
        conv,
        jax.ShapeDtypeStruct((2, 16, 16, c_in), jnp.float32),
        jax.ShapeDtypeStruct((3, 3, c_in, c_out), jnp.float32),
    )
    module = getattr(lowering, "module", lowering)
    t = get_target("host-cpu")
    plan = compile_plan(lowering, t, compiler="xla")
    (group,) = [g for g in plan.groups if g.kind == "contraction"]
    (op,) = [plan.ops[i].op for i in group.members if plan.ops[i].op.short_name == "convolution"]
    assert xla_eigen_conv(op) == (2 * 16 * 16 if eigen else 0)
    if eigen:
        cost = cpu_group_cost(module, plan, group, t, "xla")
        busy = (
            2 * 16 * 16 * t["fitted.xla_conv_pixel_s"]
        )  # padding c_out to whole vectors is in the pixel's measured cost
        fixed = t["fitted.xla_kernel_s"] + t["fitted.xla_conv_batched_s"]
        assert cost.time_s == pytest.approx(max(busy, max(s for _, s in cost.memory_s)) + fixed, rel=1e-6)
