"""Generated docs are never stale: each page equals what its generator makes of the committed CSV."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _module(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_serving_load_page_is_generated_from_its_csv():
    bench = _module(ROOT / "benchmarks" / "serving_load.py")
    assert bench.DOC.read_text() == bench.render_doc(), (
        "rerun python benchmarks/serving_load.py (or regenerate the page)"
    )


def test_the_readme_serving_load_table_is_generated_from_the_csvs():
    bench = _module(ROOT / "benchmarks" / "serving_load.py")
    text = bench.README.read_text()
    assert bench.BEGIN in text and bench.END in text, "the README lost its serving-load markers"
    assert bench.render_readme(text) == text, "rerun python benchmarks/serving_load.py --render"
