"""`landscape compare --from-file A.mlir B.mlir`: any two StableHLO programs compared on every
target, each side named by its file; what does not apply with files is refused in one line."""

from __future__ import annotations

import json

import pytest

from landscape.cli import main

pytestmark = [pytest.mark.torch, pytest.mark.jax]


@pytest.fixture(scope="module")
def two_files(tmp_path_factory):
    from landscape.lowering import lower_named

    folder = tmp_path_factory.mktemp("programs")
    paths = []
    for side in ("torch", "jax"):
        path = folder / f"layernorm_{side}.mlir"
        path.write_text(lower_named("layernorm", side, {}, "float32").stages["stablehlo"])
        paths.append(str(path))
    return paths


def test_two_files_are_costed_as_the_two_paths_are_and_named_by_their_files(two_files, capfd):
    from hardware_models.comparison import compare_lowerings
    from landscape.lowering import lowering_from_file

    a, b = two_files
    assert main(["compare", "--from-file", a, b, "--targets", "h100,tpu-v5e", "--json"]) == 0
    (result,) = json.loads(capfd.readouterr().out)["comparisons"]
    assert result["sides"] == ["layernorm_torch.mlir", "layernorm_jax.mlir"]
    expected = compare_lowerings(lowering_from_file(a), lowering_from_file(b), ["h100", "tpu-v5e"]).to_dict()
    assert [r["time_s"] for r in result["results"]] == pytest.approx([r["time_s"] for r in expected["results"]])
    assert {(r["target"], r["side"]) for r in result["results"]} == {
        (t, s) for t in ("h100", "tpu-v5e") for s in result["sides"]
    }
    assert result["diff"]["histogram"] == expected["diff"]["histogram"]
    assert main(["compare", "--from-file", a, b, "--targets", "h100"]) == 0
    text = capfd.readouterr().out
    assert "What layernorm_jax.mlir costs against layernorm_torch.mlir" in text


def test_the_same_file_twice_differs_in_nothing(two_files, capfd):
    a, _ = two_files
    assert main(["compare", "--from-file", a, a, "--targets", "h100", "--json"]) == 0
    (result,) = json.loads(capfd.readouterr().out)["comparisons"]
    assert result["sides"][0] != result["sides"][1]
    first, second = result["results"]
    assert first["time_s"] == second["time_s"] and result["difference_cost_s"]["h100"] == {
        k: 0.0 for k in result["difference_cost_s"]["h100"]
    }


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["layernorm"], "NAME does not apply"),
        (["--shape", "m=4"], "--shape does not apply"),
        (["--dtype", "float32"], "--dtype does not apply"),
        (["--out", "somewhere"], "--out does not apply"),
    ],
)
def test_what_does_not_apply_to_files_is_refused(two_files, extra, needle, capfd):
    assert main(["compare", *extra, "--from-file", *two_files]) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0 and needle in err and "valid with it: --targets" in err


def test_one_file_is_refused_naming_the_two_it_takes(two_files, capfd):
    assert main(["compare", "--from-file", two_files[0], "--targets", "h100"]) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0 and "takes two StableHLO files" in err


def test_a_missing_or_broken_file_is_one_line(two_files, tmp_path, capfd):
    broken = tmp_path / "broken.mlir"
    broken.write_text("module { this is not stablehlo }")
    for bad in (str(tmp_path / "none.mlir"), str(broken)):
        assert main(["compare", "--from-file", two_files[0], bad, "--targets", "h100"]) == 2
        err = capfd.readouterr().err.strip()
        assert err.count("\n") == 0 and "Traceback" not in err
