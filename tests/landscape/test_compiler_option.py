"""`estimate --compiler NAME`: one of the target family's compilers, recorded in the plan and
costed by its own model; a name the family lacks is refused in one line before any lowering."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.torch, pytest.mark.jax]


def _plan(capsys, *args):
    from landscape.cli import main

    assert main(["estimate", "softmax", "--target", "host-cpu", "--plan", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_host_cpus_xla_compiler_is_chosen_by_name_and_recorded(capsys):
    """Rule (families/cpu/__init__.py): the host CPU's usual compiler is Inductor's; --compiler xla runs
    XLA:CPU's pipeline, whose fusion ends a kernel at each reduction, so softmax's two
    reductions (max, sum) cannot share one kernel with what follows them as Inductor's may."""
    usual, xla = _plan(capsys), _plan(capsys, "--compiler", "xla")
    assert (usual["plan"]["compiler"], xla["plan"]["compiler"]) == ("inductor", "xla")
    assert xla["kernels"] >= usual["kernels"]
    assert xla["total_time_s"] > 0 and usual["total_time_s"] > 0


def test_a_compiler_the_family_lacks_is_refused_in_one_line_naming_its_own(capsys):
    from landscape.cli import main

    assert main(["estimate", "softmax", "--target", "h100", "--compiler", "xla"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown compiler for the gpu family 'xla'" in err and "inductor" in err
    assert "\n" not in err and "Traceback" not in err


def test_the_chosen_compiler_is_in_the_json_and_the_title_and_checks_without(capsys):
    """--without is checked against the chosen compiler's passes: XLA:CPU's has no fuse_attention."""
    from landscape.cli import main

    xla = _plan(capsys, "--compiler", "xla")
    assert xla["compiler"] == "xla" and xla["name"].endswith(" by xla")
    args = ["estimate", "softmax", "--target", "host-cpu", "--compiler", "xla", "--without", "fuse_attention"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after host-cpu's note when this CPU is another
    assert err.startswith("landscape: error: unknown pass to leave out (--without) on host-cpu 'fuse_attention'")
    assert err.endswith("valid: fold_upcasts, fuse_elementwise")
    assert main(["estimate", "softmax", "--target", "host-cpu", "--compiler", ""]) == 2
    assert "unknown compiler for the cpu family ''" in capsys.readouterr().err
