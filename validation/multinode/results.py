"""Read what admission needs from disk: a pairwise run directory and single-node results.

A run directory (written by `rocm-fleet cluster pairwise`, or by hand) holds `runs.json`:

    {"schema_version": 1, "runs": [{"nodes": ["a", "b"], "output": "a+b.txt",
                                    "rc": 0, "timed_out": false}, ...]}

with each `output` a saved rccl-tests stdout next to it. Single-node results are the per-node
JSON documents of `rocm-fleet validate` / playbooks/validate.yml.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from validation.errors import ParseError, RocmFleetError
from validation.multinode.admission import GroupRun, group_run
from validation.multinode.targets import MultinodeTarget
from validation.parsers import rccl_tests
from validation.report.load import load_run, node_status

RUNS_FILE = "runs.json"


def load_runs(directory: Path, target: MultinodeTarget) -> list[GroupRun]:
    index = directory / RUNS_FILE
    try:
        doc: dict[str, Any] = json.loads(index.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise RocmFleetError(f"cannot read {index} ({exc}); point --runs at a directory written by "
                             "`rocm-fleet cluster pairwise`") from exc
    out = []
    for entry in doc.get("runs", []):
        nodes = tuple(entry["nodes"])
        if entry.get("timed_out"):
            out.append(group_run(nodes, None, target, timed_out=True))
            continue
        path = directory / entry["output"]
        try:
            record = rccl_tests.parse(path.read_text(errors="replace"))
        except (OSError, ParseError) as exc:
            rc = entry.get("rc")
            out.append(group_run(nodes, None, target, error=f"rc {rc}; output not usable: {exc}"))
            continue
        error = "" if entry.get("rc", 0) == 0 else f"launcher exit status {entry.get('rc')}"
        out.append(group_run(nodes, record, target, error=error))
    return out


def single_node_statuses(directory: Path) -> dict[str, str]:
    """host -> worst check status of its single-node run ("incomplete" when it did not finish)."""
    if not directory.is_dir():
        raise RocmFleetError(f"{directory} is not a directory; point --single-node at the results of "
                             "`rocm-fleet validate` or playbooks/validate.yml (results/<run id>/)")
    out = {}
    for doc in load_run(directory):
        out[doc["host"]] = node_status(doc) if doc.get("complete") else "incomplete"
    return out
