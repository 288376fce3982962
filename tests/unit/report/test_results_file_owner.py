"""A results document counts only for the node the controller fetched it from (issue 39 item 4).

roles/validation_node/tasks/results.yml saves each node's document as `<inventory_hostname>.json`, and the
checks plugin writes `<node>.json` (validation/results/node.py): the file name is the controller's word on
whose document it is, the `host` inside is the node's. A document that names another node than its file
vouches for neither: its file's node fails with RF-RESULTS-WRONG-NODE and the node it names is not counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation.cli import main
from validation.report.load import load_run


def passing(host: str) -> dict:
    return {"schema_version": 1, "host": host, "complete": True, "tier": "smoke", "provenance": {},
            "checks": [{"id": "c", "name": "test_gpu_count", "status": "pass", "code": None, "message": "",
                        "hint": ""}],
            "measurements": []}


def test_a_document_naming_b1_saved_as_a0_fails_a0_and_never_passes_b1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "a0.json").write_text(json.dumps(passing("b1")))
    rc = main(["report", str(run), "--expect", "a0", "b1", "--unreachable", "b1", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:3]}
    assert rows == {"a0": "ERROR", "b1": "ERROR"}, out
    assert rc == 1
    md = (tmp_path / "out" / "fleet.md").read_text()
    assert "| a0 | results_delivered | RF-RESULTS-WRONG-NODE | 'a0.json' was fetched from node a0 but names " \
           "node 'b1'" in md, md
    assert "| b1 | results_delivered | RF-NODE-UNREACHABLE |" in md, md
    assert "RF-NODE-NO-RESULTS" not in md, md


def test_the_node_named_inside_gets_nothing_from_another_nodes_file(tmp_path: Path) -> None:
    (tmp_path / "a0.json").write_text(json.dumps(passing("b1")))
    (tmp_path / "c2.json").write_text(json.dumps(passing("c2")))
    docs = {d["host"]: d for d in load_run(tmp_path)}
    assert sorted(docs) == ["a0", "c2"]
    assert docs["a0"]["complete"] is False and docs["a0"]["checks"][0]["status"] == "error"
    assert docs["a0"]["checks"][0]["code"] == "RF-RESULTS-WRONG-NODE"
    assert docs["c2"]["complete"] is True and docs["c2"]["checks"][0]["status"] == "pass"


def test_a_second_file_naming_a_node_leaves_that_nodes_own_document_alone(tmp_path: Path) -> None:
    """b1's own file is its results; a0.json naming b1 fails a0 only (before: b1 failed RF-RESULTS-CONFLICT)."""
    (tmp_path / "a0.json").write_text(json.dumps(passing("b1")))
    (tmp_path / "b1.json").write_text(json.dumps(passing("b1")))
    docs = {d["host"]: d for d in load_run(tmp_path)}
    assert docs["b1"]["complete"] is True and [c["status"] for c in docs["b1"]["checks"]] == ["pass"]
    assert docs["a0"]["checks"][0]["code"] == "RF-RESULTS-WRONG-NODE"


def test_a_file_name_that_is_not_a_node_name_is_a_named_failure_never_a_node(tmp_path: Path) -> None:
    (tmp_path / "a0 b1.json").write_text(json.dumps(passing("b1")))
    (doc,) = load_run(tmp_path)
    assert doc["host"].startswith("unnamed-") and doc["checks"][0]["code"] == "RF-RESULTS-CONFLICT"
    assert "'a0 b1.json'" in doc["checks"][0]["message"]
