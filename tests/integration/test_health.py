"""The health mode on lab hosts: a systemd timer, then Slurm's HealthCheckProgram draining a node for
planted drift and resuming it by itself once fixed. Real Slurm 24.11 (Debian), real systemd, real SSH.
Flap control shows in the package-hold test: the first failing run leaves the node in service, the
second (node_health_drain_after: 2 for the planted codes) drains it with the streak as the reason.

Its own lab (name rfhlt-<checkout key>, free SSH ports, Slurm ports from cluster_lab.service_ports,
inventory inventories/lab/rfhlt*.yml so that the lab's group_vars apply), removed at the end also on failure.
site.yml provisions the hosts as the lab declares (ROCm packages held, THP madvise, NUMA balancing 0);
playbooks/health.yml installs the suite and roles/node_health. The lab hosts have no GPU, so their spec
declares none (validation_gpu_count: null): the GPU checks skip and the health verdict turns on configuration,
the kernel log and processes holding a device. The "device" a planted process holds is a plain file at
/dev/dri/renderD128 inside the host, because a lab host has no DRM device; the scan that finds it reads /proc
as on a real node. THP belongs to the one kernel every lab host and this machine share: the THP drift is
planted there, and restored in a finally (both lab nodes see it, as both would on a shared kernel).
.venv/bin/pytest tests/integration/test_health.py -q
"""

from __future__ import annotations

import base64
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
from ansible_run import ROOT, run_playbook
from cluster_lab import cluster_inventory, service_ports
from waiting import wait_for

from validation.lab import Lab, default_lab_name

pytestmark = pytest.mark.lab

LAB = os.environ.get("ROCM_FLEET_HEALTH_LAB_NAME") or default_lab_name("rfhlt")
_BASE = os.environ.get("ROCM_FLEET_HEALTH_PORT_BASE")
PORT_BASE = int(_BASE) if _BASE else None
HOSTS = [f"{LAB}-1", f"{LAB}-2"]
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
INTERVAL = 10
TEXTFILE = "/var/lib/prometheus/node-exporter/rocm_fleet_health.prom"
STATE = "/var/lib/rocm-fleet/health"
# Flap control through the role (node_health_drain_after -> --drain-after): the planted codes drain after
# 2 consecutive failing runs instead of their default 3, so each drain test waits one run more than a
# drain at once would, not two.
DRAIN_AFTER = {"RF-CONFIG-PACKAGE-HOLD": 2, "RF-GPU-BUSY": 2, "RF-TUNING-THP": 2}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    """Two provisioned lab hosts with the suite installed; yields (lab, inventory)."""
    work = tmp_path_factory.mktemp("health")
    inventories = ROOT / "inventories" / "lab"          # inside inventories/lab: group_vars apply
    the_lab = Lab(LAB, len(HOSTS), mirror=True, port_base=PORT_BASE, inventory_path=inventories / f"{LAB}.yml")
    with the_lab:
        inventory = cluster_inventory(the_lab, inventories / f"{LAB}-health.yml", {
            "node_health_interval_seconds": INTERVAL, "node_health_drain_after": DRAIN_AFTER,
            "node_health_timeout_seconds": 8, "validation_node_wheelhouse": str(work / "wheels")})
        build = subprocess.run([str(Path(sys.executable).parent / "pip"), "wheel", "--no-deps", "--quiet",
                                "--wheel-dir", str(work / "wheels"), str(ROOT), "pytest-testinfra"],
                               capture_output=True, text=True, timeout=600, check=False)
        assert build.returncode == 0, build.stderr[-2000:]
        site = run_playbook(inventory, ROOT / "playbooks" / "site.yml", "-e", "rocm_fleet_hosts=lab")
        assert site.rc == 0, site.output[-4000:]
        try:
            yield the_lab, inventory
        finally:
            inventory.unlink(missing_ok=True)


def sh(lab: Lab, host: str, command: str) -> subprocess.CompletedProcess[str]:
    return lab.ssh(host, [command])


def health_play(inventory: Path, **extra: object) -> tuple[int, str, int]:
    # extra vars: the lab's group_vars declare 8 GPUs, and they outrank the inventory file's own vars
    run = run_playbook(inventory, ROOT / "playbooks" / "health.yml", "-e",
                       json.dumps({"rocm_fleet_hosts": "lab", "validation_gpu_count": None, **extra}))
    return run.rc, run.output, run.changed()


def test_the_timer_runs_the_health_mode_and_writes_a_textfile_promtool_accepts(lab: tuple[Lab, Path]) -> None:
    the_lab, inventory = lab
    rc, output, _ = health_play(inventory, node_health_method="timer")
    assert rc == 0, output[-4000:]
    again_rc, again, changed = health_play(inventory, node_health_method="timer")
    assert again_rc == 0 and changed == 0, again[-3000:]                       # idempotent
    host = HOSTS[0]
    timers = sh(the_lab, host, "systemctl list-timers rocm-fleet-health.timer --no-legend")
    assert "rocm-fleet-health.timer" in timers.stdout, timers.stdout + timers.stderr
    ran = sh(the_lab, host, "systemctl start rocm-fleet-health.service; systemctl show -p ExecMainStatus "
                            "rocm-fleet-health.service")
    assert "ExecMainStatus=0" in ran.stdout, ran.stdout + sh(the_lab, host, "journalctl -u rocm-fleet-health -n 30 "
                                                                             "--no-pager").stdout
    text = sh(the_lab, host, f"cat {TEXTFILE}").stdout
    assert f'rocm_fleet_health_ok{{node="{host}"}} 1' in text, text
    promtool = Path(sys.executable).parent / "promtool"
    check = subprocess.run([str(promtool), "check", "metrics"], input=text, capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    times = []
    for _ in range(3):          # the runner as the timer starts it, timed from inside the host
        timed = sh(the_lab, host, "python3 -c 'import subprocess, time; s = time.monotonic(); "
                                  "r = subprocess.run([\"/usr/local/sbin/rocm-fleet-health\"], capture_output=True); "
                                  "print(r.returncode, time.monotonic() - s)'")
        code, seconds = timed.stdout.split()
        assert code == "0", timed.stdout + timed.stderr
        times.append(float(seconds))
    print(f"health mode on a lab host (no GPU declared): {', '.join(f'{t:.1f}' for t in times)} s")
    rc, output, _ = health_play(inventory, node_health_method="timer", node_health_state="absent")
    assert rc == 0, output[-3000:]
    assert sh(the_lab, host, "test -e /etc/systemd/system/rocm-fleet-health.timer").returncode != 0


def node_state(lab: Lab, host: str) -> tuple[str, str]:
    out = sh(lab, HOSTS[0], shlex.join(["scontrol", "--oneliner", "show", "node", host])).stdout
    state = next((w.split("=", 1)[1] for w in out.split() if w.startswith("State=")), "?")
    reason = out.split("Reason=", 1)[1].strip() if "Reason=" in out else ""
    return state, reason


def refused(lab: Lab, host: str) -> bool:
    """A job for this node only is not started (srun --immediate gives up at once)."""
    run = sh(lab, HOSTS[0], shlex.join(["srun", "--immediate=5", f"--nodelist={host}", "--time=1", "true"]))
    return run.returncode != 0


@pytest.fixture(scope="module")
def slurm_lab(lab: tuple[Lab, Path]) -> tuple[Lab, Path]:
    the_lab, inventory = lab
    key = base64.b64encode(secrets.token_bytes(1024)).decode()
    playbook = Path(tempfile.mkdtemp(prefix="rfhlt-")) / "slurm.yml"
    playbook.write_text(yaml.safe_dump([
        {"ansible.builtin.import_playbook": str(ROOT / "tests" / "integration" / "playbooks" / "lab_slurm.yml")}]))
    run = run_playbook(inventory, playbook, "-e", json.dumps({"lab_slurm_munge_key_b64": key,
                                                              "lab_slurm_port_base": service_ports(the_lab)}))
    assert run.rc == 0, run.output[-4000:]
    rc, output, _ = health_play(inventory, node_health_method="slurm")
    assert rc == 0, output[-4000:]
    conf = sh(the_lab, HOSTS[0], "grep ^HealthCheck /etc/slurm/slurm.conf").stdout
    assert f"HealthCheckInterval={INTERVAL}" in conf and "HealthCheckProgram=/usr/local/sbin/rocm-fleet-health" in conf
    return the_lab, inventory


def drained_for(lab: Lab, host: str, code: str) -> bool:
    state, reason = node_state(lab, host)
    return "DRAIN" in state and reason.startswith("rocm-fleet health: ") and code in reason


def streak(lab: Lab, host: str, code: str) -> int | None:
    """The code's consecutive failing runs in the node's health memory (validation/flap.py)."""
    out = sh(lab, host, f"cat {STATE}/{host}.json").stdout
    try:
        return json.loads(out)["flap"]["codes"][code]["streak"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return None


def left_in_service_after_one_failing_run(lab: Lab, host: str, code: str) -> tuple[str, str]:
    """The node's Slurm state seen between its first and second failing run of `code` (the streak read
    before and after the look is 1 both times)."""
    def look() -> tuple[str, str] | None:
        before = streak(lab, host, code)
        seen = node_state(lab, host)
        return seen if before == 1 and streak(lab, host, code) == 1 else None
    return wait_for(f"the first failing run of {code} on {host}", look, timeout_s=60, every_s=1)


def resumed(lab: Lab, host: str) -> bool:
    state, _ = node_state(lab, host)
    return "DRAIN" not in state and "IDLE" in state


def test_slurm_runs_it_at_its_interval_and_healthy_nodes_stay_in_service(slurm_lab: tuple[Lab, Path]) -> None:
    the_lab, _ = slurm_lab
    host = HOSTS[1]

    def stamp() -> str:
        return sh(the_lab, host, f"stat -c %Y {STATE}/{host}.json").stdout.strip()

    first = wait_for("a first health run", stamp, timeout_s=90)
    second = wait_for("the next health run", lambda: stamp() if stamp() != first else None, timeout_s=90)
    assert int(second) - int(first) >= INTERVAL - 2, (first, second)
    assert all(resumed(the_lab, h) for h in HOSTS), [node_state(the_lab, h) for h in HOSTS]


def test_a_released_package_hold_drains_the_node_and_it_resumes_once_held_again(slurm_lab) -> None:
    the_lab, _ = slurm_lab
    host = HOSTS[1]
    try:
        sh(the_lab, host, "apt-mark unhold rocminfo")
        start = time.monotonic()
        state, reason = left_in_service_after_one_failing_run(the_lab, host, "RF-CONFIG-PACKAGE-HOLD")
        first_after = time.monotonic() - start
        assert "DRAIN" not in state and not reason, (state, reason)       # 1 of 2: the run fails, no drain yet
        wait_for(f"{host} drained for RF-CONFIG-PACKAGE-HOLD", lambda: drained_for(the_lab, host,
                                                                                   "RF-CONFIG-PACKAGE-HOLD"))
        drained_after = time.monotonic() - start
        _, reason = node_state(the_lab, host)
        assert reason.startswith("rocm-fleet health: RF-CONFIG-PACKAGE-HOLD failed 2 consecutive runs"), reason
        assert (streak(the_lab, host, "RF-CONFIG-PACKAGE-HOLD") or 0) >= 2
        assert refused(the_lab, host)
        assert resumed(the_lab, HOSTS[0])            # the other node keeps taking jobs
    finally:
        sh(the_lab, host, "apt-mark hold rocminfo")
    start = time.monotonic()
    wait_for(f"{host} resumed", lambda: resumed(the_lab, host))
    print(f"package hold released: first failing run after {first_after:.0f} s left {host} {state} (1 of 2), "
          f"drained after {drained_after:.0f} s ({reason!r}), resumed {time.monotonic() - start:.0f} s after the "
          "hold came back")
    assert not refused(the_lab, host)


def test_a_process_left_holding_a_device_drains_the_node_until_it_is_gone(slurm_lab) -> None:
    the_lab, _ = slurm_lab
    host = HOSTS[0]
    sh(the_lab, host, "mkdir -p /dev/dri && : > /dev/dri/renderD128")
    holder = "setsid sh -c 'exec 3</dev/dri/renderD128; exec sleep 600' >/dev/null 2>&1 < /dev/null & echo $!"
    pid = sh(the_lab, host, holder).stdout.strip()
    try:
        start = time.monotonic()
        wait_for(f"{host} drained for RF-GPU-BUSY", lambda: drained_for(the_lab, host, "RF-GPU-BUSY"))
        drained_after = time.monotonic() - start
        message = sh(the_lab, host, f"cat {STATE}/last/{host}.json").stdout
        assert f"pid {pid} sleep holding /dev/dri/renderD128" in message
        assert refused(the_lab, host)
    finally:
        sh(the_lab, host, f"kill {pid}; rm -f /dev/dri/renderD128")
    start = time.monotonic()
    wait_for(f"{host} resumed", lambda: resumed(the_lab, host))
    print(f"leftover device holder: drained after {drained_after:.0f} s, resumed {time.monotonic() - start:.0f} s "
          "after it was killed")


def test_thp_changed_by_hand_drains_and_the_fix_resumes(slurm_lab, kernel_exclusive: None) -> None:
    the_lab, _ = slurm_lab
    before = THP.read_text().split("[")[1].split("]")[0]
    planted = "never" if before != "never" else "always"
    try:
        THP.write_text(planted)
        start = time.monotonic()
        for host in HOSTS:        # one kernel, so both nodes see the drift
            wait_for(f"{host} drained for RF-TUNING-THP", lambda h=host: drained_for(the_lab, h, "RF-TUNING-THP"))
        drained_after = time.monotonic() - start
        assert refused(the_lab, HOSTS[0])
    finally:
        THP.write_text(before)
    start = time.monotonic()
    for host in HOSTS:
        wait_for(f"{host} resumed", lambda h=host: resumed(the_lab, h))
    print(f"THP drift: both nodes drained after {drained_after:.0f} s, resumed {time.monotonic() - start:.0f} s "
          "after the fix")


def test_an_administrators_drain_is_left_alone(slurm_lab) -> None:
    the_lab, _ = slurm_lab
    host = HOSTS[1]
    sh(the_lab, HOSTS[0], shlex.join(["scontrol", "update", f"NodeName={host}", "State=DRAIN",
                                      "Reason=disk swap, ticket 4711"]))
    try:
        time.sleep(INTERVAL * 2.5)          # two health runs pass on a healthy node
        state, reason = node_state(the_lab, host)
        assert "DRAIN" in state and reason.startswith("disk swap, ticket 4711"), (state, reason)
    finally:
        sh(the_lab, HOSTS[0], shlex.join(["scontrol", "update", f"NodeName={host}", "State=RESUME"]))


def test_removing_the_role_takes_only_its_own_lines_out_of_slurm_conf(slurm_lab) -> None:
    the_lab, inventory = slurm_lab
    rc, output, _ = health_play(inventory, node_health_method="slurm", node_health_state="absent")
    assert rc == 0, output[-3000:]
    conf = sh(the_lab, HOSTS[0], "cat /etc/slurm/slurm.conf").stdout
    assert "HealthCheck" not in conf and "ClusterName=rocmfleetlab" in conf
