"""The comparison's HTML report, opened from disk in headless Chromium: it loads with nothing on
the console, runs its script, and shows every family in both phases of the default workload."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from landscape import cli

pytestmark = [pytest.mark.browser, pytest.mark.torch, pytest.mark.jax]
CHROMIUM = shutil.which("chromium")
# Flags for a sandboxed machine with no network (and root): no sandbox, no background traffic.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_report_loads_without_console_messages_and_shows_every_family(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["compare", "--out", str(out)]) == 0
    capsys.readouterr()
    page = out / "report.html"
    text = page.read_text()
    assert not any(f'{attr}="http' in text for attr in ("src", "href")) and "<link" not in text  # nothing to fetch
    run = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "CONSOLE" not in run.stderr, [line for line in run.stderr.splitlines() if "CONSOLE" in line]
    dom = run.stdout
    phases = [c["workload"]["phase"] for c in json.loads((out / "report.json").read_text())["comparisons"]]
    assert phases == ["prefill", "decode"]  # the default: one Llama-3.1-8B layer, both phases
    assert 'data-ready="1"' in dom and dom.count("6 targets costed") == len(phases)
    for target in ("h100", "tpu-v5e", "wse-3", "groq-lpu", "spyre", "mi300x"):
        assert dom.count(f'data-target="{target}"') == 2 * len(phases)
    for family in ("NVIDIA GPU", "Google TPU", "Cerebras wafer-scale engine", "Groq LPU", "IBM Spyre", "AMD GPU"):
        assert family in dom
    assert dom.count("<svg") == 12 * len(phases)  # a roofline per phase, target and side
    links = re.findall(r'<a href="([^"]+)"', dom)
    assert "report.json" in links and "prefill/plans/h100.torch.txt" in links and "decode/hlo/jax.xla.txt" in links
    for href in links:  # every link is relative and resolves beside the page
        assert not href.startswith(("http", "/", "file:")) and (out / href).is_file(), href


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_a_tie_is_painted_for_neither_side(tmp_path):
    """Two paths that cost the same on a target: the page's script marks neither row faster and
    counts the tie in its summary."""
    from hardware_models.comparison import compare_lowerings
    from landscape.report import render_html
    from reference.lowering import Lowering
    from tests.hardware_models.programs import softmax

    side = Lowering("jax", "toy", {"stablehlo": "// toy"}, softmax(64, 640, "f32"))
    page = tmp_path / "report.html"
    page.write_text(render_html([compare_lowerings(side, side, ["h100", "tpu-v5e"], "toy")], {}, set()))
    run = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert 'data-ready="1"' in run.stdout
    assert "faster on 0 (in green); 2 tied." in run.stdout
    assert 'class="faster"' not in run.stdout
