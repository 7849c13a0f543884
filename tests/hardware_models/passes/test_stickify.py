"""stickify: the stick dimension padded to whole 128-byte sticks, once, with ceiling division."""

from __future__ import annotations

import pytest

from hardware_models.families.spyre.plan import SpyreState
from hardware_models.families.spyre.stickify import stick_layout
from hardware_models.pipelines import compile_plan
from hardware_models.target import get_target
from tests.hardware_models.programs import program, t

SPYRE = get_target("spyre")


def test_a_65_element_fp16_tensor_occupies_two_sticks():
    """tensors_and_layouts.md: fp16 (65,) -> device [2, 64]."""
    layout = stick_layout((65,), "f16", SPYRE)
    assert layout.device_shape == (2, 64) and layout.sticks == 2 and layout.padded_bytes == 256


def test_a_5_100_150_tensor_occupies_1500_sticks():
    """tensors_and_layouts.md: (5, 100, 150) -> [100, 3, 5, 64]: 1500 sticks of 64."""
    layout = stick_layout((5, 100, 150), "f16", SPYRE)
    assert layout.sticks == 100 * 3 * 5 and layout.elements_per_stick == 64


@pytest.mark.parametrize("n", [1, 63, 64, 65, 129, 150])
def test_padding_is_ceil_division_with_less_than_one_stick_of_waste(n):
    layout = stick_layout((3, n), "f16", SPYRE)
    assert layout.sticks_along == -(-n // 64) and 0 <= layout.sticks_along * 64 - n < 64


def test_emulated_types_are_laid_out_at_the_width_they_run_as():
    # f32 runs as f16 on Spyre: resolve_dtypes decides it once, stickify reads the plan
    v = t((65,), "f32")
    plan = compile_plan(program({"a": v}, [f"%0 = stablehlo.negate %a : {v}"], "%0", v), SPYRE, stop_after="stickify")
    assert plan.runs_as("f32") == "f16"
    assert {layout.elements_per_stick for layout in SpyreState.of(plan).layouts.values()} == {64}


def test_padding_waste_is_reported():
    v = t((65,), "f16")
    plan = compile_plan(program({"a": v}, [f"%0 = stablehlo.negate %a : {v}"], "%0", v), SPYRE, stop_after="stickify")
    # two tensors of 2 sticks (512 bytes), 260 of them data
    assert "stick padding: 252 of the 512 bytes between kernels (49.2%) are padding" in plan.notes


def test_every_tensor_between_kernels_gets_a_layout():
    v = t((65,), "f16")
    module = program(
        {"a": v},
        [f"%0 = stablehlo.negate %a : {v}", f"%1 = stablehlo.transpose %0, dims = [0] : ({v}) -> {v}"],
        "%1",
        v,
    )
    plan = compile_plan(module, SPYRE, stop_after="stickify")
    assert (
        all(layout.sticks == 2 for layout in SpyreState.of(plan).layouts.values())
        and len(SpyreState.of(plan).layouts) == 2
    )


def test_stick_layouts_by_hand_for_each_element_size_and_stick_dimension():
    """128-byte sticks: 64 fp16, 32 f32, 128 i8 elements; the last dimension by default, the one
    asked for otherwise; a scalar's stick dimension is 0, and a 1-bit predicate counts as a byte."""
    from hardware_models.families.spyre.stickify import stick_layout

    spyre = get_target("spyre")
    f16 = stick_layout((63, 65), "f16", spyre)
    assert (f16.stick_dim, f16.elements_per_stick, f16.stick_bytes, f16.sticks) == (1, 64, 128, 63 * 2)
    f32 = stick_layout((63, 65), "f32", spyre, stick_dim=0)
    assert (f32.stick_dim, f32.elements_per_stick, f32.sticks) == (0, 32, 2 * 65)
    assert stick_layout((65,), "i8", spyre).elements_per_stick == 128
    assert stick_layout((), "f16", spyre).stick_dim == 0
    assert stick_layout((3, 5), "i1", spyre).elements_per_stick == 128
