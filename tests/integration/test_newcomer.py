"""A newcomer's first hour, on a fresh lab host (issue 18): `--check --diff` before anything was
converged, a CPU whose idle driver lacks the declared C-state, and `rocm-fleet spec` against the
file roles/validation_node writes on the node.

One single-host lab of its own (name keyed to this checkout, free ports), so the host is fresh
whatever other modules did. Its node_tuning run sets THP and NUMA balancing on the machine's one
kernel to the lab's declared values (madvise, 0), as every converge of the lab does: do not run it
at the same time as tests/integration/test_tuning.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible_run import ROOT, PlaybookRun, playbook, run_playbook

from validation import cstates
from validation.lab import Lab, default_lab_name

pytestmark = pytest.mark.lab

NAME = default_lab_name("rfnew")
INVENTORY = ROOT / "inventories" / "lab" / f"{NAME}.yml"     # inside inventories/lab: group_vars apply
CHECKS = ROOT / "validation" / "checks"
RF = Path(sys.executable).parent / "rocm-fleet"
# A KVM guest's cpuidle as the kernel's haltpoll driver lays it out (states 0 POLL, 1 haltpoll idle;
# tests/fixtures/derived/cpuidle/SOURCES.md), built on tmpfs inside the host, whatever idle driver the machine has.
HALTPOLL_SYSFS = """set -e
mount -t tmpfs rf-haltpoll /sys/devices/system/cpu
mkdir -p /sys/devices/system/cpu/cpuidle
echo haltpoll > /sys/devices/system/cpu/cpuidle/current_driver
for cpu in 0 1; do
  for state in 0 1; do mkdir -p /sys/devices/system/cpu/cpu$cpu/cpuidle/state$state; done
  echo POLL > /sys/devices/system/cpu/cpu$cpu/cpuidle/state0/name
  echo 'haltpoll idle' > /sys/devices/system/cpu/cpu$cpu/cpuidle/state1/name
  for state in 0 1; do echo 0 > /sys/devices/system/cpu/cpu$cpu/cpuidle/state$state/disable; done
done
"""


@pytest.fixture(scope="module")
def fresh() -> Iterator[Lab]:
    with Lab(NAME, 1, mirror=True, inventory_path=INVENTORY) as lab:
        yield lab


def host(lab: Lab) -> str:
    assert lab.info is not None
    return lab.info.hosts[0].name


def checks(lab: Lab, *args: str, results: Path) -> dict:
    """Run the suite from the controller against the lab host; its results document."""
    argv = [sys.executable, "-m", "pytest", "-c", str(CHECKS / "pytest.ini"), "--rootdir", str(CHECKS), *args,
            f"--hosts=ansible://{host(lab)}", f"--ansible-inventory={INVENTORY}", f"--rf-results={results}"]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    return json.loads((results / f"{host(lab)}.json").read_text())


def test_check_mode_on_a_fresh_host_reports_what_would_change_and_succeeds(fresh: Lab) -> None:
    """Before: exit 2, "Failed to find package 'rocminfo' to perform selection 'hold'" (the hold ran
    on packages that check mode had not installed)."""
    assert fresh.run(host(fresh), ["dpkg-query", "-W", "rocminfo"]).returncode != 0   # really fresh
    run = playbook(INVENTORY, "site.yml", "--check", "--diff")
    assert run.rc == 0, run.output[-4000:]
    changed = run.changed_tasks()
    assert any(t.startswith("rocm : Install ROCm packages at the declared versions") for t in changed), changed
    assert "Failed to find package" not in run.output
    assert fresh.run(host(fresh), ["dpkg-query", "-W", "rocminfo"]).returncode != 0   # and still fresh
    print(f"\nsite.yml --check --diff on a fresh host: rc 0, changed={run.changed()}, {run.seconds:.0f} s")


def test_a_declared_c_state_the_cpu_lacks_is_said_by_the_role_and_skipped_by_the_check(fresh: Lab,
                                                                                       tmp_path: Path) -> None:
    name = host(fresh)
    made = fresh.run(name, ["sh", "-c", HALTPOLL_SYSFS])
    assert made.returncode == 0, made.stderr
    try:
        run = playbook(INVENTORY, "site.yml", "--tags", "node_tuning")
        assert run.rc == 0, run.output[-4000:]
        listing = fresh.run(name, ["sh", "-c", cstates.LISTING]).stdout
        sentence = cstates.absent_message([2], cstates.parse_listing(listing))
        assert sentence.startswith("declared state 2 does not exist on this CPU: cpuidle driver haltpoll offers "
                                   "states 0 (POLL), 1 (haltpoll idle)")
        assert f"{name}: {sentence}" in " ".join(run.output.split()), run.output[-3000:]
        doc = checks(fresh, str(CHECKS / "test_node_tuning.py"), "-k", "cpu_idle_states", results=tmp_path)
        (check,) = [c for c in doc["checks"] if c["name"] == "test_cpu_idle_states_are_disabled"]
        assert check["status"] == "skip" and check["message"].endswith(sentence), check
    finally:
        fresh.run(name, ["umount", "/sys/devices/system/cpu"])


def test_an_idle_state_re_enabled_by_hand_is_disabled_again_and_then_left_alone(fresh: Lab) -> None:
    """node_tuning reads every CPU's idle switches in its one read of the host, before its unit runs:
    a run that finds a state re-enabled restarts the unit, and the next run changes nothing. State 1
    of the haltpoll layout on tmpfs (cpupower writes its switches there as in sysfs)."""
    name = host(fresh)
    made = fresh.run(name, ["sh", "-c", HALTPOLL_SYSFS])
    assert made.returncode == 0, made.stderr
    switches = ["cat", *(f"/sys/devices/system/cpu/cpu{cpu}/cpuidle/state1/disable" for cpu in (0, 1))]
    state_1 = {"node_tuning_cpuidle_disabled_states": [1]}
    again = "node_tuning : Disable the idle states again where something re-enabled them"
    try:
        first = playbook(INVENTORY, "site.yml", "--tags", "node_tuning", extra=state_1)
        assert first.rc == 0, first.output[-4000:]
        assert fresh.run(name, switches).stdout.split() == ["1", "1"]
        fresh.run(name, ["sh", "-c", "echo 0 > /sys/devices/system/cpu/cpu1/cpuidle/state1/disable"])
        second = playbook(INVENTORY, "site.yml", "--tags", "node_tuning", extra=state_1)
        assert second.rc == 0, second.output[-4000:]
        assert second.changed_tasks() == [f"{again} -> {name}"], second.changed_tasks()
        assert fresh.run(name, switches).stdout.split() == ["1", "1"]
        third = playbook(INVENTORY, "site.yml", "--tags", "node_tuning", extra=state_1)
        assert third.rc == 0 and third.changed() == 0, third.changed_tasks()
    finally:
        playbook(INVENTORY, "site.yml", "--tags", "node_tuning")    # the lab's own declaration again
        fresh.run(name, ["umount", "/sys/devices/system/cpu"])


def test_rocm_fleet_spec_prints_byte_for_byte_what_validation_node_writes_on_the_node(fresh: Lab,
                                                                                       tmp_path: Path) -> None:
    (tmp_path / "wheels").mkdir()
    extra = {"validation_node_wheelhouse": str(tmp_path / "wheels"), "validation_gpu_count": 4}
    run: PlaybookRun = run_playbook(INVENTORY, ROOT / "tests" / "integration" / "playbooks" /
                                    "validation_node_spec.yml", "-e", json.dumps(extra))
    assert run.rc == 0, run.output[-4000:]
    on_node = fresh.run(host(fresh), ["cat", "/etc/rocm-fleet/spec.yml"]).stdout
    printed = subprocess.run([str(RF), "spec", "-i", str(INVENTORY), host(fresh), "-e", json.dumps(extra)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "validation_gpu_count: 4\n" in on_node and "rocm_repo_mirror_url: http://127.0.0.1:" in on_node
    assert printed == on_node
