"""Package-spec filters for roles/validation_tools: entries -> {name, version pattern}.

A bare name gets AMD's per-release pattern '*.<NNNNN>-*': AMD numbers each package
<own version>.<ROCm release as NNNNN>-<build>, e.g. rocblas-clients 4.2.4.60204-139~22.04.
"""

from __future__ import annotations


def rocm_build(rocm_version: str) -> str:
    """'6.2.4' -> '60204', '7.0' -> '70000' (the number AMD puts into package versions)."""
    parts = [int(p) for p in str(rocm_version).split(".")] + [0, 0]
    return f"{parts[0]}{parts[1]:02d}{parts[2]:02d}"


def tools_wanted(items: list, rocm_version: str) -> list[dict]:
    """Package entries -> [{name, version}]; version '' means any version."""
    default = f"*.{rocm_build(rocm_version)}-*"
    out = []
    for item in items:
        if isinstance(item, dict):
            out.append({"name": item.get("name"), "version": item.get("version", default)})
        else:
            out.append({"name": item, "version": default})
    return out


def apt_spec(item: dict) -> str:
    return f"{item['name']}={item['version']}" if item.get("version") else item["name"]


def dnf_spec(item: dict) -> str:
    return f"{item['name']}-{item['version']}" if item.get("version") else item["name"]


class FilterModule:
    def filters(self) -> dict:
        return {"rocm_fleet_tools_wanted": tools_wanted, "rocm_fleet_tools_apt_spec": apt_spec,
                "rocm_fleet_tools_dnf_spec": dnf_spec, "rocm_fleet_rocm_build": rocm_build}
