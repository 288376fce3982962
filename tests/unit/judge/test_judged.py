"""How much of a run was judged (validation/judged.py) and the check that fails a run that judged none
(validation/checks/test_judged.py), on real results documents of the lent H200 and H100."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from validation import judged
from validation.checks import test_judged as check
from validation.checks.measuring import NodeMeasuring
from validation.checks.outcome import CheckFailure
from validation.report.terminal import render_terminal

RESULTS = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "results"
H100_IDLE = RESULTS / "h100" / "h100-ec99d18-idle-1.json"
H200_BASELINE = RESULTS / "h200" / "h200-busy-allowed.json"     # quick tier judged against a site baseline


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_a_lone_h100_without_a_baseline_judges_two_of_its_numbers() -> None:
    summary = judged.summarize(load(H100_IDLE))
    assert summary == {"numbers": 42, "judged": 2, "by": {"target": 2, "baseline": 0, "siblings": 0},
                       "record_only": 40, "invalid": 0,
                       "record_only_why": {"no published target for h100 and no site baseline for it": 39,
                                           "recorded without a verdict": 1}}
    assert judged.line(summary) == "42 numbers: 2 judged (target 2), 40 record-only, 0 invalid"


def test_numbers_judged_against_a_site_baseline_are_counted_as_such() -> None:
    summary = judged.summarize(load(H200_BASELINE))
    assert summary["by"] == {"target": 0, "baseline": 27, "siblings": 0} and summary["record_only"] == 9


def test_invalid_and_sibling_judged_numbers() -> None:
    doc = load(H100_IDLE)
    entries = [e for e in doc["measurements"] if judged.is_performance(e)]
    entries[0]["valid"] = False
    entries[1]["judged_by_siblings"] = True
    summary = judged.summarize(doc)
    assert (summary["invalid"], summary["by"]["siblings"], summary["judged"]) == (1, 1, 3)


def run_check(doc: dict[str, Any], *, require: bool, markexpr: str = "smoke or quick") -> NodeMeasuring:
    state = NodeMeasuring(node=doc["host"], allow_busy=False, measurements=doc["measurements"])
    options = {"--rf-require-judged": require, "markexpr": markexpr}
    request = SimpleNamespace(config=SimpleNamespace(getoption=options.__getitem__))
    check.test_the_performance_numbers_were_judged(state, request)  # type: ignore[arg-type]
    return state


def record_only(doc: dict[str, Any]) -> dict[str, Any]:
    """The H100 run without its two judged numbers (the host copies): as a SKU without those targets."""
    return {**doc, "measurements": [e for e in doc["measurements"] if e["metric"] not in ("torch_h2d_gb_s",
                                                                                           "torch_d2h_gb_s")]}


def test_a_run_that_judged_nothing_fails_when_judging_is_required() -> None:
    doc = record_only(load(H100_IDLE))
    run_check(doc, require=False)                               # the quick tier records and says so
    for kwargs in ({"require": True}, {"require": False, "markexpr": "smoke or quick or acceptance"}):
        with pytest.raises(CheckFailure) as failed:
            run_check(doc, **kwargs)  # type: ignore[arg-type]
        assert failed.value.code == "RF-NOT-JUDGED"
        assert failed.value.message.startswith("none of the 40 performance numbers was judged")
        assert "39 no published target for h100" in failed.value.message
        assert "rocm-fleet baseline create" in failed.value.hint


def test_a_run_with_a_judged_number_passes_even_when_required() -> None:
    run_check(load(H100_IDLE), require=True)


def test_the_terminal_summary_says_what_was_judged() -> None:
    text = render_terminal([load(H100_IDLE)], columns=200)
    assert "idle-1: 42 numbers: 2 judged (target 2), 40 record-only, 0 invalid" in text


def test_the_html_report_says_what_was_judged() -> None:
    from validation.report.html import render_html

    page = render_html([load(H100_IDLE)], title="t")
    assert "<th>performance numbers judged</th>" in page
    assert "42 numbers: 2 judged (target 2), 40 record-only, 0 invalid" in page
    assert "39 record-only: no published target for h100 and no site baseline for it" in page
