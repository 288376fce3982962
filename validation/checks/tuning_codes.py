"""Codes and hints for the host tuning, GPU access and environment drift checks.

The checks call `check(condition, code, message)`; the message says what was expected and
what was found, the hint (shown next to it in the results) says how to put it right.
"""

from __future__ import annotations

from validation.checks.outcome import expect

_TUNE = "Re-run `ansible-playbook playbooks/site.yml --tags node_tuning` for this host."

TUNING_CODES: dict[str, str] = {
    "RF-TUNING-CMDLINE": "The kernel command line configuration differs from the spec; " + _TUNE,
    "RF-TUNING-REBOOT-PENDING": "The command line is configured but the running kernel booted without it: "
                                "regenerate the boot configuration (update-grub) if the run could not, then "
                                "reboot (node_tuning_reboot_ok: true lets site.yml do it).",
    "RF-TUNING-THP": "Transparent huge pages differ from the spec (changed by hand or by another tool); " + _TUNE,
    "RF-TUNING-SYSCTL": "A sysctl differs from the spec (changed by hand, or another sysctl.d file wins); " + _TUNE,
    "RF-TUNING-CSTATE": "CPU idle states differ from the spec; " + _TUNE
                        + " Check `systemctl status rocm-fleet-cpuidle` and `cpupower idle-info`.",
    "RF-GPU-ACCESS-GROUPS": "GPU groups or memberships differ from the spec; re-run site.yml --tags gpu_access "
                            "(users must log in again for new groups).",
    "RF-GPU-ACCESS-NEW-USERS": "/etc/adduser.conf does not give new users the GPU groups; "
                               "re-run site.yml --tags gpu_access.",
    "RF-GPU-ACCESS-UDEV": "GPU device group or mode differs from the spec; re-run site.yml --tags gpu_access, "
                          "then `udevadm trigger --subsystem-match=kfd --subsystem-match=drm`.",
    "RF-ENV-PROFILE": "An environment profile differs from the spec (edited by hand?); "
                      "re-run site.yml --tags env_profiles.",
    "RF-ENV-DEBUG": "A debug-only ROCm variable is in a profile; remove it, or set env_profiles_allow_debug: "
                    "true on hosts being debugged, and re-run site.yml --tags env_profiles.",
}


def check(condition: object, code: str, message: str) -> None:
    """Fail the current check with `code` and its hint when `condition` is false."""
    __tracebackhide__ = True
    expect(condition, code, message, TUNING_CODES[code])


def differences(expected: dict[str, str], found: dict[str, str]) -> list[str]:
    """'NAME: expected '1', found '0'' lines for every key that differs, is missing or is extra."""
    out = []
    for key in sorted(set(expected) | set(found)):
        if key not in found:
            out.append(f"{key}: expected {expected[key]!r}, found nothing")
        elif key not in expected:
            out.append(f"{key}: not declared, found {found[key]!r}")
        elif expected[key] != found[key]:
            out.append(f"{key}: expected {expected[key]!r}, found {found[key]!r}")
    return out
