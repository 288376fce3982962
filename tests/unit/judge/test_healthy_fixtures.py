"""No false FAIL on healthy real outputs (issue 15, deliver 0): every complete real fixture of a healthy
machine, judged against its own SKU and GPU count the way `rocm-fleet judge` does, passes or is recorded
with the reason. Every real fixture of a judged tool is classified in tests/helpers/healthy_fixtures.py, so a
new fixture must say which case it is; the exceptions name their evidence.

The SKU and GPU count of each fixture come from its SOURCES.md row (tests/fixtures/real/<tool>/).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from healthy_fixtures import CUT, EXCEPTIONS, HEALTHY, NO_PROFILE_OR_REFUSED, NOTHING_TO_JUDGE, UNDER_LOAD

from validation import extract
from validation.cli import main

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "real"

def judge(capsys: pytest.CaptureFixture[str], tool: str, name: str, sku: str, gpus: int | None) -> tuple[int, dict]:
    count = ["--gpus", str(gpus)] if gpus else []
    argv = ["judge", "--profile", sku, "--json", *count, f"{tool}:{FIX / tool / name}"]
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)


@pytest.mark.parametrize("tool, name, sku, gpus", HEALTHY, ids=[f"{t}/{n}" for t, n, _, _ in HEALTHY])
def test_a_healthy_complete_output_passes_against_its_own_sku(capsys: pytest.CaptureFixture[str], tool: str,
                                                             name: str, sku: str, gpus: int | None) -> None:
    rc, doc = judge(capsys, tool, name, sku, gpus)
    bad = [v["reason"] for f in doc["files"] for v in f["verdicts"] if v["status"] not in ("pass", "skip", "warn")]
    assert rc == 0 and doc["status"] in ("pass", "skip"), bad


@pytest.mark.parametrize("tool, name, sku, gpus", UNDER_LOAD, ids=[f"{t}/{n}" for t, n, _, _ in UNDER_LOAD])
def test_a_healthy_view_taken_under_load_warns_that_the_gpus_were_busy(capsys: pytest.CaptureFixture[str], tool: str,
                                                                       name: str, sku: str, gpus: int | None) -> None:
    rc, doc = judge(capsys, tool, name, sku, gpus)
    verdicts = [v for f in doc["files"] for v in f["verdicts"]]
    others = [(v["status"], v["code"], v["reason"]) for v in verdicts
              if v["status"] not in ("pass", "skip") and (v["status"], v["code"]) != ("warn", "RF-GPU-BUSY")]
    assert rc == 0 and doc["status"] == "warn" and not others
    assert any(v["code"] == "RF-GPU-BUSY" for v in verdicts)
    count = ["--gpus", str(gpus)] if gpus else []
    assert main(["judge", "--profile", sku, "--strict", *count, f"{tool}:{FIX / tool / name}"]) == 1
    capsys.readouterr()


@pytest.mark.parametrize("tool, name, sku", CUT, ids=[f"{t}/{n}" for t, n, _ in CUT])
def test_a_cut_output_of_a_healthy_machine_is_an_error_naming_the_cut(capsys: pytest.CaptureFixture[str], tool: str,
                                                                     name: str, sku: str) -> None:
    rc, doc = judge(capsys, tool, name, sku, None)
    codes = [v["code"] for f in doc["files"] for v in f["verdicts"]]
    assert rc == 1 and "RF-INCOMPLETE-OUTPUT" in codes
    assert not [v for f in doc["files"] for v in f["verdicts"]
                if v["status"] == "fail" and v["code"] not in ("RF-GPU-MISSING", "RF-NOT-REPORTED")]


@pytest.mark.parametrize("tool, name, sku", NOTHING_TO_JUDGE, ids=[f"{t}/{n}" for t, n, _ in NOTHING_TO_JUDGE])
def test_an_output_without_a_judged_number_is_no_verdict(capsys: pytest.CaptureFixture[str], tool: str, name: str,
                                                         sku: str) -> None:
    rc = main(["judge", "--profile", sku, f"{tool}:{FIX / tool / name}"])
    assert rc == 2 and "holds no measurement" in capsys.readouterr().err


def test_the_exception_is_an_error_with_its_evidence_not_a_fail(capsys: pytest.CaptureFixture[str]) -> None:
    for (tool, name, sku), why in EXCEPTIONS.items():
        rc, doc = judge(capsys, tool, name, sku, None)
        statuses = {v["status"] for f in doc["files"] for v in f["verdicts"]}
        assert rc == 1 and "fail" not in statuses and "error" in statuses, why
        assert any("verification was off (-V 0)" in v["reason"] for f in doc["files"] for v in f["verdicts"])


def test_every_real_fixture_of_a_judged_tool_is_classified() -> None:
    listed = {(t, n) for t, n, _, _ in HEALTHY + UNDER_LOAD} | {(t, n) for t, n, _ in CUT + NOTHING_TO_JUDGE}
    listed |= {(t, n) for t, n, _ in EXCEPTIONS} | {(t, n) for t, ns in NO_PROFILE_OR_REFUSED.items() for n in ns}
    present = {(tool, p.name) for tool in extract.JUDGES for p in (FIX / tool).glob("*.txt")}
    assert present - listed == set(), "classify these in tests/unit/judge/test_healthy_fixtures.py"
    assert listed - present == set(), "these classified fixtures do not exist"
