#!/usr/bin/python
"""Read several files, expand globs and test paths, in one call, changing nothing.

ansible.builtin.slurp reads one file and ansible.builtin.stat tests one path per module run; a role
that looks at its record, a few sysfs values and whether two tools exist spends one run on each, and
a module run costs about 0.2 s on a node whatever it does. This module does all of them in one.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: read_paths
short_description: Read several files, expand globs and test paths in one call
description:
  - Reads each of O(read) and every file that matches one of O(globs), as text.
  - Says for each of O(stat) what is there (a file, a directory, something else or nothing; a link is followed).
  - Changes nothing; runs in check mode as in a normal run.
version_added: "0.1.0"
options:
  read:
    description: Absolute paths of files to read; one that does not exist is listed in RV(missing).
    type: list
    elements: path
    default: []
  globs:
    description:
      - Absolute patterns for Python's C(glob), with C(*), C(?) and C([0-9]) as in a shell.
      - Every regular file that matches is read.
    type: list
    elements: str
    default: []
  stat:
    description: Absolute paths to look at without reading them.
    type: list
    elements: path
    default: []
  max_bytes:
    description: Refuse a file larger than this (sysfs files report 4096 and are read).
    type: int
    default: 1048576
  base64:
    description:
      - Return each file's bytes in base64 instead of as text, for a copy that must be exact
        (P(rocm_fleet.fleet.fetch_files#module) writes them on the controller).
    type: bool
    default: false
author: rocm-fleet
"""

EXAMPLES = r"""
- name: Read the record, the THP mode and whether a GRUB generator exists
  rocm_fleet.fleet.read_paths:
    read:
      - /etc/ansible/facts.d/rocm_fleet_tuning.fact
      - /sys/kernel/mm/transparent_hugepage/enabled
    globs: ['/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state2/disable']
    stat: [/usr/sbin/update-grub]
  register: __host
"""

RETURN = r"""
contents:
  description: Path to text (undecodable bytes replaced) of every file read; its bytes in base64 with O(base64).
  type: dict
  returned: always
missing:
  description: The paths of O(read) that do not exist.
  type: list
  elements: str
  returned: always
unreadable:
  description:
    - Path to the reason, for a file that exists but could not be read (a directory, a sysfs file the
      kernel refuses to read, permissions, larger than O(max_bytes)).
  type: dict
  returned: always
matches:
  description: Each pattern of O(globs) to the paths it matched, sorted (also the unreadable ones).
  type: dict
  returned: always
types:
  description: Each path of O(stat) to C(file), C(directory), C(other) or C(missing).
  type: dict
  returned: always
"""

import base64
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule


def _read(path: str, max_bytes: int, contents: dict, unreadable: dict, *, as_base64: bool = False) -> None:
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        unreadable[path] = error.strerror or str(error)
        return
    if len(data) > max_bytes:
        unreadable[path] = f"larger than max_bytes ({max_bytes})"
        return
    contents[path] = base64.b64encode(data).decode() if as_base64 else data.decode(errors="replace")


def _type(path: str) -> str:
    found = Path(path)
    if found.is_file():
        return "file"
    if found.is_dir():
        return "directory"
    return "other" if found.exists() else "missing"


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "read": {"type": "list", "elements": "path", "default": []},
            "globs": {"type": "list", "elements": "str", "default": []},
            "stat": {"type": "list", "elements": "path", "default": []},
            "max_bytes": {"type": "int", "default": 1048576},
            "base64": {"type": "bool", "default": False}},
        # What is read may be a secret (a record, a key); it is returned to the controller only.
        no_log=True, supports_check_mode=True)
    params = module.params
    given = params["read"] + params["globs"] + params["stat"]
    if relative := [p for p in given if not Path(p).is_absolute()]:
        module.fail_json(msg=f"paths and patterns must be absolute: {', '.join(relative)}")

    contents: dict[str, str] = {}
    unreadable: dict[str, str] = {}
    missing = []
    for path in params["read"]:
        if Path(path).exists() or Path(path).is_symlink():
            _read(path, params["max_bytes"], contents, unreadable, as_base64=params["base64"])
        else:
            missing.append(path)
    matches = {}
    for pattern in params["globs"]:
        matches[pattern] = sorted(str(match) for match in Path("/").glob(pattern.lstrip("/")))
        for path in matches[pattern]:
            if path not in contents and path not in unreadable:
                _read(path, params["max_bytes"], contents, unreadable, as_base64=params["base64"])
    module.exit_json(changed=False, contents=contents, missing=missing, unreadable=unreadable,
                     matches=matches, types={path: _type(path) for path in params["stat"]})


if __name__ == "__main__":
    main()
