"""validation/runner.py: argv in, RawRun out; timeouts kill the whole process group."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from validation.errors import ProbeError
from validation.runner import RawRun, run, which


def test_a_finished_command_reports_rc_and_both_streams() -> None:
    raw = run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"], 30)
    assert isinstance(raw, RawRun)
    assert (raw.rc, raw.stdout, raw.stderr, raw.timed_out) == (3, "out\n", "err\n", False)
    assert raw.argv[0] == sys.executable
    assert not raw.ok


def test_timeout_kills_sleep_30_at_1_s_and_keeps_partial_output() -> None:
    start = time.monotonic()
    raw = run(["sh", "-c", "echo started; echo to-stderr >&2; sleep 30"], 1)
    elapsed = time.monotonic() - start
    assert raw.timed_out
    assert raw.rc is None
    assert raw.stdout == "started\n"
    assert raw.stderr == "to-stderr\n"
    assert elapsed < 10, f"the kill took {elapsed:.1f} s"
    assert 1 <= raw.seconds < 10


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a killed orphan may linger as a zombie until init reaps it


def test_timeout_also_kills_grandchildren() -> None:
    raw = run(["sh", "-c", "sleep 30 & echo $!; wait"], 1)
    grandchild = int(raw.stdout.strip())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert raw.timed_out
    assert not _alive(grandchild), f"background sleep {grandchild} survived the timeout"


def test_env_is_added_to_the_inherited_environment(tmp_path: Path) -> None:
    raw = run(
        [sys.executable, "-c", "import os; print(os.environ['RF_PROBE_TEST'], os.environ['PATH'] != '', os.getcwd())"],
        30,
        env={"RF_PROBE_TEST": "yes"},
        cwd=tmp_path,
    )
    assert raw.stdout.split() == ["yes", "True", str(tmp_path)]


def test_a_missing_tool_raises_probe_error_naming_it() -> None:
    with pytest.raises(ProbeError, match="rf-no-such-tool"):
        run(["rf-no-such-tool", "--version"], 5)


def test_which_returns_none_for_an_absent_tool_and_a_path_for_sh() -> None:
    assert which("rf-no-such-tool") is None
    found = which("sh")
    assert found is not None and os.access(found, os.X_OK)
