"""`rocm-fleet remediate begin|end` against the stand-in scontrol and squeue of tests/helpers/slurm_standin.py
(a real `scontrol show node` output with the node's state, reason and CPUs allocated put in; the real Slurm
24.11 is in tests/integration/test_remediate.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import slurm_standin

from validation import slurm as slurm_mod
from validation.cli import main


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    standin = slurm_standin.install(tmp_path, monkeypatch)
    return standin.set_node, standin.node


def step(capsys: pytest.CaptureFixture[str], record: Path, *argv: str, k: int = 2,
         run: str = "run1") -> tuple[int, dict]:
    code = main(["remediate", *argv[:1], "--slurm-node", "n1", "--record", str(record), "--max-attempts", str(k),
                 "--window-hours", "24", "--run-id", run, "--json", *argv[1:]])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.startswith("{") else {}


def test_a_health_drain_gets_a_recorded_attempt_and_a_reason_the_health_mode_leaves_alone(
        slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_node, node = slurm
    set_node("IDLE+DRAIN", "rocm-fleet health: RF-GPU-BUSY")
    record = tmp_path / "remediate.json"
    code, out = step(capsys, record, "begin")
    assert (code, out["action"], out["attempt"], out["codes"]) == (1, "reboot", 1, ["RF-GPU-BUSY"])
    assert node()["reason"] == "rocm-fleet remediate: attempt 1/2 for RF-GPU-BUSY"
    saved = json.loads(record.read_text())
    assert [(a["number"], a["result"], a["run_id"]) for a in saved["attempts"]] == [(1, "pending", "run1")]
    assert saved["events"][0]["event"] == "remediating" and saved["events"][0]["detail"] == (
        "was: rocm-fleet health: RF-GPU-BUSY")

    code, out = step(capsys, record, "end", "--passed")
    assert (code, out["action"]) == (0, "resume")
    assert node()["state"] == "IDLE" and node()["updates"][-1][-1] == "State=RESUME"
    assert json.loads(record.read_text())["attempts"][0]["result"] == "passed"


def test_an_administrators_drain_and_a_held_node_are_skipped_untouched(
        slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_node, node = slurm
    record = tmp_path / "remediate.json"
    for reason in ("disk swap, ticket 4711", "rocm-fleet: needs physical action: RF-BAD-PAGES (...)"):
        set_node("IDLE+DRAIN", reason)
        code, out = step(capsys, record, "begin")
        assert (code, out["action"]) == (0, "skip") and reason in out["why"]
        assert node()["updates"] == [] and not record.exists()


def test_a_failed_last_attempt_holds_the_node_with_the_codes_still_failing(
        slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_node, node = slurm
    set_node("IDLE+DRAIN", "rocm-fleet health: RF-CONFIG-PACKAGE-HOLD failed 3 consecutive runs")
    record = tmp_path / "remediate.json"
    results = tmp_path / "n1.json"
    results.write_text(json.dumps({"checks": [
        {"id": "test_rocm_packages_are_held", "status": "fail", "code": "RF-CONFIG-PACKAGE-HOLD"},
        {"id": "test_thp", "status": "pass", "code": None}]}))
    assert step(capsys, record, "begin", k=1)[1]["action"] == "reboot"
    code, out = step(capsys, record, "end", "--failed", "--results", str(results), "--results",
                     str(tmp_path / "missing.json"), k=1)
    assert (code, out["action"]) == (1, "hold")
    assert node()["reason"] == ("rocm-fleet: needs physical action: RF-CONFIG-PACKAGE-HOLD RF-NODE-NO-RESULTS "
                                "(1 remediation attempt(s) in the last 24 h did not fix it)")
    saved = json.loads(record.read_text())
    assert saved["attempts"][0]["codes_after"] == ["RF-CONFIG-PACKAGE-HOLD", "RF-NODE-NO-RESULTS"]
    assert [e["event"] for e in saved["events"]] == ["remediating", "held"]


def test_a_failed_attempt_with_attempts_left_stays_drained_for_the_next_remediation_run(
        slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 39 item 3: at d11d023 the retry reason carried the health mode's own prefix, so the next
    passing health run resumed a node that had just failed the quick tier after its reboot."""
    set_node, node = slurm
    set_node("IDLE+DRAIN", "rocm-fleet health: RF-GPU-THROTTLED")
    record = tmp_path / "remediate.json"
    step(capsys, record, "begin")
    code, out = step(capsys, record, "end", "--failed")
    assert (code, out["action"]) == (1, "retry")
    reason = node()["reason"]
    assert reason == "rocm-fleet remediate: RF-GPU-THROTTLED (attempt 1/2 failed; the next run tries again)"
    shown = slurm_mod.parse_show_node(f"NodeName=n1 State=IDLE+DRAIN Reason={reason} [root@x]", "n1")
    assert slurm_mod.decide("resume", shown, "") is None        # a passing health run leaves it drained
    assert slurm_mod.decide("drain", shown, "RF-GPU-THROTTLED") is None
    _, again = step(capsys, record, "begin", run="run2")          # the next remediation run takes it up
    assert (again["action"], again["attempt"], again["codes"]) == ("reboot", 2, ["RF-GPU-THROTTLED"])


@pytest.mark.parametrize(("state", "jobs", "cpus", "said"), [
    # the case: a health-mode drain while a job runs (sinfo: draining)
    ("MIXED+DRAIN", (), 96, "Slurm shows it DRAIN+MIXED"),
    ("ALLOCATED+DRAIN", ("4711|RUNNING|alice",), 192, "1 job(s) run there: 4711 (alice, RUNNING)"),
    ("IDLE+DRAIN", ("4712|COMPLETING|bob",), 0, "4712 (bob, COMPLETING)"),       # its epilog still runs
    ("IDLE+DRAIN", ("4713|SUSPENDED|carol",), 0, "4713 (carol, SUSPENDED)"),     # it holds the node's memory
    ("COMPLETING+DRAIN", (), 0, "Slurm shows it COMPLETING+DRAIN"),
])
def test_a_node_on_which_a_job_runs_is_not_rebooted_and_nothing_changes(
        slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str], state: str, jobs: tuple[str, ...], cpus: int,
        said: str) -> None:
    """Issue 39 item 1: at d11d023 `begin` answered reboot for State=MIXED+DRAIN (a drain is not idle)."""
    set_node, node = slurm
    set_node(state, "rocm-fleet health: RF-PCIE-AER failed 3 consecutive runs", jobs, cpus)
    record = tmp_path / "rec.json"
    code, out = step(capsys, record, "begin", run="r1")
    assert (code, out["action"]) == (0, "busy"), out
    assert said in out["why"] and out["why"].endswith("not rebooted while a job runs")
    assert node()["updates"] == [] and not record.exists()


def test_a_node_whose_jobs_cannot_be_read_counts_as_busy(
        slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_node, _ = slurm
    set_node("IDLE+DRAIN", "rocm-fleet health: RF-GPU-BUSY", ("not a squeue line",))
    code, out = step(capsys, tmp_path / "rec.json", "begin")
    assert (code, out["action"]) == (0, "busy")
    assert "cannot tell whether a job runs on n1" in out["why"] and "not JOBID|STATE|USER" in out["why"]


def test_an_attempt_cut_short_counts_and_its_reason_is_taken_up_again(
        slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_node, node = slurm
    set_node("IDLE+DRAIN", "rocm-fleet health: RF-GPU-BUSY")
    record = tmp_path / "remediate.json"
    step(capsys, record, "begin", run="run1")        # the controller died during the reboot: no `end`
    _, out = step(capsys, record, "begin", run="run2")
    assert (out["action"], out["attempt"]) == ("reboot", 2)
    assert node()["reason"] == "rocm-fleet remediate: attempt 2/2 for RF-GPU-BUSY"
    assert [a["result"] for a in json.loads(record.read_text())["attempts"]] == ["interrupted", "pending"]


def test_a_node_resumed_by_someone_else_meanwhile_is_left_alone(
        slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_node, node = slurm
    set_node("IDLE+DRAIN", "rocm-fleet health: RF-GPU-BUSY")
    record = tmp_path / "remediate.json"
    step(capsys, record, "begin")
    set_node("IDLE+DRAIN", "rack power work")
    _, out = step(capsys, record, "end", "--failed")
    assert out["action"] == "left" and node()["updates"] == [] and node()["reason"] == "rack power work"


@pytest.mark.parametrize("bad", [["--max-attempts", "0"], ["--window-hours", "0"]])
def test_limits_that_cannot_work_are_one_line_and_exit_2(bad: list[str], slurm, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    set_node, node = slurm
    set_node("IDLE+DRAIN", "rocm-fleet health: RF-GPU-BUSY")
    argv = ["remediate", "begin", "--slurm-node", "n1", "--record", str(tmp_path / "r.json"), "--max-attempts", "2",
            "--window-hours", "24", "--run-id", "r", *bad]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rocm-fleet: error: ") and "rocm_fleet_remediate_" in err[0]
    assert node()["updates"] == []


def test_results_of_the_wrong_shape_are_no_results_and_odd_codes_are_not_codes(tmp_path: Path) -> None:
    """Issue 39: at d11d023 a results document whose checks were not a list of objects crashed `end` after
    the reboot (exit 2, the attempt left pending), and any value stood in for a code."""
    from validation.commands.remediate import failing_codes
    odd = {"list.json": [1, 2], "dict.json": {"checks": {"a": 1}}, "strings.json": {"checks": ["x"]}}
    for name, doc in odd.items():
        (tmp_path / name).write_text(json.dumps(doc))
    assert failing_codes([tmp_path / n for n in odd]) == ("RF-NODE-NO-RESULTS",)
    (tmp_path / "codes.json").write_text(json.dumps({"checks": [
        {"status": "fail", "code": ["RF-A"]}, {"status": "fail", "code": "RF-ECC\nRF-X"},
        {"status": "fail", "code": None}, {"status": "fail", "code": "RF-MCE"}, {"status": "pass", "code": "RF-Z"}]}))
    assert failing_codes([tmp_path / "codes.json"]) == ("RF-CHECK-FAILED", "RF-MCE")
