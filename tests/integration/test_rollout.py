"""Rollout failure paths and reboots on two lab hosts (issue 16): every host of a batch gets a record
that says what really happened, also a host that fails its baseline, a host whose undrain fails and a
host that stops answering mid-upgrade; a change that needs a reboot reboots once and the host comes
back and validates; a host that does not come back fails clearly while its batch goes on.

Its own lab ($ROCM_FLEET_ROLLOUT_LAB_NAME, default rfrol-<checkout key>; SSH ports
$ROCM_FLEET_ROLLOUT_PORT_BASE + 1..2, default free ones), inventory inside inventories/lab/ so
group_vars/lab.yml applies, provisioned with site.yml; removed at the end, also on failure. The
kernel-wide settings (THP, NUMA balancing) are left as the machine has them.

How a lab host reboots: it is a podman container started with --restart=always. `shutdown -r` in it
makes its systemd exit, the container exits and podman starts it again: a real new boot of the
host's systemd, sshd and services (PID 1 is a new process), on the machine's kernel, which does not
restart, so the kernel's boot id does not change. The lab inventory therefore gives node_reboot the
start time of PID 1 as its boot-time command (docs/lab.md). `podman inspect`'s RestartCount counts
the reboots independently of Ansible.

Tests run in file order: the hosts carry state from one to the next.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ansible_run import ROOT, PlaybookRun, playbook, playbook_acting, provisioned_lab

from validation.lab import Lab, default_lab_name
from validation.lab.podman import podman

NAME = os.environ.get("ROCM_FLEET_ROLLOUT_LAB_NAME") or default_lab_name("rfrol")
_BASE = os.environ.get("ROCM_FLEET_ROLLOUT_PORT_BASE")
PORT_BASE = int(_BASE) if _BASE else None
INVENTORY = ROOT / "inventories" / "lab" / f"{NAME}.yml"     # inside inventories/lab: group_vars apply
RESULTS = ROOT / "results"
H1, H2 = f"{NAME}-1", f"{NAME}-2"

# Two packages that install from the mirror, no GPU, and the shared kernel's THP / NUMA balancing left alone.
BASE = {"rocm_packages": ["rocminfo", "rocm-smi"], "validation_node_no_gpu": True,
        "node_tuning_thp_enabled": "keep", "node_tuning_thp_defrag": "keep", "node_tuning_numa_balancing": "keep"}

# AMD's amdgpu-dkms builds a kernel module against the running kernel's headers; a lab host runs the
# machine's kernel, which has none, so the real package cannot exist here. This empty package of the
# same name stands in for it: amdgpu_driver_mode inbox (the lab's) removes it, which is the driver
# change that needs a reboot (amdgpu_driver_reboot_required).
STANDIN_CONTROL = """Package: amdgpu-dkms
Version: 1:6.8.5.60202-0rocmfleetlab
Architecture: all
Maintainer: rocm-fleet lab <lab@rocm-fleet.invalid>
Description: rocm-fleet lab stand-in for AMD's amdgpu-dkms
 Empty: the real package builds a kernel module for the running kernel, which a container lacks.
"""


def said(message: str, run: PlaybookRun) -> bool:
    """The playbook printed `message`; the YAML callback wraps long messages at a width that depends on
    the host names (a lab's name carries its checkout's key), so whitespace runs compare as one space."""
    return " ".join(message.split()) in " ".join(run.output.split())


@pytest.fixture(scope="module")
def rollout() -> Iterator[Lab]:
    with provisioned_lab(NAME, 2, port_base=PORT_BASE, inventory=INVENTORY, extra=BASE) as lab:
        yield lab


def restarts(host: str) -> int:
    return int(podman(["inspect", "--format", "{{.RestartCount}}", host], timeout_s=30).stdout.strip())


def record(run_id: str, host: str) -> dict:
    return json.loads((RESULTS / run_id / "rollout" / f"{host}.json").read_text())


def steps(doc: dict) -> list[tuple[str, str]]:
    return [(s["step"], s["result"]) for s in doc["steps"]]


def hook_vars(log: Path, *, undrain: list[str] | None = None) -> dict:
    """node_drain's command method writing its calls to `log` (the undrain command can be replaced)."""
    def hook(word: str) -> list[str]:
        return ["sh", "-c", f"echo {word} {{{{ inventory_hostname }}}} >> {log}"]

    return {"node_drain_method": "command", "node_drain_command": hook("drain"),
            "node_drain_undrain_command": undrain or hook("undrain"), "node_drain_idle_command": ["true"]}


def install_standin(lab: Lab, host: str) -> None:
    script = ('set -e; d=$(mktemp -d); mkdir -p "$d/DEBIAN"; printf %s "$1" > "$d/DEBIAN/control"; '
              'dpkg-deb --build "$d" /root/amdgpu-dkms-standin.deb >/dev/null; dpkg -i /root/amdgpu-dkms-standin.deb')
    done = lab.run(host, ["sh", "-c", script, "sh", STANDIN_CONTROL])
    assert done.returncode == 0, done.stdout + done.stderr


def upgrade_watching(extra: dict, when: str, act: Callable[[], None]) -> PlaybookRun:
    """upgrade.yml with `act` when a line starts with `when`; its whole output is kept next to the records."""
    run = playbook_acting(INVENTORY, "upgrade.yml", extra=extra, when=when, act=act)
    kept = RESULTS / extra["rocm_fleet_run_name"] / "upgrade.log"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(run.output)
    return run


def test_a_baseline_that_cannot_run_leaves_the_node_drained_and_recorded(rollout: Lab) -> None:
    """/etc/rocm-fleet is a file on host 1, so the suite cannot be installed: the baseline validation
    fails as a step. Before issue 16 it ran outside the block: the node stayed drained with no record."""
    log = RESULTS / f"{NAME}-baseline-hooks.log"
    log.parent.mkdir(exist_ok=True)
    log.unlink(missing_ok=True)
    run_id = f"{NAME}-baseline"
    rollout.run(H1, ["sh", "-c", "mv /etc/rocm-fleet /etc/rocm-fleet.saved && echo not-a-directory > /etc/rocm-fleet"])
    try:
        run = playbook(INVENTORY, "upgrade.yml", "--limit", H1,
                       extra={**BASE, **hook_vars(log), "rocm_fleet_run_name": run_id}, timeout_s=1800)
    finally:
        rollout.run(H1, ["sh", "-c", "rm -f /etc/rocm-fleet && mv /etc/rocm-fleet.saved /etc/rocm-fleet"])
    assert run.rc != 0, run.output[-4000:]
    doc = record(run_id, H1)
    assert doc["state"] == "drained" and doc["failed_step"] == "baseline validation", doc
    assert steps(doc)[:2] == [("read the applied state", "ROCm 6.1.2"), ("drain", "drained (command)")]
    assert steps(doc)[2] == ("baseline validation", "failed") and doc["unreachable"] is False
    assert doc["baseline_passed"] is None and doc["after_passed"] is None
    assert said(f'{H1} stays drained: the upgrade failed at "baseline validation"', run), run.output[-3000:]
    assert log.read_text().splitlines() == [f"drain {H1}"]
    print(f"upgrade.yml, baseline cannot run: {run.seconds:.0f} s, rc {run.rc}")


def test_an_undrain_that_fails_leaves_the_record_saying_drained(rollout: Lab) -> None:
    """Host 1 upgrades and passes, then the scheduler refuses to put it back. Before issue 16 the record
    was written first and said 'in service'."""
    log = RESULTS / f"{NAME}-undrain-hooks.log"
    log.unlink(missing_ok=True)
    run_id = f"{NAME}-undrain"
    refuse = ["sh", "-c", "echo 'undrain refused by the scheduler' >&2; exit 3"]
    run = playbook(INVENTORY, "upgrade.yml", "--limit", H1,
                   extra={**BASE, **hook_vars(log, undrain=refuse), "rocm_fleet_run_name": run_id}, timeout_s=1800)
    assert run.rc != 0, run.output[-4000:]
    doc = record(run_id, H1)
    assert doc["state"] == "drained" and doc["failed_step"] == "undrain", doc
    assert "undrain refused by the scheduler" in doc["error"], doc
    assert [s for s, _ in steps(doc)] == ["read the applied state", "drain", "baseline validation", "upgrade",
                                          "reboot", "validation", "comparison", "undrain"]
    assert steps(doc)[5] == ("validation", "smoke tier passed") and steps(doc)[-1] == ("undrain", "failed")
    assert doc["after_passed"] is True and doc["regressions"] is False
    assert said(f"{H1} passed after the upgrade but stays drained: the undrain failed", run), run.output[-3000:]
    drained = json.loads(rollout.run(H1, ["cat", "/var/lib/rocm-fleet/drain.json"]).stdout)
    assert drained["state"] == "drained" and run_id in drained["reason"]
    print(f"upgrade.yml, undrain refused: {run.seconds:.0f} s, rc {run.rc}")


def test_a_host_stopped_mid_upgrade_is_recorded_unreachable_while_its_batch_finishes(rollout: Lab) -> None:
    """One batch of both hosts, failure budget 50 %: host 2's container is stopped as soon as the rocm
    role starts in the rolling play (after the repository and driver roles). Before issue 16
    ansible-core dropped the unreachable host from the play without rescuing it (unreachable=1
    rescued=0) and no record was written for it."""
    log = RESULTS / f"{NAME}-stopped-hooks.log"
    log.unlink(missing_ok=True)
    run_id = f"{NAME}-stopped"
    extra = {**BASE, **hook_vars(log), "rocm_fleet_run_name": run_id, "rocm_fleet_upgrade_serial": 2,
             "rocm_fleet_upgrade_max_fail_percentage": 50}
    try:
        # the rocm role's argument check opens it in the rolling play (entry point main; preflight.yml checks the
        # entry point preflight before the rollout starts)
        run = upgrade_watching(extra, when="TASK [rocm : Validating arguments against arg spec 'main'",
                               act=lambda: rollout.stop(H2))
    finally:
        rollout.start(H2)
    assert run.rc != 0, run.output[-4000:]
    assert (RESULTS / run_id / "rollout" / f"{H2}.json").exists(), run.output[-8000:]
    first, second = record(run_id, H1), record(run_id, H2)
    assert first["state"] == "in service" and first["failed_step"] == "", first
    assert second["unreachable"] is True and second["failed_step"] == "upgrade", second
    assert second["error"].startswith("unreachable during upgrade"), second
    assert second["state"] == "drained" and steps(second)[-1] == ("upgrade", "unreachable")
    assert said(f"{H2} stopped answering during upgrade and stays drained", run), run.output[-3000:]
    assert sorted(log.read_text().splitlines()) == sorted([f"drain {H1}", f"drain {H2}", f"undrain {H1}"])
    print(f"upgrade.yml, one of two hosts stopped mid-upgrade: {run.seconds:.0f} s, rc {run.rc}")


def test_a_change_that_needs_a_reboot_reboots_once_comes_back_and_validates(rollout: Lab) -> None:
    """Two roles need a reboot in one run: node_tuning removes a kernel command line drop-in an earlier
    run wrote, amdgpu_driver removes the stand-in amdgpu-dkms. One reboot (RestartCount + 1, PID 1
    new), the host answers again, validation passes, and the next run changes nothing and does not reboot."""
    installed = playbook(INVENTORY, "site.yml", "--limit", H1, extra={**BASE, "node_tuning_iommu": "pt"})
    assert installed.rc == 0, installed.output[-3000:]
    assert said("needs a reboot for node_tuning; not rebooting because none of node_tuning_reboot_ok", installed)
    install_standin(rollout, H1)
    before, pid1 = restarts(H1), rollout.run(H1, ["awk", "{print $22}", "/proc/1/stat"]).stdout
    extra = {**BASE, "node_tuning_reboot_ok": True, "amdgpu_driver_reboot_ok": True,
             "node_reboot_timeout_seconds": 300}
    run = playbook(INVENTORY, "site.yml", "--limit", H1, extra=extra)
    assert run.rc == 0, run.output[-4000:]
    assert restarts(H1) == before + 1
    assert rollout.run(H1, ["awk", "{print $22}", "/proc/1/stat"]).stdout != pid1
    assert run.output.count("TASK [node_reboot : Reboot once for every role that asked]") == 1
    assert rollout.ssh(H1, ["systemctl", "is-system-running"]).stdout.strip() in ("running", "degraded")
    assert rollout.run(H1, ["test", "-e", "/etc/default/grub.d/90-rocm-fleet.cfg"]).returncode != 0
    assert rollout.run(H1, ["dpkg-query", "-W", "amdgpu-dkms"]).returncode != 0
    run_id = f"{NAME}-after-reboot"
    validate = playbook(INVENTORY, "validate.yml", "--limit", H1, extra={**BASE, "rocm_fleet_run_name": run_id})
    assert validate.rc == 0, validate.output[-4000:]
    assert json.loads((RESULTS / run_id / f"{H1}.json").read_text())["complete"]
    again = playbook(INVENTORY, "site.yml", "--limit", H1, extra=extra)
    assert again.rc == 0 and again.changed() == 0, again.changed_tasks()
    assert restarts(H1) == before + 1
    print(f"site.yml with one reboot for two roles: {run.seconds:.0f} s; validate.yml {validate.seconds:.0f} s")


# A service that takes a minute to stop: it holds host 2's shutdown open, so the test can stop the
# container while the host is going down, before podman would start it again (a fast container
# reboot otherwise wins the race and comes back).
SLOW_STOP_UNIT = """[Unit]
Description=rocm-fleet lab: a service that takes 60 s to stop (holds a reboot open for a test)
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sleep 60
[Install]
WantedBy=multi-user.target
"""


def test_a_host_that_does_not_come_back_fails_clearly_while_its_batch_goes_on(rollout: Lab) -> None:
    """Both hosts in one batch need a reboot (the stand-in amdgpu-dkms goes); host 2's container is
    stopped while its systemd is shutting down (podman then does not start it again), so it never
    comes back within node_reboot_timeout_seconds. Host 1 reboots, validates and goes back in service;
    host 2 is recorded and fails the gate with the timeout named, within the batch's 50 % budget."""
    for host in (H1, H2):
        install_standin(rollout, host)
    unit = "/etc/systemd/system/rocm-fleet-slow-stop.service"
    rollout.run(H2, ["sh", "-c", f'printf %s "$1" > {unit} && systemctl daemon-reload && '
                                 "systemctl enable --now rocm-fleet-slow-stop.service", "sh", SLOW_STOP_UNIT])
    log = RESULTS / f"{NAME}-reboot-hooks.log"
    log.unlink(missing_ok=True)
    run_id = f"{NAME}-reboot"
    before = {h: restarts(h) for h in (H1, H2)}
    extra = {**BASE, **hook_vars(log), "rocm_fleet_run_name": run_id, "rocm_fleet_upgrade_serial": 2,
             "rocm_fleet_upgrade_max_fail_percentage": 50, "amdgpu_driver_reboot_ok": True,
             "node_reboot_timeout_seconds": 90}
    stopped_while: list[str] = []

    def stop_while_rebooting() -> None:
        """Stop host 2 once its systemd is going down."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            state = podman(["exec", H2, "systemctl", "is-system-running"], check=False, timeout_s=10)
            if state.stdout.strip() == "stopping":
                break
            time.sleep(0.2)
        stopped_while.append(state.stdout.strip())
        podman(["stop", "--time", "0", H2], timeout_s=60, check=False)

    try:
        run = upgrade_watching(extra, when="TASK [node_reboot : Reboot once for every role that asked]",
                               act=stop_while_rebooting)
    finally:
        rollout.start(H2)
        rollout.run(H2, ["sh", "-c", "systemctl disable --now rocm-fleet-slow-stop.service; "
                                     f"rm -f {unit}; systemctl daemon-reload"])
    assert stopped_while == ["stopping"], stopped_while
    assert run.rc != 0, run.output[-4000:]
    first, second = record(run_id, H1), record(run_id, H2)
    assert first["state"] == "in service" and first["rebooted"] is True, first
    assert ("reboot", "rebooted for amdgpu_driver") in steps(first) and steps(first)[-1] == ("undrain",
                                                                                            "back in service")
    assert second["state"] == "drained" and second["failed_step"] == "reboot" and second["rebooted"] is False
    assert f"{H2} did not come back within 90 s (node_reboot_timeout_seconds) after the reboot for amdgpu_driver" \
        in second["error"], second
    assert said(f"{H2} did not come back within 90 s", run), run.output[-3000:]
    assert restarts(H1) == before[H1] + 1 and restarts(H2) == before[H2]     # host 2 was stopped, not restarted
    assert sorted(log.read_text().splitlines()) == sorted([f"drain {H1}", f"drain {H2}", f"undrain {H1}"])
    print(f"upgrade.yml, one host reboots, one never comes back: {run.seconds:.0f} s, rc {run.rc}; "
          f"host 2's record: {second['error'][:200]}")


def test_the_lab_hosts_are_up_again(rollout: Lab) -> None:
    for host in (H1, H2):
        assert rollout.ssh(host, [shlex.join(["systemctl", "is-system-running"])]).stdout.strip() in (
            "running", "degraded"), host
