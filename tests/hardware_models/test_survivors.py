"""Bugs that a planted-bug exercise showed the suite let through, each now pinned by a test that
fails on it: hand-derived VMEM bytes, the order of a static schedule, the roofline's ceilings
per level, and per-kind costs of a program whose block repeats."""

from __future__ import annotations

import pytest

from hardware_models.comparison import KINDS, compare_lowerings
from hardware_models.cost.roofline import ceilings
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target, load_targets
from reference.ir.graph import DotDims, Function, Module, Op, TensorType
from reference.lowering import Lowering
from tests.hardware_models.programs import linear_gelu, program, softmax, t, transposing_block


def test_a_tpu_fusion_moves_each_ops_operands_and_results_through_vmem():
    """exp(a) * b over 1024 f32, one XLA fusion: HBM reads a and b and writes the product once,
    3 x 4096 = 12,288 B; VMEM carries every op's operands and results, exp 2 x 4096 and
    multiply 3 x 4096 = 20,480 B."""
    v = t((1024,), "f32")
    module = program(
        {"a": v, "b": v}, [f"%0 = stablehlo.exponential %a : {v}", f"%1 = stablehlo.multiply %0, %b : {v}"], "%1", v
    )
    plan = compile_plan(module, get_target("tpu-v5e"))
    (group,) = plan.groups
    assert plan.placements[group.id].bytes == (("hbm", 12_288), ("vmem", 20_480))


@pytest.mark.parametrize(
    "module", [linear_gelu(256, 320, 640, "bf16"), softmax(64, 640, "f32")], ids=["linear_gelu", "softmax"]
)
def test_a_static_schedule_reads_no_value_before_its_producer_and_runs_one_op_per_unit_at_a_time(module):
    """schedule_static's rules: a consumer that does not chain starts after its producer
    finishes (plus its latency); a chained one starts after the producer's stream begins and
    finishes no sooner than the producer; a unit never runs two ops at once."""
    target = get_target("groq-lpu")
    plan = compile_plan(module, target)
    graph = plan.value_graph()
    owner = {i: g.id for g in plan.groups for i in g.members}
    slots = plan.schedule
    for group in plan.groups:
        slot = slots.get(group.id)
        if slot is None:
            continue
        for value in plan.ops[group.members[0]].operands:
            producer = owner.get(graph.producer.get(graph.root(value)))
            if producer is None or producer == group.id or producer not in slots:
                continue
            before = slots[producer]
            assert slot.start > before.start, (group.id, producer)
            assert slot.finish > before.finish or (slot.start >= before.finish), (group.id, producer)
            if slot.unit in ("MXM",):  # a matmul never chains: it waits for the whole operand
                assert slot.start >= before.finish, (group.id, producer)
    by_unit: dict[tuple[str, str], list] = {}
    for gid, slot in slots.items():
        by_unit.setdefault((plan.groups[gid].instance, slot.unit), []).append((slot.start, slot.finish))
    for spans in by_unit.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end


def test_hand_derived_start_cycles_of_a_two_op_lpu_program():
    """negate then a matmul on the LPU: the negate (VXM) starts at 0; the matmul (MXM) waits
    for it to finish, plus the memory and MXM latencies from the target file."""
    target = get_target("groq-lpu")
    a, w, y = t((320, 320), "f16"), t((320, 320), "f16"), t((320, 320), "f16")
    module = program(
        {"a": a, "w": w},
        [
            f"%0 = stablehlo.negate %a : {a}",
            f"%1 = stablehlo.dot_general %0, %w, contracting_dims = [1] x [0] : ({a}, {w}) -> {y}",
        ],
        "%1",
        y,
    )
    plan = compile_plan(module, target)
    negate, matmul = (plan.schedule[g.id] for g in plan.groups)
    assert (negate.unit, negate.start) == ("VXM", 0)
    latency = int(target["schedule.mem_latency_cycles"] + target["schedule.mxm_latency_cycles"])
    assert (matmul.unit, matmul.start) == ("MXM", negate.finish + latency)


@pytest.mark.parametrize("name", sorted(load_targets()))
def test_roofline_memory_ceilings_are_the_target_files_levels(name):
    """Each drawn bandwidth is the level's own (sustained where a fitted efficiency exists): the
    TPU's HBM line at HBM bandwidth, its VMEM line at VMEM's, never one for the other."""
    target = get_target(name)
    _, memory = ceilings(target)
    main = target.main_memory_bytes_per_s
    if target.family == "gpu":
        assert memory == {"HBM": main * target["fitted.hbm_efficiency"]}
    elif target.family == "tpu":
        assert memory == {"HBM": main, "VMEM": target["levels.vmem.bytes_per_s"]}
    elif target.family == "spyre":
        assert memory == {"LPDDR5": target["fitted.lpddr5_one_way_bytes_per_s"]}
    elif target.family == "lpu":
        assert memory == {"SRAM": main}
    elif target.family == "cdna":  # HBM sustained, and the Infinity Cache at its own peak
        ic = target["levels.infinity_cache.bytes_per_s"]
        assert memory == {"HBM": main * target["fitted.hbm_efficiency"], "Infinity Cache": ic}
    elif target.family == "cpu":  # one line per cache level and DRAM, each at its measured bandwidth
        assert memory == {lv.name.upper(): target[f"levels.{lv.name}.bytes_per_s"] for lv in target.levels}
        assert memory["DRAM"] == main
    else:
        assert memory == {"SRAM": main, "fabric": target["interconnect.fabric_bytes_per_s"]}


def _regional(layers: int) -> Module:
    """A block of a bf16 GEMM, an exp and a transpose there and back (data movement), that
    `main` calls `layers` times."""
    body, x, w = transposing_block("bf16")
    call = Op("func.call", ("%1",), (x,), ("%a", "%w"), (x, w), callee="block", trip_count=layers)
    main = Function("main", (("%a", x), ("%w", w)), (x,), (call, Op("func.return", (), (), ("%1",), (x,))))
    return Module((main, body))


@pytest.mark.parametrize("target", ["h100", "tpu-v5e", "groq-lpu", "spyre", "wse-3"])
def test_compares_per_kind_costs_of_a_repeated_block_sum_to_the_total(target):
    """A 4-layer block: every kind of kernel counts x4, so the kinds sum to the estimate's total."""
    module = _regional(4)
    side = Lowering("jax", "toy", {"stablehlo": "// toy"}, module)
    result = compare_lowerings(side, side, [target], "toy")
    one = result.results[(target, "jax")]
    by_kind = one.time_by_kind()
    assert set(by_kind) == set(KINDS)
    assert sum(by_kind.values()) == pytest.approx(one.estimate.total.time_s, rel=1e-12)
    single = estimate(_regional(1), get_target(target)).total.time_s
    assert one.estimate.total.time_s > 3 * single


@pytest.mark.parametrize("target", ["h100", "tpu-v5e", "groq-lpu"])
def test_a_roofline_of_a_program_split_over_chips_stays_under_one_chips_ceilings(target):
    """A kernel split over tensor-parallel chips does its whole op's FLOPs in one chip's time;
    the roofline is one chip's, so each point divides its FLOPs by the chips that share it and
    none may sit above the chip's compute ceiling or its bandwidth line."""
    from hardware_models.cost.roofline import chip_shares, roofline_points

    x, w = TensorType((2048, 16384), "bf16"), TensorType((16384, 16384), "bf16")  # 512 MB of weights
    dims = DotDims((), (), (1,), (0,))
    main = Function(
        "main",
        (("%x", x), ("%w", w)),
        (x,),
        (
            Op("stablehlo.dot_general", ("%0",), (x,), ("%x", "%w"), (x, w), attrs=(("dot_dimension_numbers", dims),)),
            Op("func.return", (), (), ("%0",), (x,)),
        ),
    )
    module = Module((main,))
    tgt = get_target(target)
    plan = compile_plan(module, tgt, chips=None if target == "groq-lpu" else 4)
    assert plan.partition.tensor_parallel > 1
    est = estimate(module, tgt, plan=plan)
    shares = chip_shares(plan)
    compute, memory = ceilings(tgt)
    points = roofline_points(est, tgt.main_memory_level, None, shares)
    assert points
    for p in points:
        assert p.attained_flop_per_s <= max(compute.values()) * (1 + 1e-9)
        assert p.attained_flop_per_s <= p.intensity * max(memory.values()) * (1 + 1e-9)
    if target == "h100":  # without the shares, the split GEMM would sit above the tensor-core ceiling
        unsplit = roofline_points(est, tgt.main_memory_level)
        assert max(p.attained_flop_per_s for p in unsplit) > max(compute.values())
