"""The run judged its performance numbers, and says how many.

A run that only records numbers cannot fail on performance: on a lone node without a site
baseline most numbers have no published target, and the sibling and batch verdicts need peers.
After the sibling verdicts (the plugin orders this check after them, before the post-flight), the
node's performance numbers are counted by what judged them (validation/judged.py); the counts go
into the results document (`judged`), the terminal summary and the HTML report. In the acceptance
tier, and in any tier with `--require-judged`, a node whose numbers were all record-only (or
invalid) fails RF-NOT-JUDGED: its PASS would say nothing about its speed.
"""

from __future__ import annotations

import re

import pytest

from validation import judged
from validation.checks.measuring import NodeMeasuring
from validation.checks.outcome import CheckFailure

pytestmark = [pytest.mark.quick, pytest.mark.gpu]


def _acceptance(markexpr: str | None) -> bool:
    """Does the run's -m expression take the acceptance tier ('smoke or quick or acceptance'), not
    leave it out ('quick and not acceptance')?"""
    return re.search(r"(?<!not )\bacceptance\b", markexpr or "") is not None


def test_the_performance_numbers_were_judged(measuring_state: NodeMeasuring, request: pytest.FixtureRequest) -> None:
    """At least one performance number was judged against a target, a site baseline or the node's own GPUs."""
    doc = measuring_state.results.doc if measuring_state.results is not None else {
        "measurements": measuring_state.measurements}
    summary = judged.summarize(doc)
    if measuring_state.results is not None:
        measuring_state.results.doc["judged"] = summary
        measuring_state.results.write()
    if not summary["numbers"]:
        pytest.skip("no performance number was measured in this run")
    required = request.config.getoption("--rf-require-judged") or _acceptance(request.config.getoption("markexpr"))
    if summary["judged"] == 0 and required:
        why = "; ".join(f"{n} {reason}" for reason, n in summary["record_only_why"].items())
        raise CheckFailure("RF-NOT-JUDGED", f"none of the {summary['numbers']} performance numbers was judged "
                           f"({judged.line(summary)}): {why}"[:1500])
