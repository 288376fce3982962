"""Package-spec filters for roles/rocm: {name, version pattern} -> apt/dnf argument."""

from __future__ import annotations


def apt_spec(item: dict) -> str:
    return f"{item['name']}={item['version']}" if item.get("version") else item["name"]


def dnf_spec(item: dict) -> str:
    return f"{item['name']}-{item['version']}" if item.get("version") else item["name"]


class FilterModule:
    def filters(self) -> dict:
        return {"rocm_fleet_apt_spec": apt_spec, "rocm_fleet_dnf_spec": dnf_spec}
