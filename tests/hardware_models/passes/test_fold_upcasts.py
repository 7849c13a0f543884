"""fold_upcasts: a contraction over exact upcasts runs in the narrow type with wide accumulation,
as XLA and cuBLAS run it; only exact widenings fold; each fold is recorded in the plan."""

from __future__ import annotations

import pytest

from hardware_models.estimate import estimate
from hardware_models.families.gpu.cost import contraction_peak
from hardware_models.passes.fold_upcasts import FLOAT_BITS, widens_exactly
from hardware_models.pipelines import compile_plan, pass_names
from hardware_models.target import get_target
from tests.hardware_models.programs import program, t

M, N, K = 2048, 3072, 768


def torch_mlir_linear(x_type: str = "bf16", w_type: str = "bf16", wide: str = "f32"):
    """y = x @ w.T + b as torch-mlir lowers a bf16 nn.Linear with a bias: both operands converted to
    f32 (the weight through its transpose), an f32 dot, the bias added in f32, the result narrowed."""
    x, w, b = t((M, K), x_type), t((N, K), w_type), t((N,), "bf16")
    xf, wf, wt, y, bf = t((M, K), wide), t((N, K), wide), t((K, N), wide), t((M, N), wide), t((N,), wide)
    body = [
        *([f"%0 = stablehlo.convert %x : ({x}) -> {xf}"] if x_type != wide else ["%0 = stablehlo.negate %x : " + xf]),
        *([f"%1 = stablehlo.convert %w : ({w}) -> {wf}"] if w_type != wide else ["%1 = stablehlo.negate %w : " + wf]),
        f"%2 = stablehlo.transpose %1, dims = [1, 0] : ({wf}) -> {wt}",
        f"%3 = stablehlo.dot_general %0, %2, contracting_dims = [1] x [0] : ({xf}, {wt}) -> {y}",
        f"%4 = stablehlo.convert %b : ({b}) -> {bf}",
        f"%5 = stablehlo.broadcast_in_dim %4, dims = [1] : ({bf}) -> {y}",
        f"%6 = stablehlo.add %3, %5 : {y}",
        f"%7 = stablehlo.convert %6 : ({y}) -> {t((M, N), 'bf16')}",
    ]
    return program({"x": x, "w": w, "b": b}, body, "%7", t((M, N), "bf16"))


def _contraction(plan):
    (g,) = [g for g in plan.groups if g.kind == "contraction"]
    return g


def test_the_bf16_linear_with_bias_runs_as_a_bf16_dot_on_the_h100s_tensor_cores():
    """The f32 dot over two bf16 upcasts becomes a bf16 dot (f32 accumulation): its tile is bf16, the
    two convert kernels are gone, both folds are recorded, and the dot's time drops by more than 6x
    (tensor cores against CUDA cores: the H100's peak ratio, 989 / 61.9 = 16x, less memory time)."""
    h100 = get_target("h100")
    module = torch_mlir_linear()
    folded = compile_plan(module, h100)
    unfolded = compile_plan(module, h100, without=("fold_upcasts",))
    assert folded.tilings[_contraction(folded).id].shape.dtype == "bf16"
    assert unfolded.tilings[_contraction(unfolded).id].shape.dtype == "f32"
    assert [(f.narrow, f.wide, f.convert_removed) for f in folded.folds] == [("bf16", "f32", True)] * 2
    assert len(unfolded.groups) - len(folded.groups) == 2  # the two convert kernels
    assert contraction_peak(h100, "bf16") / contraction_peak(h100, "f32") > 15
    dot_time = {
        name: next(g.cost.time_s for g in estimate(module, h100, "", plan).groups if g.kind == "contraction")
        for name, plan in (("folded", folded), ("unfolded", unfolded))
    }
    assert dot_time["unfolded"] / dot_time["folded"] > 6
    # the record is printable data, read by estimate --plan and compare
    assert "fold: dot_general at" in folded.render() and "bf16->f32" in folded.render()
    assert folded.to_dict()["folds"][0]["from"] == "bf16"
    # bytes: x's convert read 2 and wrote 4 bytes an element and the dot read 4 instead of 2
    assert folded.folds[0].saved_bytes == M * K * (2 + 4 + 4 - 2)
    assert sum(f.saved_bytes for f in folded.folds) == pytest.approx(31.5e6, rel=2e-3)  # the module's worked number


def test_the_fold_runs_where_the_compiler_does_it():
    """XLA (TPU), Inductor and cuBLAS (GPU) and torch-spyre (an Inductor back end) fold; the LPU and
    wafer pipelines do not (their family modules say why)."""
    for name in ("h100", "tpu-v5e", "spyre"):
        assert "fold_upcasts" in pass_names(get_target(name))
        assert len(compile_plan(torch_mlir_linear(), get_target(name)).folds) == 2
    for name in ("groq-lpu", "wse-3"):
        assert "fold_upcasts" not in pass_names(get_target(name))


@pytest.mark.parametrize(
    "narrow, wide, exact",
    [
        ("bf16", "f32", True),
        ("f16", "f32", True),
        ("f32", "f64", True),
        ("f8E4M3FN", "f16", True),
        ("f32", "bf16", False),
        ("f16", "bf16", False),
        ("bf16", "f16", False),
        ("f64", "f32", False),
        ("bf16", "bf16", False),
    ],
)
def test_only_a_widening_that_keeps_every_value_counts_as_exact(narrow, wide, exact):
    """A conversion is exact when the wide type has at least the narrow one's exponent and
    significand bits (IEEE 754: bf16 8/7, f16 5/10, f32 8/23): f16 -> bf16 loses significand bits."""
    assert widens_exactly(narrow, wide) is exact
    assert FLOAT_BITS["bf16"] == (8, 7) and FLOAT_BITS["f16"] == (5, 10)


def test_a_downcast_or_an_inexact_convert_is_never_folded():
    """dot(convert(f32 -> bf16)) and dot(convert(f16 -> bf16)) change values: no fold, the
    converts stay kernels; the dot keeps the type it was written in."""
    h100 = get_target("h100")
    for source in ("f32", "f16"):
        x, w = t((64, 64), source), t((64, 64), source)
        xb, y = t((64, 64), "bf16"), t((64, 64), "f32")
        module = program(
            {"x": x, "w": w},
            [
                f"%0 = stablehlo.convert %x : ({x}) -> {xb}",
                f"%1 = stablehlo.convert %w : ({w}) -> {xb}",
                f"%2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] : ({xb}, {xb}) -> {y}",
            ],
            "%2",
            y,
        )
        plan = compile_plan(module, h100)
        assert plan.folds == () and sum(g.kind == "fusion" for g in plan.groups) == 2


def test_operands_that_would_end_up_in_different_types_are_not_folded():
    """dot(convert(x: bf16), w: f32): narrowing only x would round nothing, but the dot would mix
    bf16 and f32 operands, which is not the same product in bf16: XLA leaves it, and so does the pass."""
    plan = compile_plan(torch_mlir_linear(w_type="f32"), get_target("h100"))
    assert plan.folds == ()
    assert plan.tilings[_contraction(plan).id].shape.dtype == "f32"


def test_an_upcast_read_elsewhere_too_stays_a_kernel_and_the_dot_still_folds():
    """The convert's other reader still needs the f32 value: the dot reads bf16, the convert stays."""
    x, xf, y = t((64, 64), "bf16"), t((64, 64), "f32"), t((64, 64), "f32")
    module = program(
        {"x": x},
        [
            f"%0 = stablehlo.convert %x : ({x}) -> {xf}",
            f"%1 = stablehlo.dot_general %0, %0, contracting_dims = [1] x [0] : ({xf}, {xf}) -> {y}",
            f"%2 = stablehlo.add %1, %0 : {y}",
        ],
        "%2",
        y,
    )
    plan = compile_plan(module, get_target("tpu-v5e"))
    assert plan.tilings[_contraction(plan).id].shape.dtype == "bf16"
    assert any("convert" in [plan.ops[i].op.short_name for i in g.members] for g in plan.groups)
    assert len(plan.folds) == 2 and not any(f.convert_removed for f in plan.folds)


def test_each_fold_by_hand_the_ops_rewritten_and_the_bytes_no_longer_moved():
    """torch_mlir_linear at 64 x 96 x 32: x's convert feeds the dot directly; w's convert feeds
    it through a transpose, which now carries bf16 and reads w itself. Each fold saves the wide
    read the dot no longer does less the narrow one, plus the convert kernel's read and write:
    x: (f32 - bf16) + (bf16 + f32) = 2 x 64 x 32 x 4 B, w: 2 x 96 x 32 x 4 B. The bias's convert,
    read by an add, stays."""
    global M, N, K
    saved = (M, N, K)
    M, N, K = 64, 96, 32
    try:
        module = torch_mlir_linear()
    finally:
        M, N, K = saved
    plan = compile_plan(module, get_target("h100"))
    assert [(f.op, f.narrow, f.wide, f.saved_bytes, f.convert_removed) for f in plan.folds] == [
        ("dot_general", "bf16", "f32", 2 * 64 * 32 * 4, True),
        ("dot_general", "bf16", "f32", 2 * 96 * 32 * 4, True),
    ]
    assert all(f.where for f in plan.folds)
    by_name = {p.op.short_name: p for p in plan.ops if p.op.short_name in ("transpose", "dot_general")}
    transpose, dot = by_name["transpose"], by_name["dot_general"]
    assert [t.dtype for t in transpose.op.operand_types] == ["bf16"] and transpose.op.result_types[0].dtype == "bf16"
    assert transpose.op.operands == ("%arg1",)
    assert [t.dtype for t in dot.op.operand_types] == ["bf16", "bf16"] and dot.op.operands[0] == "%arg0"
    names = [p.op.name for p in plan.ops]
    assert (
        names.count("landscape.folded_convert") == 2 and names.count("stablehlo.convert") == 2
    )  # the bias's and the result's


def test_an_upcast_read_elsewhere_too_folds_but_its_convert_still_runs():
    """x's f32 copy is also returned: the dot reads bf16, but the convert kernel stays, so the
    fold saves only the dot's wider read, 64 x 32 x (4 - 2) B."""
    x, w, y = t((64, 32), "bf16"), t((32, 96), "bf16"), t((64, 96), "f32")
    xf, wf = t((64, 32), "f32"), t((32, 96), "f32")
    module = program(
        {"x": x, "w": w},
        [
            f"%0 = stablehlo.convert %x : ({x}) -> {xf}",
            f"%1 = stablehlo.convert %w : ({w}) -> {wf}",
            f"%2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] : ({xf}, {wf}) -> {y}",
            f"%3 = stablehlo.add %0, %0 : {xf}",
        ],
        "%2",
        y,
    )
    plan = compile_plan(module, get_target("h100"))
    folds = {f.saved_bytes: f.convert_removed for f in plan.folds}
    assert folds == {64 * 32 * 2: False, 2 * 32 * 96 * 4: True}
