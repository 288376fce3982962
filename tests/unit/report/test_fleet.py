"""Fleet aggregation: statistics, batch verdicts, comparison, and the report files."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

from validation import fleet
from validation.cli import main
from validation.report import fleet_text, load_run
from validation.results.node import NodeResults


def node(host: str, values: dict[str, float], *, complete: bool = True, status: str = "pass") -> dict:
    return {"schema_version": 1, "host": host, "complete": complete,
            "checks": [{"id": "test_x.py::test_y", "status": status, "code": None, "message": "", "hint": None}],
            "measurements": [{"metric": "gemm_bf16_tflops", "subject": s, "value": v, "unit": "TFLOPS",
                              "higher_is_better": True} for s, v in values.items()]}


FLEET = [node(f"n{i}", {"gpu0": 600.0 + i, "gpu1": 601.0}) for i in range(9)] + [
    node("n9", {"gpu0": 600.0, "gpu1": 450.0})]


def test_summary_gives_p50_min_max_over_node_and_gpu_members() -> None:
    (s,) = fleet.summarize(FLEET)
    assert s.count == 20
    assert s.minimum == 450.0 and s.maximum == 608.0
    assert s.p50 == 601.0


def test_the_slow_gpu_is_the_only_outlier_and_is_named() -> None:
    (s,) = fleet.summarize(FLEET)
    assert [(m.node, m.subject) for m, _ in s.outliers] == [("n9", "gpu1")]
    assert round(s.outliers[0][1], 3) == round((601.0 - 450.0) / 601.0, 3)   # 25.1 % below the median 601


def test_a_cluster_of_four_bad_nodes_among_ten_is_still_named() -> None:
    docs = [node(f"n{i}", {"gpu0": 100.0}) for i in range(6)] + [node(f"b{i}", {"gpu0": 70.0}) for i in range(4)]
    (s,) = fleet.summarize(docs)
    assert s.baseline == 100.0
    assert sorted(m.node for m, _ in s.outliers) == ["b0", "b1", "b2", "b3"]


def test_lower_is_better_metrics_flag_high_values() -> None:
    docs = [node(f"n{i}", {"gpu0": 10.0}) for i in range(5)] + [node("slow", {"gpu0": 12.0})]
    for d in docs:
        for m in d["measurements"]:
            m.update(metric="kernel_launch_us", unit="us", higher_is_better=False)
    (s,) = fleet.summarize(docs)
    assert [m.node for m, _ in s.outliers] == ["slow"]          # 20 % above, the latency floor is 10 %


def test_report_fails_the_node_behind_the_batch_and_says_how_far_below(tmp_path: Path, capsys) -> None:
    for doc in FLEET:
        (tmp_path / f"{doc['host']}.json").write_text(json.dumps(doc))
    assert main(["report", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "n9/gpu1 25.1% below" in out and "+" not in out.split("behind the")[1].split("\n")[0]
    junit = ET.parse(tmp_path / "fleet-junit.xml").getroot()
    failed = [c for c in junit.iter("testcase") if c.find("failure") is not None]
    assert [(c.get("classname"), c.get("name")) for c in failed] == [("n9", "batch_peers")]
    assert "RF-BATCH-GAP" in failed[0].find("failure").get("message")


def test_compare_flags_a_regression_beyond_tolerance_and_a_vanished_metric() -> None:
    before = [node("a", {"gpu0": 600.0, "gpu1": 600.0}), node("b", {"gpu0": 600.0})]
    after = [node("a", {"gpu0": 560.0, "gpu1": 595.0}), node("b", {})]
    deltas = {(d.node, d.subject): d for d in fleet.compare(before, after, tolerance=0.05)}
    assert deltas[("a", "gpu0")].regression is True          # -6.7 %
    assert deltas[("a", "gpu1")].regression is False         # -0.8 %
    assert deltas[("b", "gpu0")].regression is True and deltas[("b", "gpu0")].after is None


def test_prometheus_textfile_has_status_and_measurement_series() -> None:
    text = fleet_text.prometheus([node("n1", {"gpu0": 600.5}, status="fail")])
    # a failing check without a code of its own carries the one it counts under (validation/flap.py)
    assert 'rocm_fleet_check_status{node="n1",check="test_x.py::test_y",status="fail",code="RF-CHECK-FAILED"} 2' \
        in text
    assert 'rocm_fleet_measurement{node="n1",metric="gemm_bf16_tflops",subject="gpu0",unit="TFLOPS"} 600.5' in text
    assert 'rocm_fleet_run_complete{node="n1"} 1' in text
    assert 'rocm_fleet_node_failed{node="n1"} 1' in text


def test_prometheus_tells_a_skipped_check_from_a_passed_one_and_says_until_when_a_node_is_vouched_for() -> None:
    passed, skipped = node("n1", {}), node("n2", {}, status="skip")
    passed["valid_until"] = "2026-12-14T10:00:00+00:00"
    skipped["complete"] = False
    text = fleet_text.prometheus([passed, skipped])
    assert 'rocm_fleet_check_status{node="n1",check="test_x.py::test_y",status="pass",code=""} 0' in text
    assert 'rocm_fleet_check_status{node="n2",check="test_x.py::test_y",status="skip",code=""} 0' in text
    assert 'rocm_fleet_node_failed{node="n1"} 0' in text and 'rocm_fleet_node_failed{node="n2"} 1' in text
    assert 'rocm_fleet_node_valid_until_timestamp_seconds{node="n1"} 1797242400' in text
    assert 'rocm_fleet_node_valid_until_timestamp_seconds{node="n2"' not in text     # it says nothing: no series


def test_junit_marks_an_interrupted_node_as_a_failure() -> None:
    root = ET.fromstring(fleet_text.junit([node("n1", {}, complete=False)]))
    names = [c.get("name") for c in root.iter("testcase")]
    assert "run_complete" in names


def test_report_command_writes_every_format_and_fails_on_a_failed_check(tmp_path: Path) -> None:
    for doc in [node("n1", {"gpu0": 600.0}), node("n2", {"gpu0": 400.0}, status="fail")]:
        (tmp_path / f"{doc['host']}.json").write_text(json.dumps(doc))
    assert main(["report", str(tmp_path)]) == 1
    for name in ("fleet.md", "fleet.html", "fleet-junit.xml", "fleet.prom"):
        assert (tmp_path / name).stat().st_size > 0


def test_report_on_an_empty_directory_is_no_verdict(tmp_path: Path) -> None:
    assert main(["report", str(tmp_path)]) == 2


def test_partial_results_document_is_valid_json_with_complete_false(tmp_path: Path) -> None:
    results = NodeResults(tmp_path, "n1", tier="smoke", argv=["x"])
    results.add_check({"id": "a", "status": "pass"})
    (doc,) = load_run(tmp_path)              # as an interrupted run leaves it
    assert doc["complete"] is False and doc["finished_at"] is None and len(doc["checks"]) == 1
    results.finish()
    (doc,) = load_run(tmp_path)
    assert doc["complete"] is True


def test_a_metric_measured_twice_on_one_node_is_one_member_its_last_value() -> None:
    """Seen on the lent H200: the quick and acceptance sweeps both time resnet50 at b32; the node
    must not become its own outlier."""
    twice = node("n1", {"gpu0": 600.0})
    twice["measurements"].append({**twice["measurements"][0], "value": 300.0})
    (s,) = fleet.summarize([twice])
    assert s.count == 1 and s.p50 == 300.0 and not s.outliers


def test_a_node_level_number_has_no_siblings_but_is_judged_against_the_batch() -> None:
    docs = [node(f"n{i}", {"node": 320.0 + i}) for i in range(6)] + [node("slow", {"node": 250.0})]
    for d in docs:
        for m in d["measurements"]:
            m.update(metric="allreduce_busbw_16g_gb_s", unit="GB/s")
    (s,) = fleet.summarize(docs)
    assert [(m.node, m.subject) for m, _ in s.outliers] == [("slow", "node")]
