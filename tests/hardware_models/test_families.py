"""The family registry: one module and one target file add a family, and nothing else changes;
the plan verifier names a pass that breaks a plan; assumed policies are knobs of the files."""

from __future__ import annotations

import ast
import importlib
import pathlib
import pkgutil
import sys
from dataclasses import replace

import pytest

from hardware_models import families as registry
from hardware_models.cost.roofline import ceilings
from hardware_models.estimate import PlanMismatch, estimate
from hardware_models.families import BUILTIN, HOST, Family, families, get_family, representative_targets
from hardware_models.pipelines import compile_plan
from hardware_models.plan import Group
from hardware_models.target import get_target, load_target_file, load_targets
from hardware_models.trace import check_traceable, scheduled
from hardware_models.verify_plan import InvalidPlan
from reference.errors import UnknownName
from tests.hardware_models.programs import elementwise, linear_gelu, program, t

TOY_DIR = pathlib.Path(__file__).with_name("toy")
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def toy(monkeypatch):
    """The toy family registered (by importing its one module) and its one target file loaded."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry.families()))
    importlib.reload(importlib.import_module("tests.hardware_models.toy.toy_family"))
    return load_target_file(TOY_DIR / "toy.toml")


def gemm(m: int, n: int, k: int, dtype: str = "f32"):
    a, b, c = t((m, k), dtype), t((k, n), dtype), t((m, n), dtype)
    return program(
        {"a": a, "b": b},
        [f"%0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({a}, {b}) -> {c}"],
        "%0",
        c,
    )


def test_a_toy_family_compiles_and_costs_from_one_module_and_one_file(toy):
    """Worked number (toy_family.py): f32 65 x 63 by 64 pads to 72 x 64 tiles of 8: 2 * 72 * 64 * 64
    = 589,824 padded FLOPs at 1e12 = 0.590 us; DRAM 4 * (65*64 + 64*63 + 65*63) = 49,148 B at
    1e11 = 0.491 us; + 1 us launch = 1.590 us."""
    assert toy.family == "toy" and toy.main_memory_level == "dram" and toy.peak_16bit_flop_per_s == 1e12
    result = estimate(gemm(65, 63, 64), toy)
    (g,) = result.groups
    assert g.cost.bytes_at("dram") == 49_148
    assert g.cost.time_s == pytest.approx(589_824 / 1e12 + 1e-6)
    assert g.cost.schedule_s == pytest.approx(g.cost.time_s - 2 * 65 * 63 * 64 / 1e12)
    assert ceilings(toy) == ({"vector": 1e12}, {"DRAM": 1e11})
    assert not scheduled("toy")
    with pytest.raises(UnknownName, match="static schedule"):
        check_traceable(toy)


def test_a_second_compiler_for_the_toy_family_is_one_record_and_its_plans_say_so(toy):
    """Worked number: "toy-masked" masks the edge tiles, so 65 x 63 by 64 costs its unpadded
    2 * 65 * 63 * 64 = 524,160 FLOPs at 1e12 = 0.524 us (above DRAM's 0.491 us) + 1 us launch,
    where "toy" costs the 589,824 padded ones: estimate reads the compiler the plan records."""
    module = gemm(65, 63, 64)
    usual, masked = compile_plan(module, toy), compile_plan(module, toy, compiler="toy-masked")
    assert (usual.compiler, masked.compiler) == ("toy", "toy-masked")
    (g,) = estimate(module, toy, plan=masked).groups
    assert g.cost.time_s == pytest.approx(524_160 / 1e12 + 1e-6)
    assert estimate(module, toy, plan=usual).total.time_s == pytest.approx(589_824 / 1e12 + 1e-6)
    assert masked.to_dict()["compiler"] == "toy-masked"


def _fresh_package(monkeypatch, tmp_path, modules: dict[str, str]):
    """The registry as on a first question, with `modules` dropped into the families package."""
    for name, text in modules.items():  # a module's text, or a package's: {module: text}
        if isinstance(text, dict):
            (tmp_path / name).mkdir()
            for part, body in text.items():
                (tmp_path / name / f"{part}.py").write_text(body)
        else:
            (tmp_path / f"{name}.py").write_text(text)
        monkeypatch.delitem(sys.modules, f"hardware_models.families.{name}", raising=False)
    prefixes = tuple(f"hardware_models.families.{name}." for name in modules)
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_HOMES", {})
    monkeypatch.setattr(registry, "_FOUND", None)
    monkeypatch.setattr(registry, "__path__", [*registry.__path__, str(tmp_path)])
    for name in [info.name for info in pkgutil.iter_modules(registry.__path__) if info.name not in modules]:
        package = importlib.import_module(f"hardware_models.families.{name}")
        monkeypatch.setattr(registry, name, package)  # the re-import below rebinds it: put back after the test
        monkeypatch.delitem(sys.modules, f"hardware_models.families.{name}")
    for name in [m for m in sys.modules if m.startswith(("hardware_models.families.cpu.", *prefixes))]:
        monkeypatch.delitem(sys.modules, name)  # a package's modules, so that a compiler module registers again


SIXTH = (
    "from dataclasses import replace\n"
    "from hardware_models.families import register\n"
    "from hardware_models.families.gpu import GPU\n"
    "SIXTH = register(replace(GPU, name='sixth', vendor='Example', column={column}))\n"
)


def test_a_family_module_dropped_into_the_package_is_found_and_takes_its_column(monkeypatch, tmp_path):
    """Rule: the registry lists no family by name; it imports every module of the package and
    orders the columns by the records' `column` (a seventh accelerator, column 6, comes last)."""
    _fresh_package(monkeypatch, tmp_path, {"sixth": SIXTH.format(column=6)})
    assert registry.BUILTIN == ("gpu", "tpu", "wafer", "lpu", "spyre", "cdna", "sixth")
    assert registry.HOST == ("cpu",) and list(families())[-1] == "cpu"
    assert get_family("sixth").vendor == "Example"


SECOND = (
    "from dataclasses import replace\n"
    "from hardware_models.families import add_compiler\n"
    "from hardware_models.families.gpu import GPU\n"
    "SECOND = add_compiler('sixth', replace(GPU.compilers[0], name='second', stack='a second compiler'))\n"
)


def test_a_compiler_module_in_a_familys_package_is_found_and_comes_after_its_usual_one(monkeypatch, tmp_path):
    """Rule: a family is one package (its record in __init__.py) and a new compiler one module of
    it calling `add_compiler`; the package's directory is the family's home (its map.toml)."""
    _fresh_package(monkeypatch, tmp_path, {"sixth": {"__init__": SIXTH.format(column=6), "second": SECOND}})
    sixth = get_family("sixth")
    assert [c.name for c in sixth.compilers] == ["inductor", "second"] and sixth.compiler("second").stack
    assert registry.home("sixth") == tmp_path / "sixth" and registry.home("cpu").name == "cpu"
    assert [c.name for c in get_family("cpu").compilers] == ["inductor", "xla"]  # xla.py, one module


@pytest.mark.parametrize(
    ("parts", "problem"),
    [
        ({"second": "raise RuntimeError('boom')\n"}, "sixth/second cannot be imported: RuntimeError: boom"),
        ({"second": SECOND.replace("'sixth'", "'seventh'")}, "no family 'seventh' to add compiler 'second' to"),
        ({"second": SECOND.replace("'second'", "'inductor'")}, "distinct names, has \\['inductor', 'inductor'\\]"),
    ],
    ids=["raises", "no such family", "a name taken"],
)
def test_a_broken_compiler_module_is_named_in_one_line(monkeypatch, tmp_path, parts, problem):
    _fresh_package(monkeypatch, tmp_path, {"sixth": {"__init__": SIXTH.format(column=6), **parts}})
    with pytest.raises(registry.FamilyError, match=problem) as err:
        families()
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("def broken(:\n", "sixth cannot be imported: SyntaxError"),
        ("raise RuntimeError('boom')\n", "sixth cannot be imported: RuntimeError: boom"),
        ("X = 1\n", "sixth registers no family"),
        (SIXTH.format(column=0), "two families share a column: gpu 0, sixth 0"),
    ],
    ids=["syntax error", "raises", "registers nothing", "a column taken"],
)
def test_a_broken_family_module_is_named_in_one_line(monkeypatch, tmp_path, text, problem):
    _fresh_package(monkeypatch, tmp_path, {"sixth": text})
    with pytest.raises(registry.FamilyError, match=problem) as err:
        families()
    assert "\n" not in str(err.value)


def test_a_family_needs_compilers_with_distinct_names():
    gpu = get_family("gpu")
    with pytest.raises(registry.FamilyError, match="distinct names, has \\[\\]"):
        replace(gpu, compilers=())
    with pytest.raises(registry.FamilyError, match="'inductor', 'inductor'"):
        replace(gpu, compilers=gpu.compilers * 2)


def test_the_empty_name_is_no_compiler_and_another_targets_plan_is_refused():
    cpu, h100 = get_target("host-cpu"), get_target("h100")
    module = linear_gelu(4, 64, 64)
    with pytest.raises(UnknownName, match="compiler for the cpu family ''; valid: inductor, xla"):
        compile_plan(module, cpu, compiler="")
    with pytest.raises(PlanMismatch, match="compiled for host-cpu, not h100"):
        estimate(module, h100, plan=compile_plan(module, cpu, compiler="xla"))
    assert estimate(module, cpu, plan=compile_plan(module, cpu, compiler="xla")).to_dict()["compiler"] == "xla"


def test_a_compiler_the_family_lacks_is_refused_naming_the_ones_it_has(toy):
    with pytest.raises(UnknownName, match=r"unknown compiler for the toy family 'tvm'.*toy, toy-masked") as err:
        compile_plan(gemm(8, 8, 8), toy, compiler="tvm")
    assert "\n" not in str(err.value)


def test_every_family_names_its_compilers_and_the_host_cpu_has_inductor_and_xla():
    for name in (*BUILTIN, *HOST):
        compilers = get_family(name).compilers
        assert compilers and len({c.name for c in compilers}) == len(compilers), name
        assert all(c.pipeline and c.stack for c in compilers), name
    assert [c.name for c in get_family("cpu").compilers] == ["inductor", "xla"]
    module = linear_gelu(4, 64, 64)
    cpu = get_target("host-cpu")
    assert compile_plan(module, cpu).compiler == "inductor"
    assert compile_plan(module, cpu, compiler="xla").compiler == "xla"


def test_the_toy_family_is_listed_only_while_registered(toy):
    assert "toy" in families() and get_family("toy").describe() == "Example vector chip"
    assert representative_targets() == tuple(get_family(f).representative for f in BUILTIN)


def test_every_builtin_family_has_its_representative_target_and_files_of_its_family():
    targets = load_targets()
    assert list(families())[: len(BUILTIN)] == list(BUILTIN)
    for name in (*BUILTIN, *HOST):
        assert targets[get_family(name).representative].family == name
    assert {t.family for t in targets.values()} == set(BUILTIN) | set(HOST)


def _names_a_literal(node) -> bool:
    """A string constant, or a tuple, list or set holding one ("gpu", ("gpu", "tpu"))."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(_names_a_literal(e) for e in node.elts)


def test_no_module_outside_the_families_branches_on_a_family_name():
    """Nothing else names a family: a comparison of `.family` with a literal, or a table keyed by
    family names, belongs in the family's module (a lookup of `.family` in a table built from
    the registry, as the map's columns are, names none)."""
    offenders = []
    for path in [*sorted((ROOT / "hardware_models").rglob("*.py")), *sorted((ROOT / "landscape").rglob("*.py"))]:
        if "families" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
            if any(isinstance(n, ast.Attribute) and n.attr == "family" for n in sides) and any(
                _names_a_literal(n) for n in sides
            ):
                offenders.append(f"{path.name}:{node.lineno} compares .family")
            if (
                isinstance(node, ast.Dict)
                and sum(isinstance(k, ast.Constant) and k.value in BUILTIN for k in node.keys) >= 2
            ):
                offenders.append(f"{path.name}:{node.lineno} keys a table by family")
    assert offenders == []


def _break(family: Family, step, name: str) -> Family:
    first, *rest = family.compilers
    broken = replace(first, pipeline=first.pipeline + (step,))
    return registry.register(replace(family, name=name, compilers=(broken, *rest)))


def test_a_pass_that_puts_an_op_in_two_groups_is_named_by_the_verifier(toy, monkeypatch):
    def duplicate_a_member(module, plan, target):
        first = plan.groups[0]
        return plan.with_(groups=plan.groups + (Group(len(plan.groups), "fusion", first.members, first.instance, 1),))

    _break(get_family("toy"), duplicate_a_member, "toy-broken")
    with pytest.raises(InvalidPlan, match=r"after pass duplicate_a_member: op \d+ .* is in g0 and g1"):
        compile_plan(elementwise(64), replace(toy, family="toy-broken"))


def test_a_pass_that_uncovers_a_tile_is_named_by_the_verifier(toy):
    def shrink_padding(module, plan, target):
        ((gid, tiling),) = plan.tilings.items()
        return plan.with_(tilings={gid: replace(tiling, padded=(1, 1, 1))})

    _break(get_family("toy"), shrink_padding, "toy-shrunk")
    with pytest.raises(InvalidPlan, match="after pass shrink_padding: g0's padded extents"):
        compile_plan(gemm(65, 63, 64), replace(toy, family="toy-shrunk"))


def test_a_pass_that_overfills_a_level_is_named_by_the_verifier(toy):
    def keep_everything(module, plan, target):
        graph = plan.value_graph()
        big = max(graph.types, key=lambda v: graph.nbytes(v))
        return plan.with_(placements={g: replace(p, resident_inputs=(big,)) for g, p in plan.placements.items()})

    _break(get_family("toy"), keep_everything, "toy-overfull")
    with pytest.raises(
        InvalidPlan, match="after pass keep_everything: g0 keeps 4,194,304 B on chip, over the 1,048,576 B of cache"
    ):
        compile_plan(elementwise(1 << 20), replace(toy, family="toy-overfull"))


def test_compile_plan_records_each_pass_with_its_wall_time():
    plan = compile_plan(linear_gelu(64, 64, 64), get_target("h100"))
    assert [p.name for p in plan.passes] == [
        "resolve_dtypes",
        "fold_upcasts",
        "assign_groups",
        "fuse_elementwise",
        "fuse_attention",
        "shard_tensor_parallel",
        "pad_to_tiles",
        "place_buffers",
    ]
    assert all(p.seconds >= 0 for p in plan.passes)
    lines = plan.render().splitlines()
    assert lines[7].startswith("  pass pad_to_tiles: 2 groups, ") and lines[7].split()[-1] in (
        "ns",
        "µs",
        "ms",
        "s",
    )  # a scaled unit


def test_the_l2_resident_fraction_is_a_knob_of_the_target_file():
    """The share of L2 a producer's output may fill and still be read from L2 (was a constant in
    place_buffers): at 0 nothing stays, so the second kernel reads its input from HBM."""
    h100 = get_target("h100")
    chain = linear_gelu(256, 256, 256)  # the GEMM's output feeds the epilogue kernel right after it
    kept = compile_plan(chain, h100)
    evicted = compile_plan(chain, h100.with_overrides({"levels.l2.resident_fraction": 1e-6}))
    hbm = lambda plan: sum(p.at("hbm") for p in plan.placements.values())  # noqa: E731
    assert any(p.resident_inputs for p in kept.placements.values())
    assert not any(p.resident_inputs for p in evicted.placements.values())
    assert hbm(evicted) > hbm(kept)


def test_the_vmem_buffer_split_is_a_knob_of_the_target_file():
    """A GEMM stays whole in VMEM when its operands fit beside the double buffers (was a halving
    in pad_to_tiles): bf16 6144 x 128 by 128 x 6144 needs 75 MiB, over half of v5e's 128 MiB
    and under 80% of it."""
    tpu = get_target("tpu-v5e")
    module = gemm(6144, 6144, 128, "bf16")
    halved = compile_plan(module, tpu).tilings
    roomy = compile_plan(module, tpu.with_overrides({"levels.vmem.buffer_fraction": 0.2})).tilings
    assert next(iter(halved.values())).block != (6144, 6144)
    assert next(iter(roomy.values())).block == (6144, 6144)


def test_a_program_with_no_kernels_costs_nothing_and_says_why():
    v = t((65,), "f16")
    result = estimate(program({"a": v}, ["%c = stablehlo.constant dense<0.0> : " + v], "%c", v), get_target("spyre"))
    assert result.groups == () and result.total.time_s == 0
    assert any("no kernels" in n for n in result.notes)


@pytest.mark.parametrize("name", representative_targets())
def test_a_returned_argument_is_written_out_as_a_copy_kernel_on_every_family(name):
    """A clone lowers to returning its argument; its output is still a new buffer (a copy)."""
    v = t((65,), "f16")
    result = estimate(program({"a": v}, [], "%a", v), get_target(name))
    assert [g.ops for g in result.groups] == [("copy",)] and result.total.time_s > 0
    assert any("written out as a copy" in n for n in result.notes)


def test_the_65_element_fp16_clone_on_spyre_moves_two_sticks_each_way():
    """The course's example: 65 fp16 elements = 130 B padded to 2 sticks of 128 B, read and written:
    512 B, 252 of them padding (49.2%)."""
    v = t((65,), "f16")
    result = estimate(program({"a": v}, [], "%a", v), get_target("spyre"))
    assert result.total.bytes_at("lpddr5") == 2 * 2 * 128
    assert any("252 of the 512 bytes between kernels (49.2%) are padding" in n for n in result.notes)


def _corrupted(target_name: str, module, corrupt):
    from hardware_models.verify_plan import verify_plan

    target = get_target(target_name)
    plan = compile_plan(module, target)
    verify_plan(plan, target, "clean")  # the compiled plan keeps its family's rules
    verify_plan(corrupt(plan), target, "corrupted")


def test_each_familys_own_state_is_verified_by_its_own_rules():
    """verify_plan asks the plan's FamilyState for its problems: a Spyre division over more cores
    than the chip has, two live LPU values sharing SRAM, a wafer region beyond the wafer's PEs."""
    from hardware_models.families.lpu.plan import LpuState
    from hardware_models.families.spyre.plan import SpyreState, WorkDivision
    from hardware_models.families.wafer.plan import Region, WaferState

    def over_cores(plan):
        gid = next(iter(SpyreState.of(plan).divisions))
        return plan.with_state(SpyreState, divisions={gid: WorkDivision(64, 33)})

    with pytest.raises(InvalidPlan, match="g0 divides 64 units over 33 cores, and the chip has 32"):
        _corrupted("spyre", gemm(65, 63, 64), over_cores)

    def share_sram(plan):
        sram = LpuState.of(plan).sram
        (a, sa), (b, sb) = [(v, s) for v, s in sram.items() if s.size][:2]
        return plan.with_state(
            LpuState,
            sram={**sram, b: replace(sb, timeline=sa.timeline, offset=sa.offset, written=sa.written, freed=sa.freed)},
        )

    with pytest.raises(InvalidPlan, match="share SRAM bytes .* while both are live"):
        _corrupted("groq-lpu", linear_gelu(64, 128, 128), share_sram)

    def beyond_the_wafer(plan):
        return plan.with_state(WaferState, regions={0: Region(pes=10**7)})

    with pytest.raises(InvalidPlan, match="region of 10,000,000 PEs is outside"):
        _corrupted("wse-3", gemm(65, 63, 64), beyond_the_wafer)
