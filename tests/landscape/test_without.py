"""`--without PASS` on estimate and compare: a what-if that leaves one of the compiler's choices
out (a fusion, a fold), validated against the target's pipeline; the passes that build what
costing reads are refused by name, never costed as a silent zero."""

from __future__ import annotations

import json

import pytest

from hardware_models.pipelines import LEAVABLE, compile_plan, leavable_passes, pass_names
from hardware_models.target import get_target
from reference.errors import UnknownName

pytestmark = [pytest.mark.torch, pytest.mark.jax]


def _estimate(capsys, *args):
    from landscape.cli import main

    assert main(["estimate", "softmax", "--target", "h100", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_without_fusion_costs_more_kernels_and_says_so(capsys):
    """Rule: leaving fuse_elementwise out runs softmax's ops as kernels of their own: more kernels,
    more main-memory traffic, no less time; the note names the what-if."""
    fused, unfused = _estimate(capsys), _estimate(capsys, "--without", "fuse_elementwise")
    assert unfused["kernels"] > fused["kernels"]
    assert unfused["total_time_s"] >= fused["total_time_s"] and unfused["bytes"]["hbm"] > fused["bytes"]["hbm"]
    assert any("compiled without fuse_elementwise" in n for n in unfused["notes"])
    assert not any("compiled without" in n for n in fused["notes"])


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--without", "place_buffers"], "place_buffers builds what costing reads"),
        (["--without", "stickify"], "'stickify'"),  # a Spyre pass: not in the GPU's pipeline
        (["--without", "nope"], "'nope'"),
        (["--without", "fuse_elementwise", "--without", "fuse_elementwise"], "fuse_elementwise is given twice"),
    ],
)
def test_a_pass_that_cannot_be_left_out_is_one_line_naming_those_that_can(capsys, args, needle):
    from landscape.cli import main

    assert main(["estimate", "softmax", "--target", "h100", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err and "valid: fold_upcasts, fuse_elementwise, fuse_attention" in err


def test_compare_leaves_the_pass_out_where_each_pipeline_has_it(capsys):
    """insert_restickify is Spyre's: compare on h100 and spyre takes it, and costs both targets;
    on h100 alone it is refused."""
    from landscape.cli import main

    assert (
        main(
            [
                "compare",
                "softmax",
                "--targets",
                "h100,spyre",
                "--without",
                "insert_restickify",
                "--without",
                "fuse_elementwise",
                "--json",
            ]
        )
        == 0
    )
    (result,) = json.loads(capsys.readouterr().out)["comparisons"]
    assert result["workload"]["without"] == ["insert_restickify", "fuse_elementwise"]
    assert all(r.get("time_s") for r in result["results"])
    assert main(["compare", "softmax", "--targets", "h100", "--without", "insert_restickify"]) == 2
    assert "valid:" in capsys.readouterr().err


def test_leavable_passes_are_the_pipelines_choices_and_the_rest_refused_in_python():
    """From Python too: compile_plan refuses a structural pass in `without` (assign_groups would leave
    no groups, a plan that costs 0 s), and every leavable pass of every family compiles without it."""
    from jax_side.lower import lower_entry
    from reference.catalogue import CATALOGUE

    module = lower_entry("block", CATALOGUE["block"].resolve({}), "bfloat16").module
    for name in ("h100", "tpu-v5e", "wse-3", "groq-lpu", "spyre", "host-cpu"):
        target = get_target(name)
        assert set(leavable_passes([target])) == set(pass_names(target)) & set(LEAVABLE)
        for leavable in leavable_passes([target]):
            assert compile_plan(module, target, without=(leavable,)).groups
        with pytest.raises(UnknownName, match="assign_groups"):
            compile_plan(module, target, without=("assign_groups",))
