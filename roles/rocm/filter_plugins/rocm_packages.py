"""Package-spec filters for roles/rocm: entries -> {name, version pattern} -> apt/dnf argument.

validation/checks/facts.py:wanted_packages applies the same rule when the checks read the spec.
"""

from __future__ import annotations


def wanted(items: list, rocm_version: str) -> list[dict]:
    """Package entries -> [{name, version}]: a bare name gets the pattern '<rocm_version>*'.

    apt's version pins understand '*' but not bracket classes, so the pattern stays a plain prefix glob.
    """
    default = f"{rocm_version}*"
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
        return {"rocm_fleet_apt_spec": apt_spec, "rocm_fleet_dnf_spec": dnf_spec, "rocm_fleet_wanted": wanted}
