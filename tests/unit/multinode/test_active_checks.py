"""The active-check planner (validation/active.py) and `rocm-fleet active-checks`: P % rounding, which
states are idle, counting the checks already queued, oldest first, and bad input refused in one line.

Slurm's outputs are real ones from the lab's Slurm 24.11 (tests/fixtures/real/scontrol/SOURCES.md,
rocm-fleet-lab-*); the CLI tests put stand-ins for sinfo, squeue and sbatch on PATH that print what a
test gives them and record how they were called."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from validation import active
from validation.active import ActiveChecksError, ActiveJob, PartitionNode
from validation.cli import main

SCONTROL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "scontrol"
NOW = dt.datetime(2026, 12, 6, 12, 0, tzinfo=dt.UTC)


def output(name: str) -> str:
    """A fixture's output without its first line, the `$ command` it came from."""
    text = (SCONTROL / name).read_text()
    assert text.startswith("$ ")
    return text.split("\n", 1)[1]


def node(name: str, *states: str) -> PartitionNode:
    return PartitionNode(name=name, states=frozenset(states))


def ago(hours: float) -> dt.datetime:
    return NOW - dt.timedelta(hours=hours)


# --------------------------------------------------------------------------- P % and its rounding
@pytest.mark.parametrize(("size", "percent", "limit"), [
    (2, 50, 1), (3, 50, 2), (5, 10, 1), (30, 10, 3), (95, 10, 10), (100, 10, 10), (101, 10, 11),
    (1, 0.1, 1), (7, 100, 7), (0, 10, 0),
    (250, 64.4, 161)])            # 250 * 64.4 / 100 is 161.00000000000003 in floating point
def test_at_most_p_percent_rounded_up_and_never_none_of_a_partition(size: int, percent: float, limit: int) -> None:
    assert active.max_at_once(size, percent) == limit


@pytest.mark.parametrize("percent", [0, -5, 100.5, 1000, float("nan"), True, "10"])
def test_a_percentage_outside_0_to_100_is_refused(percent: object) -> None:
    with pytest.raises(ActiveChecksError, match="more than 0 and at most 100"):
        active.check_percent(percent)


# --------------------------------------------------------------------------- real Slurm output
def test_states_read_from_real_sinfo_mixed_and_drained() -> None:
    nodes = active.parse_nodes(output("rocm-fleet-lab-sinfo-statecomplete-mixed-idle-drain-24.11.txt"), "lab")
    assert [(n.name, set(n.states)) for n in nodes] == [("rfactx-1", {"MIXED"}), ("rfactx-2", {"IDLE", "DRAIN"})]
    assert not any(n.idle for n in nodes)


def test_states_read_from_real_sinfo_draining_and_allocated() -> None:
    nodes = active.parse_nodes(output("rocm-fleet-lab-sinfo-statecomplete-mixed-drain-allocated-24.11.txt"), "lab")
    assert [(n.name, set(n.states)) for n in nodes] == [("rfactx-1", {"MIXED", "DRAIN"}),
                                                         ("rfactx-2", {"ALLOCATED"})]


def test_a_pending_check_counts_for_the_node_it_asked_for() -> None:
    jobs = active.parse_jobs(output("rocm-fleet-lab-squeue-active-pending-24.11.txt"))
    assert jobs == (ActiveJob(job_id="4", state="PENDING", node="rfactx-2"),)


def test_a_running_check_counts_for_the_node_it_runs_on() -> None:
    jobs = active.parse_jobs(output("rocm-fleet-lab-squeue-active-running-24.11.txt"))
    assert jobs == (ActiveJob(job_id="4", state="RUNNING", node="rfactx-2"),)


def test_a_mark_after_the_state_is_a_flag_so_the_node_is_not_idle() -> None:
    nodes = active.parse_nodes("n1 idle\nn2 idle*\nn3 idle~\nn4 idle+not_responding\nn5 idle@\n", "lab")
    assert [n.name for n in nodes if n.idle] == ["n1"]
    assert set(nodes[1].states) == {"IDLE", "NOT_RESPONDING"} and set(nodes[2].states) == {"IDLE", "POWERED_DOWN"}


@pytest.mark.parametrize("text", ["n1\n", "n1 idle extra\n", "-n1 idle\n", "n1 +\n", "n1 *\n"])
def test_sinfo_output_it_cannot_read_is_no_plan(text: str) -> None:
    with pytest.raises(ActiveChecksError, match="sinfo for partition lab, line 1"):
        active.parse_nodes(text, "lab")


def test_squeue_output_it_cannot_read_is_no_plan() -> None:
    with pytest.raises(ActiveChecksError, match="squeue line 1"):
        active.parse_jobs("JOBID PARTITION NAME\n")


# --------------------------------------------------------------------------- the plan
@pytest.mark.parametrize("states", [
    ("ALLOCATED",), ("MIXED",), ("COMPLETING",), ("IDLE", "COMPLETING"), ("IDLE", "DRAIN"), ("MIXED", "DRAIN"),
    ("DOWN",), ("DOWN", "DRAIN"), ("IDLE", "RESERVED"), ("IDLE", "MAINTENANCE"), ("IDLE", "PLANNED"),
    ("IDLE", "NOT_RESPONDING"), ("IDLE", "POWERED_DOWN"), ("IDLE", "REBOOT_REQUESTED"), ("IDLE", "FAIL"),
    ("FUTURE",), ("UNKNOWN",)])
def test_only_a_plainly_idle_node_is_chosen(states: tuple[str, ...]) -> None:
    plan = active.plan("lab", [node("busy", *states), node("free", "IDLE")], [], 100, last_checked={}, now=NOW)
    assert plan.chosen == ("free",)
    assert dict(plan.skipped)["busy"] == f"not idle ({'+'.join(sorted(states))})"


def test_two_nodes_at_50_percent_get_one_check_at_a_time() -> None:
    nodes = [node("n1", "IDLE"), node("n2", "IDLE")]
    first = active.plan("lab", nodes, [], 50, last_checked={}, now=NOW)
    assert first.limit == 1 and first.chosen == ("n1",)
    running = [ActiveJob(job_id="7", state="RUNNING", node="n1")]
    # n1 runs its check: Slurm shows it ALLOCATED; n2 is idle and due, but the one slot is taken
    second = active.plan("lab", [node("n1", "ALLOCATED"), node("n2", "IDLE")], running, 50, last_checked={},
                         now=NOW)
    assert second.chosen == ()
    assert dict(second.skipped) == {"n1": "active check 7 running",
                                    "n2": "at the limit: 1 pending or running + 0 chosen now, of 1 at once"}


def test_checks_already_queued_count_against_the_limit() -> None:
    nodes = [node(f"n{i}", "IDLE") for i in range(1, 11)]      # 10 nodes, 30 %: 3 at once
    queued = [ActiveJob(job_id="1", state="RUNNING", node="n9"), ActiveJob(job_id="2", state="PENDING", node="n10")]
    plan = active.plan("lab", nodes, queued, 30, last_checked={}, now=NOW)
    assert plan.limit == 3 and plan.chosen == ("n1",)
    assert dict(plan.skipped)["n10"] == "active check 2 pending"       # never a second check for one node


def test_more_checks_queued_than_the_limit_allows_chooses_none_and_cancels_none() -> None:
    queued = [ActiveJob(job_id=str(i), state="RUNNING", node=f"n{i}") for i in (1, 2)]
    plan = active.plan("lab", [node(f"n{i}", "IDLE") for i in range(1, 5)], queued, 25, last_checked={}, now=NOW)
    assert plan.limit == 1 and plan.chosen == () and plan.free_slots == 0


def test_never_checked_first_then_the_oldest_check_then_by_name() -> None:
    nodes = [node(n, "IDLE") for n in ("a", "b", "c", "d", "e")]
    last = {"a": ago(30), "b": ago(200), "c": None, "d": ago(50)}
    plan = active.plan("lab", nodes, [], 100, last_checked=last, now=NOW)
    assert plan.chosen == ("c", "e", "b", "d", "a")


def test_a_node_checked_within_recheck_after_is_not_due() -> None:
    nodes = [node("a", "IDLE"), node("b", "IDLE"), node("c", "IDLE")]
    plan = active.plan("lab", nodes, [], 100, last_checked={"a": ago(2), "b": ago(30)}, now=NOW,
                       recheck_after=dt.timedelta(hours=24))
    assert plan.chosen == ("c", "b")
    assert dict(plan.skipped) == {"a": "checked 2.0 h ago (due after 24.0 h)"}


def test_the_plan_refuses_a_hostile_partition_name() -> None:
    with pytest.raises(ActiveChecksError, match="not a Slurm partition name"):
        active.plan("-p", [], [], 10, last_checked={}, now=NOW)


# --------------------------------------------------------------------------- what is submitted
def test_sbatch_is_exclusive_low_priority_short_never_requeued_and_ends_its_options() -> None:
    argv = active.sbatch_argv(active.JobSpec(partition="lab", time_limit_min=30, pending_limit_min=45, nice=5000,
                                             qos="scavenger"), "n1")
    assert argv[0] == "sbatch" and argv[-1] == "--"
    for word in ("--partition=lab", "--nodelist=n1", "--nodes=1", "--exclusive", "--job-name=rocm-fleet-active",
                 "--nice=5000", "--time=30", "--no-requeue", "--deadline=now+75minutes", "--qos=scavenger"):
        assert word in argv, (word, argv)


def test_a_hostile_node_name_never_reaches_sbatch() -> None:
    with pytest.raises(Exception, match="not a Slurm node name"):
        active.sbatch_argv(active.JobSpec(partition="lab"), "--uid=0")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("tier", "acceptance", "smoke or the quick tier"), ("time_limit_min", 1, "2 to 1440"),
    ("nice", -1, "higher is lower priority"), ("qos", "-x", "not a Slurm QOS name"),
    ("results", "var/lib", "absolute path"), ("spec", "/etc/../x", "absolute path")])
def test_job_settings_out_of_range_are_refused(field: str, value: object, message: str) -> None:
    with pytest.raises(ActiveChecksError, match=message):
        active.JobSpec(partition="lab", **{field: value}).checked()


def _fake_suite(prefix: Path, body: str) -> None:
    exe = prefix / "venv" / "bin" / "rocm-fleet"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


def _run_script(tmp_path: Path, body: str, job_id: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    results = tmp_path / "active"
    prefix = tmp_path / "suite"
    if not prefix.exists():
        _fake_suite(prefix, body)
    job = active.JobSpec(partition="lab", prefix=str(prefix), results=str(results))
    done = subprocess.run(["sh"], input=active.script_text(job), capture_output=True, text=True, check=False,
                          env={**os.environ, "SLURM_JOB_ID": job_id}, timeout=30)
    return done, results


def test_the_job_points_latest_at_a_run_with_a_verdict_and_keeps_the_last_one_when_stopped(tmp_path: Path) -> None:
    # the stand-in validate writes its arguments where --results points, exits as $RF_EXIT says
    body = ('for a; do [ "$prev" = --results ] && out=$a; prev=$a; done\n'
            'echo "$@" > "$out/args"\nexit "${RF_EXIT:-0}"\n')
    done, results = _run_script(tmp_path, body, "41")
    assert done.returncode == 0, done.stderr
    assert (results / "latest").resolve() == results / "job-41"
    args = (results / "job-41" / "args").read_text()
    assert args.startswith("validate --hosts local:// --tier quick --spec /etc/rocm-fleet/spec.yml --results ")
    assert "--timeout 3540" in args
    os.environ["RF_EXIT"] = "143"            # the next run is stopped by SIGTERM (preempted, cancelled)
    try:
        stopped, _ = _run_script(tmp_path, body, "42")
    finally:
        del os.environ["RF_EXIT"]
    assert stopped.returncode == 143
    assert (results / "latest").resolve() == results / "job-41"          # the last verdict stays
    assert (results / "job-42" / "args").exists()                        # the partial run is kept apart
    again, _ = _run_script(tmp_path, body, "43")                         # a verdict again: older runs go
    assert again.returncode == 0
    assert (results / "latest").resolve() == results / "job-43"
    assert sorted(p.name for p in results.iterdir()) == ["job-43", "latest"]


# --------------------------------------------------------------------------- the command
@pytest.fixture
def slurm_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sinfo, squeue and sbatch stand-ins on PATH: sinfo and squeue print $tmp/sinfo.txt and $tmp/squeue.txt;
    sbatch appends its argv and stdin to $tmp/sbatch.log and prints the next job id."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sinfo", "squeue"):
        (bin_dir / tool).write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path}/{tool}.argv\ncat {tmp_path}/{tool}.txt\n")
    (bin_dir / "sbatch").write_text(
        f"#!/bin/sh\nn=$(($(cat {tmp_path}/next 2>/dev/null || echo 100) + 1)); echo $n > {tmp_path}/next\n"
        f'printf "%s\\n" "$@" >> {tmp_path}/sbatch.log; echo "--stdin--" >> {tmp_path}/sbatch.log\n'
        f"cat >> {tmp_path}/sbatch.log\necho $n\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    (tmp_path / "squeue.txt").write_text("")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def command(tmp: Path, *extra: str) -> list[str]:
    return ["active-checks", "--partition", "lab", "--max-percent", "50", "--state-dir", str(tmp / "state"),
            "--json", *extra]


def test_the_command_submits_one_job_for_the_idle_node_and_records_it(slurm_tools: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (slurm_tools / "sinfo.txt").write_text(output("rocm-fleet-lab-sinfo-statecomplete-mixed-idle-drain-24.11.txt")
                                           + "rfactx-3 idle\nrfactx-4 idle\n")
    assert main(command(slurm_tools)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["limit"] == 2 and doc["chosen"] == ["rfactx-3", "rfactx-4"]
    assert doc["submitted"] == [{"node": "rfactx-3", "job": "101"}, {"node": "rfactx-4", "job": "102"}]
    log = (slurm_tools / "sbatch.log").read_text()
    assert "--nodelist=rfactx-3\n" in log and "--nodelist=rfactx-1\n" not in log
    assert "validate --hosts local:// --tier quick --spec /etc/rocm-fleet/spec.yml" in log
    recorded = json.loads((slurm_tools / "state" / "submitted.json").read_text())["nodes"]
    assert {n: e["job"] for n, e in recorded.items()} == {"rfactx-3": "101", "rfactx-4": "102"}
    assert "--partition=lab" in (slurm_tools / "squeue.argv").read_text()


def test_the_command_counts_the_checks_queued_and_a_dry_run_submits_nothing(
        slurm_tools: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (slurm_tools / "sinfo.txt").write_text("rfactx-1 idle\nrfactx-2 allocated\n")
    (slurm_tools / "squeue.txt").write_text(output("rocm-fleet-lab-squeue-active-running-24.11.txt"))
    assert main(command(slurm_tools)) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["chosen"] == [] and doc["active"] == [{"job": "4", "state": "RUNNING", "node": "rfactx-2"}]
    (slurm_tools / "squeue.txt").write_text("")
    assert main(command(slurm_tools, "--dry-run")) == 0
    assert json.loads(capsys.readouterr().out)["chosen"] == ["rfactx-1"]
    assert not (slurm_tools / "sbatch.log").exists() and not (slurm_tools / "state").exists()


def test_an_empty_or_unknown_partition_is_no_plan(slurm_tools: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (slurm_tools / "sinfo.txt").write_text("")
    assert main(command(slurm_tools)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "partition lab has no nodes" in err


@pytest.mark.parametrize("argv", [
    ["--partition=-x", "--max-percent", "10"],
    ["--partition=lab;reboot", "--max-percent", "10"],
    ["--partition=lab batch", "--max-percent", "10"],
    ["--partition=lab\n", "--max-percent", "10"],
    ["--partition=../etc", "--max-percent", "10"],
    ["--partition=lab", "--max-percent", "0"],
    ["--partition=lab", "--max-percent", "150"],
    ["--partition=lab", "--max-percent", "10", "--qos=-x"],
    ["--partition=lab", "--max-percent", "10", "--recheck-after", "-1"],
    ["--partition=lab", "--max-percent", "10", "--node-results", "relative/dir"],
])
def test_bad_input_is_exit_2_in_one_line_without_a_traceback(argv: list[str], slurm_tools: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    (slurm_tools / "sinfo.txt").write_text("n1 idle\n")
    assert main(["active-checks", *argv, "--state-dir", str(slurm_tools / "state")]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("rocm-fleet: error: ") and captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    assert not (slurm_tools / "sinfo.argv").exists()          # refused before Slurm was asked anything


def test_a_recorded_time_without_a_zone_is_read_as_utc_not_a_crash() -> None:
    """Issue 39: at d11d023 one hand-edited `submitted_at` without a zone made every timer run fail
    (comparing it with the aware `now` raised TypeError)."""
    from validation.commands import active_checks
    seen = active_checks.last_checked({"n1": {"submitted_at": "2026-12-01T00:00:00"}, "n2": {"job": "7"}})
    assert seen == {"n1": dt.datetime(2026, 12, 1, tzinfo=dt.UTC), "n2": None}
    plan = active.plan("lab", [node("n1", "IDLE"), node("n2", "IDLE")], [], 50, last_checked=seen, now=NOW)
    assert list(plan.chosen) == ["n2"]               # never checked first, then the oldest
