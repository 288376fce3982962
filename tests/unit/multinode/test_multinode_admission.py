"""Node admission on recorded real multi-node rccl-tests outputs and derived variants.

Real: mi300x-16gpu-2node (gpu-53 + gpu-56, 8 GiB in-place busbw 356.00 GB/s, #wrong 0 everywhere)
and the MI325X 1/2/4/8-node grep log. Derived (tests/fixtures/derived/rccl-tests/SOURCES.md):
slow-node-gpu-60 (gpu-56 renamed gpu-60, busbw halved from 1 GiB: 8 GiB in-place 178.00) and
wrong2-8g-gpu-61 (gpu-56 renamed gpu-61, 8 GiB in-place #wrong 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation.cli import main
from validation.multinode.admission import admit, group_run, judge_run
from validation.multinode.report import admitted_hostfile, admitted_nodelist, markdown
from validation.multinode.targets import multinode_target
from validation.parsers import rccl_tests
from validation.records import Status

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL_2NODE = FIXTURES / "real" / "rccl-tests" / "mi300x-16gpu-2node-hisohara-ai-scripts-aac10-allreduce-rocm642.txt"
SLOW_60 = FIXTURES / "derived" / "rccl-tests" / "mi300x-16gpu-2node-aac10-allreduce-slow-node-gpu-60.txt"
WRONG_61 = FIXTURES / "derived" / "rccl-tests" / "mi300x-16gpu-2node-aac10-allreduce-wrong2-8g-gpu-61.txt"
MI325X_MULTI = FIXTURES / "real" / "rccl-tests" / "mi325x-hisohara-ai-scripts-aac11-allreduce-multi-grep.txt"

TARGET = multinode_target("mi300x", 2, 8)
ALL_PASS = {"gpu-53": "pass", "gpu-56": "pass", "gpu-60": "pass", "gpu-61": "pass"}


def run_of(path: Path, nodes: tuple[str, ...]):
    return group_run(nodes, rccl_tests.parse(path.read_text()), TARGET)


def test_mi300x_two_node_target_is_amds_304_at_8_gib_in_place() -> None:
    assert (TARGET.target.threshold, TARGET.size_bytes, TARGET.place) == (304, 8 << 30, "in_place")
    assert "docs/network/validation.md" in TARGET.target.source


def test_node_counts_without_a_published_number_are_record_only() -> None:
    for sku, nodes in (("mi300x", 8), ("mi325x", 2)):
        target = multinode_target(sku, nodes, 8).target
        assert target.record_only and target.threshold is None
        assert f"{sku} at {nodes} nodes x 8 GPUs" in target.source


def test_real_two_node_run_admits_both_nodes_at_356_gb_s() -> None:
    report = admit(["gpu-53", "gpu-56"], ALL_PASS, [run_of(REAL_2NODE, ("gpu-53", "gpu-56"))], TARGET)
    assert report.admitted == ("gpu-53", "gpu-56")
    assert [n.busbw_gb_s for n in report.nodes] == [356.00, 356.00]
    assert report.runs[0].verdicts[0].status == Status.PASS


def test_slow_node_is_rejected_and_its_known_good_partner_is_not() -> None:
    runs = [run_of(REAL_2NODE, ("gpu-53", "gpu-56")), run_of(SLOW_60, ("gpu-53", "gpu-60"))]
    report = admit(["gpu-53", "gpu-56", "gpu-60"], ALL_PASS, runs, TARGET)
    assert report.admitted == ("gpu-53", "gpu-56")
    (slow,) = report.rejected
    assert slow.node == "gpu-60" and slow.busbw_gb_s == 178.00
    assert slow.reasons[0].startswith("failed with cleared partner(s) gpu-53: ")
    assert "178.0 GB/s < floor 304.0 GB/s" in slow.reasons[0]
    partner = report.nodes[0]
    assert partner.node == "gpu-53" and partner.notes and "gpu-53+gpu-60" in partner.notes[0]


def test_node_with_wrong_results_is_rejected_as_corrupting_data() -> None:
    runs = [run_of(REAL_2NODE, ("gpu-53", "gpu-56")), run_of(WRONG_61, ("gpu-53", "gpu-61"))]
    report = admit(["gpu-53", "gpu-56", "gpu-61"], ALL_PASS, runs, TARGET)
    assert [n.node for n in report.rejected] == ["gpu-61"]
    assert "collective_wrong_count 2 count != expected 0 count" in report.rejected[0].reasons[0]
    # busbw itself was fine: 356.00 at 8 GiB in-place
    assert report.rejected[0].busbw_gb_s == 356.00


def test_single_failing_pair_rejects_both_nodes_because_the_culprit_is_unknown() -> None:
    report = admit(["gpu-53", "gpu-60"], ALL_PASS, [run_of(SLOW_60, ("gpu-53", "gpu-60"))], TARGET)
    assert report.admitted == ()
    assert all("one partner only: cannot tell which node is at fault" in n.reasons[0] for n in report.nodes)


def test_single_node_failure_keeps_a_node_out_despite_good_pairs() -> None:
    statuses = {**ALL_PASS, "gpu-56": "fail"}
    report = admit(["gpu-53", "gpu-56"], statuses, [run_of(REAL_2NODE, ("gpu-53", "gpu-56"))], TARGET)
    assert report.admitted == ("gpu-53",)
    assert report.rejected[0].reasons == ("single-node validation: fail",)


def test_node_without_single_node_result_or_run_is_listed_with_both_reasons() -> None:
    report = admit(["gpu-53", "gpu-56", "gpu-99"], ALL_PASS, [run_of(REAL_2NODE, ("gpu-53", "gpu-56"))], TARGET)
    (missing,) = report.rejected
    assert missing.reasons == ("no single-node validation result", "no multi-node run includes this node")


def test_timed_out_run_is_never_a_pass() -> None:
    judged = judge_run(group_run(("gpu-53", "gpu-56"), None, TARGET, timed_out=True), TARGET)
    assert not judged.passed and judged.reason == "run gpu-53+gpu-56 timed out"


def test_output_from_other_hosts_than_scheduled_is_refused() -> None:
    judged = judge_run(run_of(REAL_2NODE, ("gpu-53", "gpu-57")), TARGET)
    assert not judged.passed and "names hosts gpu-53, gpu-56" in judged.reason


def test_mi325x_node_scaling_sections_are_record_only_with_their_values_kept() -> None:
    sections = {s.label: s.rows for s in rccl_tests.parse_filtered(MI325X_MULTI.read_text())}
    in_place_8g = {label: next(r.in_place.busbw_gb_s for r in rows if r.size_bytes == 8 << 30)
                   for label, rows in sections.items()}
    assert in_place_8g == {"1-node": 318.03, "2-node": 349.03, "4-node": 349.47, "8-node": 349.79}
    verdict = judge_run(group_run(("a", "b"), None, multinode_target("mi325x", 2, 8)), TARGET)
    assert not verdict.passed  # no output at all is never admitted, record-only or not


def test_admitted_nodes_come_out_as_hostfile_nodelist_and_report_section() -> None:
    runs = [run_of(REAL_2NODE, ("gpu-53", "gpu-56")), run_of(SLOW_60, ("gpu-53", "gpu-60"))]
    report = admit(["gpu-53", "gpu-56", "gpu-60"], ALL_PASS, runs, TARGET)
    assert admitted_hostfile(report, 8) == "gpu-53 slots=8\ngpu-56 slots=8\n"
    assert admitted_nodelist(report) == "gpu-53,gpu-56\n"
    text = markdown(report, cluster="aac10")
    assert "2 of 3 nodes admitted" in text
    assert "| gpu-60 | no | pass | 178.00 |" in text


def _results_dir(tmp_path: Path, statuses: dict[str, str]) -> Path:
    single = tmp_path / "single"
    single.mkdir()
    for host, status in statuses.items():
        (single / f"{host}.json").write_text(json.dumps({
            "schema_version": 1, "host": host, "complete": True,
            "checks": [{"id": "gpu_count", "status": status}], "measurements": []}))
    return single


def test_cli_admit_writes_the_admitted_hostfile_and_exits_1_when_a_node_is_rejected(tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for src, name in ((REAL_2NODE, "gpu-53+gpu-56.txt"), (SLOW_60, "gpu-53+gpu-60.txt"),
                      (WRONG_61, "gpu-53+gpu-61.txt")):
        (runs / name).write_text(src.read_text())
    (runs / "runs.json").write_text(json.dumps({"schema_version": 1, "runs": [
        {"nodes": ["gpu-53", "gpu-56"], "output": "gpu-53+gpu-56.txt", "rc": 0, "timed_out": False},
        {"nodes": ["gpu-53", "gpu-60"], "output": "gpu-53+gpu-60.txt", "rc": 0, "timed_out": False},
        {"nodes": ["gpu-53", "gpu-61"], "output": "gpu-53+gpu-61.txt", "rc": 0, "timed_out": False},
    ]}))
    single = _results_dir(tmp_path, ALL_PASS)
    code = main(["cluster", "admit", "--runs", str(runs), "--single-node", str(single), "--sku", "mi300x", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["admitted"] == ["gpu-53", "gpu-56"]
    assert [r["node"] for r in doc["rejected"]] == ["gpu-60", "gpu-61"]
    assert (runs / "admitted.hostfile").read_text() == "gpu-53 slots=8\ngpu-56 slots=8\n"
    assert (runs / "admitted.nodelist").read_text() == "gpu-53,gpu-56\n"
    assert "## Cluster admission" in (runs / "admission.md").read_text()


def test_cli_admit_refuses_a_run_directory_without_runs_json(tmp_path: Path) -> None:
    assert main(["cluster", "admit", "--runs", str(tmp_path), "--single-node", str(tmp_path),
                 "--sku", "mi300x"]) == 2


@pytest.mark.parametrize("status", ["pass", "warn"])
def test_single_node_pass_or_warn_both_count_as_passed(status: str) -> None:
    report = admit(["gpu-53", "gpu-56"], dict.fromkeys(("gpu-53", "gpu-56"), status),
                   [run_of(REAL_2NODE, ("gpu-53", "gpu-56"))], TARGET)
    assert report.admitted == ("gpu-53", "gpu-56")


def test_a_node_whose_rail_checks_failed_is_rejected_with_their_reasons_and_its_partner_stays(tmp_path, capsys) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "gpu-53+gpu-56.txt").write_text(REAL_2NODE.read_text())
    (runs / "runs.json").write_text(json.dumps({"schema_version": 1, "runs": [
        {"nodes": ["gpu-53", "gpu-56"], "output": "gpu-53+gpu-56.txt", "rc": 0, "timed_out": False}]}))
    rails = tmp_path / "rails.json"   # the shape `cluster rails --json` prints
    rails.write_text(json.dumps({"schema_version": 1, "nodes": {
        "gpu-53": {"status": "skip", "reasons": ["ibv_devinfo is not installed (ibverbs-utils)"]},
        "gpu-56": {"status": "fail", "reasons": ["gpu-56 rdma3:1: GID index 3 is empty (netdev ens3)"]}}}))
    single = _results_dir(tmp_path, {"gpu-53": "pass", "gpu-56": "pass"})
    code = main(["cluster", "admit", "--runs", str(runs), "--single-node", str(single), "--sku", "mi300x",
                 "--rails", str(rails), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["admitted"] == ["gpu-53"]
    assert doc["rejected"] == [{"node": "gpu-56", "reasons": [
        "per-rail checks fail: gpu-56 rdma3:1: GID index 3 is empty (netdev ens3)"]}]


def test_a_node_missing_from_the_rail_results_is_rejected_and_a_malformed_file_is_refused(tmp_path, capsys) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "gpu-53+gpu-56.txt").write_text(REAL_2NODE.read_text())
    (runs / "runs.json").write_text(json.dumps({"schema_version": 1, "runs": [
        {"nodes": ["gpu-53", "gpu-56"], "output": "gpu-53+gpu-56.txt", "rc": 0, "timed_out": False}]}))
    rails = tmp_path / "rails.json"
    rails.write_text(json.dumps({"schema_version": 1, "nodes": {"gpu-53": {"status": "pass", "reasons": []}}}))
    single = _results_dir(tmp_path, {"gpu-53": "pass", "gpu-56": "pass"})
    argv = ["cluster", "admit", "--runs", str(runs), "--single-node", str(single), "--sku", "mi300x",
            "--rails", str(rails), "--json"]
    assert main(argv) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["admitted"] == ["gpu-53"]
    assert doc["rejected"][0]["reasons"] == [f"per-rail checks error: not in the per-rail results {rails}"]
    rails.write_text('{"error": "ssh failed"}')
    assert main(argv) == 2
