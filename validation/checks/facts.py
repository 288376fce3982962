"""Small readers of node facts that several checks share (testinfra host in, plain values out)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from validation import declared


def os_id(host: Any) -> str:
    """'debian-13', 'ubuntu-22.04', 'rhel-9.4' from /etc/os-release (names as in rocm_compat.yml)."""
    fields = {}
    for line in host.file("/etc/os-release").content_string.splitlines():
        key, _, value = line.partition("=")
        fields[key] = value.strip().strip('"')
    return f"{fields.get('ID', 'unknown')}-{fields.get('VERSION_ID', 'unknown')}"


def wanted_packages(spec: dict) -> list[tuple[str, str]]:
    """(name, version pattern) of rocm_packages and rocm_extra_packages, as roles/rocm pins them."""
    items = [*(spec.get("rocm_packages") or []), *(spec.get("rocm_extra_packages") or [])]
    return [(p["name"], p["version"]) for p in declared.rocm_packages(items, spec["rocm_version"])]


# Read-only facts recorded once per node and run; each is a command that may fail (then null).
PROVENANCE_COMMANDS = {
    "hostname": "hostname",
    "kernel": "uname -r",
    "os_release": "cat /etc/os-release",
    "kernel_cmdline": "cat /proc/cmdline",
    "rocm_version": "cat /opt/rocm/.info/version",
    "amdgpu_driver_version": "cat /sys/module/amdgpu/version",
    "bios_version": "cat /sys/class/dmi/id/bios_version",
    "system_product": "cat /sys/class/dmi/id/product_name",
    "rocminfo_package": "dpkg-query -W -f '${Version}' rocminfo",
    "amd_smi_version": "amd-smi version",
    "gpu_asic": "amd-smi static --asic --json",       # market name, device id, ASIC serial per GPU
    "gpu_firmware": "amd-smi firmware --json",
    "nvidia_driver": "nvidia-smi --query-gpu=driver_version --format=csv,noheader",
    "gpu_serials": "nvidia-smi --query-gpu=serial --format=csv,noheader",
    # The lab's marker (validation/lab/hosts.py): its device checks are expected to fail, no GPU there.
    "lab_host": "cat /etc/rocm-fleet-lab",
}


def provenance(host: Any, keys: Iterable[str] = PROVENANCE_COMMANDS) -> dict[str, str | None]:
    """The named facts of PROVENANCE_COMMANDS, each None when its command fails or prints nothing."""
    facts: dict[str, str | None] = {}
    for key in keys:
        out = host.run(f"timeout 20 {PROVENANCE_COMMANDS[key]}")
        facts[key] = out.stdout.strip() if out.rc == 0 and out.stdout.strip() else None
    return facts
