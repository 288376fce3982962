"""Hosts in parallel from the controller: pytest-xdist gives each worker whole hosts.

`rocm-fleet validate --hosts ansible://GROUP` runs the checks of several hosts at once with
pytest-xdist (`-n N`). Every check of one host must run in one worker, one after another, in the
order the plugin sorted them (the idle pre-flight first, the sibling verdict and the post-flight
last): the host's module-scoped fixtures, its results document, its progress file and its
measuring state (validation/checks/measuring.py) all live in that worker's process. This
scheduler is xdist's own LoadScopeScheduling with the scope of a test being its host: the
testinfra host id that starts the test's parameters ('ansible://n07' of
'test_x.py::test_y[ansible://n07-gpu3]'). Host names may contain '-', so the ids are taken from
testinfra itself, exactly as its plugin parametrizes the tests, and the longest that fits wins.

Imported only where pytest-xdist is installed (the controller); nodes run the suite in one process.
"""

from __future__ import annotations

from typing import Any

import pytest
import testinfra
from testinfra.utils.ansible_runner import AnsibleRunner
from xdist.scheduler import LoadScopeScheduling

_INVENTORY = "rf_ansible_inventory"


def host_ids(config: pytest.Config) -> list[str]:
    """The pytest ids of the hosts testinfra's plugin parametrizes the checks with (--hosts)."""
    option = config.option
    hosts = testinfra.get_hosts(option.hosts.split(","), connection=option.connection,
                                ssh_config=option.ssh_config, ssh_identity_file=option.ssh_identity_file,
                                sudo=option.sudo, sudo_user=option.sudo_user,
                                ansible_inventory=option.ansible_inventory, force_ansible=option.force_ansible)
    return sorted({h.backend.get_pytest_id() for h in hosts}, key=len, reverse=True)


def host_of(nodeid: str, ids: list[str]) -> str | None:
    """The host id a test's parameters start with ('[ansible://n07-gpu3]' -> 'ansible://n07'), or None."""
    start = nodeid.find("[")
    if start < 0 or not nodeid.endswith("]"):
        return None
    params = nodeid[start + 1:-1]
    return next((h for h in ids if params == h or params.startswith(f"{h}-")), None)


class HostScheduling(LoadScopeScheduling):
    """LoadScopeScheduling with a host as the unit of work (tests without a host: their module)."""

    def __init__(self, config: pytest.Config, log: Any = None, *, ids: list[str] | None = None) -> None:
        super().__init__(config, log)
        self.host_ids = host_ids(config) if ids is None else sorted(ids, key=len, reverse=True)

    def _split_scope(self, nodeid: str) -> str:
        return host_of(nodeid, self.host_ids) or super()._split_scope(nodeid)


def share_inventory(config: pytest.Config, workerinput: dict[str, Any]) -> None:
    """Controller: put the ansible inventory testinfra read here (`ansible-inventory --list`, once,
    when the hosts were counted) into a worker's input, for ansible:// hosts."""
    if any(h.startswith("ansible://") for h in config.option.hosts.split(",")):
        workerinput[_INVENTORY] = AnsibleRunner.get_runner(config.option.ansible_inventory).inventory


def take_inventory(config: pytest.Config) -> None:
    """Worker: give testinfra's runner for the inventory file the controller's reading, so that it
    does not run ansible-inventory again (AnsibleRunner.inventory is a cached property)."""
    inventory = getattr(config, "workerinput", {}).get(_INVENTORY)
    if inventory is not None:
        AnsibleRunner.get_runner(config.option.ansible_inventory).__dict__["inventory"] = inventory
