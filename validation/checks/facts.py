"""Small readers of node facts that several checks share (testinfra host in, plain values out)."""

from __future__ import annotations

import fnmatch
from typing import Any


def os_id(host: Any) -> str:
    """'debian-13', 'ubuntu-22.04', 'rhel-9.4' from /etc/os-release (names as in rocm_compat.yml)."""
    fields = {}
    for line in host.file("/etc/os-release").content_string.splitlines():
        key, _, value = line.partition("=")
        fields[key] = value.strip().strip('"')
    return f"{fields.get('ID', 'unknown')}-{fields.get('VERSION_ID', 'unknown')}"


def wanted_packages(spec: dict) -> list[tuple[str, str]]:
    """(name, version pattern) pairs exactly as roles/rocm normalises rocm_packages."""
    default = f"{spec['rocm_version']}*"
    out = []
    for item in list(spec.get("rocm_packages", [])) + list(spec.get("rocm_extra_packages", [])):
        if isinstance(item, dict):
            out.append((item["name"], item.get("version", default)))
        else:
            out.append((str(item), default))
    return out


def version_matches(version: str, pattern: str) -> bool:
    return fnmatch.fnmatch(version, pattern)


def repo_dir(version: str) -> str:
    parts = str(version).split(".")
    return ".".join(parts[:2]) if len(parts) == 3 and parts[2] == "0" else str(version)
