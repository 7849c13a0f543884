"""Spyre's passes after stickify: restickify where a matmul operand arrives on the wrong stick
dimension, work split over 32 cores in whole units, the scratchpad planned by liveness."""

from __future__ import annotations

import pytest

from hardware_models.estimate import estimate
from hardware_models.families.spyre.plan import SpyreState
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from tests.hardware_models.programs import program, t

SPYRE = get_target("spyre")


def _q_kt(seq: int, head: int):
    """scores = q @ k^T with k computed by a kernel first (as RoPE does), then read transposed."""
    q, k, s = t((seq, head), "f16"), t((seq, head), "f16"), t((seq, seq), "f16")
    kt = t((head, seq), "f16")
    return program(
        {"q": q, "k": k},
        [
            f"%0 = stablehlo.negate %k : {k}",
            f"%1 = stablehlo.transpose %0, dims = [1, 0] : ({k}) -> {kt}",
            f"%2 = stablehlo.dot_general %q, %1, contracting_dims = [1] x [0] : ({q}, {kt}) -> {s}",
        ],
        "%2",
        s,
    )


def test_k_read_transposed_by_a_matmul_is_restickified_but_a_weight_is_not():
    plan = compile_plan(_q_kt(128, 64), SPYRE)
    negate = next(p for p in plan.ops if p.op.short_name == "negate")
    assert [r.value for r in SpyreState.of(plan).restickify if r.kind == "operand"] == list(
        negate.results
    )  # k, made by a kernel
    q, w, y = t((128, 64), "f16"), t((64, 256), "f16"), t((128, 256), "f16")
    weights = program(
        {"q": q, "w": w},
        [f"%0 = stablehlo.dot_general %q, %w, contracting_dims = [1] x [0] : ({q}, {w}) -> {y}"],
        "%0",
        y,
    )
    assert SpyreState.of(compile_plan(weights, SPYRE)).restickify == ()


def test_restickify_bytes_of_a_matmul_operand_are_counted_through_lpddr5_both_ways():
    plan = compile_plan(_q_kt(128, 64), SPYRE)
    matmul = next(g for g in plan.groups if g.kind == "contraction")
    assert dict(plan.placements[matmul.id].split)["restickify"] == 2 * 128 * 64 * 2


def test_a_transpose_kernel_is_recorded_as_a_restickify_and_charged_at_its_rate():
    """S06: a transpose runs as a hardware restickify at 116 GB/s. fp16 (128, 64) -> (64, 128):
    128 sticks read and 128 written, 2 x 16,384 B / 116e9 B/s = 282.5 ns, not the LPDDR5 rates."""
    a, at = t((128, 64), "f16"), t((64, 128), "f16")
    module = program({"a": a}, [f"%0 = stablehlo.transpose %a, dims = [1, 0] : ({a}) -> {at}"], "%0", at)
    plan = compile_plan(module, SPYRE)
    (group,) = plan.groups
    assert [(r.group, r.kind) for r in SpyreState.of(plan).restickify] == [(group.id, "kernel")]
    (cost,) = (g.cost for g in estimate(module, SPYRE).groups)
    assert dict(cost.memory_s)["lpddr5"] == pytest.approx(2 * 16_384 / 116e9)


def test_work_divides_into_whole_units_over_at_most_32_cores():
    v = t((33, 64), "f16")  # 33 output sticks: two rounds on 32 cores
    plan = compile_plan(program({"a": v}, [f"%0 = stablehlo.negate %a : {v}"], "%0", v), SPYRE)
    (division,) = SpyreState.of(plan).divisions.values()
    assert (division.units, division.cores, division.per_core) == (33, 32, 2)
    small = compile_plan(
        program({"a": t((5, 64), "f16")}, [f"%0 = stablehlo.negate %a : {t((5, 64), 'f16')}"], "%0", t((5, 64), "f16")),
        SPYRE,
    )
    assert next(iter(SpyreState.of(small).divisions.values())).cores == 5


def test_an_intermediate_that_fits_stays_in_the_scratchpad_and_one_that_does_not_spills():
    def chain(n):
        x, w, y = t((n, n), "f16"), t((n, n), "f16"), t((n, n), "f16")
        return program(
            {"x": x, "w": w},
            [
                f"%0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : ({x}, {w}) -> {y}",
                f"%1 = stablehlo.dot_general %0, %w, contracting_dims = [1] x [0] : ({y}, {w}) -> {y}",
            ],
            "%1",
            y,
        )

    small = compile_plan(chain(256), SPYRE)  # 128 KiB: 4 KiB per core
    first, second = (small.placements[g.id] for g in small.groups)
    assert dict(first.split)["write"] == 0 and second.resident_inputs
    big = compile_plan(chain(8192), SPYRE)  # 128 MiB: 4 MiB per core, more than LX
    first, second = (big.placements[g.id] for g in big.groups)
    assert dict(first.split)["spilled"] == 8192 * 8192 * 2 and not second.resident_inputs


def _diamond(n):
    """%0 = x @ w; %1 = %0 @ w; %2 = %1 + %0: %0 is read twice, so it must stay (or spill) across
    the second matmul."""
    x = t((n, n), "f16")
    return program(
        {"x": x, "w": x},
        [
            f"%0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : ({x}, {x}) -> {x}",
            f"%1 = stablehlo.dot_general %0, %w, contracting_dims = [1] x [0] : ({x}, {x}) -> {x}",
            f"%2 = stablehlo.add %1, %0 : {x}",
        ],
        "%2",
        x,
    )


def test_scratchpad_bytes_of_each_kernel_by_hand_when_everything_fits():
    """256 x 256 f16, V = 131,072 B a value (whole sticks). g0 reads x and w from LPDDR5 (2V) and
        keeps %0 in LX; g1 reads w (V), keeps %1 beside %0; g2 reads both from LX and writes the
        result (V). LX carries every operand and result: 3V, 3V, 3V. g1's w may load while g0 computes
    (prefetchable, fire_kernels); the first kernel has none before it."""
    V = 256 * 256 * 2
    plan = compile_plan(_diamond(256), SPYRE)
    got = [(dict(p.bytes), dict(p.split), len(p.resident_inputs)) for p in (plan.placements[g.id] for g in plan.groups)]
    assert got == [
        (
            {"lpddr5": 2 * V, "lx": 3 * V},
            {"read": 2 * V, "write": 0, "spilled": 0, "restickify": 0, "prefetchable": 0},
            0,
        ),
        ({"lpddr5": V, "lx": 3 * V}, {"read": V, "write": 0, "spilled": 0, "restickify": 0, "prefetchable": V}, 1),
        ({"lpddr5": V, "lx": 3 * V}, {"read": 0, "write": V, "spilled": 0, "restickify": 0, "prefetchable": 0}, 2),
    ]


def test_a_value_that_does_not_fit_beside_what_lx_keeps_spills_and_is_read_back():
    """3072 x 3072 f16, V = 18,874,368 B, 589,824 B a core over 32 cores. LX keeps at most
    usable x (1 - buffer_fraction) = 1,625,293 x 0.5 = 812,646 B a core: %0 fits, %1 beside it
    does not, so g1 writes %1 (spilled) and g2 reads it back; %0 stays resident throughout."""
    V = 3072 * 3072 * 2
    plan = compile_plan(_diamond(3072), SPYRE)
    assert all(SpyreState.of(plan).divisions[g.id].cores == 32 for g in plan.groups)
    assert V / 32 <= SPYRE["levels.lx.usable_bytes"] * 0.5 < 2 * V / 32
    g0, g1, g2 = (plan.placements[g.id] for g in plan.groups)
    assert dict(g0.split) == {"read": 2 * V, "write": 0, "spilled": 0, "restickify": 0, "prefetchable": 0}
    assert dict(g1.split) == {"read": V, "write": V, "spilled": V, "restickify": 0, "prefetchable": V}
    # %1 comes from the kernel just before: it cannot load while that kernel computes
    assert dict(g2.split) == {"read": V, "write": V, "spilled": 0, "restickify": 0, "prefetchable": 0}
    assert [len(p.resident_inputs) for p in (g0, g1, g2)] == [0, 1, 1]
    assert dict(g1.bytes)["lpddr5"] == 2 * V


def test_a_value_read_in_part_moves_its_share_of_its_padded_bytes():
    """A slice of half the rows of a 64 x 130 f16 argument reads half its stick-padded bytes:
    130 elements take 3 sticks a row, 64 x 3 x 128 B padded, half of it read."""
    a, h = t((64, 130), "f16"), t((32, 130), "f16")
    module = program(
        {"a": a}, [f"%0 = stablehlo.slice %a [0:32, 0:130] : ({a}) -> {h}", f"%1 = stablehlo.negate %0 : {h}"], "%1", h
    )
    plan = compile_plan(module, SPYRE)
    (g,) = [g for g in plan.groups if g.kind != "transfer"]
    split = dict(plan.placements[g.id].split)
    assert split["read"] == 64 * 3 * 128 // 2 and split["write"] == 32 * 3 * 128


@pytest.mark.parametrize("n,spilled_where", [(256, "lx"), (3072, "lpddr5")])
def test_the_dataflow_edges_between_kernels_and_where_each_input_waits(n, spilled_where):
    """Every input of every kernel is an edge: arguments (producer -1) wait in LPDDR5; %0 waits in
    LX for both its readers; %1 waits in LX, or in LPDDR5 once it has spilled. Sticks: n x n / 64.
    Every kernel runs on all 32 cores; the add divides into one unit per output stick."""
    plan = compile_plan(_diamond(n), SPYRE)
    sticks = n * n // 64
    x, w, h0, h1 = "main%arg0", "main%arg1", "main%2", "main%3"
    assert [(e.producer, e.consumer, e.value, e.sticks, e.where) for e in SpyreState.of(plan).dataflow] == [
        (-1, 0, x, sticks, "lpddr5"),
        (-1, 0, w, sticks, "lpddr5"),
        (0, 1, h0, sticks, "lx"),
        (-1, 1, w, sticks, "lpddr5"),
        (1, 2, h1, sticks, spilled_where),
        (0, 2, h0, sticks, "lx"),
    ]
    assert [SpyreState.of(plan).divisions[g.id].cores for g in plan.groups] == [32, 32, 32]
    assert SpyreState.of(plan).divisions[plan.groups[2].id].units == sticks


def test_stick_dimensions_follow_a_reshape_and_a_transpose_read_by_a_matmul():
    """exp(a) is sticked on its last dimension; a reshape of it keeps the last (2 of [8, 4, 16]);
    the transpose [0, 2, 1] that only the matmul reads is a layout view that moves the stick to
    dimension 1, which is the matmul's contracting dimension: no restickify. Read with the
    other permutation, the stick lands on the wrong dimension and a restickify runs."""
    from hardware_models.families.spyre.insert_restickify import physical_stick_dim, required_stick_dims

    a, r, w = t((8, 64), "f16"), t((8, 4, 16), "f16"), t((8, 16, 5), "f16")

    def module(perm, tt):
        return program(
            {"a": a, "w": w},
            [
                f"%0 = stablehlo.exponential %a : {a}",
                f"%1 = stablehlo.reshape %0 : ({a}) -> {r}",
                f"%2 = stablehlo.transpose %1, dims = {perm} : ({r}) -> {tt}",
                f"%3 = stablehlo.dot_general %2, %w, batching_dims = [0] x [0], contracting_dims = [1] x [1] : ({tt}, {w}) -> {t((8, 4, 5), 'f16')}",
            ],
            "%3",
            t((8, 4, 5), "f16"),
        )

    plan = compile_plan(module("[0, 2, 1]", t((8, 16, 4), "f16")), SPYRE)
    graph = plan.value_graph()
    dims = [physical_stick_dim(graph, plan, v) for v in ("main%2", "main%3", "main%4")]  # exp, reshape, transpose
    assert dims == [1, 2, 1]
    dot = next(p.op for p in plan.ops if p.op.short_name == "dot_general")
    assert required_stick_dims(dot) == (1, 2)
    assert [r for r in SpyreState.of(plan).restickify if r.kind == "operand"] == []
    # the identity permutation leaves the stick on dimension 2 of [8, 4, 16]: the matmul contracts 1
    wrong = compile_plan(
        program(
            {"a": a, "w": t((8, 4, 5), "f16")},
            [
                f"%0 = stablehlo.exponential %a : {a}",
                f"%1 = stablehlo.reshape %0 : ({a}) -> {r}",
                f"%2 = stablehlo.dot_general %1, %w, batching_dims = [0] x [0], contracting_dims = [1] x [1] : ({r}, {t((8, 4, 5), 'f16')}) -> {t((8, 16, 5), 'f16')}",
            ],
            "%2",
            t((8, 16, 5), "f16"),
        ),
        SPYRE,
    )
    assert [(r.value, r.kind) for r in SpyreState.of(wrong).restickify] == [
        ("main%2", "operand")
    ]  # the root of the reshape: exp's result


def test_required_stick_dims_of_each_dot_form():
    """A on its last contracting dimension, B on its last free one: [b, m, k] x [b, k, n] -> (2, 2);
    Q K^T as [b, s, d] x [b, t, d] -> (2, 1); a 2-D dot -> (1, 1); a matrix-vector dot -> (1, 0)."""
    from hardware_models.families.spyre.insert_restickify import required_stick_dims
    from reference.ir.graph import DotDims, Op, TensorType

    def dot(lhs, rhs, dims):
        return Op(
            "stablehlo.dot_general",
            ("%0",),
            (TensorType((1,), "f16"),),
            ("%a", "%b"),
            (TensorType(lhs, "f16"), TensorType(rhs, "f16")),
            attrs=(("dot_dimension_numbers", dims),) if dims else (),
        )

    assert required_stick_dims(dot((2, 3, 4), (2, 4, 5), DotDims((0,), (0,), (2,), (1,)))) == (2, 2)
    assert required_stick_dims(dot((2, 3, 4), (2, 6, 4), DotDims((0,), (0,), (2,), (2,)))) == (2, 1)
    assert required_stick_dims(dot((3, 4), (4, 5), None)) == (1, 1)
    assert required_stick_dims(dot((3, 4), (4,), None)) == (1, 0)


def test_a_block_over_two_cards_reads_its_share_of_the_weight_and_its_transfers_take_no_pass():
    """The 3-layer block on 2 Spyre cards, tensor parallel: the matmul reads x (64 x 128 f16,
    16,384 B) and half of w (32,768 / 2 B), and carries half its output (16,384 / 2 B) through LX;
    its 64 output columns make 8 units over 8 cores. The all-reduces (2 a layer) get no division,
    no placement and no dataflow edge: they are costed from the partition."""
    from tests.hardware_models.test_survivors import _regional

    plan = compile_plan(_regional(3), SPYRE, chips=2)
    dot, fusion, transfer = plan.groups
    assert (transfer.kind, transfer.label, transfer.repeats) == ("transfer", "all-reduce", 6)
    assert dict(plan.placements[dot.id].split)["read"] == 16_384 + 32_768 // 2
    assert dict(plan.placements[dot.id].bytes) == {"lpddr5": 16_384 + 16_384, "lx": 16_384 + 16_384 + 8_192}
    assert (SpyreState.of(plan).divisions[dot.id].units, SpyreState.of(plan).divisions[dot.id].cores) == (8, 8)
    assert transfer.id not in SpyreState.of(plan).divisions and transfer.id not in plan.placements
    assert all(transfer.id not in (e.producer, e.consumer) for e in SpyreState.of(plan).dataflow)
    one = compile_plan(_regional(3), SPYRE)
    assert dict(one.placements[one.groups[0].id].split)["read"] == 16_384 + 32_768
    est = estimate(_regional(3), SPYRE, plan=plan)
    assert [g.kind for g in est.groups] == ["contraction", "fusion", "transfer"]
