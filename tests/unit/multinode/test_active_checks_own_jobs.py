"""Only the planner's own jobs count (issue 39 item 5): a cluster user's job named rocm-fleet-active, held or
pending, neither fills the P % limit nor keeps a node from its check.

Slurm records a job's user from the submitter's authenticated uid (munge), so no other user can put a job
under the uid that runs the planner (root, from roles/active_checks' timer). The planner asks squeue for its
own uid's jobs only (`--user=UID`, filtered by slurmctld). The squeue stand-in here does what slurmctld does
with `--user`: its queue holds `UID|JOBID|STATE|NODES|REQUESTED` lines and it prints the `%i|%T|%N|%n` part of
the lines whose uid `--user` lists (every line without `--user`), in the layout of the real lab capture
tests/fixtures/real/scontrol/rocm-fleet-lab-squeue-active-pending-24.11.txt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from validation import active
from validation.cli import main

MINE = os.getuid()
OTHER = MINE + 1000           # another cluster user


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text(f"#!/bin/sh\ncat {tmp_path}/sinfo.txt\n")
    (bin_dir / "squeue").write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {tmp_path}/squeue.argv\n'
        'users=""\nfor a; do case "$a" in --user=*) users="${a#--user=}";; esac; done\n'
        f'while IFS="|" read -r uid rest; do\n'
        '  [ -z "$uid" ] && continue\n'
        '  case ",$users," in ,,|*",$uid,"*) echo "$rest";; esac\n'
        f"done < {tmp_path}/queue.txt\n")
    (bin_dir / "sbatch").write_text(
        f"#!/bin/sh\nn=$(($(cat {tmp_path}/next 2>/dev/null || echo 100) + 1)); echo $n > {tmp_path}/next\n"
        f'printf "%s\\n" "$@" >> {tmp_path}/sbatch.log\ncat > /dev/null\necho $n\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "sinfo.txt").write_text("n1 idle\nn2 idle\n")           # 2 nodes at 50 %: one check at once
    return tmp_path


def plan(tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["active-checks", "--partition", "lab", "--max-percent", "50", "--state-dir", str(tmp / "state"),
                 "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_another_users_held_job_of_that_name_neither_fills_the_limit_nor_blocks_its_node(
        slurm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (slurm / "queue.txt").write_text(f"{OTHER}|9|PENDING||n1\n")        # a user's held job named rocm-fleet-active
    doc = plan(slurm, capsys)
    assert doc["active"] == [] and doc["submitted"] == [{"node": "n1", "job": "101"}], doc
    assert f"--user={MINE}" in (slurm / "squeue.argv").read_text()


def test_the_planners_own_queued_job_still_counts(slurm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (slurm / "queue.txt").write_text(f"{OTHER}|9|PENDING||n1\n{MINE}|4|PENDING||n2\n")
    doc = plan(slurm, capsys)
    assert doc["active"] == [{"job": "4", "state": "PENDING", "node": "n2"}] and doc["submitted"] == [], doc
    assert {"node": "n2", "why": "active check 4 pending"} in doc["skipped"]


def test_squeue_is_asked_for_the_jobs_of_one_uid_only() -> None:
    argv = active.jobs_argv("lab", 0)
    assert "--user=0" in argv and f"--name={active.JOB_NAME}" in argv
    for uid in (-1, True, "0,1001"):
        with pytest.raises(active.ActiveChecksError, match="not a user id"):
            active.jobs_argv("lab", uid)  # type: ignore[arg-type]
