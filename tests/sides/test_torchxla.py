"""The third path: the catalogue's PyTorch modules through torch-xla (torchxla_side, a driver in
.venv-torchxla on XLA's CPU device).

What is proved, where the venv is built (`make torch-xla`; otherwise skipped, saying so):
torch-xla's numerics meet the tolerance table for every swept entry (every kernel and the tiny
model) in float32 and bfloat16, at their defaults, at odd sizes and with every choice, and for
gpt2-small, the one other published model small enough to run here; every
kernel lowers with no op left unknown; its programs are the same computation as torch-mlir's
(the same contractions, the weights' bytes); the regional lowering of a model counts what the
other paths count; the CLI takes torch-xla wherever it takes a side. Without the venv (always
tested): one line naming `make torch-xla`, exit 2.
"""

from __future__ import annotations

import itertools
import json

import pytest

from reference.catalogue import CATALOGUE
from tests.shape_cases import SWEPT, mixed_shapes, themed_shapes
from torchxla_side import available, unavailable_reason

KERNEL_NAMES = [n for n, e in CATALOGUE.items() if e.kind == "kernel"]

# One worker runs this module (`make test` distributes by --dist loadgroup): its module fixtures
# start torch-xla's driver once, not once per worker.
pytestmark = pytest.mark.xdist_group("torchxla")
needs_venv = pytest.mark.skipif(not available(), reason=unavailable_reason() + " (not built here)")
DTYPES = ("float32", "bfloat16")


def _cases() -> list[tuple[str, dict, str, int]]:
    """(entry, shape overrides, dtype, seed): defaults, odd sizes (65, and each dimension different),
    and every combination of the entry's choices."""
    out = []
    for name, dtype in itertools.product(SWEPT, DTYPES):
        out += [
            (name, {}, dtype, 0),
            (name, themed_shapes(name, 65), dtype, 65),
            (name, mixed_shapes(name, 1), dtype, 1),
        ]
        choices = [p for p in CATALOGUE[name].params if p.choices]
        for i, values in enumerate(itertools.product(*(p.choices for p in choices))):
            if i:  # the first combination is the defaults, already above
                out.append((name, {p.name: v for p, v in zip(choices, values)}, dtype, i))
    # the published models that run here (under reference.agreement.RUN_PARAMETER_LIMIT): gpt2-small, whole
    out += [("gpt2-small", {"seq": 9}, dtype, 0) for dtype in DTYPES]
    return out


CASES = _cases()


def _case_id(case) -> str:
    name, shapes, dtype, seed = case
    return f"{name}-{dtype}-{seed}-" + ",".join(f"{k}={v}" for k, v in shapes.items())


@pytest.fixture(scope="module")
def xla_outputs():
    """Every case run in one driver process (torch-xla's import, about 5 s, paid once)."""
    from reference.catalogue import get_entry
    from reference.inputs import make_case
    from torchxla_side.run import run_cases

    cases = []
    for name, shapes, dtype, seed in CASES:
        entry = get_entry(name)
        cases.append(make_case(entry, entry.resolve(shapes), dtype, seed))
    return dict(zip(map(_case_id, CASES), zip(cases, run_cases(cases, strict=False))))


@needs_venv
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_torchxla_agrees_with_the_reference(case, xla_outputs):
    from reference.agreement import compare_outputs

    built, outputs = xla_outputs[_case_id(case)]
    if isinstance(outputs, Exception):
        raise outputs
    entry = built.entry
    reduction = entry.reduction(built.shapes) if entry.reduction else 0
    result = compare_outputs(entry.name, built.dtype, built.reference(), {"torch-xla": outputs}, reduction=reduction)
    assert result.ok, {k: v.to_dict() for k, v in result.errors.items()}


def contraction_flops(module) -> int:
    """FLOPs of the dot_generals and convolutions as executed (a regional block's once per layer)."""
    from reference.ir.counters import op_cost

    def walk(ops, times):
        total = 0
        for op in ops:
            if op.short_name == "call" and op.callee:
                total += walk(module.function(op.callee).ops, times * (op.trip_count or 1))
            elif op.short_name in ("dot_general", "convolution"):
                total += times * op_cost(op, module).flops
        return total

    return walk(module.main.ops, 1)


@pytest.fixture(scope="module")
def kernel_lowerings():
    """Every kernel lowered by torch-xla and by torch-mlir, in bfloat16, at its defaults."""
    from reference.catalogue import KERNELS, get_entry
    from torchxla_side.lower import _lowerings

    jobs = [
        {"kind": "lower", "name": n, "shapes": get_entry(n).resolve({}), "dtype": "bfloat16", "part": None}
        for n in KERNELS
    ]
    return dict(zip(KERNELS, _lowerings("kernels", jobs)))


@needs_venv
@pytest.mark.torch
def test_every_kernel_lowers_with_no_unknown_op_and_the_same_contractions(kernel_lowerings):
    """torch-xla's program computes what torch-mlir's does: the same dot_general and convolution
    FLOPs, and the same weight bytes; no op is left opaque (GELU's `custom_call @mhlo.erf` is
    read as erf, LayerNorm's batch_norm_training is a known op)."""
    from pytorch_side.lower import lower_entry
    from reference.catalogue import get_entry
    from reference.ir.counters import module_stats

    for name, xla in kernel_lowerings.items():
        stats = module_stats(xla.module, xla.param_args)
        assert not stats.unknown_ops, (name, stats.unknown_ops)
        mlir = lower_entry(name, get_entry(name).resolve({}), "bfloat16")
        assert contraction_flops(xla.module) == contraction_flops(mlir.module), name
        assert stats.param_bytes == module_stats(mlir.module, mlir.param_args).param_bytes, name


MODED = [n for n in KERNEL_NAMES if any(p.name == "mode" for p in CATALOGUE[n].params)]
ODD_JOBS = [(n, themed_shapes(n, 65)) for n in KERNEL_NAMES] + [
    (n, {"mode": "decode", **extra}) for n in MODED for extra in ({}, {"seq": 1}, {"seq": 65})
]


@pytest.fixture(scope="module")
def odd_lowerings():
    """Every kernel at odd sizes (65), and each one with a mode as one decode step at its default
    cache length, at 1 and at 65 (a boolean cache mask torch-xla writes as packed bits), in bfloat16
    and float32: one driver call."""
    from reference.catalogue import get_entry
    from torchxla_side.lower import _lowerings

    jobs = [
        {"kind": "lower", "name": n, "shapes": get_entry(n).resolve(shapes), "dtype": dtype, "part": None}
        for n, shapes in ODD_JOBS
        for dtype in ("bfloat16", "float32")
    ]
    return list(
        zip(
            [(n, shapes, dtype) for n, shapes in ODD_JOBS for dtype in ("bfloat16", "float32")], _lowerings("odd", jobs)
        )
    )


@needs_venv
@pytest.mark.torch
def test_odd_sizes_and_decode_steps_import_and_compute_what_torch_mlir_computes(odd_lowerings):
    """Property: every such program imports with no op unknown, and where it carries a mode our
    interpreter runs it to exactly what it runs torch-mlir's program of the same module to, on
    the same seeded arguments (matched by name: torch-xla orders the caches its own way), so the
    unpacked mask selects the same cache position."""
    import numpy as np

    from pytorch_side.lower import lower_entry
    from reference.catalogue import get_entry
    from reference.ir.counters import module_stats
    from reference.ir.interpret import arguments_for, run_module, seeded_arguments

    for (name, shapes, dtype), xla in odd_lowerings:
        assert not module_stats(xla.module, xla.param_args).unknown_ops, (name, shapes, dtype)
        if shapes.get("mode") != "decode" or dtype != "float32":
            continue
        mlir = lower_entry(name, get_entry(name).resolve(shapes), dtype)
        args = seeded_arguments(mlir.module, 3)
        want = run_module(mlir.module, args)
        named = dict(zip(mlir.module.main.arg_names, args))
        got = run_module(xla.module, arguments_for(xla.module, named))
        for a, b in zip(got, want):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5, err_msg=f"{name} {shapes}")


@needs_venv
@pytest.mark.torch
@pytest.mark.jax
def test_compare_all_sides_takes_a_decode_step(capsys):
    """The reported failure: `compare block --sides all` (its decode step's mask a packed i1 constant)."""
    from landscape.cli import main

    assert main(["compare", "block", "--sides", "all", "--phase", "decode", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["comparisons"]
    assert result["sides"] == ["torch", "jax", "torch-xla"]
    assert all("time_s" in r for r in result["results"])


@needs_venv
def test_composites_kept_whole(kernel_lowerings):
    """What docs/lowering.md's walk-through says of torch-xla: GELU's erf stays one op (an MHLO op carried
    by custom_call), LayerNorm is one batch_norm_training, and a bf16 linear is a bf16 dot with
    no upcast; each is costed by a rule, never as a fallback."""
    from reference.ir.counters import module_stats

    gelu, layernorm, linear = (module_stats(kernel_lowerings[n].module).ops for n in ("gelu", "layernorm", "linear"))
    assert gelu.get("mhlo.erf") == 1 and "stablehlo.custom_call" not in gelu
    assert layernorm.get("stablehlo.batch_norm_training") == 1 and "stablehlo.reduce" not in layernorm
    assert "stablehlo.convert" not in linear
    dot = next(o for o in kernel_lowerings["linear"].module.main.ops if o.short_name == "dot_general")
    assert dot.result_types[0].dtype == "bf16" and all(t.dtype == "bf16" for t in dot.operand_types)


@needs_venv
@pytest.mark.torch
@pytest.mark.jax
def test_regional_model_counts_what_the_other_paths_count():
    """tiny lowered regionally (prologue, one block called per layer, epilogue) on all three
    paths: the weights' bytes and the contractions' FLOPs (layers included) are equal; the rest
    (norms, RoPE, softmax, decomposed differently) keeps the total within 1% at this small size
    (0.013% at llama-3.1-8b's)."""
    from landscape.lowering import lower_named
    from reference.ir.counters import module_stats

    lowered = {side: lower_named("tiny", side, {"seq": 65}, "bfloat16") for side in ("torch", "jax", "torch-xla")}
    stats = {side: module_stats(low.module, low.param_args) for side, low in lowered.items()}
    assert stats["torch-xla"].param_bytes == stats["torch"].param_bytes == stats["jax"].param_bytes
    assert contraction_flops(lowered["torch-xla"].module) == contraction_flops(lowered["torch"].module) > 0
    assert abs(stats["torch-xla"].flops - stats["torch"].flops) <= 1e-2 * stats["torch"].flops


@needs_venv
@pytest.mark.torch
@pytest.mark.jax
def test_cli_takes_torchxla_wherever_it_takes_a_side(capsys):
    from landscape.cli import main

    assert main(["hlo", "gelu", "--side", "torch-xla", "--stage", "stablehlo"]) == 0
    assert "@mhlo.erf" in capsys.readouterr().out
    assert main(["stats", "layernorm", "--side", "torch-xla", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ops"]["stablehlo.batch_norm_training"] == 1
    assert main(["diff", "gelu", "--sides", "torch-xla,jax", "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["sides"] == ["torch-xla", "jax"]
    assert any(
        "composite op kept whole on one path (erf, erfc)" in r for d in diff["divergences"] for r in d["reasons"]
    )
    assert main(["run", "rmsnorm", "--sides", "all", "--dtype", "bf16", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["errors"]) == {
        "torch_vs_ref",
        "jax_vs_ref",
        "torch-xla_vs_ref",
        "torch_vs_jax",
        "torch_vs_torch-xla",
        "jax_vs_torch-xla",
    }


@needs_venv
@pytest.mark.torch
@pytest.mark.jax
def test_compare_costs_three_paths_on_every_family(capsys):
    """`compare --sides all`: each path on one target per family, and every pair diffed and costed."""
    from hardware_models.families import representative_targets
    from landscape.cli import main

    assert main(["compare", "mlp", "--sides", "all", "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["comparisons"]
    assert result["sides"] == ["torch", "jax", "torch-xla"]
    costed = {(r["target"], r["side"]) for r in result["results"] if "time_s" in r}
    assert costed == {(t, s) for t in result["targets"] for s in result["sides"]} and result["targets"] == list(
        representative_targets()
    )
    assert [p["sides"] for p in result["more_pairs"]] == [["torch", "torch-xla"], ["jax", "torch-xla"]]
    assert all(set(p["difference_cost_s"]) == set(result["targets"]) for p in result["more_pairs"])


@needs_venv
@pytest.mark.torch
@pytest.mark.jax
def test_hlo_xla_stage_is_torchxlas_own_optimized_hlo(capsys):
    """`hlo --stage xla --side torch-xla`: the module run lazily on XLA's CPU device, and the HLO
    XLA compiled for that graph after its passes: a scheduled module whose softmax is fused."""
    from landscape.cli import main

    assert main(["hlo", "softmax", "--side", "torch-xla", "--stage", "xla"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("HloModule SyncTensorsGraph") and "is_scheduled=true" in text
    assert "ENTRY" in text and " fusion(" in text and "f32[64,64]" in text


@needs_venv
@pytest.mark.torch
@pytest.mark.jax
@pytest.mark.parametrize(
    "program, shapes, dtype, fault, first",
    [
        ("block", {}, "bfloat16", None, None),  # weights, buffers (RoPE) and constants as the program's arguments
        ("softmax", {}, "float16", "softmax-no-max", "R1"),
        ("softmax", {}, "float32", "host-sync", "R2"),
        ("softmax", {}, "float32", "shape-branch", "R2"),
    ],
)
def test_debugger_runs_r1_and_r2_on_torchxla(program, shapes, dtype, fault, first):
    """`debug --side torch-xla`: R1 is the module on torch-xla's device, R2 torch_xla.stablehlo's
    program of the captured graph run there on fresh inputs, R3 onwards torch-xla's StableHLO. A
    clean program agrees at every rung; the course's three framework bugs are found at their
    rungs, the capture bugs at the user's line."""
    from landscape.debug import debug

    f = debug(program, "h100", "torch-xla", shapes, dtype, (fault,) if fault else ())
    assert f.side == "torch-xla" and f.first == first, [r.to_dict() for r in f.rungs]
    assert "torch-xla" in next(r for r in f.rungs if r.rung == "R1").note
    if fault is None:
        assert all(r.ran for r in f.rungs) and "the same" in next(r for r in f.rungs if r.rung == "R2").note
    elif first == "R2":
        assert f.origin.op == "the user's line" and f.origin.key.startswith("faults.py:")
        assert f.capture_error if fault == "host-sync" else f.specialized
    else:
        assert f.origin.op == "exponential"


@needs_venv
def test_all_three_paths_are_refused_where_two_are_compared(capsys):
    from landscape.cli import main

    assert main(["diff", "gelu", "--sides", "all"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "landscape: error: diff compares 2 paths; --sides all names 3: torch, jax, torch-xla "
        "(compare --sides takes more)"
    ]


def test_without_the_venv_one_line_names_the_make_target(monkeypatch, capsys, tmp_path):
    """Where .venv-torchxla is absent, torch-xla named is refused before anything is lowered, and
    `--sides all` takes the two paths there are, with a note naming what was left out."""
    import torchxla_side.lower as lower
    from landscape.cli import main

    monkeypatch.setattr(lower, "VENV", tmp_path / "absent")
    for args in (
        ["hlo", "gelu", "--side", "torch-xla"],
        ["diff", "gelu", "--sides", "torch,torch-xla"],
        ["compare", "mlp", "--sides", "torch,jax,torch-xla"],
        ["run", "gelu", "--sides", "torch-xla"],
        ["debug", "softmax", "--side", "torch-xla"],
        ["hlo", "gelu", "--side", "torch-xla", "--stage", "xla"],
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "make torch-xla" in err[0], (args, err)
    assert main(["compare", "mlp", "--sides", "all", "--targets", "h100", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["comparisons"][0]["sides"] == ["torch", "jax"]
    assert "torch-xla left out" in captured.err and "make torch-xla" in captured.err
