"""GPU access is what the inventory declares: groups, memberships, new users, udev (smoke).

Expected values come from the gpu_access_* variables the role applies (the `spec` fixture).
A group given as a number is a directory-service gid and is compared by gid.
"""

from __future__ import annotations

from typing import Any

import pytest

from validation import adduser
from validation.checks.tuning_codes import check

pytestmark = pytest.mark.smoke

RULE = "/etc/udev/rules.d/70-rocm-fleet-gpu.rules"
ADDUSER_CONF = "/etc/adduser.conf"


def _present(spec: dict) -> None:
    if spec["gpu_access_state"] == "absent":
        pytest.skip("spec removes gpu_access (gpu_access_state: absent)")


def group_entry(host: Any, group: object) -> tuple[str, int] | None:
    """(name, gid) of a group given by name or gid, through NSS (local or directory service)."""
    out = host.run("getent group %s", str(group))
    if out.rc != 0 or not out.stdout.strip():
        return None
    fields = out.stdout.strip().split(":")
    return fields[0], int(fields[2])


def test_gpu_groups_exist(host: Any, spec: dict) -> None:
    """The groups that grant GPU access exist."""
    _present(spec)
    groups = [*spec["gpu_access_groups"], spec["gpu_access_device_group"]]
    missing = [str(g) for g in groups if group_entry(host, g) is None]
    check(not missing, "RF-GPU-ACCESS-GROUPS",
          f"expected groups {', '.join(str(g) for g in groups)}, found no group {', '.join(missing)}")


def test_listed_users_are_in_the_gpu_groups(host: Any, spec: dict) -> None:
    """Every listed user is in the GPU groups."""
    _present(spec)
    users = spec["gpu_access_users"]
    if not users:
        pytest.skip("spec lists no gpu_access_users")
    entries = {str(g): group_entry(host, g) for g in spec["gpu_access_groups"]}
    wanted = sorted(e[0] if e else g for g, e in entries.items())
    drift = []
    for user in users:
        if not host.user(user).exists:
            drift.append(f"{user}: expected groups {', '.join(wanted)}, found no such user")
            continue
        have = set(host.user(user).groups)
        if missing := [g for g in wanted if g not in have]:
            drift.append(f"{user}: expected groups {', '.join(wanted)}, found {', '.join(sorted(have))} "
                         f"(missing {', '.join(missing)})")
    check(not drift, "RF-GPU-ACCESS-GROUPS", "; ".join(drift))


def test_new_users_get_the_gpu_groups(host: Any, spec: dict) -> None:
    """New users get the GPU groups (adduser's EXTRA_GROUPS)."""
    _present(spec)
    if not spec["gpu_access_new_users"]:
        pytest.skip("spec sets gpu_access_new_users: false")
    conf = host.file(ADDUSER_CONF)
    if not conf.exists:
        pytest.skip(f"no {ADDUSER_CONF} on this host (not a Debian-family adduser)")
    names = [(group_entry(host, g) or (str(g),))[0] for g in spec["gpu_access_groups"]]
    text = conf.content_string
    for name, wanted in adduser.settings(names).items():
        found = adduser.assignments(text, name)
        check(found == [wanted], "RF-GPU-ACCESS-NEW-USERS",
              f"{name}: expected one line {name}={wanted}, found {found or 'none'}")


def test_udev_rule_declares_group_and_mode(host: Any, spec: dict) -> None:
    """The udev rule gives the GPU device nodes the declared group and mode."""
    _present(spec)
    rule = host.file(RULE)
    check(rule.exists, "RF-GPU-ACCESS-UDEV", f"expected {RULE}, found no file")
    entry = group_entry(host, spec["gpu_access_device_group"])
    group = entry[0] if entry else str(spec["gpu_access_device_group"])
    mode = spec["gpu_access_device_mode"]
    lines = [line for line in rule.content_string.splitlines() if line and not line.startswith("#")]
    for kernel in ("kfd", "renderD*"):
        found = next((line for line in lines if f'KERNEL=="{kernel}"' in line), None)
        check(found is not None and f'GROUP:="{group}"' in found and f'MODE:="{mode}"' in found,
              "RF-GPU-ACCESS-UDEV", f"{RULE} for {kernel}: expected GROUP:=\"{group}\" MODE:=\"{mode}\", "
              f"found {found or 'no rule'}")


def _device_drift(host: Any, spec: dict, path: str) -> str | None:
    entry = group_entry(host, spec["gpu_access_device_group"])
    node = host.file(path)
    wanted_mode = int(spec["gpu_access_device_mode"], 8)
    found_group = node.group
    if (entry and node.gid != entry[1]) or (not entry and found_group != str(spec["gpu_access_device_group"])) \
            or node.mode != wanted_mode:
        return (f"{path}: expected group {entry[0] if entry else spec['gpu_access_device_group']} mode "
                f"{wanted_mode:04o}, found group {found_group} mode {node.mode:04o}")
    return None


def test_kfd_has_the_declared_group_and_mode(host: Any, spec: dict) -> None:
    """/dev/kfd has the declared group and mode."""
    _present(spec)
    if not host.file("/dev/kfd").exists:
        pytest.skip("no /dev/kfd on this host (amdgpu not loaded); the udev rule file is checked instead")
    drift = _device_drift(host, spec, "/dev/kfd")
    check(drift is None, "RF-GPU-ACCESS-UDEV", drift or "")


def test_render_nodes_have_the_declared_group_and_mode(host: Any, spec: dict) -> None:
    """Every /dev/dri render node has the declared group and mode."""
    _present(spec)
    dri = host.file("/dev/dri")
    nodes = sorted(n for n in dri.listdir() if n.startswith("renderD")) if dri.exists else []
    if not nodes:
        pytest.skip("no /dev/dri/renderD* on this host; the udev rule file is checked instead")
    drift = [d for d in (_device_drift(host, spec, f"/dev/dri/{n}") for n in nodes) if d]
    check(not drift, "RF-GPU-ACCESS-UDEV", "; ".join(drift))
