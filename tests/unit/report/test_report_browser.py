"""The HTML report in a real browser: the distribution's Chromium, headless, loads it and reports
no console error, warning or failed load, and the page shows its summary first.

The report is made from the real H200 documents and from the derived 8-GPU and 8-GPU-link nodes
(tests/helpers/derived_results.py), so the per-GPU grid and the heatmap are on the page.
Chromium comes from .ci/setup (`apt-get install chromium`); this test installs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from derived_results import FIXTURES, eight_gpu_node, idle_runs, load, scaled, xgmi_node
from headless_chromium import Chromium, find_chromium

from validation.report import render_html


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    if find_chromium() is None:
        pytest.fail("chromium is not installed: run .ci/setup (it installs Debian's chromium)")
    with Chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    h200 = FIXTURES / "real" / "results" / "h200"
    nodes = [load(h200 / "h200-busy.json"), load(h200 / "h200-idle-1.json"),
             scaled(eight_gpu_node(idle_runs()), "gpu3", 0.7), xgmi_node()]
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_html(nodes, title="rocm-fleet quick validation"))
    return path


def test_the_report_loads_without_a_console_error(browser: Chromium, report: Path) -> None:
    page = browser.load(report)
    assert page.problems == []
    assert page.evaluate("document.querySelector('h2').textContent") == "Summary"
    assert page.evaluate("document.querySelectorAll('.card').length") >= 4
    headings = page.evaluate("[...document.querySelectorAll('h2')].map(h => h.textContent)")
    assert "Measurements per GPU: h200-x8-derived" in headings
    assert "xgmi_pair_gb_s (GB/s), mi300x-a2a: source row → destination column" in headings
    # the per-GPU grid has a column per GPU; the heatmap a row per source GPU
    assert page.evaluate("[...document.querySelectorAll('h2')].find(h => h.textContent.includes('h200-x8'))"
                         ".nextElementSibling.querySelectorAll('tr:first-child th').length") == 1 + 8


def test_the_browser_check_sees_a_broken_page(browser: Chromium, tmp_path: Path) -> None:
    """The check can fail: a page with a script error, an error message and a missing image."""
    broken = tmp_path / "broken.html"
    broken.write_text('<!doctype html><p>x</p><img src="missing.png">'
                      '<script>console.error("boom"); undefinedFunction();</script>')
    problems = browser.load(broken).problems
    assert any("console.error: boom" in p for p in problems)
    assert any("undefinedFunction is not defined" in p for p in problems)
    assert any("ERR_FILE_NOT_FOUND" in p for p in problems)
