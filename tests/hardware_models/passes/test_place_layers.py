"""place_layers: regions hold their weights and share the rest by FLOPs; too big for a wafer,
the compiler splits the model over wafers or streams its weights, and says which."""

from __future__ import annotations

import pytest

from hardware_models.calibration import gemm_module
from hardware_models.estimate import estimate
from hardware_models.families.wafer.plan import WaferState
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from reference.errors import InvalidShape
from tests.hardware_models.programs import linear_gelu

WSE3 = get_target("wse-3")


def test_a_small_program_is_resident_and_its_regions_fill_the_wafer():
    plan = compile_plan(linear_gelu(512, 1024, 2048, "bf16"), WSE3)
    assert plan.partition.mode == "resident on one wafer" and plan.partition.chips == 1
    used = sum(r.pes for r in WaferState.of(plan).regions.values())
    assert 0.99 * 900_000 <= used <= 900_000 + len(WaferState.of(plan).regions)


def test_regions_are_sized_by_flops_beyond_the_pes_that_hold_weights():
    plan = compile_plan(linear_gelu(512, 1024, 2048, "bf16"), WSE3)
    (group,) = plan.groups  # the matmul with its epilogue, one region
    sram_per_pe = 44e9 * 0.8 / 900_000
    assert WaferState.of(plan).regions[group.id].pes >= (2048 * 1024 * 2 + 1024 * 2) / sram_per_pe


def test_one_kernel_larger_than_a_wafer_is_split_across_wafers_with_one_exchange():
    """A pipeline puts whole kernels on a wafer; a GEMM of 38.7 GB (35.2 GB usable a wafer) cannot
    be one, so its weights are split over 2 wafers and its output all-reduced once, as a ring:
    2 (W - 1) x (hop latency + output / W / system I/O)."""
    module = gemm_module(16384, 131072, 131072, "f16")
    plan = compile_plan(module, WSE3)
    assert plan.partition.mode == "split over 2 wafers, each kernel across all of them" and plan.partition.chips == 2
    (exchange,) = [g for g in plan.groups if g.kind == "transfer" and g.label != "row pipeline"]
    assert (exchange.label, exchange.repeats) == ("layer exchange", 1)
    out = 16384 * 131072 * 2
    cost = estimate(module, WSE3, plan=plan).groups[exchange.id].cost
    assert cost.time_s == pytest.approx(2 * (5e-6 + out / 2 / 150e9))
    assert any(
        "(chosen: with each layer split)" in note
        and "streamed" in note
        and "no pipeline: one kernel's weights (38.7 GB) exceed a wafer" in note
        for note in plan.notes
    )


def _regional(layers: int, wafers_of_weights: float, rows: int = 1):
    """A regional program of `layers` blocks whose weights need about `wafers_of_weights` wafers,
    over a hidden state of `rows` token rows."""
    from reference.ir.graph import DotDims, Function, Module, Op, TensorType

    n = int((wafers_of_weights * 35.2e9 / layers / 2) ** 0.5) // 64 * 64
    x, w = TensorType((rows, n), "f16"), TensorType((n, n), "f16")
    dot = Op(
        "stablehlo.dot_general",
        ("%0",),
        (x,),
        ("%x", "%w"),
        (x, w),
        attrs=(("dot_dimension_numbers", DotDims((), (), (1,), (0,))),),
    )
    body = Function("block", (("%x", x), ("%w", w)), (x,), (dot, Op("func.return", (), (), ("%0",), (x,))))
    call = Op("func.call", ("%1",), (x,), ("%a", "%w"), (x, w), callee="block", trip_count=layers)
    main = Function("main", (("%a", x), ("%w", w)), (x,), (call, Op("func.return", (), (), ("%1",), (x,))))
    return Module((main, body))


def test_a_model_of_many_layers_on_several_wafers_runs_as_a_pipeline_and_reports_the_layer_split():
    """80 layers on 3 wafers: a pipeline pays 2 hops; each layer split would pay 160 exchanges of
    4 ring steps each, so the pipeline wins and the note shows both costs."""
    module = _regional(80, 2.5)
    plan = compile_plan(module, WSE3)
    assert plan.partition.mode == "split over 3 wafers, whole layers on each"
    assert [g.label for g in plan.groups if g.kind == "transfer"] == ["wafer hop"]
    (note,) = [n for n in plan.notes if n.startswith("weights split")]
    assert (
        "in a pipeline of wafers" in note
        and "with each layer split" in note
        and "(chosen: in a pipeline of wafers)" in note
    )


def test_more_wafers_than_layers_split_each_layer_and_the_narrowest_matrix_bounds_the_count():
    module = _regional(2, 0.5)
    plan = compile_plan(module, WSE3, chips=4)
    assert plan.partition.mode == "split over 4 wafers, each layer across all of them" and plan.partition.chips == 4
    (exchange,) = [g for g in plan.groups if g.label == "layer exchange"]
    assert exchange.repeats == 2 * 2
    assert any("no pipeline: more wafers than layers (2)" in note for note in plan.notes)
    width = module.functions[1].args[1][1].shape[1]
    with pytest.raises(InvalidShape, match=f"at most {width}"):
        compile_plan(module, WSE3, chips=width + 1)


def test_weights_are_streamed_when_hopping_between_wafers_would_cost_more():
    slow_hops = WSE3.with_overrides({"schedule.wafer_hop_latency_s": 10.0})
    module = gemm_module(16384, 131072, 131072, "f16")
    plan = compile_plan(module, slow_hops)
    assert plan.partition.mode == "streamed from MemoryX" and plan.partition.chips == 1
    est = estimate(module, slow_hops, plan=plan)
    assert est.total.bytes_at("memoryx") == 2 * (16384 * 131072 + 131072 * 131072)
    assert est.groups[0].cost.bottleneck == "memory"


def test_a_streamed_pass_of_many_rows_waits_for_every_weight_to_stream_in_once():
    """Rows in chunks share the MemoryX link: the pass takes at least the weights over the
    system I/O (1.2 Tb/s), however many chunks it runs in (it took 1/chunks of that before)."""
    module = _regional(8, 2.5, rows=512)
    from hardware_models.families.wafer.cost import pipeline_seconds

    plan = compile_plan(module, WSE3, chips=1)
    assert plan.partition.mode == "streamed from MemoryX"
    stream = module.functions[1].args[1][1].nbytes * 8 / 150e9
    for chunks in (1, 64, 512):
        assert stream <= pipeline_seconds(module, plan, WSE3, chunks) <= 1.5 * stream, chunks
    assert stream <= estimate(module, WSE3, plan=plan).total.time_s <= 1.5 * stream


def _three_kernels():
    """A GEMM heavy in FLOPs, a row sum of its output heavy in bytes, and a second, smaller GEMM
    of the same input: three regions, sized by different terms of their work."""
    from reference.ir import parse_stablehlo

    x, w1, w2, y, r = (
        "tensor<1024x2048xf16>",
        "tensor<2048x2048xf16>",
        "tensor<2048x512xf16>",
        "tensor<1024x512xf16>",
        "tensor<1024xf16>",
    )
    return parse_stablehlo(
        f"func.func @main(%x: {x}, %w1: {w1}, %w2: {w2}) -> ({r}, {y}) {{\n"
        f"  %z = stablehlo.constant dense<0.0> : tensor<f16>\n"
        f"  %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : ({x}, {w1}) -> {x}\n"
        f"  %1 = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [1] : ({x}, tensor<f16>) -> {r}\n"
        f"  %2 = stablehlo.dot_general %x, %w2, contracting_dims = [1] x [0] : ({x}, {w2}) -> {y}\n"
        f"  return %1, %2 : {r}, {y}\n}}\n"
    )


def test_regions_by_the_formula_weights_first_then_the_rest_by_each_kernels_slowest_term():
    """region(g) = ceil(weights / (usable SRAM / PEs)) + floor(PEs left x work(g) / total work),
    work(g) = max(FLOPs / (e x peak), SRAM bytes / SRAM bandwidth, sent bytes / fabric bandwidth),
    from the target file's numbers; the weight PEs are the 8 MiB and 2 MiB matrices' own."""
    from hardware_models.plan import group_outputs, group_work

    module = _three_kernels()
    plan = compile_plan(module, WSE3)
    graph = plan.value_graph()
    per_pe = 44e9 * 0.8 / 900_000
    x = 1024 * 2048 * 2  # an argument too: the regions that read it hold it
    weights = {0: x + 2048 * 2048 * 2, 1: 0, 2: x + 2048 * 512 * 2}
    holding = {g: -(-b // per_pe) if b else 0 for g, b in weights.items()}
    assert [(g.id, g.kind) for g in plan.groups] == [(0, "contraction"), (1, "fusion"), (2, "contraction")]

    def work(g):
        w = group_work(plan, module, g)
        sent = sum(graph.nbytes(v) for v in group_outputs(plan, graph, g))
        return max(w.flops / (0.5 * 125e15), w.bytes / 21e15, sent / 26.75e15)

    demand = {g.id: work(g) for g in plan.groups}
    left = 900_000 - sum(holding.values())
    total = sum(demand.values())
    expected = {g: max(1, int(holding[g] + (left * demand[g] / total) // 1)) for g in demand}
    assert {g: r.pes for g, r in WaferState.of(plan).regions.items()} == expected
    assert {g: r.weight_bytes for g, r in WaferState.of(plan).regions.items()} == weights
    # the GEMM is sized by its FLOPs, the row sum by its bytes
    assert demand[0] == pytest.approx(2 * 1024 * 2048 * 2048 / (0.5 * 125e15))
    assert demand[1] == pytest.approx((1024 * 2048 + 1024) * 2 / 21e15)
    assert (
        plan.notes[-1]
        == f"{sum(holding.values()) / 900_000:.1%} of the PEs are sized by the weights they hold, the rest by work"
    )


def test_a_regional_blocks_regions_count_once_per_layer():
    """Three layers of one block: each kernel's region is held three times over, so the weights'
    PEs and the work shares are summed over repeats and the regions still fit the wafer."""
    from tests.hardware_models.test_survivors import _regional

    plan = compile_plan(_regional(3), WSE3)
    kernels = [g for g in plan.groups if g.kind != "transfer"]
    assert all(g.repeats == 3 for g in kernels)
    used = sum(WaferState.of(plan).regions[g.id].pes * g.repeats for g in kernels)
    assert 900_000 - len(kernels) * 3 <= used <= 900_000
    weight_pes = -(-128 * 128 * 2 // (44e9 * 0.8 / 900_000))
    assert plan.notes[-2].endswith(
        f"{3 * weight_pes / 900_000:.1%} of the PEs are sized by the weights they hold, the rest by work"
    ) or any(
        n == f"{3 * weight_pes / 900_000:.1%} of the PEs are sized by the weights they hold, the rest by work"
        for n in plan.notes
    )


def _small_wafer():
    """A WSE-3 of 100 kB SRAM (80 kB usable; set over the target file's): the 3-layer block's
    147,456 B need 2 wafers, and a layer's 49,152 B fit one."""
    return get_target("wse-3").with_overrides({"levels.sram.bytes": 100_000})


def test_each_way_of_holding_the_weights_costed_by_hand_and_the_cheapest_chosen():
    """Per pass, with the hidden state H = 16,384 B, hop latency h, I/O 150 GB/s:
    a pipeline of 2 wafers: (2 - 1)(h + H / io); each layer split over 2: 6 exchanges of
    2 (2 - 1)(h + ceil(H / 2) / io); streamed: 147,456 / io. Streaming is cheapest here."""
    from tests.hardware_models.test_survivors import _regional

    tgt = _small_wafer()
    plan = compile_plan(_regional(3), tgt)
    h, io, H = tgt["schedule.wafer_hop_latency_s"], 150e9, 16_384
    from reference.units import format_seconds

    costs = {"pipeline": h + H / io, "split": 6 * 2 * (h + H / 2 / io), "streamed": 147_456 / io}
    assert plan.partition.mode == "streamed from MemoryX" and plan.partition.chips == 1
    assert plan.notes[-3] == (
        "weights streamed from MemoryX: 147 kB against 80.0 kB of usable SRAM a wafer; a pass costs "
        f"{format_seconds(costs['pipeline'])} in a pipeline of wafers, {format_seconds(costs['split'])} with each layer split, "
        f"{format_seconds(costs['streamed'])} streamed (chosen: streamed)"
    )
    assert [(g.kind, g.instance, g.repeats, g.label) for g in plan.groups if g.kind == "transfer"] == [
        ("transfer", "main", 1, "row pipeline")
    ]
    assert {r.weight_bytes for r in WaferState.of(plan).regions.values()} == {0}  # streamed: no region holds weights


@pytest.mark.parametrize(
    "chips,mode,transfer",
    [
        (3, "split over 3 wafers, whole layers on each", ("wafer hop", 2)),
        (4, "split over 4 wafers, each layer across all of them", ("layer exchange", 6)),
        (128, "split over 128 wafers, each layer across all of them", ("layer exchange", 6)),
    ],
)
def test_forced_wafer_counts_pipeline_up_to_the_layers_then_split_each_layer(chips, mode, transfer):
    """--chips 3: one layer a wafer, 2 hops a pass; 4 (more wafers than the 3 layers) or up to
    128 (the 128-column weight matrix, one column a wafer): each layer split, 2 exchanges a layer.
    The regions span every wafer's PEs, and the token rows stream through them in chunks."""
    from tests.hardware_models.test_survivors import _regional

    plan = compile_plan(_regional(3), _small_wafer(), chips=chips)
    p = plan.partition
    assert (p.chips, p.mode, p.tensor_parallel, p.layers, p.hidden_bytes) == (chips, mode, 1, 3, 16_384)
    kernels = [g for g in plan.groups if g.kind != "transfer"]
    transfers = [(g.id, g.members, g.instance, g.label, g.repeats) for g in plan.groups if g.kind == "transfer"]
    n = len(kernels)
    assert transfers == [(n, (), "main", *transfer), (n + 1, (), "main", "row pipeline", 1)]
    used = sum(WaferState.of(plan).regions[g.id].pes * g.repeats for g in kernels)
    assert chips * 900_000 - 3 * n <= used <= chips * 900_000
    if transfer[0] == "layer exchange":
        assert "no pipeline: more wafers than layers (3)" in plan.notes[-3]
    assert p.chunks > 1


def test_wafer_counts_from_the_need_to_the_narrowest_matrix():
    """2 wafers (what the arguments need) and 128 (a column of the 128-wide weight matrix each)
    are accepted; 129 is refused."""
    from tests.hardware_models.test_survivors import _regional

    assert compile_plan(_regional(3), _small_wafer(), chips=2).partition.chips == 2
    assert compile_plan(_regional(3), _small_wafer(), chips=128).partition.chips == 128
    with pytest.raises(InvalidShape):
        compile_plan(_regional(3), _small_wafer(), chips=129)


def test_chunk_candidates_are_the_powers_of_two_up_to_the_rows_and_the_rows(monkeypatch):
    """choose_chunks costs 1, 2, 4, ... up to the rows, and the rows themselves; of equal costs
    the fewest chunks win."""
    import hardware_models.families.wafer.cost as wafer
    from hardware_models.families.wafer.place_layers import choose_chunks

    seen = []
    monkeypatch.setattr(wafer, "pipeline_seconds", lambda module, plan, target, c: seen.append(c) or 1.0)
    assert choose_chunks(None, None, WSE3, 5) == (1, 4) and seen == [1, 2, 4, 5]
    seen.clear()
    assert choose_chunks(None, None, WSE3, 8) == (1, 4) and seen == [1, 2, 4, 8]
    seen.clear()
    monkeypatch.setattr(wafer, "pipeline_seconds", lambda module, plan, target, c: seen.append(c) or 1.0 / c)
    assert choose_chunks(None, None, WSE3, 1) == (1, 1) and seen == [1]
    assert choose_chunks(None, None, WSE3, 6)[0] == 6


def test_rows_a_pass_streams_are_a_blocks_batch_times_tokens():
    """The regional block's hidden state is [64, 128]: 64 rows; a program without layers has 1."""
    from hardware_models.families.wafer.place_layers import stream_rows
    from hardware_models.workload import program_footprint
    from tests.hardware_models.test_survivors import _regional

    module = _regional(3)
    assert stream_rows(module, program_footprint(module)) == 64
    flat = linear_gelu(64, 128, 128, "bf16")
    assert stream_rows(flat, program_footprint(flat)) == 1
