"""`rocm-fleet remediate begin|end` against a stand-in scontrol (the real Slurm 24.11 is in
tests/integration/test_remediate.py): the stand-in keeps one node's state and reason in a JSON file,
prints it the way `scontrol --oneliner show node` does and logs every update's argv."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from validation.cli import main

SCONTROL = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, sys
    path = os.environ["FAKE_SLURM"]
    node = json.load(open(path))
    args = sys.argv[1:]
    if "show" in args:
        reason = f" Reason={node['reason']} [root@2026-12-06T12:00:00]" if node["reason"] else ""
        print(f"NodeName={args[-1]} Arch=x86_64 State={node['state']} Partitions=lab{reason}")
        sys.exit(0)
    node.setdefault("updates", []).append(args)
    if "State=RESUME" in args:
        node["state"], node["reason"] = "IDLE", ""
    else:
        node["state"] = "IDLE+DRAIN"
        node["reason"] = next(a for a in args if a.startswith("Reason=")).removeprefix("Reason=")
    json.dump(node, open(path, "w"))
    """)


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    state = tmp_path / "slurm.json"
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_SLURM", str(state))

    def set_node(state_text: str, reason: str) -> None:
        state.write_text(json.dumps({"state": state_text, "reason": reason}))

    def node() -> dict:
        return json.loads(state.read_text())
    return set_node, node


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
        assert "updates" not in node() and not record.exists()


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


def test_a_failed_attempt_with_attempts_left_gives_the_node_back_to_the_health_mode(
        slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_node, node = slurm
    set_node("IDLE+DRAIN", "rocm-fleet health: RF-GPU-THROTTLED")
    record = tmp_path / "remediate.json"
    step(capsys, record, "begin")
    code, out = step(capsys, record, "end", "--failed")
    assert (code, out["action"]) == (1, "retry")
    assert node()["reason"] == "rocm-fleet health: RF-GPU-THROTTLED (remediation attempt 1/2 failed)"


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
    assert out["action"] == "left" and "updates" not in node() and node()["reason"] == "rack power work"


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
    assert "updates" not in node()
