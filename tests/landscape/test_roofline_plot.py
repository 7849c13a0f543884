"""landscape/roofline_plot.py: the title counts every kernel of the estimate's table and says why
some are not drawn; the ceilings are labelled sustained; the biggest kernels are named."""

from __future__ import annotations

from hardware_models.estimate import estimate
from hardware_models.target import get_target
from landscape.roofline_plot import biggest, kernel_counts, plot_roofline, roofline_title
from tests.hardware_models.programs import program, t


def _gemm_then_transposes():
    x, w, y, yt = t((256, 512)), t((512, 1024)), t((256, 1024)), t((1024, 256))
    return program(
        {"x": x, "w": w},
        [
            f"%0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : ({x}, {w}) -> {y}",
            f"%1 = stablehlo.transpose %0, dims = [1, 0] : ({y}) -> {yt}",
            f"%2 = stablehlo.exponential %1 : {yt}",
            f"%3 = stablehlo.transpose %2, dims = [1, 0] : ({yt}) -> {y}",
        ],
        "%3",
        y,
    )


def test_the_title_counts_the_kernels_that_are_not_drawn(tmp_path):
    # On the LPU each op is its own kernel: a matmul (drawn), two transposes (data only) and an
    # exponential (a transcendental: no FLOPs). The old title said "1 kernels".
    target = get_target("groq-lpu")
    est = estimate(_gemm_then_transposes(), target, "toy")
    points = plot_roofline(est, target, str(tmp_path / "r.svg"))
    assert kernel_counts(est, points) == {"kernels": 4, "drawn": 1, "data_only": 2, "no_flops": 1, "off_main": 0}
    title = roofline_title(est, target, points)
    assert title.startswith("toy on groq-lpu: 1 of 4 kernels drawn; 2 move data only")
    assert "1 count no FLOPs" in title


def test_ceilings_are_labelled_sustained_and_the_biggest_kernels_named(tmp_path):
    target = get_target("h100")
    est = estimate(_gemm_then_transposes(), target, "toy")
    png, svg = tmp_path / "r.png", tmp_path / "r.svg"
    points = plot_roofline(est, target, [png, svg])  # one figure, saved twice
    text = svg.read_text()
    assert png.stat().st_size > 1000
    assert text.count("sustained") >= 2  # a memory and a compute ceiling, never called a peak
    assert "largest kernels (time × repeats)" in text and "1. dot_general" in text
    assert [p.group for p, _ in biggest(est, points)] == [0]


def test_the_svg_is_the_same_on_every_run(tmp_path):
    target = get_target("tpu-v5e")
    est = estimate(_gemm_then_transposes(), target, "toy")
    plot_roofline(est, target, str(tmp_path / "a.svg"))
    plot_roofline(est, target, str(tmp_path / "b.svg"))
    assert (tmp_path / "a.svg").read_text() == (tmp_path / "b.svg").read_text()
