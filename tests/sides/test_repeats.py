"""A regional model's block runs `layers` times: every total the estimate reports grows by the
same amount per added layer (bytes per level, FLOPs, padded FLOPs), on every family."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.jax]


@pytest.mark.parametrize("target", ["h100", "tpu-v5e", "spyre", "groq-lpu", "wse-3"])
def test_each_added_layer_adds_the_same_bytes_flops_and_padding(target):
    """totals(L) = prologue + epilogue + L x block, so totals(3) - totals(2) = totals(2) - totals(1):
    a cost dropped or counted twice per repeat (x repeats forgotten) breaks the equality. All three
    run on the chips 3 layers need (the LPU would otherwise add a chip between 2 and 3)."""
    from hardware_models.estimate import estimate
    from hardware_models.pipelines import compile_plan
    from hardware_models.target import get_target
    from landscape.lowering import lower_named

    tgt = get_target(target)
    modules = [
        lower_named("llama-3.2-1b", "jax", {"batch": 1, "seq": 65, "layers": n}, "bfloat16").module for n in (1, 2, 3)
    ]
    last = compile_plan(modules[-1], tgt)
    chips = last.partition.chips if last.partition and last.partition.chips > 1 else None
    totals = []
    for module in modules:
        total = estimate(module, tgt, plan=compile_plan(module, tgt, chips=chips)).total
        totals.append({"flops": total.flops, "padded_flops": total.padded_flops, **dict(total.bytes)})
    one, two, three = totals
    for key in one:
        assert three[key] - two[key] == two[key] - one[key], key
    for key in (
        "flops",
        "padded_flops",
        tgt.main_memory_level,
    ):  # a block adds to each (0 = 0 would hide a lost x repeats)
        assert two[key] > one[key], key
