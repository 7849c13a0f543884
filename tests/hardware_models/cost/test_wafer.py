"""The Cerebras model: a region's compute at its share of the wafer, plus the region latency."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.estimate import estimate
from hardware_models.families.wafer.plan import Region, WaferState
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target

WSE3 = get_target("wse-3")


def test_worked_number_one_gflop_on_one_percent_of_a_wse3():
    """families/wafer/cost.py: 1e9 / (9000 * 0.5 * 125e15 / 900000) = 1.6 us, plus 0.5 us of latency."""
    module = gemm_module(500, 1000, 1000, "bf16")  # 2 * 500 * 1000 * 1000 = 1 GFLOP
    plan = compile_plan(module, WSE3)
    (group,) = plan.groups
    plan = plan.with_state(WaferState, regions={group.id: Region(9000)})
    cost = estimate(module, WSE3, plan=plan).groups[0].cost
    assert cost.compute_s == pytest.approx(1e9 / (9000 * 0.5 * 125e15 / 900_000)) == pytest.approx(1.6e-6)
    assert cost.time_s == pytest.approx(max(cost.compute_s, cost.memory_bound_s) + 0.5e-6)


def test_every_kernel_pays_the_region_latency_so_depth_bounds_batch_one():
    module = gemm_module(1, 4096, 4096, "bf16")
    cost = estimate(module, WSE3).groups[0].cost
    assert cost.schedule_s == pytest.approx(WSE3["schedule.region_latency_s"])


def _stack(layers: int, rows: int, width: int = 512):
    """`layers` calls of a block (a bf16 GEMM and an exp) over a hidden state of `rows` x width."""
    from reference.ir.graph import DotDims, Function, Module, Op, TensorType

    x, w = TensorType((1, rows, width), "bf16"), TensorType((width, width), "bf16")
    dims = DotDims((), (), (2,), (0,))
    body = Function(
        "block",
        (("%x", x), ("%w", w)),
        (x,),
        (
            Op("stablehlo.dot_general", ("%0",), (x,), ("%x", "%w"), (x, w), attrs=(("dot_dimension_numbers", dims),)),
            Op("stablehlo.exponential", ("%1",), (x,), ("%0",), (x,)),
            Op("func.return", (), (), ("%1",), (x,)),
        ),
    )
    call = Op("func.call", ("%1",), (x,), ("%a", "%w"), (x, w), callee="block", trip_count=layers)
    main = Function("main", (("%a", x), ("%w", w)), (x,), (call, Op("func.return", (), (), ("%1",), (x,))))
    return Module((main, body))


def test_rows_stream_through_the_regions_as_a_pipeline_in_chunks_chosen_by_cost():
    """pass = sum over stages of (busy + latency) + (C - 1) x the slowest stage's busy, where a
    chunk of the rows keeps a stage busy for its share of the pass's compute and traffic, its
    region's weights read again for every chunk (families/wafer/cost.py); place_layers keeps the fastest C
    of the powers of two up to the rows; each kernel keeps its whole-pass time as its span, which
    the roofline draws."""
    from hardware_models.families.wafer.cost import pipeline_seconds

    wse = get_target("wse-3")
    lat = wse["schedule.region_latency_s"]
    module = _stack(4, 2048, width=4096)  # compute-heavy: each stage is busy well past its latency
    plan = compile_plan(module, wse)
    chunks = plan.partition.chunks
    assert 1 < chunks <= 2048 and any(g.label == "row pipeline" for g in plan.groups)
    assert all(
        pipeline_seconds(module, plan, wse, chunks) <= pipeline_seconds(module, plan, wse, c) for c in (1, 2, 64, 2048)
    )
    est = estimate(module, wse, "", plan)
    kernels = [g for g in est.groups if g.kind != "transfer"]
    (pipeline,) = [g for g in est.groups if g.kind == "transfer"]
    for g in kernels:  # a chunk's busy time: the pass's compute over the chunks, or its weights read once a chunk
        weights = WaferState.of(plan).regions[g.group].weight_bytes
        share = WaferState.of(plan).regions[g.group].pes / wse["chip.pes"]
        sram_s = (weights + (g.cost.bytes_at("sram") - weights) / chunks) / (wse.main_memory_bytes_per_s * share)
        assert g.cost.time_s - lat == pytest.approx(max(dict(g.cost.memory_s)["sram"], g.cost.compute_s), rel=1e-9)
        assert dict(g.cost.memory_s)["sram"] == pytest.approx(sram_s, rel=1e-9)
    assert pipeline.cost.time_s == pytest.approx((chunks - 1) * max(g.cost.time_s - lat for g in kernels), rel=1e-9)
    assert est.total.time_s == pytest.approx(pipeline_seconds(module, plan, wse, chunks), rel=1e-9)
    sequential = sum(g.cost.span_s * g.repeats for g in kernels)
    assert est.total.time_s < sequential  # the pipeline's point: less than one region after another
    assert all(g.cost.time_s < g.cost.span_s for g in kernels)


def test_one_row_is_not_pipelined():
    """A decode step at batch 1 streams one row: each kernel costs its whole pass, as before."""
    wse = get_target("wse-3")
    plan = compile_plan(_stack(4, 1), wse)
    assert plan.partition.chunks == 1 and not any(g.label == "row pipeline" for g in plan.groups)
    assert all(g.cost.span_s == 0 for g in estimate(_stack(4, 1), wse, "", plan).groups)


@pytest.mark.parametrize("wafers", [2, 3])
def test_a_layer_exchange_between_wafers_by_hand(wafers):
    """A GEMM too big for one (shrunk) wafer, forced over W wafers: one kernel, so no pipeline,
    and one exchange, a ring all-reduce of the hidden state H: 2 (W - 1) hops of latency h and
    2 (W - 1) ceil(H / W) bytes over the system I/O (cost/wafer._transfer)."""
    from hardware_models.estimate import estimate
    from hardware_models.pipelines import compile_plan
    from tests.hardware_models.programs import linear_gelu

    tgt = get_target("wse-3").with_overrides({"levels.sram.bytes": 1_000_000})
    module = linear_gelu(64, 1024, 512, "bf16")
    plan = compile_plan(module, tgt, chips=wafers)
    assert plan.partition.mode == f"split over {wafers} wafers, each kernel across all of them"
    (g,) = [g for g in estimate(module, tgt, plan=plan).groups if g.kind == "transfer"]
    H, h, io = (
        plan.partition.hidden_bytes,
        tgt["schedule.wafer_hop_latency_s"],
        tgt["interconnect.system_io_bytes_per_s"],
    )
    sent = 2 * (wafers - 1) * -(-H // wafers)
    assert g.repeats == 1 and H > 0
    assert g.cost.bytes == (("system_io", sent),)
    assert g.cost.schedule_s == pytest.approx(2 * (wafers - 1) * h, rel=1e-12)
    assert g.cost.time_s == pytest.approx(2 * (wafers - 1) * h + sent / io, rel=1e-12)
    assert (g.cost.flops, g.cost.padded_flops, g.cost.compute_s) == (0, 0, 0.0)


def test_one_chunks_share_of_a_kernels_pass_by_hand():
    """A kernel whose pass moves 1,000 B of SRAM, 300 of them its region's weights, 200 B over the
    fabric and 50 B in from MemoryX, in 4 chunks: each chunk re-reads the weights, so its SRAM
    time is t x (700 / 4 + 300) / 1000; fabric and compute divide by 4; the MemoryX stream is
    once a pass (not divided) and does not count in the chunk's busy time; without a region
    nothing is held, so SRAM divides by 4 too."""
    from dataclasses import replace

    from hardware_models.cost.model import Cost
    from hardware_models.families.wafer.cost import _first_chunk_s, _one_row

    tgt = get_target("wse-3")
    plan = compile_plan(gemm_module(64, 64, 64, "f16"), tgt)
    (g,) = [g for g in plan.groups if g.kind != "transfer"]
    plan = plan.with_state(WaferState, regions={g.id: Region(1000, 300)})
    full = Cost(
        8,
        8,
        4.0,
        0.0,
        9.0,
        (("sram", 1000), ("fabric", 200), ("memoryx", 50)),
        (("sram", 2.0), ("fabric", 1.0), ("memoryx", 30.0)),
    )
    row = _one_row(plan, g, tgt, full, 4)
    assert dict(row.memory_s) == {"sram": pytest.approx(2.0 * (700 / 4 + 300) / 1000), "fabric": 0.25, "memoryx": 30.0}
    assert row.compute_s == 1.0 and row.time_s == pytest.approx(max(1.0, 2.0 * 475 / 1000, 0.25))
    assert (row.flops, row.padded_flops, row.schedule_s, row.bytes) == (0, 0, 0.0, ())
    assert _first_chunk_s(row) == 30.0  # the weights stream in before the first chunk can finish
    bare = _one_row(plan.with_state(WaferState, regions={}), g, tgt, full, 4)
    assert dict(bare.memory_s)["sram"] == pytest.approx(0.5)
    empty = _one_row(plan, g, tgt, replace(full, memory_s=(), bytes=()), 4)
    assert empty.time_s == 1.0
