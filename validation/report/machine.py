"""The fleet report for machines: what `rocm-fleet report --json` prints and `--push` sends.

One document per results directory: the batch's verdict, then every node with its own verdict, each
failure with its stable code and the GPUs or links it names, what the node's numbers were judged by,
whether its run was complete, until when its verdict vouches for it, and the metrics' fleet summaries.
A dashboard, a ticketing hook or a scheduler acts on this document alone; `fleet_schema.json` beside this
file describes it (published with the collection; the tests validate every document they make against it).

A node's verdict:
- `fail`: a check failed, timed out or erred (RF-VALIDATION-EXPIRED and a missing node's stand-in
  included: validation/report/load.py), or the run did not finish (`complete` false);
- `pass`: every check passed, warned or was skipped, and the run finished.
The batch fails when any node does.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from validation import judged
from validation.records import to_jsonable
from validation.report.summary import FAILING

SCHEMA_VERSION = 2
SCHEMA_FILE = Path(__file__).with_name("fleet_schema.json")
STATUSES = ("pass", "warn", "fail", "error", "timeout", "skip")
MESSAGE_CHARS = 500          # a failure's message as the node said it, cut: the whole one is in its document
CODELESS = "RF-CHECK-FAILED"  # a failing check without a code (validation/codes.py)


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())
    return loaded


def _subjects(check: Mapping[str, Any], failing_entries: Mapping[str, set[str]]) -> list[str]:
    """The GPUs or links a failing check names: its batch verdicts' subjects and the subjects of its own
    failing measurements (a measurement names its check without the test's parameters)."""
    found = {str(v["subject"]) for v in check.get("verdicts") or () if isinstance(v, Mapping) and v.get("subject")}
    found |= failing_entries.get(str(check.get("id", "")).split("[", 1)[0], set())
    return sorted(found)


def failing(check: Mapping[str, Any]) -> bool:
    return check.get("status") in FAILING


def node_failed(doc: Mapping[str, Any]) -> bool:
    """The node's verdict is fail: a check failed, timed out or erred, or its run did not finish."""
    return not doc.get("complete") or any(failing(c) for c in doc.get("checks") or () if isinstance(c, Mapping))


def node_entry(doc: Mapping[str, Any]) -> dict[str, Any]:
    """One node of the document (see the module docstring), from its results document as the report read it."""
    checks = [c for c in doc.get("checks") or () if isinstance(c, Mapping)]
    failing_entries: dict[str, set[str]] = {}
    for entry in doc.get("measurements") or ():
        if isinstance(entry, Mapping) and entry.get("status") == "fail" and entry.get("check") and entry.get("subject"):
            failing_entries.setdefault(str(entry["check"]), set()).add(str(entry["subject"]))
    failures = [{"check": str(c.get("id", "")), "status": c["status"], "code": c.get("code") or CODELESS,
                 "subjects": _subjects(c, failing_entries), "message": str(c.get("message") or "")[:MESSAGE_CHARS]}
                for c in checks if failing(c)]
    counts = Counter(str(c.get("status")) for c in checks)
    complete = bool(doc.get("complete"))
    summary = judged.of(doc)
    return {
        "name": str(doc["host"]),
        "verdict": "fail" if node_failed(doc) else "pass",
        "complete": complete,
        "missing": bool(doc.get("missing")),
        "tier": doc.get("tier"),
        "started_at": doc.get("started_at"),
        "finished_at": doc.get("finished_at"),
        "valid_until": doc.get("valid_until"),
        "codes": sorted({f["code"] for f in failures}),
        "failures": failures,
        "checks": {status: counts.get(status, 0) for status in STATUSES},
        "judged": {key: int(summary.get(key) or 0) for key in ("numbers", "judged", "record_only", "invalid")},
    }


def fleet_document(nodes: Sequence[Mapping[str, Any]], summaries: Iterable[Any], *, run_id: str) -> dict[str, Any]:
    """The whole document: `nodes` as the report judged them (batch check and stand-ins included)."""
    entries = [node_entry(doc) for doc in nodes]
    failed = [n["name"] for n in entries if n["verdict"] == "fail"]
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "verdict": "fail" if failed else "pass",
        "failed": bool(failed),
        "node_count": len(entries),
        "failed_nodes": failed,
        "codes": dict(sorted(Counter(code for n in entries for code in n["codes"]).items())),
        "nodes": entries,
        "metrics": to_jsonable(list(summaries)),
    }
