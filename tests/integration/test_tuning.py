"""roles node_tuning, gpu_access, env_profiles on lab hosts, and their drift checks.

Run with its own lab so it never meets another lab's hosts:

    ROCM_FLEET_LAB_NAME=rftune ROCM_FLEET_LAB_PORT_BASE=2260 \\
    ROCM_FLEET_LAB_INVENTORY=$PWD/inventories/lab/rftune.yml .venv/bin/pytest tests/integration/test_tuning.py

THP and NUMA balancing belong to the one kernel that every lab host and this machine share: the
module records them before the first converge and writes them back at the end, also on failure, and a
test that changes them holds them alone (fixture kernel_exclusive: it waits until no other lab file runs).
ROCM_FLEET_TUNING_ROLES_ONLY=1 converges the three roles (and node_reboot) without the rest of
site.yml, for when another role of site.yml cannot run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import kernel_knobs
import pytest
import yaml
from ansible_run import ROOT, PlaybookRun, playbook

from validation.report import load_run

ROLES = "node_tuning,gpu_access,env_profiles"
KNOBS = {"thp_enabled": Path("/sys/kernel/mm/transparent_hugepage/enabled"),
         "thp_defrag": Path("/sys/kernel/mm/transparent_hugepage/defrag"),
         "numa_balancing": Path("/proc/sys/kernel/numa_balancing")}
USER = "rfuser"
CHECK_FILES = ("test_node_tuning.py", "test_gpu_access.py", "test_env_profiles.py")
ROLES_ONLY = """---
- name: Tuning roles only
  hosts: gpu_nodes
  become: true
  gather_facts: true
  roles:
    - {role: node_tuning, tags: [node_tuning]}
    - {role: gpu_access, tags: [gpu_access]}
    - {role: env_profiles, tags: [env_profiles]}
  post_tasks:
    - name: Reboot once if a role needs it and allows it
      ansible.builtin.include_role:
        name: node_reboot
      tags: [always]
"""


def _read_knob(path: Path) -> str:
    text = path.read_text().strip()
    return text[text.index("[") + 1:text.index("]")] if "[" in text else text


def _write_knob(path: Path, value: str) -> None:
    path.write_text(value + "\n")


@pytest.fixture(scope="module")
def shared_kernel() -> Iterator[dict[str, str]]:
    """THP and NUMA balancing as found before the tests; written back at the end, alone (the tests that
    change them hold them alone too: fixture kernel_exclusive, tests/integration/conftest.py)."""
    before = {name: _read_knob(path) for name, path in KNOBS.items()}
    try:
        yield before
    finally:
        with kernel_knobs.exclusive():
            for name, path in KNOBS.items():
                _write_knob(path, before[name])


def set_kernel(thp_enabled: str | None = None, thp_defrag: str | None = None, numa: str | None = None) -> None:
    """Change the shared kernel 'by hand' (what an operator or another tool would do)."""
    for name, value in (("thp_enabled", thp_enabled), ("thp_defrag", thp_defrag), ("numa_balancing", numa)):
        if value is not None:
            _write_knob(KNOBS[name], value)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> str:
    if os.environ.get("ROCM_FLEET_TUNING_ROLES_ONLY") != "1":
        return "site.yml"
    path = tmp_path_factory.mktemp("playbook") / "tuning-only.yml"
    path.write_text(ROLES_ONLY)
    return str(path)  # ROOT / "playbooks" / <absolute path> is that absolute path


def host_names(lab) -> list[str]:
    return [h.name for h in lab.info.hosts]


@pytest.fixture(scope="module")
def inventory(lab, shared_kernel) -> Iterator[Path]:
    """The lab inventory plus a GPU user on every host (created here: the role never creates users)."""
    for host in host_names(lab):
        result = lab.run(host, ["sh", "-c", f"id {USER} >/dev/null 2>&1 || useradd -m {USER}"])
        assert result.returncode == 0, result.stderr
    path = variant(lab, "users", {h: {"gpu_access_users": [USER]} for h in host_names(lab)})
    yield path
    path.unlink(missing_ok=True)


def variant(lab, suffix: str, host_vars: dict[str, dict]) -> Path:
    """A copy of the lab inventory with host variables, next to it so group_vars/lab.yml applies."""
    data = yaml.safe_load(lab.info.inventory.read_text())
    hosts = data["all"]["children"]["gpu_nodes"]["children"]["lab"]["hosts"]
    for name, extra in host_vars.items():
        hosts[name] = {**(hosts[name] or {}), **extra}
    path = lab.info.inventory.with_name(f"{lab.info.name}-{suffix}.yml")
    path.write_text("---\n" + yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def converged(inventory: Path, site: str, lab) -> tuple[PlaybookRun, PlaybookRun]:
    first = playbook(inventory, site)
    assert first.rc == 0, first.output[-6000:]
    second = playbook(inventory, site)
    print(f"\nconverge with {site}: first {first.seconds:.1f} s, second {second.seconds:.1f} s, "
          f"{len(lab.info.hosts)} hosts", file=sys.stderr)
    return first, second


def validate(inventory: Path, results: Path) -> dict[str, dict[str, dict]]:
    """host -> check id (file::name[param]) -> check, for the checks of this issue."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run([str(Path(sys.executable).parent / "rocm-fleet"), "validate", "-i", str(inventory),
                           "--hosts", "ansible://lab", "--tier", "smoke", "--no-gpu", "--results", str(results)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    docs = {doc["host"]: doc for doc in load_run(results)}   # node documents, not progress files
    assert docs, proc.stdout[-3000:] + proc.stderr[-3000:]
    out: dict[str, dict[str, dict]] = {}
    for host, doc in docs.items():
        assert doc["complete"] is True
        checks = {c["id"].split("validation/checks/", 1)[-1]: c for c in doc["checks"]}
        out[host] = {cid: c for cid, c in checks.items() if cid.startswith(CHECK_FILES)}
    return out


def find(checks: dict[str, dict], name: str) -> dict:
    hits = [c for cid, c in checks.items() if name in cid]
    assert len(hits) == 1, (name, sorted(checks))
    return hits[0]


def cat(lab, host: str, path: str) -> str:
    result = lab.run(host, ["cat", path])
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_first_converge_changes_every_host(lab, converged) -> None:
    first, _ = converged
    recap = first.recap()
    assert set(recap) == set(host_names(lab))
    assert all(r["changed"] > 0 and r["failed"] == 0 and r["unreachable"] == 0 for r in recap.values()), recap


def test_second_converge_reports_no_change(converged) -> None:
    _, second = converged
    assert second.rc == 0, second.output[-4000:]
    assert second.changed() == 0, second.recap()


def test_check_mode_on_a_converged_host_reports_no_change(inventory: Path, site: str, converged) -> None:
    run = playbook(inventory, site, "--check", "--diff", "--tags", ROLES)
    assert run.rc == 0, run.output[-4000:]
    assert run.changed() == 0, run.recap()


def test_files_hold_exactly_the_declared_settings(lab, converged) -> None:
    host = host_names(lab)[0]
    assert cat(lab, host, "/etc/profile.d/rocm-fleet.sh") == (
        "# Managed by rocm-fleet (Ansible). Local changes are overwritten on the next run.\n"
        "# rocm-fleet:env_profiles\n"
        "# ROCm environment for login shells. Opt-in profiles: . /etc/rocm-fleet/profiles/<name>.sh\n"
        "export HIP_FORCE_DEV_KERNARG=1\n"
        "export HSA_OVERRIDE_CPU_AFFINITY_DEBUG=0\n")
    assert cat(lab, host, "/etc/sysctl.d/90-rocm-fleet.conf").endswith("kernel.numa_balancing = 0\n")
    assert cat(lab, host, "/etc/tmpfiles.d/rocm-fleet-thp.conf").endswith(
        "w /sys/kernel/mm/transparent_hugepage/defrag - - - - madvise\n"
        "w /sys/kernel/mm/transparent_hugepage/enabled - - - - madvise\n")
    rules = cat(lab, host, "/etc/udev/rules.d/70-rocm-fleet-gpu.rules")
    assert 'SUBSYSTEM=="kfd", KERNEL=="kfd", GROUP:="render", MODE:="0660"\n' in rules
    assert 'SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP:="render", MODE:="0660"\n' in rules
    adduser = [line for line in cat(lab, host, "/etc/adduser.conf").splitlines() if "EXTRA_GROUPS=" in line
               and not line.startswith("#")]
    assert adduser == ['EXTRA_GROUPS="video render"', "ADD_EXTRA_GROUPS=1"]
    assert set(lab.run(host, ["id", "-nG", USER]).stdout.split()) >= {"video", "render"}
    stat = lab.run(host, ["stat", "-c", "%U %G %a", "/etc/profile.d/rocm-fleet.sh",
                          "/etc/rocm-fleet/profiles/rccl-multinode.sh"]).stdout.split("\n")[:2]
    assert stat == ["root root 644"] * 2
    assert lab.run(host, ["systemctl", "is-enabled", "rocm-fleet-cpuidle.service"]).stdout.strip() == "enabled"
    assert lab.run(host, ["test", "-e", "/etc/default/grub.d/90-rocm-fleet.cfg"]).returncode == 1


def test_new_local_user_gets_the_gpu_groups(lab, converged) -> None:
    host = host_names(lab)[-1]
    added = lab.run(host, ["adduser", "--disabled-password", "--comment", "", "rfnew"])
    try:
        assert added.returncode == 0, added.stderr
        assert set(lab.run(host, ["id", "-nG", "rfnew"]).stdout.split()) >= {"video", "render"}
    finally:
        lab.run(host, ["deluser", "--remove-home", "rfnew"])


# Lab hosts see this machine's /sys (one kernel): its idle driver decides what the C-state check can say.
CPUIDLE = Path("/sys/devices/system/cpu/cpu0/cpuidle")


def machine_cpuidle(declared: int) -> tuple[str, str]:
    """The C-state check's status on a lab host, and words its message must hold: no cpuidle at all
    (a container on a machine without it), a driver without the declared state (a KVM guest's
    haltpoll offers 0 and 1), or the state exists and the converged unit has disabled it."""
    if not CPUIDLE.exists():
        return "skip", "no cpuidle on this host"
    if not (CPUIDLE / f"state{declared}").exists():
        return "skip", "does not exist on this CPU"
    return "pass", ""


def test_drift_checks_pass_on_converged_hosts(lab, inventory: Path, converged, tmp_path: Path) -> None:
    results = validate(inventory, tmp_path / "results")
    assert set(results) == set(host_names(lab))
    for host, checks in results.items():
        assert len(checks) >= 20, (host, sorted(checks))
        bad = {cid: c for cid, c in checks.items() if c["status"] not in ("pass", "skip")}
        assert not bad, (host, bad)
        assert find(checks, "test_listed_users_are_in_the_gpu_groups")["status"] == "pass"
        cpuidle = find(checks, "test_cpu_idle_states_are_disabled")
        status, said = machine_cpuidle(2)
        assert cpuidle["status"] == status and said in (cpuidle["message"] or ""), cpuidle
        kfd = find(checks, "test_kfd_has_the_declared_group_and_mode")
        assert kfd["status"] == "skip" and "no /dev/kfd on this host" in kfd["message"]


def test_hand_made_drift_is_reported_with_expected_and_found(lab, inventory: Path, site: str, converged,
                                                             tmp_path: Path, kernel_exclusive: None) -> None:
    host = host_names(lab)[0]
    edit = lab.run(host, ["sed", "-i", "s/^export HIP_FORCE_DEV_KERNARG=1$/export HIP_FORCE_DEV_KERNARG=0/",
                          "/etc/profile.d/rocm-fleet.sh"])
    assert edit.returncode == 0
    for attempt in range(3):
        set_kernel(thp_enabled="always", numa="1")
        results = validate(inventory, tmp_path / f"results-{attempt}")
        if (_read_knob(KNOBS["thp_enabled"]), _read_knob(KNOBS["numa_balancing"])) == ("always", "1"):
            break  # nobody else (another lab converging node_tuning) reset the shared kernel meanwhile
    else:
        pytest.fail("THP / NUMA balancing of the shared kernel were reset by another process during each "
                    "validation run; run this test when no other lab converges node_tuning")
    for checks in results.values():  # THP and NUMA balancing drift on every host: one kernel
        thp = find(checks, "test_transparent_huge_pages_mode[enabled]")      # one id on every host
        assert (thp["status"], thp["code"]) == ("fail", "RF-TUNING-THP"), thp
        assert "expected 'madvise', found 'always'" in thp["message"]
        numa = find(checks, "test_numa_balancing")
        assert (numa["status"], numa["code"]) == ("fail", "RF-TUNING-SYSCTL"), numa
        assert "kernel.numa_balancing: expected '0', found '1'" in numa["message"]
        assert find(checks, "test_transparent_huge_pages_are_set_at_boot")["status"] == "pass"
    profile = find(results[host], "test_login_environment_has_the_declared_variables")
    assert (profile["status"], profile["code"]) == ("fail", "RF-ENV-PROFILE"), profile
    assert "HIP_FORCE_DEV_KERNARG: expected '1', found '0'" in profile["message"]
    other = host_names(lab)[-1]
    if other != host:
        assert find(results[other], "test_login_environment_has_the_declared_variables")["status"] == "pass"

    fix = playbook(inventory, site, "--tags", ROLES)
    assert fix.rc == 0, fix.output[-4000:]
    assert fix.recap()[host]["changed"] > 0
    assert _read_knob(KNOBS["thp_enabled"]) == "madvise"
    assert _read_knob(KNOBS["numa_balancing"]) == "0"
    assert "export HIP_FORCE_DEV_KERNARG=1\n" in cat(lab, host, "/etc/profile.d/rocm-fleet.sh")


def test_restart_brings_back_the_persisted_settings(lab, converged, kernel_exclusive: None) -> None:
    host = host_names(lab)[0]
    set_kernel(thp_enabled="always", thp_defrag="always", numa="1")
    lab.restart(host)
    # systemd-tmpfiles-setup and systemd-sysctl ran in the host's boot and put the values back
    assert _read_knob(KNOBS["thp_enabled"]) == "madvise"
    assert _read_knob(KNOBS["thp_defrag"]) == "madvise"
    assert _read_knob(KNOBS["numa_balancing"]) == "0"
    assert lab.run(host, ["systemctl", "is-enabled", "rocm-fleet-cpuidle.service"]).stdout.strip() == "enabled"
    # the unit checked its condition at boot: it runs where the machine's kernel has cpuidle, else skips
    show = lab.run(host, ["systemctl", "show", "-p", "ConditionResult", "rocm-fleet-cpuidle.service"]).stdout
    assert show.strip() == f"ConditionResult={'yes' if CPUIDLE.exists() else 'no'}"
    assert lab.run(host, ["systemctl", "is-failed", "rocm-fleet-cpuidle.service"]).stdout.strip() != "failed"
    assert set(lab.run(host, ["id", "-nG", USER]).stdout.split()) >= {"video", "render"}
    assert "export HIP_FORCE_DEV_KERNARG=1\n" in cat(lab, host, "/etc/profile.d/rocm-fleet.sh")


def test_kernel_cmdline_drop_in_flags_a_reboot_that_validation_reports_as_pending(
        lab, inventory: Path, site: str, converged, tmp_path: Path) -> None:
    host = host_names(lab)[0]
    amd = {"node_tuning_pci_realloc": "off", "node_tuning_iommu": "pt", "node_tuning_vendor_iommu": "auto",
           "node_tuning_modprobe_blacklist": ["ast"]}
    cmdline = variant(lab, "cmdline", {h: {"gpu_access_users": [USER], **amd} for h in host_names(lab)})
    try:
        # no --tags: node_reboot's tasks come from a dynamic include_role, which --tags leaves out
        run = playbook(cmdline, site, "--limit", host)
        assert run.rc == 0, run.output[-4000:]
        assert f"{host} needs a reboot for node_tuning; not rebooting because none of node_tuning_reboot_ok" \
               in " ".join(run.output.split()), run.output[-3000:]
        assert "has neither update-grub nor grub-mkconfig" in run.output
        vendor = "amd" if "AuthenticAMD" in Path("/proc/cpuinfo").read_text() else "intel"
        params = f"pci=realloc=off iommu=pt {vendor}_iommu=on modprobe.blacklist=ast"
        assert cat(lab, host, "/etc/default/grub.d/90-rocm-fleet.cfg") == (
            "# Managed by rocm-fleet (Ansible). Local changes are overwritten on the next run.\n"
            "# rocm-fleet:node_tuning\n"
            "# Kernel parameters from AMD's MI300X system optimization guide; GRUB sources this file after\n"
            "# /etc/default/grub. Takes effect after update-grub and a reboot.\n"
            f'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX {params}"\n')
        again = playbook(cmdline, site, "--limit", host)
        assert again.rc == 0 and again.changed() == 0, again.recap()
        assert "needs a reboot" not in again.output

        checks = validate(cmdline, tmp_path / "results")[host]
        booted = find(checks, "test_running_kernel_booted_with_the_parameters")
        assert (booted["status"], booted["code"]) == ("fail", "RF-TUNING-REBOOT-PENDING"), booted
        assert f"reboot pending: {params} configured but not booted" in booted["message"]
        assert find(checks, "test_kernel_cmdline_configuration_declares_the_parameters")["status"] == "pass"
    finally:
        back = playbook(inventory, site, "--tags", "node_tuning", "--limit", host)
        cmdline.unlink(missing_ok=True)
    assert back.rc == 0, back.output[-4000:]
    assert lab.run(host, ["test", "-e", "/etc/default/grub.d/90-rocm-fleet.cfg"]).returncode == 1


def test_state_absent_restores_what_was_there_before(lab, inventory: Path, site: str, converged,
                                                     kernel_exclusive: None) -> None:
    host = host_names(lab)[0]
    absent = {"node_tuning_state": "absent", "gpu_access_state": "absent", "env_profiles_state": "absent"}
    clean = playbook(inventory, site, "--tags", ROLES, extra=absent)
    assert clean.rc == 0, clean.output[-4000:]
    set_kernel(thp_enabled="never", thp_defrag="defer", numa="1")  # the state before rocm-fleet
    applied = playbook(inventory, site, "--tags", ROLES, "--limit", host)
    assert applied.rc == 0, applied.output[-4000:]
    assert (_read_knob(KNOBS["thp_enabled"]), _read_knob(KNOBS["thp_defrag"])) == ("madvise", "madvise")
    assert _read_knob(KNOBS["numa_balancing"]) == "0"
    record = json.loads(cat(lab, host, "/etc/ansible/facts.d/rocm_fleet_tuning.fact"))
    assert record["thp"] == {"enabled": "never", "defrag": "defer"}
    assert record["sysctl"] == {"kernel.numa_balancing": "1"}

    removed = playbook(inventory, site, "--tags", ROLES, "--limit", host, extra=absent)
    assert removed.rc == 0, removed.output[-4000:]
    assert (_read_knob(KNOBS["thp_enabled"]), _read_knob(KNOBS["thp_defrag"])) == ("never", "defer")
    assert _read_knob(KNOBS["numa_balancing"]) == "1"
    for path in ("/etc/sysctl.d/90-rocm-fleet.conf", "/etc/tmpfiles.d/rocm-fleet-thp.conf",
                 "/etc/systemd/system/rocm-fleet-cpuidle.service", "/etc/udev/rules.d/70-rocm-fleet-gpu.rules",
                 "/etc/profile.d/rocm-fleet.sh", "/etc/rocm-fleet/profiles",
                 "/etc/ansible/facts.d/rocm_fleet_tuning.fact", "/etc/ansible/facts.d/rocm_fleet_gpu_access.fact"):
        assert lab.run(host, ["test", "-e", path]).returncode == 1, path
    assert lab.run(host, ["getent", "group", "render"]).returncode == 2  # created by the role, removed again
    assert "video" not in lab.run(host, ["id", "-nG", USER]).stdout.split()
    assert [line for line in cat(lab, host, "/etc/adduser.conf").splitlines()
            if "EXTRA_GROUPS=" in line and not line.startswith("#")] == []
    again = playbook(inventory, site, "--tags", ROLES, "--limit", host, extra=absent)
    assert again.rc == 0 and again.changed() == 0, again.recap()


REFUSALS = {
    "boolean-sysctl-value": ("node_tuning", {"node_tuning_sysctl_extra": [{"name": "vm.swappiness", "value": True}]},
                             "node_tuning_sysctl_extra entry vm.swappiness has value true"),
    "world-accessible-without-acknowledgement": ("gpu_access", {"gpu_access_device_mode": "0666"},
                                                 "gpu_access_device_mode 0666 lets every local account open"),
    "unresolved-gid": ("gpu_access", {"gpu_access_groups": ["video", 4242]},
                       "gid 4242 (gpu_access_groups / gpu_access_device_group) does not resolve"),
    "debug-only-variable": ("env_profiles", {"env_profiles_env_extra": {"HSA_ENABLE_SDMA": "0"}},
                            "Debug-only ROCm variables would reach every job: env: HSA_ENABLE_SDMA"),
}


def etc_snapshot(lab, host: str) -> str:
    result = lab.run(host, ["sh", "-c", "find /etc -xdev -type f -print0 | sort -z | xargs -0 sha256sum"],
                     timeout_s=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_bad_input_is_refused_before_any_change(lab, inventory: Path, site: str, converged, case: str) -> None:
    role, overrides, message = REFUSALS[case]
    host = host_names(lab)[-1]
    before = etc_snapshot(lab, host)
    run = playbook(inventory, site, "--tags", role, "--limit", host, extra=overrides)
    assert run.rc != 0
    assert message in " ".join(run.output.split()), run.output[-3000:]
    assert etc_snapshot(lab, host) == before
