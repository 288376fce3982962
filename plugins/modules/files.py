#!/usr/bin/python
"""Write several files, create several directories and remove several files in one call.

ansible.builtin.template and ansible.builtin.copy cost two module runs per file even when nothing
changes (a stat, then the file module for the attributes); a role that writes four files spends eight
module runs on a no-op converge. This module compares, writes and removes them all in one run, so a role
puts everything it writes into one task.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: files
short_description: Make files hold given content, directories exist and other files not exist, in one call
description:
  - Removes each of O(absent) that exists (a file or a link; a directory is refused, not emptied), before anything
    is written.
  - Creates each of O(directories) that is missing and sets its owner, group and O(directory_mode).
  - Writes each of O(files) whose content differs (atomically, through a temporary file in the same
    directory that has the final mode before it is renamed) and sets its owner, group and mode; a
    missing parent directory is created with O(directory_mode).
  - Renders nothing itself; roles pass content from P(ansible.builtin.template#lookup) or a filter.
  - Supports check mode and diff mode (one diff per changed file).
version_added: "0.1.0"
options:
  files:
    description: The files to write.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the file.
        type: path
        required: true
      content:
        description:
          - The whole content of the file. It is not written to the node's journal; diff mode shows it, so a
            task that writes a secret sets C(no_log=true).
        type: str
        required: true
      mode:
        description: Mode of this file, an octal number; O(mode) when not given.
        type: str
  directories:
    description: Absolute paths of directories that must exist.
    type: list
    elements: path
    default: []
  absent:
    description: Absolute paths of files that must not exist, such as a setting that is no longer declared.
    type: list
    elements: path
    default: []
  owner:
    description: Owner of every file and directory.
    type: str
    default: root
  group:
    description: Group of every file and directory.
    type: str
    default: root
  mode:
    description: Mode of the files, an octal number (symbolic modes are refused).
    type: str
    default: "0644"
  directory_mode:
    description: Mode of the directories, and of missing parents of the files.
    type: str
    default: "0755"
author: rocm-fleet
"""

EXAMPLES = r"""
- name: Write the ROCm apt sources and their pin
  rocm_fleet.fleet.files:
    directories: [/etc/apt/keyrings]
    files:
      - path: /etc/apt/sources.list.d/rocm-fleet.sources
        content: "{{ lookup('ansible.builtin.template', 'rocm-fleet.sources.j2') }}"
      - path: /etc/apt/preferences.d/rocm-fleet-pin
        content: "{{ lookup('ansible.builtin.template', 'rocm-fleet-pin.j2') }}"
    absent: [/etc/apt/sources.list.d/rocm.list]
  register: __written
  notify: refresh apt
"""

RETURN = r"""
written:
  description: The files whose content or attributes were (or in check mode would be) changed.
  type: list
  elements: str
  returned: always
created_directories:
  description: The directories that were (or in check mode would be) created.
  type: list
  elements: str
  returned: always
removed:
  description: The paths of O(absent) that existed and were (or in check mode would be) removed.
  type: list
  elements: str
  returned: always
"""

import os
import re
import tempfile
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _write_atomically(module: AnsibleModule, path: Path, data: bytes, mode: str) -> None:
    """Replace path with data; the new file has its final mode before it appears under its name, so a
    0600 file (the node's inventory) is never readable by others, not even for a moment."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        Path(tmp).chmod(int(mode, 8))
        if module.selinux_enabled():
            module.set_context_if_different(tmp, module.selinux_default_context(str(path)), False)
        Path(tmp).replace(path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _attributes(module: AnsibleModule, path: Path, mode: str) -> dict:
    return module.load_file_common_arguments(
        {"owner": module.params["owner"], "group": module.params["group"], "mode": mode}, path=str(path))


def _ensure_directory(module: AnsibleModule, path: Path, created: list[str]) -> bool:
    """Create path (and missing parents) with the directory attributes; True when anything changed."""
    missing = [p for p in [path, *path.parents] if not p.exists()][::-1]
    if path.exists() and not path.is_dir():
        module.fail_json(msg=f"{path} exists and is not a directory")
    created.extend(str(directory) for directory in missing)
    if module.check_mode and missing:
        return True
    changed = bool(missing)
    for directory in missing:
        directory.mkdir()
    for directory in {*missing, path}:
        changed = module.set_fs_attributes_if_different(
            _attributes(module, directory, module.params["directory_mode"]), changed)
    return changed


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "files": {"type": "list", "elements": "dict", "default": [], "options": {
                "path": {"type": "path", "required": True},
                "content": {"type": "str", "required": True},
                "mode": {"type": "str"}}},
            "directories": {"type": "list", "elements": "path", "default": []},
            "absent": {"type": "list", "elements": "path", "default": []},
            "owner": {"type": "str", "default": "root"},
            "group": {"type": "str", "default": "root"},
            "mode": {"type": "str", "default": "0644"},
            "directory_mode": {"type": "str", "default": "0755"}},
        # Not to the node's journal: every run would log every file's content there. The content stays
        # in the diff (--diff shows it, as for ansible.builtin.template); a task writing a secret sets
        # no_log: true, which hides the diff too.
        no_log=True, supports_check_mode=True)
    files = module.params["files"]
    absent = module.params["absent"]
    paths = [f["path"] for f in files] + module.params["directories"] + absent
    relative = [p for p in paths if not Path(p).is_absolute()]
    if relative:
        module.fail_json(msg=f"paths must be absolute: {', '.join(relative)}")
    twice = sorted({p for p in paths if paths.count(p) > 1})
    if twice:
        module.fail_json(msg=f"paths given more than once: {', '.join(twice)}")
    modes = [module.params["mode"], module.params["directory_mode"], *(f["mode"] for f in files if f["mode"])]
    if bad := [m for m in modes if not re.fullmatch(r"0?[0-7]{3,4}", m)]:
        module.fail_json(msg=f"modes must be octal numbers such as 0644: {', '.join(bad)}")
    not_files = [f["path"] for f in files if Path(f["path"]).is_dir() or Path(f["path"]).is_symlink()]
    if not_files:
        module.fail_json(msg=f"refusing to replace a directory or a link: {', '.join(not_files)}")
    removed = [p for p in absent if Path(p).is_symlink() or Path(p).exists()]
    if directories := [p for p in removed if Path(p).is_dir() and not Path(p).is_symlink()]:
        module.fail_json(msg=f"refusing to remove directories: {', '.join(directories)}")

    if not module.check_mode:
        for path in removed:
            try:
                Path(path).unlink(missing_ok=True)
            except OSError as exc:
                module.fail_json(msg=f"could not remove {path}: {exc.strerror}",
                                 removed=removed[:removed.index(path)])
    created: list[str] = []
    changed = bool(removed)
    for directory in module.params["directories"]:
        changed = _ensure_directory(module, Path(directory), created) or changed

    written: list[str] = []
    diffs: list[dict] = [{"before_header": "removed", "before": "".join(f"{p}\n" for p in removed), "after": ""}
                         ] if removed else []
    for entry in files:
        path = Path(entry["path"])
        mode = entry["mode"] or module.params["mode"]
        data = entry["content"].encode()
        # In check mode a parent stays missing: one that an earlier file would create is counted once.
        if not path.parent.is_dir() and str(path.parent) not in created:
            changed = _ensure_directory(module, path.parent, created) or changed
        before = _read(path)
        differs = before != data
        if differs:
            diffs.append({"before_header": str(path), "after_header": str(path),
                          "before": (before or b"").decode(errors="replace"), "after": entry["content"]})
            if not module.check_mode:
                _write_atomically(module, path, data, mode)
        if module.check_mode and before is None:
            attributes_changed = False
        else:
            attributes_changed = module.set_fs_attributes_if_different(_attributes(module, path, mode), False)
        if differs or attributes_changed:
            written.append(str(path))
    changed = changed or bool(written)
    module.exit_json(changed=changed, written=written, created_directories=created, removed=removed, diff=diffs)


if __name__ == "__main__":
    main()
