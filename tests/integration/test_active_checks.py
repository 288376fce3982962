"""Active checks on a schedule (issue 33, item 4) on two lab hosts with real Slurm 24.11, real systemd, real SSH.

Its own lab (name $ROCM_FLEET_ACTIVE_LAB_NAME, default rfact-<checkout key>; SSH ports
$ROCM_FLEET_ACTIVE_PORT_BASE + 1..2, default free ones; Slurm ports from cluster_lab.service_ports; inventory
inventories/lab/<name>*.yml so that the lab's group_vars apply), removed at the end also on failure.
tests/integration/playbooks/lab_slurm.yml makes the hosts a Slurm cluster (partition `lab`, both
nodes); playbooks/active_checks.yml installs the suite on both and roles/active_checks on the first
(the "login node"): a systemd timer that runs `rocm-fleet active-checks --partition lab
--max-percent 50`. Both hosts are nodes of the partition, so P = 50 % is one check at a time.

The lab hosts have no GPU and their spec declares none (validation_gpu_count: null), so the quick
tier's verdict turns on configuration (not provisioned here: it fails); what is proven is the
schedule: which node gets a check, how many at once, and that the check leaves a results document
with valid_until on its node.

    .venv/bin/pytest tests/integration/test_active_checks.py -q -s
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import secrets
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ansible_run import ROOT, PlaybookRun, run_playbook
from cluster_lab import cluster_inventory, service_ports
from waiting import wait_for

from validation.lab import Lab, default_lab_name

pytestmark = pytest.mark.lab

LAB = os.environ.get("ROCM_FLEET_ACTIVE_LAB_NAME") or default_lab_name("rfact")
_BASE = os.environ.get("ROCM_FLEET_ACTIVE_PORT_BASE")
PORT_BASE = int(_BASE) if _BASE else None
HOSTS = [f"{LAB}-1", f"{LAB}-2"]
LOGIN = HOSTS[0]
INTERVAL = 10                   # the timer's period in this lab (default 1800 s)
RUNNER = "/usr/local/sbin/rocm-fleet-active-checks"
RESULTS = "/var/lib/rocm-fleet/active"
SETTINGS = {"active_checks_partition": "lab", "active_checks_max_percent": 50,
            "active_checks_interval_seconds": INTERVAL, "active_checks_recheck_after_hours": 0,
            "active_checks_time_limit_minutes": 5}
TIMES: dict[str, float] = {}


def converge(inventory: Path, **extra: object) -> PlaybookRun:
    # extra vars: the lab's group_vars declare 8 GPUs, and they outrank the inventory file's own vars
    return run_playbook(inventory, ROOT / "playbooks" / "active_checks.yml", "-e", json.dumps(
        {"rocm_fleet_hosts": "lab", "rocm_fleet_active_checks_hosts": LOGIN, "validation_gpu_count": None,
         **SETTINGS, **extra}))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    """Two lab hosts running Slurm, the suite on both, the active-check timer on the first."""
    work = tmp_path_factory.mktemp("active")
    inventories = ROOT / "inventories" / "lab"          # inside inventories/lab: group_vars apply
    start = time.monotonic()
    the_lab = Lab(LAB, len(HOSTS), mirror=True, port_base=PORT_BASE, inventory_path=inventories / f"{LAB}.yml")
    with the_lab:
        TIMES["lab up"] = time.monotonic() - start
        # wheels without a wheelhouse digest, as test_health.py: a second run of the playbook then installs
        # nothing (with the controller's digest-named wheelhouse, validation_node's install reinstalls)
        inventory = cluster_inventory(the_lab, inventories / f"{LAB}-active.yml",
                                      {"validation_node_wheelhouse": str(work / "wheels")})
        try:
            build = subprocess.run([str(Path(sys.executable).parent / "pip"), "wheel", "--no-deps", "--quiet",
                                    "--wheel-dir", str(work / "wheels"), str(ROOT), "pytest-testinfra"],
                                   capture_output=True, text=True, timeout=600, check=False)
            assert build.returncode == 0, build.stderr[-2000:]
            playbook = Path(tempfile.mkdtemp(prefix=f"{LAB}-")) / "slurm.yml"
            playbook.write_text(yaml.safe_dump([
                {"ansible.builtin.import_playbook": str(ROOT / "tests" / "integration" / "playbooks" /
                                                        "lab_slurm.yml")}]))
            key = base64.b64encode(secrets.token_bytes(1024)).decode()
            start = time.monotonic()
            slurm = run_playbook(inventory, playbook, "-e", json.dumps({
                "lab_slurm_munge_key_b64": key, "lab_slurm_port_base": service_ports(the_lab)}))
            assert slurm.rc == 0, slurm.output[-4000:]
            TIMES["slurm up"] = time.monotonic() - start
            # A site's priority weights: with all of Slurm's weights 0 (its defaults) every job has priority 1 and
            # --nice changes nothing; with any weight, a user job outranks the checks' nice.
            weights = sh(the_lab, LOGIN, "echo PriorityWeightPartition=10000 >> /etc/slurm/slurm.conf && "
                                         "scontrol reconfigure")
            assert weights.returncode == 0, weights.stderr
            start = time.monotonic()
            first = converge(inventory)
            assert first.rc == 0, first.output[-4000:]
            TIMES["converge"] = time.monotonic() - start
            yield the_lab, inventory
        finally:
            inventory.unlink(missing_ok=True)
            print("active checks lab times: " + ", ".join(f"{k} {v:.1f} s" for k, v in TIMES.items()))


def sh(lab: Lab, host: str, command: str) -> object:
    return lab.ssh(host, [command])


def squeue(lab: Lab, *options: str) -> list[list[str]]:
    out = sh(lab, LOGIN, shlex.join(["squeue", "--noheader", "--format=%i|%j|%T|%N|%Q", *options])).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


def checks_live(lab: Lab) -> list[list[str]]:
    return squeue(lab, "--name=rocm-fleet-active")


def plan(lab: Lab, *extra: str) -> dict:
    """The runner the timer starts, run once by hand, as JSON."""
    run = sh(lab, LOGIN, shlex.join([RUNNER, "--json", *extra]))
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout)


def latest(lab: Lab, host: str) -> dict | None:
    out = sh(lab, host, f"cat {RESULTS}/latest/{host}.json 2>/dev/null").stdout
    return json.loads(out) if out.strip() else None


def timer(lab: Lab, action: str) -> None:
    assert sh(lab, LOGIN, f"systemctl {action} rocm-fleet-active-checks.timer").returncode == 0


def quiet(lab: Lab) -> None:
    """The timer stopped and no check left pending or running."""
    timer(lab, "stop")
    wait_for("the active checks to end", lambda: not checks_live(lab), timeout_s=120, every_s=1)


def test_the_role_converges_again_without_changes_and_refuses_a_hostile_partition(lab) -> None:
    the_lab, inventory = lab
    again = converge(inventory)
    assert again.rc == 0 and again.changed() == 0, again.changed_tasks() or again.output[-3000:]
    before = sh(the_lab, LOGIN, f"sha256sum {RUNNER}").stdout
    refused = converge(inventory, active_checks_partition="lab;reboot")
    assert refused.rc != 0 and "active_checks_partition must name the Slurm partition" in refused.output
    assert sh(the_lab, LOGIN, f"sha256sum {RUNNER}").stdout == before            # refused before any change
    listed = sh(the_lab, LOGIN, "systemctl list-timers rocm-fleet-active-checks.timer --no-legend").stdout
    assert "rocm-fleet-active-checks.timer" in listed, listed


def test_the_timer_checks_both_nodes_one_at_a_time_and_each_keeps_a_document_with_valid_until(lab) -> None:
    the_lab, _ = lab
    quiet(the_lab)                       # the timer ran while the role converged: start from no results
    for host in HOSTS:
        sh(the_lab, host, f"rm -rf {RESULTS}")
    sh(the_lab, LOGIN, "rm -rf /var/lib/rocm-fleet/active-checks/submitted.json")
    since = sh(the_lab, LOGIN, "date +%s").stdout.strip()
    timer(the_lab, "start")
    start = time.monotonic()
    most, seen = 0, set()

    def both_checked() -> bool:
        nonlocal most
        live = checks_live(the_lab)
        most = max(most, len(live))
        seen.update(row[3] for row in live if row[3])
        return all(latest(the_lab, h) for h in HOSTS)

    wait_for("a document with valid_until on both nodes", both_checked, timeout_s=180, every_s=0.5)
    TIMES["timer: both nodes checked"] = time.monotonic() - start
    quiet(the_lab)
    assert most == 1, f"{most} active checks at once; P = 50 % of 2 nodes allows 1"
    for host in HOSTS:
        doc = latest(the_lab, host)
        assert doc is not None and doc["complete"] and doc["tier"] == "smoke or quick", doc and doc["tier"]
        finished = dt.datetime.fromisoformat(doc["finished_at"])
        until = dt.datetime.fromisoformat(doc["valid_until"])
        assert until - finished == dt.timedelta(days=7), (doc["finished_at"], doc["valid_until"])  # quick: 7 days
        took = finished - dt.datetime.fromisoformat(doc["started_at"])
        TIMES[f"quick tier on {host}"] = took.total_seconds()
    # the planner's own account of every timer run: it submitted only when no check was pending or running,
    # one node at a time, and each node once
    journal = sh(the_lab, LOGIN, f"journalctl -u rocm-fleet-active-checks -o cat --no-pager --since=@{since}").stdout
    runs = [line for line in journal.splitlines() if line.startswith("active checks in lab: ")]
    submitting = [line for line in runs if "; submitted none" not in line]
    assert len(submitting) >= 2, journal[-3000:]      # a third when the timer ticked again before it stopped
    for line in submitting:
        assert ": 0 pending or running, limit 1 of 2 nodes" in line and line.count("(job ") == 1, line
    assert sorted(line.split("; submitted ")[1].split()[0] for line in submitting[:2]) == HOSTS
    print(f"timer runs until both nodes were checked: {len(runs)}")


def test_a_node_running_a_user_job_is_never_chosen_and_a_user_job_outranks_a_check(lab) -> None:
    the_lab, _ = lab
    quiet(the_lab)
    busy, free = HOSTS
    user = sh(the_lab, LOGIN, shlex.join(["sbatch", "--parsable", f"--nodelist={busy}", "--exclusive", "--time=2",
                                          "--job-name=user-job", "--wrap", "sleep 45"])).stdout.strip()
    try:
        wait_for(f"user job {user} running", lambda: any(r[0] == user and r[2] == "RUNNING"
                                                         for r in squeue(the_lab)), timeout_s=30, every_s=1)
        for _ in range(3):           # three rounds: the idle node each time, the busy one never
            doc = plan(the_lab)
            assert doc["chosen"] == [free], doc
            assert {"node": busy, "why": "not idle (ALLOCATED)"} in doc["skipped"], doc["skipped"]
            job = doc["submitted"][0]["job"]
            wait_for(f"check {job} to end", lambda j=job: not any(r[0] == j for r in checks_live(the_lab)),
                     timeout_s=60, every_s=1)
        # a check and a user job both waiting for the same node: the user job has the higher priority
        check = sh(the_lab, LOGIN, "printf '#!/bin/sh\\ntrue\\n' | " + shlex.join(
            ["sbatch", "--parsable", f"--nodelist={busy}", "--exclusive", "--job-name=rocm-fleet-active",
             "--nice=100000", "--time=2", "--output=/dev/null", "--"])).stdout.strip()
        waiting = sh(the_lab, LOGIN, shlex.join(["sbatch", "--parsable", f"--nodelist={busy}", "--exclusive",
                                                 "--time=2", "--job-name=user-job-2", "--wrap", "true"])).stdout.strip()
        priority = {r[0]: int(r[4]) for r in squeue(the_lab)}
        assert priority[waiting] > priority[check], priority
    finally:
        sh(the_lab, LOGIN, "scancel --name=user-job --name=user-job-2; scancel --name=rocm-fleet-active")
    wait_for("the user jobs to end", lambda: not squeue(the_lab), timeout_s=60, every_s=1)


def test_a_drained_node_is_not_chosen(lab) -> None:
    the_lab, _ = lab
    quiet(the_lab)
    drained, idle = HOSTS
    sh(the_lab, LOGIN, shlex.join(["scontrol", "update", f"NodeName={drained}", "State=DRAIN", "Reason=ticket 4711"]))
    try:
        doc = plan(the_lab, "--dry-run")
        assert doc["chosen"] == [idle] and not doc["submitted"], doc
        assert {"node": drained, "why": "not idle (DRAIN+IDLE)"} in doc["skipped"], doc["skipped"]
        sh(the_lab, LOGIN, shlex.join(["scontrol", "update", f"NodeName={idle}", "State=DRAIN", "Reason=ticket 4712"]))
        doc = plan(the_lab)
        assert doc["chosen"] == [] and doc["submitted"] == [], doc
    finally:
        for host in HOSTS:
            sh(the_lab, LOGIN, shlex.join(["scontrol", "update", f"NodeName={host}", "State=RESUME"]))


def test_a_hostile_partition_is_refused_in_one_line(lab) -> None:
    the_lab, _ = lab
    run = sh(the_lab, LOGIN, shlex.join(["/opt/rocm-fleet/venv/bin/rocm-fleet", "active-checks",
                                         "--partition=lab --uid=0", "--max-percent", "50"]))
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "is not a Slurm partition name" in run.stderr


def test_removing_the_role_removes_the_timer_and_the_runner(lab) -> None:
    the_lab, inventory = lab
    gone = converge(inventory, active_checks_state="absent")
    assert gone.rc == 0, gone.output[-3000:]
    assert sh(the_lab, LOGIN, f"test -e {RUNNER} || test -e /etc/systemd/system/rocm-fleet-active-checks.timer"
              ).returncode != 0
