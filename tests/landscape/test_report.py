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
    opening = page[page.index("<h1>") : page.index('<section class="phase"')]
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
    items = re.findall(r"<li><b>([^<]+)</b>: ([^<]+)</li>", page[page.index('id="definitions"') :])
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
    for wanted in (
        "report.json",
        "prefill/plans/h100.torch.txt",
        "decode/rooflines/h100.jax.svg",
        "prefill/traces/groq-lpu.jax.json",
        "decode/hlo/jax.stablehlo.txt",
    ):
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
    from hardware_models.comparison import compare_lowerings
    from hardware_models.estimate import estimate
    from landscape.comparison_workload import plan_workloads
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


def test_each_phase_ranks_the_targets_and_names_the_top_kernel_and_its_cause(written):
    """The ranking's rows are the targets, fastest first, each at its fastest path's time, and its
    top kernel is the one with the most time x repeats in report.json."""
    from landscape.render import kernel_cause, ranking

    _, page, data = written
    for comparison, section in zip(data["comparisons"], page.split('<section class="phase"')[1:]):
        ranked = ranking(comparison)
        assert [r["target"] for r in ranked] == sorted(
            TARGETS,
            key=lambda t: min(r["time_s"] for r in comparison["results"] if r["target"] == t and "refused" not in r),
        )
        assert [r["time_s"] for r in ranked] == sorted(r["time_s"] for r in ranked) and ranked[0]["slower"] == 1.0
        for r in ranked:
            best = min((x for x in comparison["results"] if x["target"] == r["target"]), key=lambda x: x["time_s"])
            assert r["side"] == best["side"] and r["top_kernel"] == best["top_kernel"]
            top = best["top_kernel"]
            assert 0 < top["time_s"] <= best["time_s"] * (1 + 1e-9) and top["share"] == pytest.approx(
                top["time_s"] / best["time_s"]
            )
        table = section[section.index('<table class="ranking">') :]
        table = table[: table.index("</table>")]
        assert re.findall(r"data-ranked='([^']+)'", table) == [r["target"] for r in ranked]
        assert html_text(kernel_cause(ranked[0]["top_kernel"])) in html_text(table)
        assert f"{ranked[0]['target']} is the fastest" in section


def test_the_top_kernel_is_the_largest_by_time_times_repeats():
    from hardware_models.comparison import SideResult
    from hardware_models.cost.model import Cost, Estimate, GroupCost

    groups = (
        GroupCost(
            0,
            "contraction",
            ("stablehlo.dot_general",),
            "mlp",
            1,
            Cost(flops=10, time_s=3.0, compute_s=3.0, bytes=(("hbm", 5),)),
        ),
        GroupCost(
            1,
            "other",
            ("stablehlo.transpose", "stablehlo.add"),
            "jit(f)/attn/transpose",
            4,
            Cost(flops=2, time_s=1.0, memory_s=(("hbm", 1.0),), bytes=(("hbm", 40),)),
        ),
    )
    top = SideResult("jax", "h100", "hbm", estimate=Estimate("h100", "p", groups)).top_kernel()
    assert top["group"] == 1 and top["time_s"] == 4.0 and top["share"] == pytest.approx(4 / 7)
    assert top["bound"] == "memory" and top["intensity"] == pytest.approx(2 / 40)
    from landscape.render import kernel_cause

    assert kernel_cause(top) == "4.00 s (57%) in transpose +1 fused (attn): memory-bound at 0.05 FLOP/B"


def test_main_memory_traffic_is_named_so_and_the_op_counts_are_collapsed(written):
    _, page, _ = written
    assert "<th>main-memory traffic</th>" in page and "<th>main memory</th>" not in page
    assert '<details class="op-counts">' in page and '<details class="op-counts" open' not in page


def html_text(fragment: str) -> str:
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", fragment))
