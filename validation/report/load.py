"""Read a results directory: one JSON document per node (see validation/checks/results.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def node_status(node: dict[str, Any]) -> str:
    """The worst check status of a node; 'incomplete' runs are flagged as such by the caller."""
    order = ["error", "timeout", "fail", "warn", "pass", "skip"]
    statuses = [c["status"] for c in node["checks"]] or ["error"]
    return min(statuses, key=order.index)
