"""The collection's Jinja tests: node_reboot's "does role R require / allow a reboot on this host?", and the
node-name rule every fan-out playbook checks inventory host names with (validation/names.py)."""

from __future__ import annotations

import sys
from pathlib import Path

# The package shipped beside these tests, never another installed copy (as plugins/filter/rocm_fleet.py).
_HERE = str(Path(__file__).resolve().parents[2])
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from validation import names  # noqa: E402


def reboot_required(role: str, hostvars: dict) -> bool:
    return bool(hostvars.get(f"{role}_reboot_required", False))


def reboot_allowed(role: str, hostvars: dict) -> bool:
    return bool(hostvars.get(f"{role}_reboot_ok", False))


def node_name(value: object) -> bool:
    """Whether a value is a node name: letters, digits, '.', '_', ':', '-', not starting with '-' or '.'.

    The rule of validation/names.py (NODE_RE) that every path taking a node name checks. An inventory host
    name becomes a file name on the controller (results/<run>/<name>.json, rollout/<name>.json,
    bundles/<name>.tar.gz): one with '/', a leading '-' or '.', a space or a newline is not a node name, and
    playbooks/tasks/controller_run.yml refuses it before any change.
    """
    return names.matches(value, names.NODE_RE)


class TestModule:
    def tests(self) -> dict:
        return {"reboot_required": reboot_required, "reboot_allowed": reboot_allowed, "node_name": node_name}
