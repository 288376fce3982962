"""`rocm-fleet report --json` (and the push payload, the same document) names every node, its verdict, its
failures with their codes and the GPUs or links they name, what was judged, completeness and validity, and
follows validation/report/fleet_schema.json (issue 44, item 1)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from validation import judged
from validation.cli import main
from validation.report import machine

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "results"
# Real results documents (tests/fixtures/real/SOURCES.md), each saved as <its host>.json as a run writes it:
# a busy H200 (RF-GPU-BUSY on gpu0), an idle H200, an idle H100 whose host copy fell behind (RF-BW-HOST-LOW on
# the link "host -> gpu0"). Neither H200 document carries valid_until (written before it existed).
DOCS = {"h200-busy": REAL / "h200" / "h200-busy.json", "h200-idle-1": REAL / "h200" / "h200-idle-1.json",
        "idle-1": REAL / "h100" / "h100-b3dd7bc-idle-1.json"}
VALID_UNTIL = "2999-01-01T00:00:00Z"


def passing(host: str) -> dict:
    """A made-up node whose one check passed (none of the real documents passes: they ran unprovisioned)."""
    return {"schema_version": 1, "host": host, "tier": "smoke", "complete": True, "valid_until": VALID_UNTIL,
            "started_at": "2026-12-07T10:00:00Z", "finished_at": "2026-12-07T10:01:00Z", "provenance": {},
            "checks": [{"id": "test_gpu_count.py::test_count", "status": "pass", "code": None}],
            "measurements": []}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    directory = tmp_path / "fleet-run-7"
    directory.mkdir()
    for host, source in DOCS.items():
        shutil.copyfile(source, directory / f"{host}.json")
    (directory / "n-pass.json").write_text(json.dumps(passing("n-pass")))
    return directory


def report_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    rc = main(["report", *argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_every_node_its_verdict_codes_and_gpus_are_in_the_document_and_it_follows_the_schema(
        run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = report_json(capsys, str(run), "--expect", "gone", "--unreachable", "gone")
    jsonschema.Draft202012Validator(machine.schema()).validate(doc)
    assert rc == 1 and doc["verdict"] == "fail" and doc["failed"] is True and doc["run_id"] == "fleet-run-7"
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert list(nodes) == ["gone", "h200-busy", "h200-idle-1", "idle-1", "n-pass"] and doc["node_count"] == 5
    assert doc["failed_nodes"] == ["gone", "h200-busy", "h200-idle-1", "idle-1"]

    busy = {f["code"]: f for f in nodes["h200-busy"]["failures"]}
    assert "gpu0" in busy["RF-GPU-BUSY"]["subjects"], busy["RF-GPU-BUSY"]
    slow_link = {f["code"]: f for f in nodes["idle-1"]["failures"]}["RF-BW-HOST-LOW"]
    assert slow_link["subjects"] == ["host -> gpu0"] and slow_link["check"].startswith("test_portable_probes.py::")

    gone = nodes["gone"]
    assert (gone["verdict"], gone["complete"], gone["missing"], gone["codes"]) == ("fail", False, True,
                                                                                    ["RF-NODE-UNREACHABLE"])
    assert nodes["n-pass"]["verdict"] == "pass" and nodes["n-pass"]["failures"] == []
    assert nodes["n-pass"]["valid_until"] == VALID_UNTIL and nodes["h200-idle-1"]["valid_until"] is None

    original = json.loads(DOCS["h200-idle-1"].read_text())
    want = judged.of(original)
    assert nodes["h200-idle-1"]["judged"] == {k: want[k] for k in ("numbers", "judged", "record_only", "invalid")}
    assert nodes["h200-idle-1"]["judged"]["numbers"] > 0
    # every check counted once, the report's own batch check (batch_peers) among them
    assert sum(nodes["h200-idle-1"]["checks"].values()) == len(original["checks"]) + 1
    assert doc["codes"]["RF-NODE-UNREACHABLE"] == 1 and doc["codes"]["RF-GPU-BUSY"] == 1


def test_an_incomplete_run_fails_its_node_though_no_check_failed(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = passing("n-pass")
    doc["complete"] = False
    (run / "n-pass.json").write_text(json.dumps(doc))
    for host in DOCS:
        (run / f"{host}.json").unlink()
    rc, out = report_json(capsys, str(run))
    (node,) = out["nodes"]
    assert rc == 1 and node["verdict"] == "fail" and node["failures"] == [] and node["complete"] is False


def test_a_healthy_run_passes_and_so_does_its_batch(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for host in DOCS:
        (run / f"{host}.json").unlink()
    (run / "n-pass-2.json").write_text(json.dumps(passing("n-pass-2")))
    rc, doc = report_json(capsys, str(run))
    jsonschema.Draft202012Validator(machine.schema()).validate(doc)
    assert rc == 0 and doc["verdict"] == "pass" and doc["failed_nodes"] == [] and doc["codes"] == {}
    # their checks carry no message, hint or name (node_schema.json requires none): the HTML page was a crash
    assert "n-pass-2" in (run / "fleet.html").read_text()


def test_the_schema_refuses_what_a_consumer_could_not_act_on(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The schema is not a formality: a node without a verdict, a failure without a code or an unknown field
    are refused."""
    _, doc = report_json(capsys, str(run))
    validator = jsonschema.Draft202012Validator(machine.schema())
    broken = []
    for change in (lambda d: d["nodes"][0].pop("verdict"),
                   lambda d: d["nodes"][1]["failures"][0].update(code="gpu0 is slow"),
                   lambda d: d.update(nodes=len(d["nodes"])),            # schema version 1's count
                   lambda d: d["nodes"][0].update(extra=True)):
        bad = copy.deepcopy(doc)
        change(bad)
        broken.append(next(validator.iter_errors(bad), None) is not None)
    assert broken == [True, True, True, True]
