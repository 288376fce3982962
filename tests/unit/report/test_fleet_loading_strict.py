"""Strict fleet loading (issue 15): every node document is validated against
validation/report/node_schema.json; a malformed one is an error naming the file and the field (exit 2,
one line), never dropped and never a traceback; an unknown schema_version is refused; `compare` flags a
run that did not finish. Fuzzed: any byte-level damage to a valid document loads or raises
RocmFleetError, nothing else."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from validation.cli import main
from validation.errors import RocmFleetError
from validation.report.load import load_run, read_node_document


def node(host: str = "node01", **changes: Any) -> dict[str, Any]:
    """A node document as validation/results/node.py writes it, with the fields later issues added
    (valid, invalid_reason, measured_while_busy, spread_pct, samples; check verdicts; allow_busy, baseline)."""
    doc: dict[str, Any] = {
        "schema_version": 1, "host": host, "tier": "quick", "started_at": "2026-12-03T08:47:58+00:00",
        "finished_at": "2026-12-03T08:49:23+00:00", "complete": True, "command": ["pytest", "-m", "quick"],
        "provenance": {"allow_busy": False, "baseline": {"name": "site-2026-11", "applied": []},
                       "declared_sku": "mi300x"},
        "checks": [{"id": "test_gpu_presence.py::test_kfd_device_node_is_present", "name": "test_kfd", "tier": "smoke",
                    "needs_gpu": True, "status": "pass", "code": None, "message": "", "hint": None,
                    "duration_s": 0.01, "verdicts": [{"status": "pass", "metric": "gemm_fp8_rand_tflops"}]}],
        "measurements": [{"metric": "torch_matmul_bf16_tflops", "subject": "gpu0", "value": 612.5, "unit": "TFLOPS",
                          "higher_is_better": True, "valid": False, "invalid_reason": "gpu0 became busy",
                          "measured_while_busy": True, "spread_pct": 0.8, "samples": [611.0, 612.5, 613.9]}],
    }
    doc.update(changes)
    return doc


def write(directory: Path, name: str, doc: Any) -> Path:
    path = directory / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def report_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    rc = main(["report", str(tmp_path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_document_with_every_newer_field_loads(tmp_path: Path) -> None:
    write(tmp_path, "node01.json", node())
    write(tmp_path, "progress-node01.json", {"kind": "rocm-fleet-progress", "schema_version": 1, "node": "node01"})
    (doc,) = load_run(tmp_path)
    assert doc["host"] == "node01"


@pytest.mark.parametrize("name, content, field", [
    ("no-host.json", {k: v for k, v in node().items() if k != "host"}, "(the document): 'host' is a required property"),
    ("a-list.json", [node()], "a node document is a JSON object, this is a list"),
    ("no-checks.json", {k: v for k, v in node().items() if k != "checks"}, "'checks' is a required property"),
    ("no-status.json", node(checks=[{"id": "test_x", "name": "test_x"}]), "checks[0]: 'status' is a required property"),
    ("bad-status.json", node(checks=[{"id": "test_x", "status": "passed"}]),
     "checks[0].status: 'passed' is not one of"),
    ("text-value.json", node(measurements=[{"metric": "m", "subject": "gpu0", "value": "fast"}]),
     "measurements[0].value: 'fast' is not of type 'number', 'null'"),
    ("bool-value.json", node(measurements=[{"metric": "m", "value": True}]),
     "measurements[0].value: True is not of type 'number', 'null'"),
    ("nan-value.json", json.dumps(node()).replace("612.5", "NaN", 1), "NaN is not a number JSON allows"),
    ("busy-text.json", node(provenance={"allow_busy": "yes"}), "provenance.allow_busy: 'yes' is not of type 'boolean'"),
    ("version-99.json", node(schema_version=99), "schema_version 99 is not one this rocm-fleet reads (1)"),
    ("not-json.json", '{"schema_version": 1, "host": "x", ', "is not valid JSON"),
])
def test_a_malformed_document_is_an_error_naming_file_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: Any, field: str) -> None:
    write(tmp_path, "good.json", node("good"))
    write(tmp_path, name, content)
    err = report_error(tmp_path, capsys)
    assert name in err and field in err


def test_bytes_that_are_not_utf8_are_an_error_not_a_traceback(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "node01.json").write_bytes(json.dumps(node()).encode()[:40] + b"\xff\xfe" + b"}")
    err = report_error(tmp_path, capsys)
    assert "node01.json: not UTF-8 text (byte 0xff at offset 40)" in err


def test_a_document_naming_another_node_fails_its_files_node_and_the_rest_is_read(tmp_path: Path) -> None:
    """Issue 32: one document claiming another node's name aborted the whole report (no HTML, Prometheus or
    JUnit). Issue 39: a document counts only for the node of its file (<node>.json, the name the controller
    chose), so b.json naming node01 fails node b, incomplete, node01's own document stands, and every other node
    is read."""
    write(tmp_path, "node01.json", node("node01"))
    write(tmp_path, "b.json", node("node01"))
    write(tmp_path, "node02.json", node("node02"))
    docs = load_run(tmp_path)
    assert [d["host"] for d in docs] == ["b", "node01", "node02"]
    (wrong,) = docs[0]["checks"]
    assert wrong["code"] == "RF-RESULTS-WRONG-NODE" and wrong["status"] == "error"
    assert "'b.json' was fetched from node b but names node 'node01'" in wrong["message"]
    assert docs[0]["complete"] is False and docs[1]["complete"] is True and docs[2]["complete"] is True


@pytest.mark.parametrize("host", ["../../x", "<script>alert(1)</script>", "n1\x1b]0;owned\x07", "-oX"])
def test_a_document_whose_node_name_is_not_safe_fails_its_files_node_never_a_path(tmp_path: Path, host: str) -> None:
    write(tmp_path, "x.json", node(host))
    (doc,) = load_run(tmp_path)
    assert doc["host"] == "x" and doc["checks"][0]["code"] == "RF-RESULTS-WRONG-NODE"
    assert "names node " in doc["checks"][0]["message"] and "\x1b" not in doc["checks"][0]["message"]


@pytest.mark.parametrize("name", ["-oX.json", "a b.json", "n1\x1b]0;owned\x07.json"])
def test_a_file_whose_name_is_not_a_node_name_is_a_named_failure_never_a_node(tmp_path: Path, name: str) -> None:
    write(tmp_path, name, node(name.removesuffix(".json")))
    (doc,) = load_run(tmp_path)
    assert doc["host"].startswith("unnamed-") and doc["checks"][0]["code"] == "RF-RESULTS-CONFLICT"
    assert "is not named after a node" in doc["checks"][0]["message"] and "\x1b" not in doc["checks"][0]["message"]


def test_a_document_over_the_input_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "node01.json", node())
    monkeypatch.setenv("ROCM_FLEET_MAX_INPUT_MB", "0.0001")
    with pytest.raises(RocmFleetError, match="more than the input limit"):
        read_node_document(path)


def test_compare_flags_an_incomplete_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    write(before, "node01.json", node())
    write(after, "node01.json", node(complete=False, finished_at=None))
    assert main(["compare", str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert "INCOMPLETE node01 (after run): complete: false" in out and "1 incomplete run(s)" in out


def test_compare_of_two_finished_runs_without_change_passes(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    write(before, "node01.json", node())
    write(after, "node01.json", node())
    assert main(["compare", str(before), str(after)]) == 0


# --- fuzzing ----------------------------------------------------------------------------------

def _encoded() -> bytes:
    return json.dumps(node(), indent=2).encode()


@st.composite
def _damaged(draw: st.DrawFn) -> bytes:
    data = bytearray(_encoded())
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif data:
            del data[at:at + draw(st.integers(1, 20))]
    return bytes(data)


def test_damaged_documents_load_or_raise_rocm_fleet_error(tmp_path: Path) -> None:
    path = tmp_path / "node01.json"

    @settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")), deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(_damaged())
    def check(data: bytes) -> None:
        path.write_bytes(data)
        try:
            doc = read_node_document(path)
        except RocmFleetError:
            return
        assert doc is None or isinstance(doc["host"], str)

    check()


@st.composite
def _mutated_structure(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(node())
    junk = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
                     st.lists(st.integers(), max_size=2),
                     st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
    places = {"top": lambda: doc, "check": lambda: doc["checks"][0], "measurement": lambda: doc["measurements"][0],
              "provenance": lambda: doc["provenance"]}
    for _ in range(draw(st.integers(1, 4))):
        try:
            target = places[draw(st.sampled_from(sorted(places)))]()
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced that part
        if not isinstance(target, dict) or not target:
            continue
        key = draw(st.sampled_from(sorted(target)))
        if draw(st.booleans()):
            target[key] = draw(junk)
        else:
            del target[key]
    return doc


def test_structurally_mutated_documents_never_crash_report(tmp_path: Path) -> None:
    """Whatever the schema lets through, the fleet aggregation must cope with: load, summarize, compare."""
    from validation import fleet, peers

    @settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")), deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(_mutated_structure())
    def check(doc: dict[str, Any]) -> None:
        path = tmp_path / "node01.json"
        path.write_text(json.dumps(doc))
        try:
            loaded = read_node_document(path)
        except RocmFleetError:
            return
        assert loaded is not None
        verdicts = peers.judge_batch([loaded])
        fleet.summarize([loaded], verdicts=verdicts)
        fleet.with_batch_checks([loaded], verdicts=verdicts)
        fleet.compare([loaded], [loaded], tolerance=0.05)

    check()
