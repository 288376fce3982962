"""A verdict vouches for a node only so long (issue 33, item 4): every complete run's document says
`valid_until`, and a report read after it fails the node RF-VALIDATION-EXPIRED in every format."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from validation import validity
from validation.cli import main
from validation.report.load import Claims, expire

FINISHED = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def doc(host: str, *, tier: str = "smoke or quick", complete: bool = True, valid_until: str | None = "auto") -> dict:
    out = {"schema_version": 1, "host": host, "tier": tier, "complete": complete,
           "finished_at": FINISHED.isoformat(), "provenance": {}, "measurements": [],
           "checks": [{"id": "c", "name": "test_gemm", "status": "pass", "code": None, "message": "", "hint": ""}]}
    if valid_until == "auto":
        out["valid_until"] = validity.valid_until(tier, FINISHED)
    elif valid_until is not None:
        out["valid_until"] = valid_until
    return out


@pytest.mark.parametrize(("expr", "tier", "days"), [
    ("smoke", "smoke", 1), ("smoke or quick", "quick", 7), ("(smoke or quick) and not gpu", "quick", 7),
    ("smoke or quick or acceptance", "acceptance", 30), ("health", "health", 1 / 24)])
def test_each_tier_vouches_for_its_own_time(expr: str, tier: str, days: float) -> None:
    assert validity.tier_of(expr) == tier
    until = dt.datetime.fromisoformat(validity.valid_until(expr, FINISHED) or "")
    assert until - FINISHED == dt.timedelta(days=days)


def test_a_run_of_no_tier_has_no_validity_unless_given_one() -> None:
    assert validity.valid_until("gpu and not smoke_x", FINISHED) is None
    assert validity.valid_until(None, FINISHED, 2) == "2026-11-01T14:00:00+00:00"


def test_a_verdict_read_after_its_validity_fails_the_node_and_says_since_when() -> None:
    old = doc("n1")
    expire(old, FINISHED + dt.timedelta(days=10))
    (flag,) = [c for c in old["checks"] if c["code"] == "RF-VALIDATION-EXPIRED"]
    assert flag["status"] == "error" and "until 2026-11-08T12:00:00+00:00" in flag["message"]
    assert "3.0 days ago" in flag["message"] and "re-validate" in flag["hint"]
    expire(old, FINISHED + dt.timedelta(days=11))                        # read twice: flagged once
    assert sum(c["code"] == "RF-VALIDATION-EXPIRED" for c in old["checks"]) == 1


@pytest.mark.parametrize("kept", [
    doc("fresh"),                                         # within its week
    doc("older-writer", valid_until=None),                # written before documents said so: not judged by age
    doc("interrupted", complete=False)])                  # incomplete already fails; no validity to judge
def test_no_flag_where_the_document_still_vouches_or_says_nothing(kept: dict) -> None:
    expire(kept, FINISHED + dt.timedelta(days=3))
    assert all(c["code"] != "RF-VALIDATION-EXPIRED" for c in kept["checks"])


@pytest.mark.parametrize("until", ["next tuesday", 4102444800, ["2099-01-01"]])
def test_a_validity_that_is_not_a_time_vouches_for_nothing(until: object) -> None:
    """Issue 39: at d11d023 a valid_until the report could not read ('next tuesday', a number) never expired:
    a document that claims a validity no one can check now fails its node as expired."""
    odd = doc("odd", valid_until="auto")
    odd["valid_until"] = until
    expire(odd, FINISHED + dt.timedelta(hours=1))
    assert [c["status"] for c in odd["checks"] if c["code"] == "RF-VALIDATION-EXPIRED"] == ["error"]


def test_the_fleet_report_fails_the_expired_node_and_passes_the_fresh_one(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    run.mkdir()
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    fresh = doc("n1") | {"valid_until": (now + dt.timedelta(days=6)).isoformat()}
    stale = doc("n2") | {"valid_until": (now - dt.timedelta(hours=5)).isoformat()}
    for d in (fresh, stale):
        (run / f"{d['host']}.json").write_text(json.dumps(d))
    assert main(["report", str(run)]) == 1
    md = (run / "fleet.md").read_text()
    assert "| n2 | validation_current | RF-VALIDATION-EXPIRED |" in md, md
    assert "n1 | validation_current" not in md
    (run / "n2.json").unlink()
    assert main(["report", str(run)]) == 0


def test_claims_judge_age_at_one_moment_for_the_whole_run() -> None:
    at = FINISHED + dt.timedelta(days=8)
    claims = Claims(now=at)
    taken = claims.take(Path("n1.json"), doc("n1"))
    assert taken is not None and taken["checks"][-1]["code"] == "RF-VALIDATION-EXPIRED"


@pytest.mark.parametrize("hours", ["0", "-3", "9000", "a week"])
def test_a_validity_out_of_range_is_refused_before_anything_runs(hours: str, capsys) -> None:
    assert main(["validate", "--hosts", "local://", "--valid-for", hours]) == 2
    assert "--valid-for" in capsys.readouterr().err
