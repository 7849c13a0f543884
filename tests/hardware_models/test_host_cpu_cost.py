"""The host-CPU cost model's rules checked by hand: cache level, threads, GEMM and function rates,
recomputation in fused loops, eager ops, what XLA:CPU and Inductor each fuse (the calibration
itself: tests/hardware_models/test_host_cpu.py)."""

from __future__ import annotations

import pytest

from hardware_models.families.cpu.cost import (
    GRAIN,
    evaluations,
    gemm_rate,
    level_for,
    threads,
    vector_rate,
)
from hardware_models.families.cpu.runtime import FrameworkOp, eager_seconds
from hardware_models.target import get_target
from reference.errors import UnknownName


def test_a_kernels_level_is_the_innermost_that_holds_it():
    t = get_target("host-cpu")
    l1 = t.level_capacity(next(lv for lv in t.levels if lv.name == "l1d"))
    assert level_for(t, l1).name == "l1d"
    assert level_for(t, l1 + 1).name == "l2"
    assert level_for(t, 10 * t.level_capacity(t.level("on-chip"))).name == "dram"


def test_an_op_below_the_grain_runs_on_one_core():
    t = get_target("host-cpu")
    assert threads(t, GRAIN) == 1.0 and threads(t, GRAIN - 1) == pytest.approx(1 / t["chip.cores"])


def test_an_eager_gemm_costs_its_flops_at_the_fitted_rate_plus_one_dispatch_by_hand():
    t = get_target("host-cpu")
    n = 1024
    op = FrameworkOp("mm", 3 * n * n * 4, 2 * n**3, contraction=True, elements=n * n)
    memory_s = (
        op.bytes / t["levels.l3.bytes_per_s"]
        if op.bytes <= t["levels.l3.bytes"]
        else op.bytes / t["levels.dram.bytes_per_s"]
    )
    expected = max(2 * n**3 / t["fitted.gemm_f32_flop_per_s"], memory_s) + t["fitted.eager_dispatch_s"]
    got = eager_seconds([op], t, module_calls=1)
    assert got.seconds == pytest.approx(expected + t["fitted.eager_module_call_s"])
    nested = FrameworkOp("view", 0, 0, nested=True)
    assert eager_seconds([op, nested], t, 0).seconds - eager_seconds([op], t, 0).seconds == pytest.approx(
        t["fitted.eager_nested_s"]
    )


def test_a_modules_parameters_and_an_index_add_cost_their_measured_fixed_costs_by_hand():
    """Each parameter a module reads costs fitted.eager_param_s on top of its module call; an
    index_add (ATen's sorted scatter over an expanded index) fitted.eager_index_add_s on top of
    its dispatch, at any size; a scatter that does not expand its index does not."""
    t = get_target("host-cpu")
    three = eager_seconds([], t, module_calls=2, parameters=3)
    assert three.overhead_s == pytest.approx(2 * t["fitted.eager_module_call_s"] + 3 * t["fitted.eager_param_s"])
    index_add, scatter = (FrameworkOp(name, 0, 0) for name in ("index_add", "scatter"))
    assert eager_seconds([index_add], t, 0).seconds == pytest.approx(
        t["fitted.eager_dispatch_s"] + t["fitted.eager_index_add_s"]
    )
    assert eager_seconds([scatter], t, 0).seconds == pytest.approx(t["fitted.eager_dispatch_s"])


def test_xla_kernels_stream_no_faster_than_xlas_own_stream_row():
    """stream_bandwidth: a level's bandwidth (ATen's stream rows), capped for XLA:CPU's kernels
    at fitted.xla_stream_bytes_per_s; Inductor's kernels take the level's."""
    from hardware_models.families.cpu.cost import stream_bandwidth

    t = get_target("host-cpu")
    for level in t.levels:
        assert stream_bandwidth(t, "inductor", level) == t.level_value(level, "bytes_per_s")
        assert stream_bandwidth(t, "xla", level) == min(
            t.level_value(level, "bytes_per_s"), t["fitted.xla_stream_bytes_per_s"]
        )


def test_xla_gemms_keep_pytorchs_ratio_between_types():
    t = get_target("host-cpu")
    ratio = gemm_rate(t, "bf16", "xla") / gemm_rate(t, "f32", "xla")
    assert ratio == pytest.approx(t["fitted.gemm_bf16_flop_per_s"] / t["fitted.gemm_f32_flop_per_s"])
    assert vector_rate(t) == t["chip.cores"] * t["chip.f32_lanes"] * t["chip.clock_hz"]


def test_another_family_or_runtime_is_refused():
    from hardware_models.families.cpu.runtime import compiled_seconds

    with pytest.raises(UnknownName):
        eager_seconds([], get_target("h100"))
    with pytest.raises(UnknownName):
        compiled_seconds(None, get_target("host-cpu"), "eager")


@pytest.mark.jax
def test_a_broadcast_producer_is_recomputed_per_outer_iteration_a_hoisted_one_is_not():
    """RoPE-like: cos of [t, d] inlined into [b, n, t, d] runs b * n times per element; a norm's
    rsqrt of [m, 1] inside the [m, d] loop is hoisted (once per row)."""
    import jax
    import jax.numpy as jnp

    from hardware_models.pipelines import compile_plan
    from jax_side.lower import lower_function

    t = get_target("host-cpu")
    rope = lower_function(
        lambda x, a: x * jnp.cos(a)[None, None],
        jax.ShapeDtypeStruct((2, 3, 16, 8), jnp.float32),
        jax.ShapeDtypeStruct((16, 8), jnp.float32),
    )
    norm = lower_function(
        lambda x, v: x * jax.lax.rsqrt(v),
        jax.ShapeDtypeStruct((16, 8), jnp.float32),
        jax.ShapeDtypeStruct((16, 1), jnp.float32),
    )
    for lowering, factor in ((rope, 2 * 3), (norm, 1)):
        plan = compile_plan(lowering, t)
        (group,) = [g for g in plan.groups if g.kind == "fusion"]
        times = evaluations(plan, group)
        heavy = [i for i in group.members if plan.ops[i].op.short_name in ("cosine", "rsqrt")]
        assert [times[i] for i in heavy] == [factor], [plan.ops[i].op.short_name for i in group.members]


def test_each_transcendental_costs_its_own_measured_rate_and_one_without_a_row_costs_exps():
    from hardware_models.families.cpu.cost import transcendental_rate

    t = get_target("host-cpu")
    for runtime in ("eager", "inductor", "xla"):
        assert transcendental_rate(t, runtime, "power") == t[f"fitted.{runtime}_exponential_per_s"]
        assert transcendental_rate(t, runtime, "sine") == t[f"fitted.{runtime}_sine_per_s"]
    n = 4 * GRAIN  # above the grain: every core, as the rows were measured
    for fn in ("exponential", "tanh", "gelu"):
        op = FrameworkOp(fn, 0, 0, transcendentals=n, elements=n, function=fn)
        # no bytes, so the time is the function's evaluations at its rate, plus one dispatch (and
        # ATen's own GELU kernel's fixed cost per call)
        fixed = t["fitted.eager_gelu_s"] if fn == "gelu" else 0.0
        assert eager_seconds([op], t, 0).seconds == pytest.approx(
            n / t[f"fitted.eager_{fn}_per_s"] + t["fitted.eager_dispatch_s"] + fixed
        )


@pytest.mark.jax
def test_a_fused_loops_transcendentals_are_priced_per_function_by_hand():
    import jax
    import jax.numpy as jnp

    from hardware_models.families.cpu.cost import cpu_group_cost
    from hardware_models.pipelines import compile_plan
    from jax_side.lower import lower_function

    t = get_target("host-cpu")
    shape = jax.ShapeDtypeStruct((64, 1024), jnp.float32)  # 65536 elements: above the grain
    for fn, name in ((jnp.sin, "sine"), (jnp.tanh, "tanh")):
        lowering = lower_function(lambda x, fn=fn: fn(x) * 2.0, shape)
        module = getattr(lowering, "module", lowering)
        plan = compile_plan(lowering, t)
        (group,) = [g for g in plan.groups if g.kind == "fusion"]
        cost = cpu_group_cost(module, plan, group, t, "xla")
        compute_s = 65536 / vector_rate(t) + 65536 / t[f"fitted.xla_{name}_per_s"]  # one multiply, one function
        memory_s = max(s for _, s in cost.memory_s)
        assert cost.time_s == pytest.approx(max(compute_s, memory_s) + t["fitted.xla_kernel_s"], rel=1e-6)


@pytest.mark.jax
def test_an_iota_and_what_follows_from_it_run_in_the_cpus_loops_and_xla_shares_sin_and_cos():
    """XLA:CPU's HLO for RoPE fuses cos and sin of the iota-derived angles into the [b, n, t, d]
    loop (not folded as constants, as the other families' compilers are modelled to); under XLA
    the cosine of the sine's operand adds nothing (shared range reduction), under Inductor it does."""
    import jax
    import jax.numpy as jnp

    from hardware_models.families.cpu.cost import fused_work
    from hardware_models.pipelines import compile_plan
    from jax_side.lower import lower_function

    def angles(x):
        a = jnp.arange(64.0)[None]  # one angle per column, from an iota
        return x * jnp.cos(a) + x * jnp.sin(a)

    lowering = lower_function(angles, jax.ShapeDtypeStruct((1024, 64), jnp.float32))
    module = getattr(lowering, "module", lowering)
    cpu = compile_plan(lowering, get_target("host-cpu"))
    members = {cpu.ops[i].op.short_name for g in cpu.groups for i in g.members}
    assert {"iota", "cosine", "sine"} <= members
    gpu = compile_plan(lowering, get_target("h100"))
    assert not {"cosine", "sine"} & {gpu.ops[i].op.short_name for g in gpu.groups for i in g.members}
    (group,) = [g for g in cpu.groups if g.kind == "fusion"]
    evaluations_of = {rt: fused_work(module, cpu, group, rt)[1] for rt in ("xla", "inductor")}
    n = 1024 * 64  # the broadcast angles are evaluated in every row of the loop
    assert evaluations_of["inductor"] == {"sine": n, "cosine": n}
    assert evaluations_of["xla"] == {"sine": n}


def test_a_target_file_that_lost_a_functions_rate_is_refused_not_priced_at_exps(tmp_path):
    """Only functions calibrate never times fall back to exp's rate; a file without one it times is damaged."""
    from hardware_models.target import load_target_file
    from reference.errors import BadTargetFile
    from tests.hardware_models.damaged import without_lines

    with pytest.raises(BadTargetFile, match="fitted.xla_sine_per_s': missing"):
        load_target_file(without_lines("host-cpu", tmp_path, "xla_sine_per_s"))


def test_a_gemms_rate_follows_the_measured_rows_by_hand():
    """size_factor: XLA's small row's rate at 2 * 128^3 FLOPs and below (MKL's tiny row's at
    2 * 32^3 and below), the middle row's at 2 * 256^3, the large row's at 2 * 1024^3 and
    above; straight in log FLOPs between neighbours (halfway in log between 256^3 and 1024^3:
    2 * 512^3; between 32^3 and 128^3: 2 * 64^3)."""
    from hardware_models.families.cpu.cost import (
        LARGE_GEMM_FLOPS,
        MID_GEMM_FLOPS,
        SMALL_GEMM_FLOPS,
        TINY_GEMM_FLOPS,
        size_factor,
    )

    t = get_target("host-cpu")
    tiny = t["fitted.gemm_f32_tiny_flop_per_s"]
    for runtime in ("eager", "inductor"):  # MKL's curve, under eager and Inductor alike
        small = t["fitted.gemm_f32_small_flop_per_s"]
        assert gemm_rate(t, "f32", runtime, TINY_GEMM_FLOPS) == pytest.approx(tiny)
        assert gemm_rate(t, "f32", runtime, 1) == pytest.approx(tiny)  # flat below the tiny row
        assert gemm_rate(t, "f32", runtime, 2 * 64**3) == pytest.approx((tiny + small) / 2)
    for runtime, prefix in (("eager", "fitted.gemm_f32"), ("xla", "fitted.xla_gemm_f32")):
        small, mid, large = (t[f"{prefix}{s}_flop_per_s"] for s in ("_small", "_mid", ""))
        assert gemm_rate(t, "f32", runtime, SMALL_GEMM_FLOPS) == pytest.approx(small)
        if runtime == "xla":
            assert gemm_rate(t, "f32", runtime, 1) == pytest.approx(small)  # flat below the small row
        assert gemm_rate(t, "f32", runtime, MID_GEMM_FLOPS) == pytest.approx(mid)
        assert gemm_rate(t, "f32", runtime, LARGE_GEMM_FLOPS * 8) == pytest.approx(large)
        assert gemm_rate(t, "f32", runtime, 2 * 512**3) == pytest.approx((mid + large) / 2)
        assert gemm_rate(t, "f32", runtime, (SMALL_GEMM_FLOPS * MID_GEMM_FLOPS) ** 0.5) == pytest.approx(
            (small + mid) / 2
        )
        assert size_factor(t, runtime, None) == 1.0
    # a batched GEMM's rate follows one member: 64 GEMMs of 128^3 run at the small rate
    op = FrameworkOp("bmm", 0, 64 * SMALL_GEMM_FLOPS, contraction=True, batch=64)
    one = FrameworkOp("bmm", 0, SMALL_GEMM_FLOPS, contraction=True)
    assert eager_seconds([op], t, 0).work_s - t["fitted.eager_dispatch_s"] == pytest.approx(
        64 * (eager_seconds([one], t, 0).work_s - t["fitted.eager_dispatch_s"]), rel=1e-9
    )


def test_a_reduction_costs_its_elements_at_the_runtimes_reduce_rate_by_hand():
    t = get_target("host-cpu")
    n = 4 * GRAIN  # above the grain: every core, as the row was measured
    op = FrameworkOp("sum", 0, 0, elements=n, reduced=n)
    assert eager_seconds([op], t, 0).work_s == pytest.approx(
        n / t["fitted.eager_reduce_per_s"] + t["fitted.eager_dispatch_s"]
    )


def test_the_fused_attention_pays_per_query_row_by_hand():
    t = get_target("host-cpu")
    flops, rows = 4 * 2 * 8 * 32 * 32 * 16, 2 * 8 * 32
    op = FrameworkOp("_scaled_dot_product_flash_attention_for_cpu", 0, flops, contraction=True, batch=16, rows=rows)
    expected = (
        flops / gemm_rate(t, "f32", "eager", flops / 16)
        + rows * t["fitted.eager_sdpa_row_s"]
        + t["fitted.eager_dispatch_s"]
    )
    assert eager_seconds([op], t, 0).work_s == pytest.approx(expected)


@pytest.mark.jax
def test_a_program_of_loops_alone_pays_the_loop_call_one_with_a_gemm_the_gemm_call():
    import jax
    import jax.numpy as jnp

    from hardware_models.families.cpu.runtime import compiled_seconds
    from jax_side.lower import lower_function

    t = get_target("host-cpu")
    x = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    loops = compiled_seconds(lower_function(lambda a, b: jnp.exp(a) + b, x, x), t, "xla")
    gemm = compiled_seconds(lower_function(lambda a, b: a @ b, x, x), t, "xla")
    assert loops.overhead_s == t["fitted.xla_loop_call_s"] and gemm.overhead_s == t["fitted.xla_call_s"]


def test_a_convolution_pays_its_batch_fixed_cost_and_runs_slower_the_shallower_it_is_by_hand():
    from hardware_models.families.cpu.cost import conv_rate

    t = get_target("host-cpu")
    k0, rate = t["fitted.eager_conv_depth"], t["fitted.eager_conv_flop_per_s"]
    flops = 2 * 2 * 16 * 16 * 16 * 8 * 9  # 2 images, 8 -> 16 channels, 16 x 16, 3 x 3: K = 72
    op = FrameworkOp("convolution", 0, flops, contraction=True, nested=True, batch=2, depth=72)
    expected = flops / (rate * 72 / (72 + k0)) + t["fitted.eager_conv_batched_s"] + t["fitted.eager_nested_s"]
    assert eager_seconds([op], t, 0).work_s == pytest.approx(expected)
    one = FrameworkOp("convolution", 0, flops // 2, contraction=True, nested=True, batch=1, depth=72)
    assert eager_seconds([one], t, 0).work_s == pytest.approx(
        expected / 1 - flops / 2 / (rate * 72 / (72 + k0)) - t["fitted.eager_conv_batched_s"] + t["fitted.eager_conv_s"]
    )
    assert conv_rate(t, "f32", "eager", 10**9) == pytest.approx(rate)  # deep: the full rate
    assert conv_rate(t, "f32", "eager", int(k0)) == pytest.approx(rate * int(k0) / (int(k0) + k0))  # about half at K0


@pytest.mark.jax
def test_xla_cpu_ends_a_kernel_at_each_reduction_inductor_keeps_a_norm_in_one():
    """A rule of the compilers: XLA:CPU's optimized HLO of a LayerNorm or softmax holds a kernel
    per reduction, its consumers in the next; Inductor fuses the row's reductions and scaling."""
    import jax
    import jax.numpy as jnp

    from hardware_models.pipelines import compile_plan
    from jax_side.lower import lower_function
    from reference.ir import category

    t = get_target("host-cpu")
    x = jax.ShapeDtypeStruct((63, 65), jnp.float32)

    def layernorm(a):
        d = a - a.mean(-1, keepdims=True)
        return d * jax.lax.rsqrt((d * d).mean(-1, keepdims=True) + 1e-5)

    for fn in (jax.nn.softmax, layernorm):
        lowering = lower_function(fn, x)
        inductor = [g for g in compile_plan(lowering, t).groups if g.kind == "fusion"]
        assert len(inductor) == 1
        plan = compile_plan(lowering, t, compiler="xla")
        graph, owner = plan.value_graph(), {i: g.id for g in plan.groups for i in g.members}
        reductions = [i for i, p in enumerate(plan.ops) if category(p.op) == "reduction"]
        assert len({owner[i] for i in reductions}) == len(reductions) == 2  # one kernel each
        for i in reductions:  # no consumer of a reduction in its kernel
            readers = [
                j for j, p in enumerate(plan.ops) if any(graph.producer.get(graph.root(v)) == i for v in p.operands)
            ]
            assert readers and all(owner.get(j) != owner[i] for j in readers)


@pytest.mark.torch
def test_inductor_runs_attention_as_atens_flash_kernel_xla_as_dots_and_loops():
    """Inductor's output code for SDPA calls aten._scaled_dot_product_flash_attention_for_cpu: the
    Inductor pipeline fuses the attention into one group, costed as the eager kernel is."""
    from hardware_models.cost.attention import dot_flops
    from hardware_models.families.cpu.cost import attention_seconds
    from hardware_models.pipelines import compile_plan
    from landscape.lowering import lower_named

    t = get_target("host-cpu")
    lowering = lower_named("attention", "torch", {"seq": 63, "head_dim": 16}, "float32")
    plan = compile_plan(lowering, t)
    (group,) = [g for g in plan.groups if g.kind == "attention"]
    shape = plan.attention[group.id]
    assert shape.query_rows == 2 * 8 * 63 and shape.kv_len == 63
    from hardware_models.families.cpu.cost import cpu_group_cost

    cost = cpu_group_cost(lowering.module, plan, group, t, "inductor")
    compute_s = attention_seconds(t, shape.dtype, dot_flops(plan, group), shape.kv_heads, shape.query_rows)
    assert cost.time_s >= compute_s + t["fitted.inductor_kernel_s"] - 1e-12
    assert not [g for g in compile_plan(lowering, t, compiler="xla").groups if g.kind == "attention"]


def test_weights_that_outgrow_the_private_caches_are_streamed_at_the_cold_rate_by_hand():
    from hardware_models.families.cpu.cost import private_bytes

    t = get_target("host-cpu")
    private = private_bytes(t)
    assert private == sum(t.level_capacity(lv) for lv in t.levels if lv.per == "chip.cores") > 0
    w = 512 * 1024
    op = FrameworkOp("mm", 0, 2 * 32 * 256 * 512, contraction=True, rhs_bytes=w)
    warm = eager_seconds([op], t, 0, weight_bytes=int(private)).work_s  # they fit: no streaming
    cold = eager_seconds([op], t, 0, weight_bytes=int(private) + 1).work_s
    assert warm == eager_seconds([op], t, 0).work_s
    assert cold - warm == pytest.approx(w / t["fitted.gemm_cold_bytes_per_s"])


@pytest.mark.jax
def test_a_compiled_programs_dots_stream_their_argument_weights_only_when_they_outgrow_the_private_caches():
    import jax
    import jax.numpy as jnp

    from hardware_models.families.cpu.cost import private_bytes
    from hardware_models.families.cpu.runtime import _argument_reads
    from hardware_models.pipelines import compile_plan
    from jax_side.lower import lower_function

    t = get_target("host-cpu")
    x = jax.ShapeDtypeStruct((4, 256), jnp.float32)
    n = int(private_bytes(t) // (256 * 4)) + 1  # one weight just past the private caches
    lowering = lower_function(lambda a, w: jnp.tanh(a @ w.T), x, jax.ShapeDtypeStruct((n, 256), jnp.float32))
    reads, distinct = _argument_reads(compile_plan(lowering, t), lowering.module)
    assert distinct == reads == (n * 256 + 4 * 256) * 4  # the weight (through its transpose) and the input


def test_sine_and_cosine_are_timed_on_ropes_angle_table_the_rest_on_their_domain():
    """The function rows' arguments: RoPE's angles for sine and cosine (XLA:CPU's sine branches on
    its argument's range), position p times a head's inverse frequencies row after row."""
    import numpy as np

    from hardware_models.families.cpu.calibration import ANGLE_HEAD_DIM, angle_table
    from landscape.host_measure import _domain

    n = 3 * ANGLE_HEAD_DIM + 5  # a partial last row
    table = angle_table(n)
    assert table.shape == (n,) and table.dtype == np.float32
    half = ANGLE_HEAD_DIM // 2
    assert not table[:ANGLE_HEAD_DIM].any()  # position 0
    assert table[ANGLE_HEAD_DIM + 1] == pytest.approx(10000.0 ** (-2 / ANGLE_HEAD_DIM))  # position 1, frequency 1
    assert table[2 * ANGLE_HEAD_DIM + half + 1] == pytest.approx(
        2 * 10000.0 ** (-2 / ANGLE_HEAD_DIM)
    )  # its second copy
    x = np.linspace(-2.0, 2.0, n, dtype=np.float32)
    for fn in ("sine", "cosine"):
        assert np.array_equal(_domain(fn, x, np.asarray), table)
    assert (_domain("log", x, np.asarray) > 0).all() and np.array_equal(_domain("tanh", x, np.asarray), x)
