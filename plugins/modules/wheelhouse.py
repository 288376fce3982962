#!/usr/bin/python
"""Documentation of the action plugin rocm_fleet.fleet.wheelhouse (plugins/action/wheelhouse.py); it runs no module."""

from __future__ import annotations

DOCUMENTATION = r"""
module: wheelhouse
short_description: Find or build the validation suite's wheels for this checkout, on the controller
description:
  - Returns the wheelhouse of O(root) kept under O(dir), building it when none has its digest
    (validation/wheelhouse.py; the digest covers the rocm-fleet package's files and the
    pytest-testinfra version the controller runs). The wheels are reproducible, so an unchanged
    checkout finds the same bytes and nodes reinstall nothing.
  - Runs on the controller, inside Ansible's process; contacts no host. Reports changed when it built.
  - Runs in check mode too; building wheels changes no node.
version_added: "0.1.0"
options:
  root:
    description: The checkout to build rocm-fleet from.
    type: path
    required: true
  dir:
    description:
      - Where wheelhouses are kept, one directory per digest; the four most recently used besides this
        one are kept.
    type: path
    required: true
author: rocm-fleet
"""

EXAMPLES = r"""
- name: Find or build the wheelhouse of this checkout
  rocm_fleet.fleet.wheelhouse:
    root: "{{ playbook_dir }}/.."
    dir: "{{ playbook_dir }}/../.ansible/wheelhouse"
  run_once: true
  register: __wheelhouse
"""

RETURN = r"""
path:
  description: The wheelhouse directory, holding the rocm-fleet and pytest-testinfra wheels and DIGEST.
  type: str
  returned: success
built:
  description: Whether it was built by this task.
  type: bool
  returned: success
digest:
  description: Its name, which nodes record after installing from it.
  type: str
  returned: success
"""
