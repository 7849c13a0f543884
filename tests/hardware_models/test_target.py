"""Target files: every number sourced, derived values recomputed, the loader strict."""

from __future__ import annotations

import pytest

from hardware_models.target import check_derivations, get_target, load_target_file, load_targets
from reference.errors import BadTargetFile, UnknownName

REQUIRED = ("a100", "h100", "h200", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "spyre", "groq-lpu", "wse-2", "wse-3")


def test_every_required_target_loads():
    assert set(REQUIRED) <= set(load_targets())


@pytest.mark.parametrize("name", REQUIRED)
def test_every_quantity_has_a_tagged_source_and_derived_ones_recompute(name):
    target = get_target(name)
    assert all(q.tag in "PSDUF" for q in target.quantities.values())
    assert check_derivations(target) == {}


def test_v5e_critical_intensity_is_about_240():
    """The JAX scaling book: TPU v5e MXU critical intensity is about 240 FLOP/byte."""
    assert get_target("tpu-v5e").ridge_flop_per_byte == pytest.approx(240, rel=0.01)


def test_tpu_peak_is_mxus_times_array_times_clock():
    """197 TFLOP/s = 1 TensorCore x 4 MXUs x 128 x 128 MACs x 2 x 1.5 GHz (v5e)."""
    t = get_target("tpu-v5e")
    macs = t["chip.tensorcores"] * t["chip.mxus_per_tensorcore"] * t["chip.mxu_rows"] * t["chip.mxu_cols"]
    assert 2 * macs * t["chip.clock_hz"] == pytest.approx(t.peak_16bit_flop_per_s, rel=0.01)


def test_unknown_target_suggests_a_close_match():
    with pytest.raises(UnknownName, match="did you mean 'h100'"):
        get_target("h10")


GOOD = """schema = 1
name = "x"
family = "tpu"
description = "test"
[chip]
tensorcores = { value = 1, source = "P GCP" }
mxus_per_tensorcore = { value = 4, source = "P GCP" }
mxu_rows = { value = 128, source = "P SB" }
mxu_cols = { value = 128, source = "P SB" }
clock_hz = { value = 1.5e9, source = "P SB" }
vpu_sublanes = { value = 8, source = "P tpu_info" }
vector_alus_per_tensorcore = { value = 2048, source = "U" }
transcendentals_per_cycle_per_tensorcore = { value = 1024, source = "U" }
[peak]
bf16_flop_per_s = { value = 197e12, source = "P GCP" }
int8_op_per_s = { value = 394e12, source = "P GCP" }
[levels.hbm]
role = "main"
bytes = { value = 16e9, source = "P GCP" }
bytes_per_s = { value = 8.19e11, source = "P GCP" }
usable_fraction = { value = 0.9, source = "U" }
[levels.vmem]
role = "on-chip"
per = "chip.tensorcores"
bytes = { value = 134217728, source = "P tpu_info" }
bytes_per_s = { value = 1.8e13, source = "D SB", derivation = "levels.hbm.bytes_per_s * 22" }
buffer_fraction = { value = 0.5, source = "U" }
[interconnect]
ici_bytes_per_s_per_link = { value = 45e9, source = "P SB" }
host_bytes_per_s = { value = 31.5e9, source = "U" }
allreduce_bus_bytes_per_s = { value = 90e9, source = "D", derivation = "interconnect.ici_bytes_per_s_per_link * 2" }
[schedule]
launch_overhead_s = { value = 5e-7, source = "U" }
collective_latency_s = { value = 1e-5, source = "U" }
[host]
flop_per_s = { value = 1e12, source = "U" }
[dtypes]
native = ["bf16", "f32"]
emulated = { f16 = "f32" }
"""

BROKEN = {
    "unknown key": (
        GOOD.replace("[peak]", '[peak]\nbf17_flop_per_s = { value = 1, source = "P x" }'),
        "peak.bf17_flop_per_s",
    ),
    "missing key": (GOOD.replace('int8_op_per_s = { value = 394e12, source = "P GCP" }\n', ""), "peak.int8_op_per_s"),
    "non-positive": (GOOD.replace("value = 45e9", "value = 0"), "> 0"),
    "a fraction above one": (
        GOOD.replace("usable_fraction = { value = 0.9", "usable_fraction = { value = 1.5"),
        r"levels.hbm.usable_fraction.*\[1e-06, 1\]",
    ),
    "a fractional count": (
        GOOD.replace("vpu_sublanes = { value = 8,", "vpu_sublanes = { value = 8.5,"),
        "chip.vpu_sublanes.*whole number",
    ),
    "a subnormal rate": (GOOD.replace("value = 45e9", "value = 1e-305"), r"\[1e-12, 1e\+21\]"),
    "a missing level": (GOOD.replace("[levels.vmem]", "[levels.cache]"), "levels.vmem.*missing"),
    "two main levels": (
        GOOD.replace('[levels.vmem]\nrole = "on-chip"', '[levels.vmem]\nrole = "main"'),
        "exactly one level",
    ),
    "a level with an unknown role": (
        GOOD.replace('[levels.vmem]\nrole = "on-chip"', '[levels.vmem]\nrole = "cache"'),
        "levels.vmem.role",
    ),
    "untagged source": (
        GOOD.replace(
            'clock_hz = { value = 1.5e9, source = "P SB" }', 'clock_hz = { value = 1.5e9, source = "scaling book" }'
        ),
        "tag",
    ),
    "derived without arithmetic": (
        GOOD.replace('clock_hz = { value = 1.5e9, source = "P SB" }', 'clock_hz = { value = 1.5e9, source = "D" }'),
        "derivation",
    ),
    "unknown family": (GOOD.replace('family = "tpu"', 'family = "fpga"'), "family"),
    "no native dtypes": (GOOD.replace('native = ["bf16", "f32"]', "native = []"), "dtypes.native"),
    "unknown dtype": (GOOD.replace('native = ["bf16", "f32"]', 'native = ["bf16", "f33"]'), "f33"),
    "emulated as a non-native type": (GOOD.replace('f16 = "f32"', 'f16 = "f64"'), "dtypes.emulated.f16"),
}


def test_a_well_formed_file_loads(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(GOOD)
    assert load_target_file(path).ridge_flop_per_byte == pytest.approx(240.5, rel=1e-3)


@pytest.mark.parametrize("case", BROKEN)
def test_broken_file_names_the_file_and_the_field(case, tmp_path):
    text, needle = BROKEN[case]
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(BadTargetFile, match=needle) as err:
        load_target_file(path)
    assert str(path) in str(err.value)


def test_with_overrides_turns_a_knob_and_keeps_the_file_untouched():
    t = get_target("tpu-v5e")
    turned = t.with_overrides({"schedule.launch_overhead_s": 2e-6})
    assert turned["schedule.launch_overhead_s"] == 2e-6 and turned.quantities["schedule.launch_overhead_s"].assumed
    assert t["schedule.launch_overhead_s"] == 5e-7
    with pytest.raises(UnknownName, match="valid"):
        t.with_overrides({"schedule.launch_overhead": 1.0})


def test_fitted_values_sit_apart_from_hardware_limits():
    """Style 3.4: hardware limits in [chip]/[peak]/[memory], fitted coefficients in [fitted]/[schedule]."""
    for target in load_targets().values():
        for key, q in target.quantities.items():
            assert (q.tag == "F") <= key.startswith(("fitted.", "schedule.")), key


def test_spyre_peak_is_1536_mac_per_ns_on_32_cores():
    """specs.md (TS work_division.py): 98.304 TFLOP/s per card."""
    assert get_target("spyre").peak_16bit_flop_per_s == pytest.approx(98.304e12)


def test_spyre_usable_scratchpad_is_about_1_55_mb():
    """specs.md (TS scratchpad_planning.md): 2 MB, less 64 KB, less a 20% reserve."""
    assert get_target("spyre")["levels.lx.usable_bytes"] / 2**20 == pytest.approx(1.55, abs=0.01)


def test_groq_peak_int8_is_the_mxm_planes_at_the_clock():
    """specs.md: 409,600 MACs x 2 x 0.9 GHz = 737 TOP/s, against ALCF's 750."""
    t = get_target("groq-lpu")
    assert 2 * t["chip.mxm_macs_per_cycle"] * t["chip.clock_hz"] == pytest.approx(t["peak.int8_op_per_s"], rel=0.02)


@pytest.mark.parametrize(
    "key, value, needle",
    [
        ("fitted.gemm_efficiency", 5.0, r"\[1e-06, 1\]"),  # 5x the tensor-core peak
        ("fitted.gemm_efficiency", 5e-324, r"\[1e-06, 1\]"),  # was a NaN in the wafer's region sizes
        ("levels.hbm.usable_fraction", 1e-310, r"\[1e-06, 1\]"),  # was 0 usable bytes and an invalid plan
        ("levels.hbm.bytes", 1e-12, r"\[1, 1e\+21\] bytes"),  # less than a byte of memory
        ("chip.sm_count", 132.5, "whole number"),  # half an SM
        ("levels.hbm.bytes_per_s", float("inf"), "finite"),  # was accepted: total_time_s Infinity
        ("levels.hbm.bytes_per_s", float("nan"), "finite"),
        ("levels.hbm.bytes_per_s", 1e-305, r"\[1e-12, 1e\+21\]"),  # was a NaN in the arithmetic
        ("schedule.launch_overhead_s", -1.0, "> 0"),
    ],
)
def test_set_refuses_a_value_outside_the_quantitys_domain(key, value, needle):
    with pytest.raises(BadTargetFile, match=needle):
        get_target("h100").with_overrides({key: value})


@pytest.mark.parametrize(
    "target, key, value, needle",
    [
        (
            "wse-3",
            "chip.pes",
            1,
            r"within 1024x of this target's 900000 lies in \[879, ",
        ),  # one PE answered with numbers
        ("spyre", "chip.cores", 1e9, r"lies in \[1, 32768\], got 1e\+09"),  # a billion cores did too
        ("spyre", "chip.stick_bytes", 3, "power of two of at least 8 bytes, got 3"),  # was a ZeroDivisionError
        ("spyre", "chip.stick_bytes", 4, "at least 8 bytes"),  # a stick narrower than an f64 holds none
        ("tpu-v5e", "chip.mxu_rows", 100, "power of two, got 100"),
        ("h100", "chip.mma_k_bytes", 48, "power of two"),
    ],
)
def test_set_refuses_a_knob_outside_the_hardwares_plausible_range(target, key, value, needle):
    """A rule of the hardware: a count stays within 1024x of the chip's own (a what-if of the same
    kind of chip), and a granule (stick, line, MMA or MXU edge) is a power of two."""
    with pytest.raises(BadTargetFile, match=needle):
        get_target(target).with_overrides({key: value})


@pytest.mark.parametrize(
    "target, key, value",
    [
        ("wse-3", "chip.pes", 879),
        ("spyre", "chip.cores", 1),
        ("spyre", "chip.cores", 32768),
        ("spyre", "chip.stick_bytes", 8),
        ("tpu-v5e", "chip.mxu_rows", 256),
    ],
)
def test_set_takes_a_knob_at_the_edges_of_its_range(target, key, value):
    assert get_target(target).with_overrides({key: value})[key] == value


def test_every_quantity_of_every_target_file_lies_in_its_domain():
    from hardware_models.target import domain, domain_problem

    for target in load_targets().values():
        for key, q in target.quantities.items():
            assert domain_problem(key, q.value) is None, (target.name, key)
        assert {domain(k) for k in target.quantities} <= {"fraction", "count", "size", "positive"}


def test_a_users_file_is_checked_listing_every_key_it_lacks_then_what_else_is_wrong(tmp_path):
    """`landscape targets --check FILE`: each missing key of the family's schema at once, a line
    each; a file missing nothing gets the loader's objection, then any derivation it breaks."""
    from pathlib import Path

    from hardware_models.target import check_target_file
    from tests.hardware_models.damaged import without_lines

    text = Path(get_target("h100").path).read_text()
    problems = check_target_file(without_lines("h100", tmp_path, "sm_count", "launch_overhead_s"))
    assert len(problems) == 2 and all("missing; the gpu family needs it" in p for p in problems)
    assert {p.split("'")[1] for p in problems} == {"chip.sm_count", "schedule.launch_overhead_s"}
    off = tmp_path / "off.toml"
    off.write_text(text.replace('value = 989e12, source = "D"', 'value = 900e12, source = "D"', 1))
    (problem,) = check_target_file(off)
    assert "peak.bf16_flop_per_s" in problem and "stated 9e+14" in problem and "gives 9.89" in problem
    assert check_target_file(get_target("h100").path) == []
    misspelt = tmp_path / "misspelt.toml"  # a misspelt section: its keys missing, and the section named
    misspelt.write_text(text.replace("[fitted]", "[fited]", 1))
    problems = check_target_file(misspelt)
    assert "field 'fitted.gemm_efficiency': missing" in problems[0]
    assert problems[-1].endswith(
        "field 'fited': unknown section; valid: "
        + ", ".join(["chip", "dtypes", "fitted", "host", "interconnect", "levels", "peak", "schedule"])
    )
    assert check_target_file(tmp_path / "none.toml") == [
        f"{tmp_path / 'none.toml'}: cannot be read: No such file or directory"
    ]


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ('value = 989e12, source = "D"', 'value = 5e12, source = "D"', r"stated 5e\+12, but its derivation"),
        ('derivation = "chip.sm_count * chip.clock_hz * 4096"', 'derivation = "chip.nope * 4096"', "reads 'chip.nope'"),
        ('derivation = "chip.clock_hz * 5120"', "derivation = \"__import__('os').getcwd()\"", "uses more than numbers"),
        ('derivation = "chip.clock_hz * 5120"', 'derivation = "chip.clock_hz ** 2"', "uses more than numbers"),
        ('derivation = "chip.clock_hz * 5120"', 'derivation = "peak.bf16_flop_per_s / 105.6"', "circular"),
    ],
)
def test_a_file_whose_derivations_do_not_hold_is_refused_as_it_loads(tmp_path, old, new, needle):
    """No command runs on a number its file's own arithmetic contradicts, names a key the file lacks,
    evaluates more than arithmetic, or goes round in a circle (peak from L2 from peak)."""
    from pathlib import Path

    from reference.errors import BadTargetFile

    text = Path(get_target("h100").path).read_text()
    if "circular" in needle:  # the peak read from the L2 and the L2 from the peak
        text = text.replace(
            'derivation = "chip.sm_count * chip.clock_hz * 4096"', 'derivation = "levels.l2.bytes_per_s * 105.6"', 1
        )
    assert old in text
    path = tmp_path / "h100.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(BadTargetFile, match=needle):
        load_target_file(path)
