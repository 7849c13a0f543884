"""Each family's cost formulas worked by hand for small kernels, from the target file's numbers
and the plan's own tiles and divisions (the module docstrings of families/tpu/cost.py, families/spyre/cost.py and
families/wafer/cost.py): the exact compute, memory and total time, not only their order."""

from __future__ import annotations

import pytest

from hardware_models.estimate import estimate
from hardware_models.families.spyre.plan import SpyreState
from hardware_models.families.wafer.plan import WaferState
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from tests.hardware_models.passes.test_spyre_passes import _diamond
from tests.hardware_models.programs import linear_gelu, program, t


def _exp_mul(n=1024, dtype="f32"):
    v = t((n,), dtype)
    return program(
        {"a": v, "b": v}, [f"%0 = stablehlo.exponential %a : {v}", f"%1 = stablehlo.multiply %0, %b : {v}"], "%1", v
    )


@pytest.mark.parametrize("tensorcores", [1, 2])
def test_tpu_fusion_by_hand(tensorcores):
    """exp(a) * b over 1024 f32 on a v5e: 1024 multiplies at tensorcores x 2048 ALUs x 1.5 GHz
    plus 1024 exps at tensorcores x 1024 a cycle; HBM 12,288 B at 819 GB/s (no fitted
    efficiency: 1), VMEM 20,480 B at its rate; time = the slowest + 0.5 us of launch."""
    tgt = get_target("tpu-v5e").with_overrides({"chip.tensorcores": tensorcores})
    (g,) = estimate(_exp_mul(), tgt).groups
    c = g.cost
    compute = 1024 / (tensorcores * 2048 * 1.5e9) + 1024 / (tensorcores * 1024 * 1.5e9)
    assert c.compute_s == pytest.approx(compute, rel=1e-12)
    memory = dict(c.memory_s)
    assert memory["hbm"] == pytest.approx(12_288 / 8.19e11, rel=1e-12)
    assert memory["vmem"] == pytest.approx(20_480 / tgt.level_value("vmem", "bytes_per_s"), rel=1e-12)
    assert c.time_s == pytest.approx(max(compute, 12_288 / 8.19e11) + 5e-7, rel=1e-12)


def test_tpu_gemm_with_an_epilogue_by_hand():
    """compute = FLOPs / MXU peak (int8's for i8); busy = (steps x cycles + fill) / clock from the
    plan's tiling; the epilogue's adds, multiplies and logistics on the VPU; time = the slowest
    of busy, VPU and memory + launch."""
    tgt = get_target("tpu-v5e")
    module = linear_gelu(65, 129, 63, "bf16")
    plan = compile_plan(module, tgt)
    (g,) = estimate(module, tgt, plan=plan).groups
    tiling = plan.tilings[g.group]
    compute = 2 * 65 * 129 * 63 / tgt["peak.bf16_flop_per_s"]
    busy = (tiling.steps * tiling.cycles_per_step + tiling.fill_cycles) / 1.5e9
    vpu = (65 * 129 * 2) / (2048 * 1.5e9) + 65 * 129 / (1024 * 1.5e9)  # bias add + multiply; logistic
    c = g.cost
    assert c.compute_s == pytest.approx(max(compute, vpu), rel=1e-12)
    hbm = dict(c.memory_s)["hbm"]
    assert c.time_s == pytest.approx(max(busy, vpu, hbm, dict(c.memory_s)["vmem"]) + 5e-7, rel=1e-12)


def test_a_tpu_int8_gemm_runs_at_the_int8_peak():
    from hardware_models.calibration import gemm_module

    tgt = get_target("tpu-v5e")
    (g,) = estimate(gemm_module(65, 129, 63, "i8"), tgt).groups
    assert g.cost.compute_s == pytest.approx(2 * 65 * 129 * 63 / tgt["peak.int8_op_per_s"], rel=1e-12)


def test_spyre_kernels_by_hand():
    """_diamond(256) on Spyre: two matmuls and an add. matmul compute = MACs / (32 x rate), busy =
    padded MACs / units x per-core units / rate (the plan's tiling and division); LPDDR5 =
    (R + W) / one-way + min(R, W) x (2 / balanced - 2 / one-way); the second matmul's weight
    load hides behind the first's compute that its traffic leaves idle; the add runs at the
    vector rate. time = max(busy, memory - hidden) + launch."""
    tgt = get_target("spyre")
    module = _diamond(256)
    plan = compile_plan(module, tgt)
    costs = [g.cost for g in estimate(module, tgt, plan=plan).groups]
    one_way, balanced = tgt["fitted.lpddr5_one_way_bytes_per_s"], tgt["fitted.lpddr5_read_write_bytes_per_s"]
    rate, vector = tgt["fitted.matmul_mac_per_s_per_core"], tgt["chip.vector_ops_per_s_per_core"]
    launch = tgt["schedule.launch_overhead_s"]
    V = 256 * 256 * 2

    def lpddr5(r, w):
        return (r + w) / one_way + min(r, w) * (2 / balanced - 2 / one_way)

    def busy(g):
        d, tl = SpyreState.of(plan).divisions[g.id], plan.tilings[g.id]
        return tl.padded_flops / 2 / d.units * d.per_core / rate

    g0, g1, g2 = plan.groups
    assert costs[0].compute_s == pytest.approx(256**3 / (32 * rate), rel=1e-12)
    assert costs[0].time_s == pytest.approx(max(busy(g0), lpddr5(2 * V, 0)) + launch, rel=1e-12)
    hidden = min(V / one_way, max(0.0, busy(g0) - lpddr5(2 * V, 0)), lpddr5(V, 0))
    assert dict(costs[1].memory_s)["lpddr5"] == pytest.approx(lpddr5(V, 0) - hidden, rel=1e-12, abs=1e-18)
    assert costs[1].time_s == pytest.approx(max(busy(g1), lpddr5(V, 0) - hidden) + launch, rel=1e-12)
    d2 = SpyreState.of(plan).divisions[g2.id]
    assert costs[2].compute_s == pytest.approx(256 * 256 / (32 * vector), rel=1e-12)
    assert costs[2].time_s == pytest.approx(
        max(256 * 256 / d2.units * d2.per_core / vector, lpddr5(0, V)) + launch, rel=1e-12
    )


@pytest.mark.parametrize(
    "batch,key", [(2, "fitted.bmm_small_batch_mac_per_s_per_core"), (4, "fitted.bmm_mac_per_s_per_core")]
)
def test_spyre_batched_matmul_rates_by_batch(batch, key):
    """b < 4 runs at S05's rate, b >= 4 at S04's (kernels.csv): compute = MACs / (32 x rate)."""
    a, bt, y = t((batch, 64, 64), "f16"), t((batch, 64, 64), "f16"), t((batch, 64, 64), "f16")
    module = program(
        {"a": a, "b": bt},
        [
            f"%0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : ({a}, {bt}) -> {y}"
        ],
        "%0",
        y,
    )
    tgt = get_target("spyre")
    (g,) = estimate(module, tgt).groups
    assert g.cost.compute_s == pytest.approx(batch * 64**3 / (32 * tgt[key]), rel=1e-12)


def test_wafer_kernel_by_hand():
    """exp(a) * b over 1024 f32, one region of all 900,000 PEs: compute = FLOPs / (e x peak);
    SRAM bytes / (SRAM bandwidth x share), fabric bytes / (fabric bandwidth x share); time = the
    slowest + the region latency."""
    tgt = get_target("wse-3")
    module = _exp_mul()
    plan = compile_plan(module, tgt)
    (g,) = estimate(module, tgt, plan=plan).groups
    share = WaferState.of(plan).regions[g.group].pes / 900_000
    p = plan.placements[g.group]
    c = g.cost
    assert c.compute_s == pytest.approx(1024 / (share * 0.5 * 125e15), rel=1e-12)
    assert dict(c.memory_s)["sram"] == pytest.approx(p.at("sram") / (21e15 * share), rel=1e-12)
    assert dict(c.memory_s)["fabric"] == pytest.approx(p.at("fabric") / (26.75e15 * share), rel=1e-12)
    bound = max(c.compute_s, *dict(c.memory_s).values())
    assert c.time_s == pytest.approx(bound + tgt["schedule.region_latency_s"], rel=1e-12)


@pytest.mark.parametrize("chips", [1, 2])
def test_tpu_fused_attention_by_hand(chips):
    """One fused kernel (fuse_attention) of 4 heads x 65 tokens x 512: its two dots,
    2 x 2 x 4 x 65 x 65 x 512 FLOPs, at the MXU peak (longer than the VPU's part here); the softmax's other FLOPs on the VPU and its
    exps at the transcendental rate; over tensor-parallel chips both divide by the chips (the
    heads split), the bytes do not here (the plan's placement); time = max + launch."""
    from dataclasses import replace

    from hardware_models.calibration import attention_module
    from hardware_models.families.tpu.cost import tpu_attention_cost
    from hardware_models.plan import Partition, group_work

    tgt = get_target("tpu-v5e")
    module = attention_module(1, 4, 65, 512, "bf16")
    plan = compile_plan(module, tgt)
    if chips > 1:
        plan = plan.with_(
            partition=replace(
                plan.partition or Partition(1, 1, 0, 0), chips=chips, tensor_parallel=chips, mode="tensor parallel"
            )
        )
    (g,) = [g for g in plan.groups if g.kind == "attention"]
    c = tpu_attention_cost(module, plan, g, tgt)
    dots = 2 * 2 * 4 * 65 * 65 * 512
    work = group_work(plan, module, g)
    mxu = dots / chips / tgt["peak.bf16_flop_per_s"]
    vpu = ((work.flops - dots) / (2048 * 1.5e9) + work.transcendentals / (1024 * 1.5e9)) / chips
    assert work.transcendentals >= 4 * 65 * 65 and mxu > vpu
    assert c.compute_s == pytest.approx(max(mxu, vpu), rel=1e-12)
    p = plan.placements[g.id]
    memory = {"hbm": p.at("hbm") / 8.19e11, "vmem": p.at("vmem") / tgt.level_value("vmem", "bytes_per_s")}
    assert dict(c.memory_s) == pytest.approx(memory, rel=1e-12)
    assert c.time_s == pytest.approx(max(mxu, vpu, *memory.values()) + 5e-7, rel=1e-12)
    assert (c.flops, c.padded_flops) == (work.flops, work.flops)


@pytest.mark.parametrize(
    "chips,shards,note",
    [
        (1, 1, "KV cache sharded by KV heads: 4 KV heads over 1 chips, 4 per chip"),
        (2, 2, "KV cache sharded by KV heads: 4 KV heads over 2 chips, 2 per chip"),
        (4, 4, "KV cache sharded by KV heads: 4 KV heads over 4 chips, 1 per chip"),
        (
            8,
            4,
            "KV cache replicated: 4 KV heads over 8 chips, each chip holds one KV head's keys and values "
            "(each KV head on 2 chips), 1/4 of the cache",
        ),
    ],
)
def test_kv_heads_split_over_chips_then_replicate(chips, shards, note):
    """shards = min(chips, KV heads), as Megatron and vLLM split them (shard_kv_heads). The
    kernel's shape is given 4 KV heads a sequence (attention_module folds heads into its batch)."""
    from dataclasses import replace

    from hardware_models.calibration import attention_module
    from hardware_models.passes.shard_tensor_parallel import shard_kv_heads

    plan = compile_plan(attention_module(1, 4, 65, 16, "bf16"), get_target("tpu-v5e"))
    ((gid, before),) = plan.attention.items()
    before = replace(before, kv_heads_per_sequence=4)
    attention, notes = shard_kv_heads(plan.with_(attention={gid: before}), chips)
    assert attention == {gid: replace(before, shards=shards)}
    assert notes == (note,)


def test_spyre_compute_bound_kernels_take_their_busy_time():
    """A 2048^3 f16 matmul and an exp + multiply over 2048 x 2048 on cores whose vector rate is set
    1000x below the target file's: busy = (padded) work / units x per-core units / rate exceeds
    their LPDDR5 time, so time = busy + launch."""
    from hardware_models.calibration import gemm_module

    tgt = get_target("spyre")
    tgt = tgt.with_overrides({"chip.vector_ops_per_s_per_core": tgt["chip.vector_ops_per_s_per_core"] / 1000})
    rate, vector = tgt["fitted.matmul_mac_per_s_per_core"], tgt["chip.vector_ops_per_s_per_core"]
    launch = tgt["schedule.launch_overhead_s"]
    for module, kind in (
        (gemm_module(2048, 2048, 2048, "f16"), "contraction"),
        (_exp_mul(2048 * 2048, "f16"), "fusion"),
    ):
        plan = compile_plan(module, tgt)
        (g,) = estimate(module, tgt, plan=plan).groups
        d = SpyreState.of(plan).divisions[g.group]
        if kind == "contraction":
            busy = plan.tilings[g.group].padded_flops / 2 / d.units * d.per_core / rate
        else:
            busy = 2 * 2048 * 2048 / d.units * d.per_core / vector  # a multiply and an exp per element
        assert busy > dict(g.cost.memory_s)["lpddr5"], kind
        assert g.cost.time_s == pytest.approx(busy + launch, rel=1e-12), kind


@pytest.fixture
def fitted_tpu(tmp_path):
    """tpu-v5e with a [fitted] table (gemm_efficiency 0.5, hbm_efficiency 0.8): no TPU row is in
    kernels.csv, so the shipped TPU files have none, and the model must still read one if given."""
    from hardware_models.target import TARGETS_DIR, load_target_file

    text = (TARGETS_DIR / "tpu-v5e.toml").read_text().replace('name = "tpu-v5e"', 'name = "tpu-fitted"')
    text += (
        '\n[fitted]\ngemm_efficiency = { value = 0.5, source = "U", note = "a test\'s" }\n'
        'hbm_efficiency = { value = 0.8, source = "U", note = "a test\'s" }\n'
    )
    path = tmp_path / "tpu-fitted.toml"
    path.write_text(text)
    return load_target_file(path)


def test_a_fitted_tpu_divides_its_peaks_by_the_fitted_efficiencies(fitted_tpu):
    """HBM time = bytes / (819 GB/s x 0.8), VMEM's unchanged; a GEMM's compute and busy time / 0.5;
    fused attention's MXU time / 0.5 and its HBM time / 0.8."""
    from hardware_models.calibration import attention_module

    tgt, base = fitted_tpu, get_target("tpu-v5e")
    (g,) = estimate(_exp_mul(), tgt).groups
    (b,) = estimate(_exp_mul(), base).groups
    assert dict(g.cost.memory_s)["hbm"] == pytest.approx(dict(b.cost.memory_s)["hbm"] / 0.8, rel=1e-12)
    assert dict(g.cost.memory_s)["vmem"] == pytest.approx(dict(b.cost.memory_s)["vmem"], rel=1e-12)
    from hardware_models.calibration import gemm_module

    gemm = gemm_module(2048, 2048, 2048, "bf16")
    plan = compile_plan(gemm, tgt)
    (c,) = estimate(gemm, tgt, plan=plan).groups
    tiling = plan.tilings[c.group]
    assert c.cost.compute_s == pytest.approx(2 * 2048**3 / (tgt["peak.bf16_flop_per_s"] * 0.5), rel=1e-12)
    busy = (tiling.steps * tiling.cycles_per_step + tiling.fill_cycles) / 1.5e9 / 0.5
    assert c.cost.time_s == pytest.approx(max(busy, *dict(c.cost.memory_s).values()) + 5e-7, rel=1e-12)
    module = attention_module(1, 4, 65, 512, "bf16")  # head_dim 512: the MXU's time exceeds the VPU's
    (fa,) = [g for g in estimate(module, tgt).groups if g.kind == "attention"]
    (fb,) = [g for g in estimate(module, base).groups if g.kind == "attention"]
    assert dict(fa.cost.memory_s)["hbm"] == pytest.approx(dict(fb.cost.memory_s)["hbm"] / 0.8, rel=1e-12)
    from hardware_models.plan import group_work

    aplan = compile_plan(module, tgt)
    work = group_work(aplan, module, aplan.groups[fa.group])
    dots = 2 * 2 * 4 * 65 * 65 * 512
    vpu = (work.flops - dots) / (2048 * 1.5e9) + work.transcendentals / (1024 * 1.5e9)
    mxu = dots / (tgt["peak.bf16_flop_per_s"] * 0.5)
    assert mxu > vpu and fa.cost.compute_s == pytest.approx(mxu, rel=1e-12)


@pytest.mark.parametrize("chips", [1, 2])
def test_gpu_fused_attention_by_hand(chips):
    """FlashAttention-2 on an H100: the two dots at the tensor-core peak x the fitted fraction
    (G36), split over tensor-parallel chips; HBM bytes at the sustained HBM rate; time = the
    slower + one launch."""
    from dataclasses import replace

    from hardware_models.calibration import attention_module
    from hardware_models.families.gpu.cost import gpu_attention_cost, hbm_rate
    from hardware_models.plan import Partition

    tgt = get_target("h100")
    module = attention_module(1, 4, 65, 512, "bf16")
    plan = compile_plan(module, tgt)
    if chips > 1:
        plan = plan.with_(
            partition=replace(
                plan.partition or Partition(1, 1, 0, 0, 0, 1),
                chips=chips,
                tensor_parallel=chips,
                mode="tensor parallel",
            )
        )
    (g,) = [g for g in plan.groups if g.kind == "attention"]
    c = gpu_attention_cost(module, plan, g, tgt)
    compute = 2 * 2 * 4 * 65 * 65 * 512 / chips / (tgt["peak.bf16_flop_per_s"] * tgt["fitted.flash_attention_fraction"])
    hbm = plan.placements[g.id].at("hbm") / hbm_rate(tgt)
    assert c.compute_s == pytest.approx(compute, rel=1e-12)
    assert dict(c.memory_s) == {"hbm": pytest.approx(hbm, rel=1e-12)}
    assert c.time_s == pytest.approx(max(compute, hbm) + tgt["schedule.launch_overhead_s"], rel=1e-12)
