"""Data flows one way: the import graph has no forbidden edge, and no module outgrows 600 lines."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("reference", "pytorch_side", "jax_side", "hardware_models")
FORBIDDEN = {
    "reference": {"pytorch_side", "jax_side", "hardware_models", "torch", "jax", "flax"},
    "pytorch_side": {"jax_side", "hardware_models", "jax", "flax"},
    "jax_side": {"pytorch_side", "hardware_models", "torch"},
    "hardware_models": {"pytorch_side", "jax_side", "torch", "jax", "flax"},
}
# The CLI is the composition root: it may reach every package, inside command bodies only.
COMPOSITION_ROOT = ROOT / "reference" / "cli.py"


def _imports(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


def _modules(package):
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_no_forbidden_package(package):
    bad = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(package)
        if path != COMPOSITION_ROOT
        for name in _imports(path)
        if name in FORBIDDEN[package]
    }
    assert not bad


def test_cli_imports_frameworks_only_inside_functions():
    tree = ast.parse(COMPOSITION_ROOT.read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {(n.module or "") for n in top if isinstance(n, ast.ImportFrom)} | {
        a.name for n in top if isinstance(n, ast.Import) for a in n.names
    }
    assert not names & {"torch", "jax", "pytorch_side", "jax_side", "hardware_models"}


@pytest.mark.parametrize("path", [p for pkg in (*PACKAGES, "tests") for p in _modules(pkg)], ids=str)
def test_module_is_at_most_600_lines(path):
    assert len(path.read_text().splitlines()) <= 600
