"""The docs: every generated page equals what its generator makes of the committed CSVs, every
relative link leads somewhere, and the README stays a front door that links every page."""

import importlib.util
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _module(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of the module looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_serving_load_page_is_generated_from_its_csv():
    bench = _module(ROOT / "benchmarks" / "serving_load.py")
    assert bench.DOC.read_text() == bench.render_doc(), (
        "rerun python benchmarks/serving_load.py (or regenerate the page)"
    )


def test_the_benchmarks_serving_load_table_is_generated_from_the_csvs():
    bench = _module(ROOT / "benchmarks" / "serving_load.py")
    text = bench.TABLE_PAGE.read_text()
    assert bench.BEGIN in text and bench.END in text, f"{bench.TABLE_PAGE.name} lost its serving-load markers"
    assert bench.render_table_page(text) == text, "rerun python benchmarks/serving_load.py --render"


def test_every_generated_block_is_what_make_docs_makes_of_the_csvs():
    """Property: each measured table between `generated:` markers equals its render from
    benchmarks/results/*.csv, every marker names a known block and every block is used."""
    tables = _module(ROOT / "benchmarks" / "docs_tables.py")
    assert tables.stale_pages() == [], "run make docs"
    assert tables.used_blocks() == set(tables.BLOCKS)


def test_a_stale_generated_block_is_found_and_rewritten():
    tables = _module(ROOT / "benchmarks" / "docs_tables.py")
    fresh = (ROOT / "docs" / "lowering.md").read_text()
    stale = fresh.replace("| gpt2-small | torch | 1024 |", "| gpt2-small | torch | 9999 |", 1)
    assert stale != fresh and tables.regenerate(stale) == fresh


BAD_PAGES = {
    "unknown": ("<!-- generated: nope from benchmarks/docs_tables.py -->\nx\n<!-- end generated: nope -->", "unknown"),
    "no end": ("<!-- generated: predict from benchmarks/docs_tables.py -->\nx\n", "has no end marker"),
    "orphan end": ("text\n<!-- end generated: predict -->\n", "without its start"),
    "nested": (
        "<!-- generated: predict from benchmarks/docs_tables.py -->\n"
        "<!-- generated: lowering from benchmarks/docs_tables.py -->\n"
        "<!-- end generated: lowering -->\n<!-- end generated: predict -->",
        "inside block 'predict'",
    ),
    "malformed": ("<!--  generated: predict from benchmarks/docs_table.py -->\n", "malformed marker"),
}


@pytest.mark.parametrize("case", BAD_PAGES)
def test_a_broken_marker_is_refused_in_one_line_naming_the_page_and_line(case):
    tables = _module(ROOT / "benchmarks" / "docs_tables.py")
    text, problem = BAD_PAGES[case]
    with pytest.raises(SystemExit, match=problem) as err:
        tables.regenerate(text, "docs/x.md")
    assert str(err.value.code).startswith("docs_tables: docs/x.md:") and "\n" not in str(err.value.code)


def test_a_csv_that_is_missing_empty_or_malformed_is_named_not_a_traceback(tmp_path, monkeypatch):
    tables = _module(ROOT / "benchmarks" / "docs_tables.py")
    monkeypatch.setattr(tables, "RESULTS", tmp_path)
    block = "<!-- generated: lowering from benchmarks/docs_tables.py -->\n<!-- end generated: lowering -->"
    with pytest.raises(SystemExit, match="lowering.csv: .*No such file"):
        tables.regenerate(block)
    (tmp_path / "lowering.csv").write_text("model,side\n")
    with pytest.raises(SystemExit, match="lowering.csv has no rows"):
        tables.regenerate(block)
    (tmp_path / "lowering.csv").write_text("model,side\ngpt2,torch\n")
    with pytest.raises(SystemExit, match=r"lowering.csv cannot be rendered as block 'lowering' \(KeyError"):
        tables.regenerate(block)


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "examples" / "README.md"]


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page):
    text = page.read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"\w+://", target):
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: link to {target} leads nowhere"
        if fragment and dest.suffix == ".md":
            assert fragment in _anchors(dest.read_text()), f"{page.name}: no heading {fragment!r} in {dest.name}"


def test_the_readme_is_a_front_door():
    """The README: what it is, the two commands, one worked example, where to go next (issue 41)."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    for heading in ("## Two commands", "## Where to go next"):
        assert heading in text
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", text))
    assert linked == {p.name for p in (ROOT / "docs").glob("*.md")}, "every docs page is linked from the README"
