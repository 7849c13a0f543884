"""Data flows one way: the import graph has no forbidden edge, and no module outgrows 600 lines.

reference imports nothing else; the two sides import only reference; the torch-xla side imports
reference, and pytorch_side's modules in its driver (the same nn.Modules, another compiler), never
torch or torch-xla in the main process (its driver runs them in their own venv, where the
driver's function bodies import them); hardware_models imports
only reference and no framework; the application (landscape/) sits on top and may reach every
package, but torch, jax and the two sides only inside function bodies (lazily). No exemptions.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("reference", "pytorch_side", "jax_side", "torchxla_side", "hardware_models", "landscape")
FORBIDDEN = {
    "reference": {"pytorch_side", "jax_side", "torchxla_side", "hardware_models", "landscape", "torch", "jax", "flax"},
    "pytorch_side": {"jax_side", "torchxla_side", "hardware_models", "landscape", "jax", "flax"},
    "jax_side": {"pytorch_side", "torchxla_side", "hardware_models", "landscape", "torch"},
    "torchxla_side": {"pytorch_side", "jax_side", "hardware_models", "landscape", "torch", "torch_xla", "torch_mlir", "jax", "flax"},
    "hardware_models": {"pytorch_side", "jax_side", "torchxla_side", "landscape", "torch", "jax", "flax"},
    "landscape": set(),
}
# What the application may import only inside a function, so `landscape --help` stays fast.
LAZY_ONLY = {"torch", "jax", "flax", "pytorch_side", "jax_side", "torchxla_side", "torch_mlir", "matplotlib"}


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


def _modules(package):
    return sorted((ROOT / package).rglob("*.py"))


# The torch-xla driver runs in .venv-torchxla (torch 2.9, torch-xla, numpy), not in the main process:
# it alone in its package may import torch, torch-xla and pytorch_side's modules, and it must not
# import what that venv lacks (jax, flax, torch-mlir, and reference.ir, which needs jaxlib).
DRIVER = ROOT / "torchxla_side" / "driver.py"
DRIVER_FORBIDDEN = {"jax_side", "hardware_models", "landscape", "torch_mlir", "jax", "jaxlib", "flax"}


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_no_forbidden_package(package):
    bad = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(package)
        if path != DRIVER
        for name in _imports(ast.parse(path.read_text()))
        if name in FORBIDDEN[package]
    }
    assert not bad


def test_the_torchxla_driver_imports_only_what_its_venv_has():
    tree = ast.parse(DRIVER.read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not set(_imports(tree)) & DRIVER_FORBIDDEN
    assert not {m for m in modules if m.startswith("reference.ir")}


@pytest.mark.parametrize("path", _modules("landscape"), ids=str)
def test_application_imports_frameworks_only_inside_functions(path):
    tree = ast.parse(path.read_text())
    top = ast.Module(body=[n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])
    assert not set(_imports(top)) & LAZY_ONLY


def test_a_forbidden_edge_is_caught():
    # The checker itself: a reference module importing the application is reported.
    tree = ast.parse("from landscape.cli import main\nimport numpy")
    assert set(_imports(tree)) & FORBIDDEN["reference"] == {"landscape"}


@pytest.mark.parametrize("path", [p for pkg in (*PACKAGES, "tests") for p in _modules(pkg)], ids=str)
def test_module_is_at_most_600_lines(path):
    assert len(path.read_text().splitlines()) <= 600
