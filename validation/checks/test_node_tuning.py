"""Host tuning is what the inventory declares: kernel command line, THP, sysctls, C-states (smoke).

Every expected value comes from the node_tuning_* variables the role applies (the `spec`
fixture), through the same functions the role plans with (validation/declared.py).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from validation import cstates, declared
from validation.checks.outcome import require
from validation.checks.tuning_codes import check, differences

pytestmark = pytest.mark.smoke

DROP_IN = "/etc/default/grub.d/90-rocm-fleet.cfg"
DROP_IN_LINE = re.compile(r'^GRUB_CMDLINE_LINUX="\$GRUB_CMDLINE_LINUX ?(.*)"$', re.M)
THP_DIR = declared.THP_DIR
SYSCTL_FILE = "/etc/sysctl.d/90-rocm-fleet.conf"
CPUIDLE_DIR = "/sys/devices/system/cpu/cpu0/cpuidle"
UNIT = "rocm-fleet-cpuidle.service"


def _present(spec: dict) -> None:
    if spec["node_tuning_state"] == "absent":
        pytest.skip("spec removes node_tuning (node_tuning_state: absent)")


def cpu_vendor(host: Any) -> str:
    """'amd', 'intel' or 'other' from /proc/cpuinfo, as the role tells them apart."""
    return declared.cpu_vendor(host.file("/proc/cpuinfo").content_string)


def configured_cmdline(host: Any) -> list[str] | None:
    """Parameters the node is configured to boot with by rocm-fleet; None when nothing is configured."""
    drop_in = host.file(DROP_IN)
    if drop_in.exists:
        match = DROP_IN_LINE.search(drop_in.content_string)
        return match.group(1).split() if match else []
    if host.exists("grubby"):
        info = host.run("grubby --info=DEFAULT").stdout
        match = re.search(r'^args="?([^"\n]*)"?$', info, re.M)
        return match.group(1).split() if match else []
    return None


def _key(param: str) -> str:
    """'pci=realloc=off' -> 'pci=realloc', 'iommu=pt' -> 'iommu'."""
    return param.rsplit("=", 1)[0] if "=" in param else param


def test_kernel_cmdline_configuration_declares_the_parameters(host: Any, spec: dict) -> None:
    """The boot configuration puts the declared parameters on the kernel command line."""
    _present(spec)
    wanted = declared.tuning_cmdline(spec, cpu_vendor(host))
    configured = configured_cmdline(host)
    if not wanted:
        check(configured is None or not host.file(DROP_IN).exists, "RF-TUNING-CMDLINE",
              f"spec puts no parameter on the kernel command line, found {DROP_IN} with {configured}")
        return
    configured = require(configured, "RF-TUNING-CMDLINE", f"expected {' '.join(wanted)} in {DROP_IN} "
                         "(or grubby's default entry), found no configuration")
    missing = [p for p in wanted if p not in configured]
    check(not missing, "RF-TUNING-CMDLINE",
          f"expected {' '.join(wanted)}, found {' '.join(configured) or 'nothing'} (missing {' '.join(missing)})")


def test_running_kernel_booted_with_the_parameters(host: Any, spec: dict) -> None:
    """The running kernel booted with the declared command line parameters."""
    _present(spec)
    wanted = declared.tuning_cmdline(spec, cpu_vendor(host))
    if not wanted:
        pytest.skip("spec puts no parameter on the kernel command line")
    booted = host.file("/proc/cmdline").content_string.split()
    missing = [p for p in wanted if p not in booted]
    if not missing:
        return
    found = " ".join(b for b in booted if _key(b) in {_key(p) for p in missing}) or "nothing"
    configured = configured_cmdline(host) or []
    pending = [p for p in missing if p in configured]
    check(pending != missing, "RF-TUNING-REBOOT-PENDING",
          f"reboot pending: {' '.join(missing)} configured but not booted; /proc/cmdline has {found}")
    check(False, "RF-TUNING-CMDLINE",
          f"expected {' '.join(missing)} on /proc/cmdline, found {found}; not configured either")


@pytest.mark.parametrize("knob", ["enabled", "defrag"])
def test_transparent_huge_pages_mode(host: Any, spec: dict, knob: str) -> None:
    """Transparent huge pages run in the declared mode."""
    _present(spec)
    wanted = declared.tuning_thp(spec).get(knob)
    if wanted is None:
        pytest.skip(f"spec leaves THP {knob} as it is (node_tuning_thp_{knob}: keep)")
    text = host.file(declared.thp_path(knob)).content_string
    found = declared.thp_mode(text) or text.strip()
    check(found == wanted, "RF-TUNING-THP", f"{THP_DIR}/{knob}: expected {wanted!r}, found {found!r}")


def test_transparent_huge_pages_are_set_at_boot(host: Any, spec: dict) -> None:
    """Transparent huge pages are set to the declared mode at every boot."""
    _present(spec)
    wanted = declared.tuning_thp(spec)
    if not wanted:
        pytest.skip("spec leaves THP as it is")
    conf = host.file("/etc/tmpfiles.d/rocm-fleet-thp.conf")
    check(conf.exists, "RF-TUNING-THP", "expected /etc/tmpfiles.d/rocm-fleet-thp.conf, found no file")
    found = {}
    for line in conf.content_string.splitlines():
        fields = line.split()
        if len(fields) == 7 and fields[0] == "w" and fields[1].startswith(THP_DIR + "/"):
            found[fields[1].rsplit("/", 1)[1]] = fields[6]
    drift = differences(wanted, found)
    check(not drift, "RF-TUNING-THP", "boot-time THP: " + "; ".join(drift))


def test_numa_balancing(host: Any, spec: dict) -> None:
    """Automatic NUMA balancing (kernel.numa_balancing) has the declared value."""
    _present(spec)
    wanted = declared.tuning_sysctls(spec).get("kernel.numa_balancing")
    if wanted is None:
        pytest.skip("spec leaves kernel.numa_balancing as it is (node_tuning_numa_balancing: keep)")
    numa = host.file(declared.sysctl_path("kernel.numa_balancing"))
    check(numa.exists, "RF-TUNING-SYSCTL", f"kernel.numa_balancing: expected {wanted!r}, found no such sysctl")
    found = numa.content_string.strip()
    check(found == wanted, "RF-TUNING-SYSCTL", f"kernel.numa_balancing: expected {wanted!r}, found {found!r}")


def test_extra_sysctls(host: Any, spec: dict) -> None:
    """The declared extra sysctls have their values now."""
    _present(spec)
    wanted = {k: v for k, v in declared.tuning_sysctls(spec).items() if k != "kernel.numa_balancing"}
    if not wanted:
        pytest.skip("spec declares no node_tuning_sysctl_extra")
    found = {}
    for name in wanted:
        proc = host.file(declared.sysctl_path(name))
        if proc.exists:
            found[name] = declared.sysctl_value(proc.content_string)
    drift = differences(wanted, found)
    check(not drift, "RF-TUNING-SYSCTL", "; ".join(drift))


def test_sysctls_are_set_at_boot(host: Any, spec: dict) -> None:
    """The declared sysctls are set at every boot."""
    _present(spec)
    wanted = declared.tuning_sysctls(spec)
    if not wanted:
        pytest.skip("spec declares no sysctl")
    conf = host.file(SYSCTL_FILE)
    check(conf.exists, "RF-TUNING-SYSCTL", f"expected {SYSCTL_FILE}, found no file")
    found = {}
    for line in conf.content_string.splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";")):
            name, _, value = line.partition("=")
            found[name.strip()] = declared.sysctl_value(value)
    drift = differences(wanted, found)
    check(not drift, "RF-TUNING-SYSCTL", f"{SYSCTL_FILE}: " + "; ".join(drift))


def test_cpuidle_unit_is_enabled(host: Any, spec: dict) -> None:
    """The unit that disables the declared CPU idle states at boot is in place and enabled."""
    _present(spec)
    states = spec["node_tuning_cpuidle_disabled_states"]
    if not states:
        pytest.skip("spec leaves CPU idle states as they are")
    unit = host.file(f"/etc/systemd/system/{UNIT}")
    check(unit.exists, "RF-TUNING-CSTATE", f"expected /etc/systemd/system/{UNIT}, found no file")
    wanted_lines = {f"ExecStart=/usr/bin/cpupower idle-set -d {s}" for s in states}
    found_lines = {line for line in unit.content_string.splitlines() if line.startswith("ExecStart=")}
    check(wanted_lines == found_lines, "RF-TUNING-CSTATE",
          f"{UNIT}: expected {sorted(wanted_lines)}, found {sorted(found_lines)}")
    check(host.service(UNIT).is_enabled, "RF-TUNING-CSTATE", f"{UNIT}: expected enabled, found disabled")


def test_cpu_idle_states_are_disabled(host: Any, spec: dict) -> None:
    """The declared CPU idle states (C-states) are disabled on every CPU."""
    _present(spec)
    states = spec["node_tuning_cpuidle_disabled_states"]
    if not states:
        pytest.skip("spec leaves CPU idle states as they are")
    if not host.file(CPUIDLE_DIR).exists:
        pytest.skip(f"no cpuidle on this host ({CPUIDLE_DIR} is absent: a container, a VM or idle=poll); "
                    f"C-states {states} cannot be checked here")
    offered = cstates.parse_listing(host.run(cstates.LISTING).stdout)
    absent = cstates.absent(states, offered)
    drift = []
    for state in (s for s in states if int(s) not in absent):
        out = host.run("grep -H . /sys/devices/system/cpu/cpu[0-9]*/cpuidle/state%s/disable", str(state))
        enabled = [line.split("/")[5] for line in out.stdout.splitlines() if not line.endswith(":1")]
        if out.rc != 0 or enabled:
            drift.append(f"state{state}: expected disabled on every CPU, found enabled on "
                         f"{', '.join(enabled[:8]) or 'no CPU listed (' + out.stderr.strip() + ')'}"
                         f"{' ...' if len(enabled) > 8 else ''}")
    check(not drift, "RF-TUNING-CSTATE", "; ".join(drift))
    if absent:   # what exists is disabled; what the CPU does not have cannot be
        pytest.skip(cstates.absent_message(states, offered))
