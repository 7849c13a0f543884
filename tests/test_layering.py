"""Data flows one way: the import graph has no forbidden edge and no cycle, and no module
outgrows 600 lines.

reference imports nothing else; the two sides import only reference; the torch-xla side imports
reference, and pytorch_side's modules in its driver (the same nn.Modules, another compiler), never
torch or torch-xla in the main process (its driver runs them in their own venv, where the
driver's function bodies import them); hardware_models imports
only reference and no framework; the application (landscape/) sits on top and may reach every
package, but torch, jax and the two sides only inside function bodies (lazily). No exemptions.
Between our own modules there is no cycle, counting imports inside function bodies (a cycle
broken by a local import is still one); only imports for type annotations (TYPE_CHECKING) are
left out.
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
    "torchxla_side": {
        "pytorch_side",
        "jax_side",
        "hardware_models",
        "landscape",
        "torch",
        "torch_xla",
        "torch_mlir",
        "jax",
        "flax",
    },
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


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(path: pathlib.Path, name: str):
    """Every module name an import in the file may refer to, type-checking-only imports left out."""
    tree = ast.parse(path.read_text())
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for child in node.body
        for n in ast.walk(child)
    }
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = (
                ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
                if node.level
                else node.module
            )
            yield base
            yield from (f"{base}.{a.name}" for a in node.names)


def import_graph(paths) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (a package's own parent left out)."""
    modules = {_module_name(p): p for p in paths}
    graph = {}
    for name, path in modules.items():
        edges = set()
        for target in _imported_names(path, name):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_our_modules_import_each_other_without_a_cycle():
    graph = import_graph([p for pkg in PACKAGES for p in _modules(pkg)])
    assert {"hardware_models.cost.attention", "landscape.host_trace"} <= set(graph)
    # the host CPU's package, whole: its record, cost model, sysfs reader, calibration, files, runtimes
    host = {f"hardware_models.families.cpu.{m}" for m in ("cost", "host", "calibration", "files", "runtime", "xla")}
    assert host | {"hardware_models.families.cpu"} <= set(graph)
    assert cycles(graph) == []


def test_a_cycle_through_a_local_import_is_caught():
    """The checker itself: a -> b at the top, b -> c, c -> a inside a function, d alone."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
