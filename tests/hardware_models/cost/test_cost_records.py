"""Rules every cost record obeys, on every family, for kernels, host fallbacks and chip-to-chip
transfers alike (the decomposition in cost/model.py), and the hand formulas of the costs the
families share: a host fallback, a ring all-reduce, the LPU's hops.

These were written against the mutants `make mutation` showed surviving: a field set to None, a
sign flipped in a schedule time, a fallback's link time multiplied instead of divided."""

from __future__ import annotations

import math

import pytest

from hardware_models.cost.model import Cost, Estimate, GroupCost, allreduce_cost, host_fallback_cost
from hardware_models.estimate import estimate
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from reference.ir import parse_stablehlo
from tests.hardware_models.programs import linear_gelu, softmax, t
from tests.hardware_models.test_survivors import _regional

FAMILIES = ("h100", "tpu-v5e", "spyre", "groq-lpu", "wse-3")


def _fallback():
    """tanh, then an op no target knows (a host fallback), then an add."""
    x = t((63, 65), "f32")
    return parse_stablehlo(
        f"func.func @main(%a: {x}) -> {x} {{\n  %0 = stablehlo.tanh %a : {x}\n"
        f'  %u = "foo.bar"(%0) : ({x}) -> {x}\n  %1 = stablehlo.add %u, %a : {x}\n  return %1 : {x}\n}}\n'
    )


PROGRAMS = {
    "linear_gelu": lambda: linear_gelu(65, 129, 63, "bf16"),
    "softmax": lambda: softmax(63, 129, "f32"),
    "fallback": _fallback,
    "regional": lambda: _regional(3),
}


def _check_record(c: Cost, where, main: str) -> None:
    for name in ("flops", "padded_flops", "compute_s", "schedule_s", "time_s"):
        value = getattr(c, name)
        assert isinstance(value, (int, float)) and math.isfinite(value) and value >= -1e-18, (where, name, value)
    assert c.padded_flops >= c.flops, where
    bound = max(c.compute_s, c.memory_bound_s)
    assert c.time_s == pytest.approx(bound + c.schedule_s, rel=1e-9, abs=1e-18), where
    assert c.time_s > 0, where
    levels, times = dict(c.bytes), dict(c.memory_s)
    for level, moved in levels.items():  # a GPU's L2 bytes are reported, not timed (families/gpu/cost.py)
        assert moved >= 0, (where, level)
        if level in times or (level == main and where[-1] != "fallback"):  # a fallback's time is the host link's
            assert (times.get(level, 0.0) > 0) == (moved > 0), (where, level, moved, times.get(level))
    for level, seconds in times.items():  # the wafer's row pipeline: time of bytes its kernels count
        assert seconds >= 0 and (level in levels or where[-1] == "transfer"), (where, level)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("target", FAMILIES)
def test_every_cost_record_is_its_bound_plus_its_schedule_time(target, program):
    """time = max(compute, slowest level) + schedule, every field a finite number, padded FLOPs
    at least the useful ones, and a level's time nonzero exactly where it moves bytes."""
    est = estimate(PROGRAMS[program](), target)
    assert est.groups
    for g in est.groups:
        _check_record(g.cost, (target, program, g.group, g.kind), get_target(target).main_memory_level)


@pytest.mark.parametrize("target,chips", [("h100", 2), ("tpu-v5e", 4), ("groq-lpu", 4), ("wse-3", 2)])
def test_multi_chip_transfers_are_cost_records_too(target, chips):
    """A program over several chips adds transfer groups; they obey the same rules and move bytes
    over the chip-to-chip link, not through a memory level."""
    module = _regional(3)
    tgt = get_target(target)
    plan = compile_plan(module, tgt, chips=chips)
    est = estimate(module, tgt, plan=plan)
    transfers = [g for g in est.groups if g.kind == "transfer"]
    assert transfers, target
    memory_levels = {level.name for level in tgt.levels}
    for g in est.groups:
        _check_record(g.cost, (target, g.group, g.kind), tgt.main_memory_level)
    for g in transfers:
        assert g.group not in plan.placements and g.group not in plan.tilings  # costed from the partition alone
        if plan.groups[g.group].label == "row pipeline":  # the wafer's pipeline fill: its kernels' bytes
            continue
        assert g.cost.flops == 0 and g.cost.compute_s == 0.0
        assert g.cost.bytes and not set(dict(g.cost.bytes)) & memory_levels, (target, g.cost.bytes)


@pytest.mark.parametrize("target", FAMILIES)
def test_a_host_fallback_costs_its_round_trip_by_hand(target):
    """The unknown op's 63 x 65 f32 operand goes to the host and its result comes back:
    2 x 16,380 B over the host link, its FLOPs at the host's rate, plus one kernel's fixed cost
    (on the LPU, whose schedule has no launches, the op's place in the schedule instead)."""
    tgt = get_target(target)
    est = estimate(_fallback(), tgt)
    (g,) = [g for g in est.groups if g.kind == "fallback"]
    c = g.cost
    moved = dict(c.bytes)["host"]
    if tgt.family == "spyre":  # f32 runs as f16, in sticks of 64: a row of 65 fills 2 sticks of 128 B
        assert moved == 2 * 63 * math.ceil(65 / 64) * 128
    else:
        assert moved == 2 * 63 * 65 * 4
    link_s = moved / tgt["interconnect.host_bytes_per_s"]
    assert dict(c.memory_s)["host"] == pytest.approx(link_s, rel=1e-12)
    assert c.compute_s == pytest.approx(c.flops / tgt["host.flop_per_s"], rel=1e-12, abs=1e-18)
    if tgt.family == "lpu":
        clock = tgt["chip.clock_hz"]
        slot = compile_plan(_fallback(), tgt).schedule[g.group]
        assert c.time_s == pytest.approx(slot.increment / clock + link_s + c.compute_s, rel=1e-12)
    else:
        fixed = tgt.get("schedule.launch_overhead_s", 0.0) or 0.0
        assert c.time_s == pytest.approx(link_s + c.compute_s + fixed, rel=1e-12)
        assert c.schedule_s == pytest.approx(fixed, rel=1e-12, abs=1e-18)


def test_host_fallback_cost_by_hand():
    """1000 FLOPs and 4 MB over a 2 GB/s link, a 1 GFLOP/s host and 3 us of launch: 2 ms + 1 us + 3 us;
    without a launch overhead in the target, none is charged."""

    class T(dict):
        def get(self, key, default=None):
            return super().get(key, default)

    target = T({"interconnect.host_bytes_per_s": 2e9, "host.flop_per_s": 1e9, "schedule.launch_overhead_s": 3e-6})
    c = host_fallback_cost(1000, {"host": 4_000_000, "hbm": 8}, target)
    assert (c.flops, c.padded_flops) == (1000, 1000)
    assert c.compute_s == pytest.approx(1e-6) and c.schedule_s == pytest.approx(3e-6)
    assert c.time_s == pytest.approx(2e-3 + 1e-6 + 3e-6)
    assert c.bytes == (("host", 4_000_000), ("hbm", 8)) and c.memory_s == (("host", pytest.approx(2e-3)),)
    bare = host_fallback_cost(
        1000, {"host": 4_000_000}, T({"interconnect.host_bytes_per_s": 2e9, "host.flop_per_s": 1e9})
    )
    assert bare.schedule_s == 0.0 and bare.time_s == pytest.approx(2e-3 + 1e-6)


@pytest.mark.parametrize("chips", [2, 3, 8])
def test_a_ring_all_reduce_by_hand(chips):
    """latency + 2 (N - 1) / N x bytes / bus bandwidth: 1 MB over N chips at 100 GB/s, 5 us latency."""
    c = allreduce_cost(1_000_000, chips, 100e9, 5e-6)
    moved = 2 * (chips - 1) / chips * 1_000_000
    assert c.bytes == (("interconnect", int(moved)),)
    assert c.memory_s == (("interconnect", pytest.approx(moved / 100e9)),)
    assert (c.flops, c.padded_flops, c.compute_s) == (0, 0, 0.0)
    assert c.schedule_s == 5e-6 and c.time_s == pytest.approx(5e-6 + moved / 100e9)


def test_lpu_partition_and_transfers_by_hand():
    """A 3-layer block on LPUs of 20 kB of SRAM (18 kB usable; set over the target file's): the
    program's 147,456 B need ceil(147,456 / 18,000) = 9 chips, a layer's 49,152 B need
    ceil(49,152 / 18,000) = 3 that share it, so 3 pipeline stages. It adds 2 stage hops a pass,
    each h + H / (L B), and 2 all-reduces a layer, each 2 (tp - 1) h + 2 (tp - 1) / tp x H / (L B)
    (partition_chips, families/lpu/cost.py)."""
    from hardware_models.workload import program_footprint

    module = _regional(3)
    tgt = get_target("groq-lpu").with_overrides({"levels.sram.bytes": 20_000})
    footprint = program_footprint(module)
    assert (footprint.needed_bytes, footprint.layer_bytes, footprint.hidden_bytes) == (147_456, 49_152, 64 * 128 * 2)
    plan = compile_plan(module, tgt)
    p = plan.partition
    assert (p.chips, p.tensor_parallel, p.stages, p.chip_bytes) == (9, 3, 3, 18_000)
    kernels = [g for g in plan.groups if g.kind != "transfer"]
    transfers = [(g.id, g.kind, g.members, g.instance, g.repeats, g.label) for g in plan.groups if g.kind == "transfer"]
    n = len(kernels)
    assert transfers == [(n, "transfer", (), "main", 2, "stage hop"), (n + 1, "transfer", (), "main", 6, "all-reduce")]
    assert (
        "147 kB of weights and inputs over 18.0 kB of usable SRAM per chip: 9 chips, 3 per layer, 3 pipeline stages"
        in plan.notes
    )
    assert plan.notes[-1].endswith("; together more than a chip holds (the chip count is sized by the arguments alone)")
    est = estimate(module, tgt, plan=plan)
    hop = tgt["schedule.c2c_hop_latency_s"]
    bw = tgt["interconnect.c2c_links"] * tgt["interconnect.c2c_bytes_per_s_per_link"]
    hidden = 64 * 128 * 2
    stage, ar = [g for g in est.groups if g.kind == "transfer"]
    assert stage.cost.time_s == pytest.approx(hop + hidden / bw, rel=1e-12)
    assert ar.cost.time_s == pytest.approx(2 * 2 * hop + 2 * 2 / 3 * hidden / bw, rel=1e-12)
    for g in (stage, ar):
        assert g.cost.bytes == (("c2c", hidden),) and g.cost.memory_s == (("c2c", g.cost.time_s),)
        assert (g.cost.flops, g.cost.padded_flops, g.cost.compute_s, g.cost.schedule_s) == (0, 0, 0.0, 0.0)


@pytest.mark.parametrize("chips,ok", [(8, False), (9, True), (384, True), (385, False)])
def test_lpu_chip_counts_from_the_least_the_program_needs_to_a_column_each(chips, ok):
    """At least the 9 chips the arguments need; at most 128 a layer (one output column of the
    128-wide weight matrix each) x 3 stages = 384. Forced wider, the stages stay a layer each."""
    from reference.errors import InvalidShape

    tgt = get_target("groq-lpu").with_overrides({"levels.sram.bytes": 20_000})
    if not ok:
        with pytest.raises(InvalidShape):
            compile_plan(_regional(3), tgt, chips=chips)
        return
    plan = compile_plan(_regional(3), tgt, chips=chips)
    assert plan.partition.chips == chips and plan.partition.tensor_parallel == 3


@pytest.mark.parametrize("chips,ok", [(10, True), (11, False)])
def test_lpu_chips_may_reach_what_a_programs_results_fill(chips, ok):
    """A 4096 x 4 product of a 16-deep GEMM: its arguments fill 8 chips of 18 kB, its arguments
    and its result 10 (a prefill's result is the KV cache its decode step reads from SRAM), more
    than the 4 columns x 1 kernel a column each would allow; 11 would hold no work."""
    from hardware_models.calibration import gemm_module
    from reference.errors import InvalidShape

    tgt = get_target("groq-lpu").with_overrides({"levels.sram.bytes": 20_000})
    module = gemm_module(4096, 4, 16, "bf16")
    if not ok:
        with pytest.raises(InvalidShape, match="the larger of 10"):
            compile_plan(module, tgt, chips=chips)
        return
    assert compile_plan(module, tgt, chips=chips).partition.chips == chips


def test_a_graph_on_another_graphs_chips_takes_more_than_it_could_fill():
    """predict runs a prefill on the chips its decode step's cache needs (compile_plan's
    shared_chips): beyond what the prefill alone could fill, the chips stay, idle, not refused."""
    from hardware_models.calibration import gemm_module
    from reference.errors import InvalidShape

    tgt = get_target("groq-lpu").with_overrides({"levels.sram.bytes": 20_000})
    module = gemm_module(4096, 4, 16, "bf16")
    with pytest.raises(InvalidShape, match="at most 10"):
        compile_plan(module, tgt, chips=12)
    assert compile_plan(module, tgt, chips=12, shared_chips=True).partition.chips == 12


def test_one_lpu_chip_adds_no_transfers():
    plan = compile_plan(_regional(3), get_target("groq-lpu"))
    assert plan.partition.chips == 1 and not [g for g in plan.groups if g.kind == "transfer"]
    assert not any("usable SRAM per chip" in n for n in plan.notes)


def test_the_json_of_an_estimate_carries_each_figure_under_its_name():
    """report.json's per-kernel and total fields, each equal to the figure it names."""
    cost = Cost(10, 12, 1e-6, 2e-6, 5e-6, (("hbm", 100),), (("hbm", 3e-6),))
    g = GroupCost(7, "fusion", ("add", "exp"), "main", 3, cost)
    assert g.to_dict() == {
        "group": 7,
        "kind": "fusion",
        "op": "add+exp",
        "scope": "main",
        "repeats": 3,
        "flops": 10,
        "padded_flops": 12,
        "bytes": {"hbm": 100},
        "compute_s": 1e-6,
        "memory_s": {"hbm": 3e-6},
        "schedule_s": 2e-6,
        "time_s": 5e-6,
        "bottleneck": "memory",
        "utilization": pytest.approx(0.2),
    }
    est = Estimate("h100", "toy", (g,), notes=("a note",), compiler="inductor")
    d = est.to_dict()
    assert d == {
        "target": "h100",
        "compiler": "inductor",
        "name": "toy",
        "total_time_s": pytest.approx(15e-6),
        "compute_s": pytest.approx(3e-6),
        "memory_s": pytest.approx(9e-6),
        "bottleneck": "memory",
        "memory_s_by_level": {"hbm": pytest.approx(9e-6)},
        "schedule_s": pytest.approx(6e-6),
        "flops": 30,
        "bytes": {"hbm": 300},
        "bottleneck_counts": {"compute": 0, "memory": 3, "schedule": 0},
        "kernels": 3,
        "utilization": pytest.approx(0.2),
        "notes": ["a note"],
        "ops": [g.to_dict()],
    }


def test_cost_records_add_per_level_and_scale_by_repeats():
    """a + b sums every field and each level's bytes and time (a level only one side has is kept);
    x k scales them all; a span (a wafer kernel's own time, where it overlaps others) adds as the
    time where a side has none, and stays 0 where neither has one."""
    a = Cost(10, 12, 1.0, 2.0, 4.0, (("hbm", 100), ("l2", 7)), (("hbm", 3.0),), span_s=6.0)
    b = Cost(1, 2, 0.5, 0.25, 1.0, (("hbm", 50), ("host", 9)), (("hbm", 0.5), ("host", 0.75)))
    s = a + b
    assert (s.flops, s.padded_flops, s.compute_s, s.schedule_s, s.time_s) == (11, 14, 1.5, 2.25, 5.0)
    assert dict(s.bytes) == {"hbm": 150, "l2": 7, "host": 9} and dict(s.memory_s) == {"hbm": 3.5, "host": 0.75}
    assert s.span_s == 6.0 + 1.0 and (b + a).span_s == 7.0
    assert (b + b).span_s == 0.0
    t = a * 3
    assert (t.flops, t.padded_flops, t.compute_s, t.schedule_s, t.time_s, t.span_s) == (30, 36, 3.0, 6.0, 12.0, 18.0)
    assert t.bytes == (("hbm", 300), ("l2", 21)) and t.memory_s == (("hbm", 9.0),)
    assert a.bytes_at("hbm") == 100 and a.bytes_at("vmem") == 0
    assert Cost().memory_bound_s == 0.0 and Cost().utilization == 0.0 and a.utilization == 0.25


def test_a_roofline_cost_without_memory_levels_is_bound_by_compute():
    from hardware_models.cost.model import roofline_cost

    c = roofline_cost(100, 100, 2e-6, {}, {}, 3e-6, 1e-6)
    assert (c.time_s, c.schedule_s, c.memory_s) == (pytest.approx(4e-6), pytest.approx(2e-6), ())
