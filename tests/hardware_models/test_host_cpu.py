"""The host-CPU family's calibration: what the operating system says (parsed from a fake sysfs and
/proc), the calibration's formulas, and the committed target file against the rows it cites (the
cost model's rules: tests/hardware_models/test_host_cpu_cost.py)."""

from __future__ import annotations

import pytest

from hardware_models.families import get_family
from hardware_models.families.cpu.calibration import (
    CONV_SHAPES,
    EIGEN_CONV,
    Measured,
    RowSpec,
    fit,
    plan_rows,
)
from hardware_models.families.cpu.cost import (
    FUNCTIONS,
    MID_GEMM_N,
    SMALL_GEMM_N,
    TINY_GEMM_N,
)
from hardware_models.families.cpu.files import read_rows, refit
from hardware_models.families.cpu.host import read_host
from hardware_models.target import check_derivations, get_target


def fake_machine(
    tmp_path,
    flags="fpu sse2 avx avx2 fma",
    caches=(
        (1, "Data", "48K", "0", 12),
        (1, "Instruction", "32K", "0", 8),
        (2, "Unified", "2048K", "0", 16),
        (3, "Unified", "105M", "0-55", 15),
    ),
):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        f"processor\t: 0\nmodel name\t: Test CPU\ncpu MHz\t\t: 2000.000\nflags\t\t: {flags}\n\nprocessor\t: 1\n"
    )
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       1048576 kB\n")
    root = tmp_path / "cache"
    for i, (level, kind, size, shared, ways) in enumerate(caches):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        for name, value in (
            ("level", level),
            ("type", kind),
            ("size", size),
            ("shared_cpu_list", shared),
            ("ways_of_associativity", ways),
            ("coherency_line_size", 64),
        ):
            (d / name).write_text(f"{value}\n")
    return read_host(cpuinfo, meminfo, root)


def test_the_os_description_is_parsed_caches_innermost_first_instruction_cache_left_out(tmp_path):
    host = fake_machine(tmp_path)
    assert host.model == "Test CPU" and host.clock_hz == 2e9 and host.memory_bytes == 2**30
    assert [(c.name, c.bytes, c.shared_by, c.ways, c.line) for c in host.caches] == [
        ("l1d", 48 * 1024, 1, 12, 64),
        ("l2", 2 * 2**20, 1, 16, 64),
        ("l3", 105 * 2**20, 56, 15, 64),
    ]
    assert host.f32_lanes == 8 and host.features == ("sse2", "avx", "avx2", "fma") and not host.missing


@pytest.mark.parametrize("flags, lanes", [("sse2 avx2 avx512f avx512_bf16 amx_tile", 16), ("sse2 avx", 8), ("sse2", 4)])
def test_the_vector_width_follows_the_widest_extension_read(tmp_path, flags, lanes):
    host = fake_machine(tmp_path, flags)
    assert host.f32_lanes == lanes
    assert ("amx_tile" in host.features) == ("amx_tile" in flags)


def test_a_machine_without_sysfs_names_what_is_missing(tmp_path):
    from reference.errors import BadTargetFile

    host = read_host(tmp_path / "none", tmp_path / "none", tmp_path / "none")
    assert set(host.missing) == {"clock", "memory", "caches"}
    with pytest.raises(BadTargetFile, match="caches"):  # refused before anything is timed
        plan_rows(host)


def test_rows_are_sized_from_the_caches_the_os_reports(tmp_path):
    host = fake_machine(tmp_path)
    streams = {r.level: r for r in plan_rows(host) if r.level}
    assert set(streams) == {"l1d", "l2", "l3", "dram"}
    # the larger L1d row holds half of one core's L1d (this fake process may use one CPU or more)
    l1 = [r for r in plan_rows(host) if r.level == "l1d"]
    assert max(r.bytes for r in l1) <= 48 * 1024 * max(1, host.cores) / 2 + 12
    # the shared L3 (105 MiB for 56 CPUs) is streamed at a quarter of it at most: others use it too
    l3 = [r for r in plan_rows(host) if r.level == "l3"]
    assert max(r.bytes for r in l3) <= 105 * 2**20 / 4 + 12 and min(r.bytes for r in l3) >= 105 * 2**20 / 16 - 12
    # the transposed-read rows' strides: the L1's set span (48 KiB / 12 ways = 4 KiB) and one 64 B line more, in f32 elements
    assert [r.size for r in plan_rows(host) if r.workload == "strided"] == [1024, 1040]


CORES = 2  # the synthetic machine's cores


def synthetic_rows(dispatch=2e-6, bandwidth=50e9, gemm=100e9, exp_rate=1e9):
    """Rows a machine with known rates would produce: the fits must give the rates back."""
    out = []
    for spec in plan_rows(fake_machine_cached()):
        t = dispatch
        if spec.workload == "add" and spec.size > 1:
            t += spec.bytes / bandwidth
        loop = 0.2e-6 if spec.runtime != "eager" else 0  # a one-loop program's call: 0.2 us above the dispatch
        if spec.workload == "add":  # a compiled loop's call (XLA's stream row too)
            t += loop
        if (
            spec.workload == "gemm"
        ):  # the tiny, small and middle GEMMs at 1/4, 1/2 and 3/4 the large one's rate; XLA's a kernel of a GEMM program
            share = (
                {TINY_GEMM_N: 0.25, SMALL_GEMM_N: 0.5, MID_GEMM_N: 0.75}.get(spec.size, 1.0)
                if spec.dtype == "f32"
                else 1.0
            )
            t += (1e-6 if spec.runtime == "xla" else 0) + spec.flops / (gemm * share)
        if spec.workload == "mm-chain":
            t += 1e-6 * spec.size
        if spec.workload == "unary":  # the runtime's call of one tiny loop, then compute-bound
            t += loop + spec.size / (
                exp_rate * (1 + FUNCTIONS.index(spec.fn)) if spec.fn in FUNCTIONS else exp_rate / 2
            )
        if spec.workload == "reduce":
            t += loop + spec.size / 5e9
        if spec.workload == "sdpa":  # 0.1 us per query row
            t += 0.1e-6 * 256
        if spec.workload == "dots":  # XLA's dots: 3 us each, + their FLOPs at the small GEMM rate (half the large)
            t += 1e-6 + spec.size * (3e-6 + 2 * 32**3 / (gemm / 2))
        if (
            spec.workload == "weights"
        ):  # 16 GEMMs (32 x 256 x 512: at the curve's 58.3 GFLOP/s, 1/3 of the way from the small
            # row to the middle one in log FLOPs, + (256 * 512 - 131072^(2/3)... packed) bytes at 6 GB/s), each its call
            # (eager: a dispatch; XLA: one call, each dot 3 us), + 16 weights streamed at 8 GB/s when they are distinct
            one = 2 * 32 * 256 * 512 / (gemm * (0.5 + 0.25 / 3)) + (256 * 512 - (32 * 256 * 512) ** (2 / 3)) * 4 / 6e9
            t += (16 * (one + 3e-6) + 1e-6 if spec.runtime == "xla" else 16 * one + 15 * dispatch) + (
                16 * 512 * 1024 / 8e9 if spec.size > 1 else 0
            )
        if (
            spec.workload == "strided"
        ):  # the conflicting stride (the smaller row) at 0.5 G elements/s, the other at 2.5 G
            t += loop + spec.flops / (0.5e9 if spec.size % 1024 == 0 else 2.5e9)
        if (
            spec.workload == "gemv"
        ):  # the weight read at 40 GB/s (XLA: 80), after the call of a one-GEMM program (XLA's: 1 us more)
            t += spec.size**2 * 4 / 40e9 if spec.runtime == "eager" else 1e-6 + spec.size**2 * 4 / 80e9
        if spec.workload == "conv" and spec.size == EIGEN_CONV:  # XLA's own: a batch's fixed 80 us, then 70 ns a pixel
            t += 1e-6 + 80e-6 + 2 * 32 * 32 * 70e-9
        elif (
            spec.workload == "conv"
        ):  # a library call's fixed 50 us (80 us for a batch), then 20 GFLOP/s at K / (K + 30)
            images, c_in = CONV_SHAPES[spec.size][:2]
            t += (
                (1e-6 if spec.runtime != "eager" else 0)
                + (80e-6 if images > 1 else 50e-6)
                + spec.flops / (20e9 * 9 * c_in / (9 * c_in + 30))
            )
        if spec.workload == "mean":
            spec = RowSpec(spec.id, spec.runtime, spec.workload, spec.dtype, 4)
            t += 4 * 0.5e-6
        if spec.workload == "module-add":  # a module's call: 1 us
            t += 1e-6
        if spec.workload == "module-param":  # the module's call, then its parameter fetched: 0.7 us
            t += 1e-6 + 0.7e-6
        if spec.workload == "kernel-call":  # its elements on one core (of CORES), and 4 us per call
            t += spec.size * CORES / (exp_rate / 2) + 4e-6
        if spec.workload == "index-add":  # 3 nested ops, then its sort and threaded regions: 6 us
            spec = RowSpec(spec.id, spec.runtime, spec.workload, spec.dtype, 3)
            t += 3 * 0.5e-6 + 6e-6
        out.append(Measured(spec, t, 0.0, 10))
    return out


_HOST = None


def fake_machine_cached():
    global _HOST
    if _HOST is None:
        import pathlib
        import tempfile

        _HOST = fake_machine(pathlib.Path(tempfile.mkdtemp()))
    return _HOST


def test_the_fits_recover_the_rates_a_machine_was_built_with():
    fits = {k: v for k, (v, _) in fit(synthetic_rows(), CORES).items()}
    for level in ("l1d", "l2", "l3", "dram"):
        assert fits[f"fitted.{level}_bytes_per_s"] == pytest.approx(50e9, rel=1e-6)  # the slope cancels the dispatch
    assert fits["fitted.eager_dispatch_s"] == pytest.approx(2e-6)
    assert fits["fitted.gemm_f32_flop_per_s"] == pytest.approx(100e9, rel=1e-6)
    for runtime in ("eager", "inductor", "xla"):  # each function its own rate, through each runtime
        for i, fn in enumerate(FUNCTIONS):
            assert fits[f"fitted.{runtime}_{fn}_per_s"] == pytest.approx(1e9 * (1 + i), rel=1e-6)
        assert fits[f"fitted.{runtime}_conv_flop_per_s"] == pytest.approx(20e9, rel=1e-6)
        assert fits[f"fitted.{runtime}_conv_depth"] == pytest.approx(30, rel=1e-6)
        assert fits[f"fitted.{runtime}_conv_s"] == pytest.approx(50e-6, rel=1e-6)
        assert fits[f"fitted.{runtime}_conv_batched_s"] == pytest.approx(80e-6, rel=1e-6)
    assert fits["fitted.eager_gelu_per_s"] == pytest.approx(0.5e9, rel=1e-6) and "fitted.xla_gelu_per_s" not in fits
    assert fits["fitted.inductor_kernel_s"] == pytest.approx(1e-6) and fits["fitted.xla_kernel_s"] == pytest.approx(
        1e-6
    )
    assert fits["fitted.eager_nested_s"] == pytest.approx(0.5e-6)
    assert fits["fitted.eager_module_call_s"] == pytest.approx(1e-6) and fits["fitted.eager_param_s"] == pytest.approx(
        0.7e-6
    )
    assert fits["fitted.eager_index_add_s"] == pytest.approx(6e-6)
    for fn in (
        "gelu",
        "silu",
        "layer_norm",
        "softmax",
    ):  # each ATen kernel's fixed cost, its work on one core taken out
        assert fits[f"fitted.eager_{fn}_s"] == pytest.approx(4e-6, rel=1e-6)
    assert fits["fitted.gemm_f32_tiny_flop_per_s"] == pytest.approx(25e9, rel=1e-6)
    assert "fitted.xla_gemm_f32_tiny_flop_per_s" not in fits  # XLA's tiny dots: fitted.xla_dot_s

    for runtime in ("inductor", "xla"):  # a loop program's call: its row less one kernel
        assert fits[f"fitted.{runtime}_loop_call_s"] == pytest.approx(2e-6 + 0.2e-6 - 1e-6)
    for runtime in ("eager", "inductor", "xla"):
        assert fits[f"fitted.{runtime}_reduce_per_s"] == pytest.approx(5e9, rel=1e-6)
    assert fits["fitted.gemm_f32_small_flop_per_s"] == pytest.approx(50e9, rel=1e-6)
    assert fits["fitted.xla_gemm_f32_small_flop_per_s"] == pytest.approx(50e9, rel=1e-6)
    assert (
        fits["fitted.gemm_f32_mid_flop_per_s"]
        == fits["fitted.xla_gemm_f32_mid_flop_per_s"]
        == pytest.approx(75e9, rel=1e-6)
    )
    assert fits["fitted.eager_sdpa_row_s"] == pytest.approx(0.1e-6, rel=1e-6)
    assert fits["fitted.gemm_cold_bytes_per_s"] == pytest.approx(8e9, rel=1e-6)
    assert fits["fitted.xla_dot_s"] == pytest.approx(3e-6, rel=1e-6)
    assert fits["fitted.xla_gemm_cold_bytes_per_s"] == pytest.approx(8e9, rel=1e-6)
    assert fits["fitted.xla_stream_bytes_per_s"] == pytest.approx(50e9, rel=1e-6)  # its row less XLA's loop call
    assert fits["fitted.xla_conflict_per_s"] == pytest.approx(0.5e9, rel=1e-6) and fits[
        "fitted.xla_strided_per_s"
    ] == pytest.approx(2.5e9, rel=1e-6)
    assert fits["fitted.gemv_bytes_per_s"] == pytest.approx(40e9, rel=1e-6) and fits[
        "fitted.xla_gemv_bytes_per_s"
    ] == pytest.approx(80e9, rel=1e-6)
    assert (
        fits["fitted.gemm_pack_bytes_per_s"] == pytest.approx(6e9, rel=1e-6) == fits["fitted.xla_gemm_pack_bytes_per_s"]
    )
    assert fits["fitted.xla_conv_pixel_s"] == pytest.approx(70e-9, rel=1e-6)


def test_every_fitted_value_a_cpu_target_must_hold_is_one_the_calibration_makes():
    """The cpu family's required fitted keys (a file without one is refused on loading: one
    calibrated before a row existed) are exactly what `fit` makes, beside the caches' bandwidths."""
    CPU = get_family("cpu")
    made = {k for k in fit(synthetic_rows(), CORES) if k.removeprefix("fitted.") not in CPU.optional["fitted"]}
    assert made == {f"fitted.{k}" for k in CPU.schema["fitted"]}


def test_the_committed_target_refits_from_the_rows_it_cites_a_regression_guard():
    target = get_target("host-cpu")
    fitted = refit(target)
    cited = {k: q for k, q in target.quantities.items() if q.tag == "F"}
    assert set(fitted) == set(cited)
    ids = {m.spec.id for m in read_rows()}
    for key, q in cited.items():
        assert target[key] == pytest.approx(fitted[key], rel=1e-3), key
        assert set(q.source.split()[1:]) <= ids, key
    assert not check_derivations(target)


def test_a_stream_pair_whose_difference_is_noise_falls_back_to_the_larger_row_less_the_dispatch():
    rows = synthetic_rows()
    lo, hi = sorted((m for m in rows if m.spec.level == "l1d"), key=lambda m: m.spec.size)
    noisy = [
        Measured(m.spec, m.median_s, 1.0 if m in (lo, hi) else 0.0, m.runs) for m in rows
    ]  # an IQR far above the gap
    key = "fitted.l1d_bytes_per_s"
    value, cited = fit(noisy, CORES)[key]
    assert value == pytest.approx(hi.spec.bytes / (hi.median_s - 2e-6)) and cited == f"{hi.spec.id} H01"
    assert fit(rows, CORES)[key][1] == f"{lo.spec.id} {hi.spec.id}"  # a clean pair: the slope
