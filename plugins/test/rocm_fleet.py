"""Jinja tests for node_reboot: does role R require / allow a reboot on this host?"""

from __future__ import annotations


def reboot_required(role: str, hostvars: dict) -> bool:
    return bool(hostvars.get(f"{role}_reboot_required", False))


def reboot_allowed(role: str, hostvars: dict) -> bool:
    return bool(hostvars.get(f"{role}_reboot_ok", False))


class TestModule:
    def tests(self) -> dict:
        return {"reboot_required": reboot_required, "reboot_allowed": reboot_allowed}
