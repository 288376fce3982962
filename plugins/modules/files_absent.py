#!/usr/bin/python
"""Remove many files in one call (ansible.builtin.file with state=absent takes one path)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: files_absent
short_description: Make sure none of several files exists, in one call
description:
  - Removes each of O(paths) that exists (a file or a link; a directory is refused, not emptied) and
    reports which it removed. rocm_repo clears the repository files of manual installs this way instead of
    one M(ansible.builtin.file) call per path on every run.
version_added: "0.1.0"
options:
  paths:
    description: Absolute paths of files that must not exist.
    type: list
    elements: path
    required: true
author: rocm-fleet
"""

EXAMPLES = r"""
- name: Remove repository files from manual installs
  rocm_fleet.fleet.files_absent:
    paths: [/etc/apt/sources.list.d/rocm.list, /etc/yum.repos.d/rocm.repo]
"""

RETURN = r"""
removed:
  description: The paths that existed and were (or in check mode would be) removed.
  type: list
  elements: str
  returned: always
"""

from pathlib import Path

from ansible.module_utils.basic import AnsibleModule


def main() -> None:
    module = AnsibleModule(argument_spec={"paths": {"type": "list", "elements": "path", "required": True}},
                           supports_check_mode=True)
    paths = list(dict.fromkeys(module.params["paths"]))
    relative = [p for p in paths if not Path(p).is_absolute()]
    if relative:
        module.fail_json(msg=f"paths must be absolute: {', '.join(relative)}")
    present = [p for p in paths if Path(p).is_symlink() or Path(p).exists()]
    directories = [p for p in present if Path(p).is_dir() and not Path(p).is_symlink()]
    if directories:
        module.fail_json(msg=f"refusing to remove directories: {', '.join(directories)}")
    if not module.check_mode:
        for path in present:
            try:
                Path(path).unlink(missing_ok=True)
            except OSError as exc:
                module.fail_json(msg=f"could not remove {path}: {exc.strerror}",
                                 removed_before=present[:present.index(path)])
    module.exit_json(changed=bool(present), removed=present,
                     diff={"before": "".join(f"{p}\n" for p in present), "after": ""})


if __name__ == "__main__":
    main()
