"""allocate_sram (LPU): every computed value's SRAM slot, worked by hand for a small program, and
the allocator's two rules on every statically scheduled plan: no slot is read before it is
written, and no slot is overwritten while it is still live."""

from __future__ import annotations

import pytest

from hardware_models.families.lpu.plan import LpuState
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from tests.hardware_models.cost.test_cost_records import _fallback
from tests.hardware_models.passes.test_schedule_static import _program, _target
from tests.hardware_models.programs import linear_gelu, softmax
from tests.hardware_models.test_survivors import _regional

PROGRAMS = {
    "five_units": lambda: _program(),
    "linear_gelu": lambda: linear_gelu(65, 129, 63, "bf16"),
    "softmax": lambda: softmax(63, 129, "f32"),
    "fallback": _fallback,
    "regional": lambda: _regional(3),
}


def test_slots_of_five_ops_by_hand():
    """The schedule of test_schedule_static (slice 0-15, exp 25-89, transpose 63-575, reduce
    593-657, dot 113-1117) and values of 1024 x 320 f16 (655,360 B; the row sums 640 B):
    the slice's result lives 0-89 (exp reads it), exp's 25-1117 (the dot reads it last), the
    transpose's 63-657 (the reduce), and the two results to the end, 1117. First fit in the order
    written: slice at 0, exp above it, the transpose above that; the dot's result, written at 113,
    takes offset 0 again, free since cycle 89; the sums, at 593, go above the transpose's.
    Peak 3 x 655,360 + 640 B = 1.97 MB; the arguments are 1024 x 640 + 320 x 320 f16 = 1.52 MB."""
    plan = compile_plan(_program(), _target())
    V = 1024 * 320 * 2
    got = [(s.offset, s.size, s.written, s.freed) for s in LpuState.of(plan).sram.values()]
    assert got == [(0, V, 0, 89), (V, V, 25, 1117), (2 * V, V, 63, 657), (0, V, 113, 1117), (3 * V, 640, 593, 1117)]
    assert (
        plan.notes[-1]
        == "SRAM: at most 1.97 MB of computed values live at once, beside 1.52 MB of arguments, of 208 MB usable a chip"
    )


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_no_slot_is_read_before_it_is_written_nor_overwritten_while_live(program):
    plan = compile_plan(PROGRAMS[program](), get_target("groq-lpu"))
    graph = plan.value_graph()
    owner = {i: g.id for g in plan.groups for i in g.members}
    assert LpuState.of(plan).sram
    ends = {}
    for g in plan.groups:
        if g.id in plan.schedule:
            timeline = plan.timeline(g.instance)
            ends[timeline] = max(ends.get(timeline, 0), plan.schedule[g.id].finish)
    for value, s in LpuState.of(plan).sram.items():
        producer = plan.groups[owner[graph.producer[value]]]
        assert s.timeline == plan.timeline(producer.instance) and s.written == plan.schedule[producer.id].start
        assert s.size == graph.nbytes(value) and s.written <= s.freed
        last = s.written
        for user in graph.users(value):
            reader = plan.schedule.get(owner.get(user, -1))
            if user < 0 or reader is None or plan.timeline(plan.groups[owner[user]].instance) != s.timeline:
                last = ends[s.timeline]  # returned or read elsewhere: live to the end of its timeline
                continue
            assert s.written <= reader.start, (value, user)  # written before it is read
            assert reader.finish <= s.freed, (value, user)  # live until its last reader is done
            last = max(last, reader.finish)
        assert s.freed == last, value  # and not a cycle longer
    slots = list(LpuState.of(plan).sram.items())
    for i, (a, x) in enumerate(slots):
        for b, y in slots[i + 1 :]:
            if x.timeline != y.timeline or x.size == 0 or y.size == 0:
                continue
            share_address = x.offset < y.offset + y.size and y.offset < x.offset + x.size
            share_cycles = x.written < y.freed and y.written < x.freed
            assert not (share_address and share_cycles), (a, x, b, y)


def test_first_fit_takes_the_lowest_gap_that_holds_the_value():
    from hardware_models.families.lpu.allocate_sram import first_fit

    assert first_fit([], 10) == 0
    assert first_fit([(0, 4), (10, 4)], 6) == 4 and first_fit([(0, 4), (10, 4)], 7) == 14
    assert first_fit([(5, 5)], 5) == 0 and first_fit([(5, 5)], 6) == 10


def test_only_a_statically_scheduled_target_places_values_in_sram():
    for name in ("h100", "tpu-v5e", "spyre", "wse-3"):
        assert LpuState.of(compile_plan(softmax(63, 129), get_target(name))).sram == {}
