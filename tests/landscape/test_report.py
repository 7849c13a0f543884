"""landscape/report.py: the page says what was compared and on what, defines its terms, and links
the files written beside it with relative links that resolve."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from hardware_models.target import get_target
from landscape.report import DEFINITIONS, write_report
from tests.landscape.comparisons import small_comparison

TARGETS = ("h100", "groq-lpu")


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        self.hrefs += [v for k, v in attrs if tag == "a" and k == "href"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The report of two phases on two targets, written once: (folder, page, report.json)."""
    root = tmp_path_factory.mktemp("report")
    phases = [small_comparison(TARGETS, phase=p) for p in ("prefill", "decode")]
    write_report(phases, [get_target(t) for t in TARGETS], str(root))
    return root, (root / "report.html").read_text(), json.loads((root / "report.json").read_text())


def test_the_opening_states_dtype_shapes_phases_and_compilers(written):
    _, page, _ = written
    opening = page[page.index("<h1>"):page.index('<section class="phase"')]
    text = re.sub(r"<[^>]+>", "", opening)
    assert "One llama-3.1-8b layer" in text and "bfloat16" in text
    assert "n_heads=32" in text and "d_ff=14336" in text
    assert "prefill of 2048 tokens" in text and "2048-token KV cache" in text
    assert "torch.export → torch-mlir → StableHLO" in text and "jax.jit → StableHLO" in text


def test_each_target_is_named_by_family_and_vendor(written):
    _, page, _ = written
    text = re.sub(r"<[^>]+>", "", page)
    assert "h100: NVIDIA GPU: NVIDIA H100 SXM 80GB (Hopper)" in text
    assert "groq-lpu: Groq LPU: " in text and "SRAM" in text


def test_bound_padding_fused_and_other_are_defined_in_one_line_each(written):
    _, page, _ = written
    items = re.findall(r"<li><b>([^<]+)</b>: ([^<]+)</li>", page[page.index('id="definitions"'):])
    defined = dict(items)
    for term in ("bound", "padding", "fused", "other"):
        assert term in defined and "\n" not in defined[term]
    assert set(DEFINITIONS) <= set(defined)


def test_links_are_relative_and_point_at_files_written_beside_the_page(written):
    tmp_path, page, _ = written
    parser = _Links()
    parser.feed(page)
    assert parser.hrefs, "the page links nothing"
    for href in parser.hrefs:
        assert not href.startswith(("/", "http", "file:")), href
        assert (tmp_path / href).is_file(), href
    for wanted in ("report.json", "prefill/plans/h100.torch.txt", "decode/rooflines/h100.jax.svg",
                   "prefill/traces/groq-lpu.jax.json", "decode/hlo/jax.stablehlo.txt"):
        assert wanted in parser.hrefs


def test_report_json_holds_one_comparison_per_phase_with_its_workload(written):
    _, _, data = written
    assert [c["workload"]["phase"] for c in data["comparisons"]] == ["prefill", "decode"]
    assert data["comparisons"][0]["target_details"]["h100"]["kind"] == "NVIDIA GPU"
    assert data["comparisons"][0]["workload"]["dtype"] == "bfloat16"


def test_the_report_of_a_block_repeated_four_times_carries_every_repeat(tmp_path):
    """A regional program (a GEMM and an exp, called 4 times) on every family: in report.json each
    result's time by kind sums to its time, and its bytes per level and time are the estimate's
    totals (every repeat counted), not one call's."""
    from hardware_models.compare import compare_lowerings
    from hardware_models.estimate import estimate
    from landscape.workload import plan_workloads
    from reference.lowering import Lowering
    from tests.hardware_models.cost.test_wafer import _stack

    module = _stack(4, 65, width=129)
    targets = ["h100", "tpu-v5e", "spyre", "groq-lpu", "wse-3"]
    sides = {s: Lowering(s, "stack", {"stablehlo": "// stack"}, module) for s in ("torch", "jax")}
    (workload,) = plan_workloads(None, {"mode": "prefill"}, "bfloat16")
    result = compare_lowerings(sides["torch"], sides["jax"], targets, "stack", workload=workload.to_dict())
    write_report([(result, sides)], [get_target(t) for t in targets], str(tmp_path))
    (comparison,) = json.loads((tmp_path / "report.json").read_text())["comparisons"]
    assert len(comparison["results"]) == 2 * len(targets)
    for r in comparison["results"]:
        total = estimate(module, get_target(r["target"])).total
        assert sum(r["time_by_kind_s"].values()) == pytest.approx(r["time_s"], rel=1e-9), r["target"]
        assert r["time_s"] == pytest.approx(total.time_s, rel=1e-9), r["target"]
        assert r["bytes"] == dict(total.bytes), r["target"]
    one = estimate(_stack(1, 65, width=129), get_target("h100")).total
    h100 = next(r for r in comparison["results"] if r["target"] == "h100")
    assert h100["bytes"]["hbm"] == 4 * dict(one.bytes)["hbm"]  # nothing outside the block: 4 calls, 4x the bytes
