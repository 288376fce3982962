"""Progress on long runs: the node's progress file (which check, n/m, elapsed vs expected) and
`rocm-fleet progress`, which turns each file into one line (running, finished, stale, interrupted).

The tracker is driven with a stepped clock for the arithmetic; one real run of a few checks through
pytest with the plugin proves the hooks write the file at each check start and at the end.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from validation.cli import main
from validation.report import load_run
from validation.results import progress

T0 = dt.datetime(2026, 12, 2, 12, 0, 0, tzinfo=dt.UTC)


class SteppedClock:
    """Monotonic and wall clocks that move only when the test says so."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def monotonic(self) -> float:
        return self.seconds

    def wall(self) -> dt.datetime:
        return T0 + dt.timedelta(seconds=self.seconds)


def three_checks() -> tuple[progress.PlannedCheck, ...]:
    # the previous run recorded 20 s and 40 s for the first two; the third (smoke) gets the 2 s budget
    return progress.plan([("t.py::test_a[local]", "t.py::test_a", "quick"),
                          ("t.py::test_b[local]", "t.py::test_b", "quick"),
                          ("t.py::test_c[local]", "t.py::test_c", "smoke")],
                         {"t.py::test_a": 20.0, "t.py::test_b": 40.0})


def tracker(tmp_path: Path, clock: SteppedClock) -> progress.NodeProgress:
    return progress.NodeProgress(tmp_path / "progress-n1.json", "n1", tier="smoke or quick", checks=three_checks(),
                                 previous=tmp_path / "old" / "n1.json", clock=clock.monotonic, wall=clock.wall)


def read(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "progress-n1.json").read_text())


def test_plan_takes_previous_durations_and_falls_back_to_tier_budgets() -> None:
    a, b, c = three_checks()
    assert (a.expected_s, a.from_previous) == (20.0, True)
    assert (b.expected_s, b.from_previous) == (40.0, True)
    assert (c.expected_s, c.from_previous) == (2.0, False)
    (acceptance,) = progress.plan([("t.py::test_burn[local]", "t.py::test_burn", "acceptance")], {})
    assert acceptance.expected_s == 60.0


def test_running_check_is_named_with_elapsed_and_remaining_time(tmp_path: Path) -> None:
    clock = SteppedClock()
    node = tracker(tmp_path, clock)
    node.start("t.py::test_a[local]")
    clock.seconds = 5.0
    node.write()
    doc = read(tmp_path)
    assert doc["node"] == "n1" and doc["state"] == "running" and doc["tier"] == "smoke or quick"
    assert doc["current"] == {"nodeid": "t.py::test_a[local]", "tier": "quick",
                              "started_at": "2026-12-02T12:00:00+00:00", "running_s": 5.0, "expected_s": 20.0}
    assert (doc["done"], doc["total"]) == (0, 3)
    assert doc["elapsed_s"] == 5.0
    assert doc["expected_total_s"] == 62.0
    assert doc["expected_remaining_s"] == 57.0          # 15 s left of test_a, then 40 + 2
    assert doc["expected_from"] == {"previous_results": str(tmp_path / "old" / "n1.json"),
                                    "checks_from_previous": 2, "checks_from_tier_budget": 1}


def test_a_check_running_over_its_expected_time_adds_nothing_to_what_is_left(tmp_path: Path) -> None:
    clock = SteppedClock()
    node = tracker(tmp_path, clock)
    node.start("t.py::test_a[local]")
    clock.seconds = 25.0
    node.finish("t.py::test_a[local]")
    assert read(tmp_path)["current"] is None
    assert read(tmp_path)["expected_remaining_s"] == 42.0
    assert read(tmp_path)["durations_s"] == {"t.py::test_a": 25.0}
    node.start("t.py::test_b[local]")
    clock.seconds = 100.0                                # test_b has run 75 s, 35 s over its 40
    node.write()
    doc = read(tmp_path)
    assert (doc["done"], doc["expected_remaining_s"], doc["elapsed_s"]) == (1, 2.0, 100.0)


def test_phase_outcomes_fold_into_one_status_per_check(tmp_path: Path) -> None:
    clock = SteppedClock()
    node = tracker(tmp_path, clock)
    book = progress.ProgressBook([node])
    for nodeid, phases in [("t.py::test_a[local]", [("setup", True, False), ("call", False, True),
                                                     ("teardown", True, False)]),
                           ("t.py::test_b[local]", [("setup", False, True), ("teardown", True, False)]),
                           ("t.py::test_c[local]", [("setup", False, False), ("teardown", True, False)])]:
        book.start(nodeid)
        for when, passed, failed in phases:
            book.report(nodeid, when, passed=passed, failed=failed)
        book.finish(nodeid)
    book.close()
    doc = read(tmp_path)
    assert doc["counts"] == {"pass": 0, "skip": 1, "fail": 1, "error": 1}
    assert (doc["state"], doc["done"], doc["expected_remaining_s"]) == ("finished", 3, 0.0)


def test_a_session_that_ends_before_every_check_ran_is_interrupted(tmp_path: Path) -> None:
    node = tracker(tmp_path, SteppedClock())
    node.start("t.py::test_a[local]")
    node.finish("t.py::test_a[local]")
    node.close()
    assert (read(tmp_path)["state"], read(tmp_path)["done"]) == ("interrupted", 1)


def test_unknown_node_ids_leave_the_file_alone(tmp_path: Path) -> None:
    book = progress.ProgressBook([tracker(tmp_path, SteppedClock())])
    book.start("other_suite.py::test_x")
    assert not (tmp_path / "progress-n1.json").exists()


def test_previous_results_are_the_newest_run_next_to_the_results_dir(tmp_path: Path) -> None:
    for run, mtime in [("20261201T000000Z", 1_000), ("20261202T000000Z", 3_000), ("manual", 2_000)]:
        (tmp_path / run).mkdir()
        (tmp_path / run / "n1.json").write_text("{}")
        os.utime(tmp_path / run / "n1.json", (mtime, mtime))
    (tmp_path / "other-node-only").mkdir()
    (tmp_path / "other-node-only" / "n2.json").write_text("{}")
    current = tmp_path / "20261203T000000Z"
    assert progress.find_previous(current, "n1") == tmp_path / "20261202T000000Z" / "n1.json"
    assert progress.find_previous(current, "n3") is None


def test_explicit_previous_may_be_a_file_or_a_run_directory(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "n1.json").write_text("{}")
    assert progress.find_previous(tmp_path / "new", "n1", tmp_path / "old") == tmp_path / "old" / "n1.json"
    assert progress.find_previous(tmp_path / "new", "n2", tmp_path / "old" / "n1.json") == tmp_path / "old" / "n1.json"
    assert progress.find_previous(tmp_path / "new", "n2", tmp_path / "old") is None


def test_unreadable_previous_results_fall_back_to_budgets(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "n1.json").write_text('{"checks": [{"id": "t.py::test_a", "duration_s": 2')
    assert progress.previous_durations(tmp_path / "n1.json", "n1") == {}
    assert "tier budgets" in caplog.text
    (tmp_path / "n2.json").write_text(json.dumps({"checks": [{"id": "t.py::test_a", "duration_s": 2.5},
                                                             {"id": "t.py::test_b", "duration_s": None}]}))
    assert progress.previous_durations(tmp_path / "n2.json", "n2") == {"t.py::test_a": 2.5}


def test_whole_check_times_from_the_previous_progress_file_win_over_call_durations(tmp_path: Path) -> None:
    (tmp_path / "n1.json").write_text(json.dumps({"checks": [{"id": "t.py::test_a", "duration_s": 2.5},
                                                             {"id": "t.py::test_b", "duration_s": 1.0}]}))
    (tmp_path / "progress-n1.json").write_text(json.dumps({"kind": "rocm-fleet-progress",
                                                           "durations_s": {"t.py::test_a": 7.25}}))
    assert progress.previous_durations(tmp_path / "n1.json", "n1") == {"t.py::test_a": 7.25, "t.py::test_b": 1.0}


def test_fleet_report_does_not_mistake_a_progress_file_for_a_node(tmp_path: Path) -> None:
    (tmp_path / "n1.json").write_text(json.dumps({"schema_version": 1, "host": "n1", "checks": []}))
    progress.NodeProgress(tmp_path / "progress-n1.json", "n1", tier="smoke", checks=three_checks(),
                          previous=None).write()
    assert [n["host"] for n in load_run(tmp_path)] == ["n1"]


def doc(*, state: str = "running", updated_s_ago: float, current: dict | None = None, done: int = 1,
        counts: dict | None = None) -> dict:
    return {"schema_version": 1, "kind": "rocm-fleet-progress", "node": "rflab-2", "tier": "smoke", "state": state,
            "current": current, "done": done, "total": 4, "counts": counts or {"pass": done, "fail": 0, "error": 0},
            "started_at": "2026-12-02T11:00:00+00:00",
            "updated_at": (T0 - dt.timedelta(seconds=updated_s_ago)).isoformat(),
            "elapsed_s": 60.0, "expected_total_s": 600.0, "expected_remaining_s": 400.0}


RUNNING_CHECK = {"nodeid": "test_x.py::test_y[local]", "tier": "quick", "started_at": "2026-12-02T11:59:00+00:00",
                 "running_s": 0.0, "expected_s": 120.0}


def test_running_node_line_names_check_count_and_live_times() -> None:
    v = progress.view(doc(updated_s_ago=30, current=RUNNING_CHECK), now=T0, stale_after_s=300)
    assert (v.state, v.verdict, v.elapsed_s, v.expected_remaining_s) == ("running", None, 90.0, 370.0)
    assert progress.format_line(v, width=8) == ("rflab-2  running         1/4  test_x.py::test_y[local]  "
                                                "elapsed 1m30s of ~10m00s expected, ~6m10s left")


def test_a_file_unchanged_beyond_the_checks_expected_time_plus_grace_is_stale() -> None:
    # 120 s expected for the running check + 300 s grace = 420 s allowed without a change
    fresh = progress.view(doc(updated_s_ago=419, current=RUNNING_CHECK), now=T0, stale_after_s=300)
    stale = progress.view(doc(updated_s_ago=421, current=RUNNING_CHECK), now=T0, stale_after_s=300)
    assert fresh.state == "running" and stale.state == "stale" and stale.verdict == "fail"
    assert progress.format_line(stale, width=8) == (
        "rflab-2  stale           1/4  test_x.py::test_y[local] (expected ~2m00s)  no update for 7m01s; "
        "hung, killed or unreachable")
    between = progress.view(doc(updated_s_ago=301), now=T0, stale_after_s=300)
    assert between.state == "stale"


def test_finished_nodes_say_pass_or_fail_with_the_failure_count() -> None:
    ok = progress.view(doc(state="finished", updated_s_ago=5000, done=4), now=T0, stale_after_s=300)
    assert progress.format_line(ok, width=8) == "rflab-2  finished        4/4  PASS in 1m00s (expected ~10m00s)"
    bad = progress.view(doc(state="finished", updated_s_ago=5, done=4, counts={"pass": 2, "fail": 1, "error": 1}),
                        now=T0, stale_after_s=300)
    assert bad.verdict == "fail"
    assert progress.format_line(bad, width=8).endswith("FAIL in 1m00s (expected ~10m00s), 2 failed")


def test_durations_read_in_hours_minutes_seconds() -> None:
    assert [progress.duration(s) for s in (9.4, 61, 3725)] == ["9s", "1m01s", "1h02m05s"]


def write_docs(directory: Path, *docs: dict) -> None:
    directory.mkdir(exist_ok=True)
    for i, d in enumerate(docs):
        (directory / f"progress-n{i}.json").write_text(json.dumps({**d, "node": f"n{i}"}))


def now_doc(**kw: object) -> dict:
    d = doc(updated_s_ago=0, **kw)       # type: ignore[arg-type]
    d["updated_at"] = progress.utcnow().isoformat()
    return d


def test_progress_command_exits_0_while_nodes_run_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_docs(tmp_path, now_doc(current=RUNNING_CHECK), now_doc(state="finished", done=4))
    assert main(["progress", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("n0 running         1/4  test_x.py::test_y[local]  elapsed")
    assert lines[1].startswith("n1 finished        4/4  PASS in")


def test_progress_command_exits_1_on_a_stale_node_and_json_names_it(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    write_docs(tmp_path, now_doc(current=RUNNING_CHECK), doc(updated_s_ago=0, current=RUNNING_CHECK))
    assert main(["progress", str(tmp_path), "--json", "--stale-after", "60"]) == 1
    nodes = json.loads(capsys.readouterr().out)["nodes"]
    assert [(n["node"], n["state"]) for n in nodes] == [("n0", "running"), ("n1", "stale")]


def test_progress_command_without_progress_files_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["progress", str(tmp_path)]) == 2
    assert "no progress-<node>.json" in capsys.readouterr().err


def test_waiting_returns_as_soon_as_the_run_finishes_not_at_the_end_of_the_window(tmp_path: Path) -> None:
    import threading
    import time
    path = tmp_path / "progress-n1.json"
    progress.write_atomic(path, now_doc(current=RUNNING_CHECK))
    finisher = threading.Timer(0.3, progress.write_atomic, (path, now_doc(state="finished", done=4)))
    start = time.monotonic()
    finisher.start()
    doc = progress.wait_until_done(path, 30)
    took = time.monotonic() - start
    assert doc["state"] == "finished"
    assert 0.3 <= took < 1.0, took          # the end is noticed within the poll interval, not after 30 s


def test_waiting_gives_the_running_document_after_the_window_and_nothing_before_a_run(tmp_path: Path) -> None:
    path = tmp_path / "progress-n1.json"
    assert progress.wait_until_done(path, 0.2) == {}
    progress.write_atomic(path, now_doc(current=RUNNING_CHECK))
    assert progress.wait_until_done(path, 0.2)["state"] == "running"


def test_progress_wait_prints_the_nodes_document_and_refuses_half_the_options(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    write_docs(tmp_path, now_doc(current=RUNNING_CHECK), now_doc(state="finished", done=4))
    assert main(["progress", str(tmp_path), "--node", "n1", "--wait", "5"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "finished"
    assert main(["progress", str(tmp_path), "--wait", "5"]) == 2
    assert "--wait and --node go together" in capsys.readouterr().err
    assert main(["progress", str(tmp_path), "--node", "n1", "--wait", "0"]) == 2


def test_the_followers_answer_leaves_the_per_check_times_in_the_file(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """validate.yml keeps every window's answer of every host: a quick tier's 215 check times (~17 KB)
    would ride in each; they stay in the file, where the next run reads them."""
    took = {f"validation/checks/test_gpu_perf.py::test_gemm_tflops[local-gpu{i}-case{i}]": 12.345 for i in range(215)}
    write_docs(tmp_path, {**now_doc(current=RUNNING_CHECK), "durations_s": took})
    for extra in ([], ["--collect", str(ASYNC / "command-running.json")]):
        assert main(["progress", str(tmp_path), "--node", "n0", "--wait", "0.2", *extra]) == 0
        out = capsys.readouterr().out
        answer = json.loads(out)
        assert "durations_s" not in answer and answer["current"] == RUNNING_CHECK and answer["done"] == 1
        assert len(out) < 1500, len(out)
    assert len(json.dumps(took)) > 17_000
    assert json.loads((tmp_path / "progress-n0.json").read_text())["durations_s"] == took


CHECKS = Path(__file__).resolve().parents[3] / "validation" / "checks"
SNAPSHOT_PLUGIN = '''
import os, shutil
from pathlib import Path

def pytest_runtest_setup(item):
    """Copy the progress file as each check starts, to see what a poller would see."""
    results = Path(os.environ["RF_TEST_RESULTS"])
    shutil.copy(results / "progress-n1.json", Path(os.environ["RF_TEST_SNAPSHOTS"]) / f"{item.name}.json")
'''


def test_plugin_writes_the_progress_file_at_each_check_and_at_the_end(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yml"
    spec.write_text("node_tuning_state: absent\ngpu_access_state: absent\nenv_profiles_state: absent\n")
    (tmp_path / "previous").mkdir()
    (tmp_path / "previous" / "n1.json").write_text(json.dumps({"schema_version": 1, "host": "n1", "checks": [
        {"id": "test_node_tuning.py::test_numa_balancing", "duration_s": 1.5},
        {"id": "test_rocm_stack.py::test_rocminfo_is_installed", "duration_s": 2.5}]}))
    (tmp_path / "snap").mkdir()
    (tmp_path / "rf_snapshot.py").write_text(SNAPSHOT_PLUGIN)
    results = tmp_path / "results" / "now"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "RF_TEST_RESULTS": str(results),
           "RF_TEST_SNAPSHOTS": str(tmp_path / "snap")}
    argv = [sys.executable, "-m", "pytest", "-c", str(CHECKS / "pytest.ini"), "--rootdir", str(CHECKS), str(CHECKS),
            "-p", "rf_snapshot", "--hosts=local://", "-m", "smoke", "-q", f"--rf-spec={spec}", "--rf-node=n1",
            "-k", "test_numa_balancing or test_rocminfo_is_installed or test_extra_sysctls",
            f"--rf-results={results}", f"--rf-previous={tmp_path / 'previous'}"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    final = json.loads((results / "progress-n1.json").read_text())
    assert (final["state"], final["done"], final["total"], final["current"]) == ("finished", 3, 3, None)
    assert final["expected_total_s"] == 6.0               # 1.5 + 2.5 from the previous run, 2 s smoke budget
    assert final["expected_from"]["checks_from_previous"] == 2
    seen = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "snap").iterdir()}
    assert {name: (d["state"], d["current"]["nodeid"].split("::")[1], d["current"]["expected_s"])
            for name, d in seen.items()} == {
        "test_numa_balancing[local]": ("running", "test_numa_balancing[local]", 1.5),
        "test_extra_sysctls[local]": ("running", "test_extra_sysctls[local]", 2.0),
        "test_rocminfo_is_installed[local]": ("running", "test_rocminfo_is_installed[local]", 2.5)}
    assert sorted(d["done"] for d in seen.values()) == [0, 1, 2]


# Ansible's async job files as ansible-core 2.19.14 wrote them (tests/fixtures/real/ansible-async/).
ASYNC = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "ansible-async"


def test_collecting_answers_once_the_job_exits_with_its_status_stderr_and_document(tmp_path: Path) -> None:
    import shutil
    import threading
    import time

    from validation.results import collect
    job = tmp_path / "job"
    shutil.copy(ASYNC / "command-running.json", job)
    write_docs(tmp_path, now_doc(current=RUNNING_CHECK))
    (tmp_path / "n0.json").write_text('{"host": "n0", "checks": []}\n')
    exits = threading.Timer(0.3, shutil.copy, (ASYNC / "command-exited-1.json", job))
    start = time.monotonic()
    exits.start()
    answer = collect.collect(tmp_path, "n0", job, 30)
    assert 0.3 <= time.monotonic() - start < 1.0          # the exit is noticed within the poll interval
    assert answer["state"] == "running"                   # the progress document rides along, as written
    assert answer["collected"] == {"job": {"finished": True, "rc": 1, "stderr": "to-stderr"}, "document": True}


def test_collecting_a_running_job_gives_the_window_and_a_killed_job_no_status(tmp_path: Path) -> None:
    from validation.results import collect
    assert collect.collect(tmp_path, "n0", ASYNC / "command-running.json", 0.2) == {
        "collected": {"job": {"finished": False, "rc": None, "stderr": ""}, "document": False}}
    assert collect.collect(tmp_path, "n0", tmp_path / "no-such-job", 0.2)["collected"]["job"]["finished"] is False
    killed = collect.collect(tmp_path, "n0", ASYNC / "command-timed-out.json", 5)["collected"]
    assert killed == {"job": {"finished": True, "rc": None, "stderr": "Timeout exceeded"}, "document": False}


def test_the_wait_a_self_converging_node_runs_uses_only_the_checkout_and_exits_0_or_3(tmp_path: Path) -> None:
    """roles/self_converge runs `python -m validation.results.collect JOB SECONDS` in the bundle's checkout,
    with a Python that has no suite installed: here one without site packages (-S) or PYTHONPATH (-E)."""
    root = Path(__file__).resolve().parents[3]

    def wait(job: Path, seconds: str) -> tuple[int, float]:
        import time
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-S", "-E", "-m", "validation.results.collect", str(job), seconds],
                              cwd=root, capture_output=True, text=True, check=False, timeout=60)
        assert done.stderr == "" or done.returncode == 2, done.stderr
        return done.returncode, time.monotonic() - start

    assert wait(ASYNC / "command-exited-1.json", "30")[0] == 0          # exited (rc 1 is the run's, not ours)
    assert wait(ASYNC / "command-timed-out.json", "30")[0] == 0         # killed at its limit: exited too
    code, took = wait(ASYNC / "command-running.json", "0.5")
    assert code == 3 and 0.5 <= took < 5
    assert wait(tmp_path / "not-written-yet.json", "0.3")[0] == 3
    assert wait(tmp_path, "x")[0] == 2                                 # one usage line, no traceback


def test_progress_collect_prints_the_answer_and_goes_only_with_node_and_wait(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    write_docs(tmp_path, now_doc(state="finished", done=4))
    assert main(["progress", str(tmp_path), "--node", "n0", "--wait", "5",
                 "--collect", str(ASYNC / "command-exited-1.json")]) == 0
    answer = json.loads(capsys.readouterr().out)
    collected = answer["collected"]
    assert (answer["state"], collected["job"]["rc"], collected["document"]) == ("finished", 1, False)
    assert main(["progress", str(tmp_path), "--collect", str(ASYNC / "command-exited-1.json")]) == 2
    assert "--collect goes with --node NODE --wait SECONDS" in capsys.readouterr().err
