"""Read a results directory: one JSON document per node (see validation/checks/results.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from validation.checks.outcome import CHECK_CODES
from validation.errors import RocmFleetError


def load_run(directory: Path) -> list[dict[str, Any]]:
    nodes = []
    for path in sorted(directory.glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise RocmFleetError(f"{path} is not valid JSON ({exc}); was it written by another tool?") from exc
        if isinstance(doc, dict) and "schema_version" in doc and "host" in doc:
            nodes.append(doc)
    return nodes


MISSING = {  # why a targeted node has no document -> (code, what was seen)
    "unreachable": ("RF-NODE-UNREACHABLE", "the node stopped answering over SSH during the run; no results came back"),
    "no-results": ("RF-NODE-NO-RESULTS", "the node was targeted but delivered no results document"),
}


def with_missing(nodes: list[dict[str, Any]], expected: list[str], unreachable: list[str]) -> list[dict[str, Any]]:
    """Add a failing stand-in document for every expected node that delivered none, so a node
    that vanished is a named failure in every report format instead of a silent gap."""
    present = {n["host"] for n in nodes}
    stand_ins = []
    for host in dict.fromkeys([*expected, *unreachable]):
        if host in present:
            continue
        code, message = MISSING["unreachable" if host in unreachable else "no-results"]
        stand_ins.append({"schema_version": 1, "host": host, "tier": None, "started_at": None, "finished_at": None,
                          "complete": False, "missing": True, "provenance": {}, "measurements": [],
                          "checks": [{"id": "results_delivered", "name": "results_delivered", "tier": None,
                                      "needs_gpu": False, "status": "error", "code": code, "message": message,
                                      "hint": CHECK_CODES[code], "duration_s": 0.0}]})
    return sorted([*nodes, *stand_ins], key=lambda n: n["host"])


def node_status(node: dict[str, Any]) -> str:
    """The worst check status of a node; 'incomplete' runs are flagged as such by the caller."""
    order = ["error", "timeout", "fail", "warn", "pass", "skip"]
    statuses = [c["status"] for c in node["checks"]] or ["error"]
    return min(statuses, key=order.index)
