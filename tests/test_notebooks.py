"""Every notebook runs top to bottom as a notebook, in a real kernel (nbclient + ipykernel), with its
checkpoints (asserts) as the test: a broken lab fails the suite. `make notebooks` runs these alone."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_the_six_labs_are_there_and_stored_without_outputs():
    import nbformat

    labs = [p.name for p in NOTEBOOKS if p.name[:2].isdigit()]
    assert [name[:2] for name in labs] == ["01", "02", "03", "04", "05", "06"]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        assert all(
            not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code"
        ), path.name
        assert (ROOT / "notebooks" / "README.md").read_text().count(path.name) >= 1, path.name


@pytest.mark.torch
@pytest.mark.jax
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's own migration warning, not ours
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
