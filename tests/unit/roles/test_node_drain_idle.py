"""roles/node_drain's proof that no job runs on a node (tasks/idle.yml), which node_reboot, amdgpu_partition
and upgrade.yml's drain use before anything that would stop a job: run through ansible-playbook with a local
connection, one inventory host per case. The Slurm stand-ins print real `scontrol show node` outputs
(tests/fixtures/real/scontrol/SOURCES.md); real Slurm runs it in tests/integration/test_slurm.py and
test_remediate.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "tests" / "unit" / "ansible" / "node_drain_idle.yml"
SCONTROL = ROOT / "tests" / "fixtures" / "real" / "scontrol"
MIXED = SCONTROL / "bih-hpc-med0304-faq-show-node-mixed-drain-psu-20.02.txt"
IDLE = SCONTROL / "unige-bamboo-gpu010-hpc-community-show-node-idle-drain-health-25.11.txt"


COMMAND = {"node_drain_method": "command", "node_drain_command": ["true"], "node_drain_undrain_command": ["true"]}


def standins(where: Path, shown: Path, jobs: str) -> str:
    where.mkdir()
    (where / "scontrol").write_text(f"#!/bin/sh\ncat '{shown}'\n")
    (where / "squeue").write_text(f"#!/bin/sh\nprintf '%s' '{jobs}'\n")
    for tool in ("scontrol", "squeue"):
        (where / tool).chmod(0o755)
    return f"{where}:/usr/bin:/bin"


def counter(where: Path, busy_calls: int) -> list[str]:
    """An idle command that says 'job 7 of alice' (exit 1) for its first `busy_calls` calls, then exit 0."""
    script = where / "idle.sh"
    script.write_text(f"#!/bin/sh\necho x >> '{where}/calls'\n"
                      f"[ $(wc -l < '{where}/calls') -gt {busy_calls} ] && exit 0\necho 'job 7 of alice'; exit 1\n")
    script.chmod(0o755)
    return [str(script)]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, float]:
    tmp = tmp_path_factory.mktemp("idle")
    path = "/usr/bin:/bin"
    for name in ("late", "busy", "drain"):
        (tmp / name).mkdir()
    cases = {
        "slurm-mixed": {"node_drain_method": "slurm", "node_drain_name": "med0304",
                        "case_path": standins(tmp / "mixed", MIXED, "")},
        "slurm-job": {"node_drain_method": "slurm", "node_drain_name": "gpu010",
                      "case_path": standins(tmp / "job", IDLE, "4711|RUNNING|alice\n")},
        "slurm-idle": {"node_drain_method": "slurm", "node_drain_name": "gpu010",
                       "case_path": standins(tmp / "idle", IDLE, "")},
        "late": {**COMMAND, "node_drain_idle_command": counter(tmp / "late", 2),
                 "node_drain_job_wait_seconds": 30, "node_drain_job_poll_seconds": 1},
        "busy": {**COMMAND, "node_drain_idle_command": counter(tmp / "busy", 99),
                 "node_drain_job_wait_seconds": 2, "node_drain_job_poll_seconds": 1},
        "drain": {**COMMAND, "node_drain_idle_command": counter(tmp / "drain", 99), "node_drain_job_wait_seconds": 0,
                  "node_drain_state_file": str(tmp / "drain" / "drain.json"), "case_tasks": "drain"},
        "none": {"node_drain_method": "none"},
    }
    hosts = {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "case_out": str(tmp / f"{name}.json"), "case_tasks": "idle", "case_path": path,
                    "node_drain_job_wait_seconds": 0, **values}
             for name, values in cases.items()}
    inventory = tmp / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    started = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(PLAYBOOK)], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT, check=False)
    return done.stdout + done.stderr, tmp, time.monotonic() - started


def why(tmp: Path, case: str) -> str:
    return json.loads((tmp / f"{case}.json").read_text())["why"]


def test_a_drained_slurm_node_whose_job_still_runs_is_not_idle(ran) -> None:
    output, tmp, _ = ran
    assert why(tmp, "slurm-mixed") == "Slurm shows it DRAIN+MIXED", output[-3000:]
    assert why(tmp, "slurm-job") == "1 job(s) run there: 4711 (alice, RUNNING)", output[-3000:]
    assert why(tmp, "slurm-idle") == "" and why(tmp, "none") == "", output[-3000:]


def test_the_role_waits_for_jobs_to_end_and_stops_waiting_when_told(ran) -> None:
    output, tmp, _ = ran
    assert why(tmp, "late") == "", output[-3000:]
    assert len((tmp / "late" / "calls").read_text().split()) == 3           # busy, busy, then idle
    assert why(tmp, "busy") == "job 7 of alice", output[-3000:]
    assert len((tmp / "busy" / "calls").read_text().split()) == 3           # 2 s at 1 s: three looks


def test_a_drained_node_whose_jobs_do_not_end_fails_with_them_named(ran) -> None:
    output, tmp, _ = ran
    assert "drain is drained but job 7 of alice after 0 s (node_drain_job_wait_seconds)" in output, output[-3000:]
    assert json.loads((tmp / "drain" / "drain.json").read_text())["state"] == "drained"   # it stays drained
