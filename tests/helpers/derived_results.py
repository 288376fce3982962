"""Results documents derived from real ones, each by a stated, minimal transformation.

The parents are real (tests/fixtures/real/results/SOURCES.md: eight idle quick-tier runs of the
lent H200, one GPU each; tests/fixtures/real/transferbench: AMD's MI300X all-to-all run). The
derivations are code rather than files so that each test states exactly what it changed:

- `eight_gpu_node(runs)`: one node whose gpuK carries run K's per-GPU measurements (eight real
  measurements of the same GPU model, taken minutes apart: the spread a healthy 8-GPU node shows
  is at least this run-to-run spread of one GPU, which is what the sibling verdict must tolerate);
- `scaled(doc, subject, factor)`: that subject's throughputs times `factor` (latencies divided);
- `xgmi_node()`: one node whose 56 GPU-pair links are AMD's recorded TransferBench a2a values.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from validation import extract, parsers
from validation.targets import load_targets

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200_IDLE = [FIXTURES / "real" / "results" / "h200" / f"h200-idle-{i}.json" for i in range(1, 9)]
XGMI_A2A = FIXTURES / "real" / "transferbench" / "mi300x-x8-rocm-blogs-rccl-xgmi-a2a-64M-8cu.txt"


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def idle_runs() -> list[dict[str, Any]]:
    return [load(p) for p in H200_IDLE]


def eight_gpu_node(runs: list[dict[str, Any]], host: str = "h200-x8-derived") -> dict[str, Any]:
    doc = copy.deepcopy(runs[0])
    doc["host"] = host
    doc["measurements"] = []
    for k, run in enumerate(runs):
        for entry in run["measurements"]:
            if entry.get("subject") in ("gpu0", "host -> gpu0", "gpu0 -> host"):
                doc["measurements"].append({**entry, "subject": entry["subject"].replace("gpu0", f"gpu{k}")})
    return doc


def scaled(doc: dict[str, Any], subject: str, factor: float) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for entry in out["measurements"]:
        if entry.get("subject") == subject and isinstance(entry.get("value"), (int, float)):
            higher = entry.get("higher_is_better", True)
            entry["value"] = entry["value"] * factor if higher else entry["value"] / factor
    return out


def renamed(doc: dict[str, Any], host: str) -> dict[str, Any]:
    return {**copy.deepcopy(doc), "host": host}


def xgmi_node(host: str = "mi300x-a2a") -> dict[str, Any]:
    record = parsers.parse("transferbench", XGMI_A2A.read_text())
    verdicts = extract.verdicts_for("transferbench", record, load_targets("mi300x"))
    return {"schema_version": 1, "host": host, "complete": True, "tier": "quick",
            "provenance": {"declared_sku": "mi300x"}, "checks": [],
            "measurements": [{"metric": v.metric, "subject": v.subject, "value": v.measured, "unit": v.unit,
                              "higher_is_better": True, "status": v.status.value} for v in verdicts]}
