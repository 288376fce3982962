"""The lab for every integration test: one session-wide lab, removed at the end also on failure.

    ROCM_FLEET_LAB_HOSTS       host count (default 2)
    ROCM_FLEET_LAB_NAME        lab name, host name prefix and podman label value
                               (default rftest-<checkout key>)
    ROCM_FLEET_LAB_PORT_BASE   host i listens for SSH on 127.0.0.1:<base+i> (default: free ports)
    ROCM_FLEET_LAB_INVENTORY   inventory to write (default inventories/lab/hosts.yml, so that
                               inventories/lab/group_vars/ applies)

The default name differs from `rocm-fleet lab up` (rflab-<checkout key>), so a lab started by hand
keeps its hosts; both write the same inventory path, and the second refuses while the first is
up. Both carry the checkout's key, so test runs from two clones never meet.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from validation.lab import Lab, default_lab_name

LAB_NAME = os.environ.get("ROCM_FLEET_LAB_NAME") or default_lab_name("rftest")


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """A running lab with the mirror; `lab.info` has hosts, inventory, key, known_hosts, mirror."""
    inventory = os.environ.get("ROCM_FLEET_LAB_INVENTORY")
    port_base = os.environ.get("ROCM_FLEET_LAB_PORT_BASE")
    the_lab = Lab(LAB_NAME, int(os.environ.get("ROCM_FLEET_LAB_HOSTS", "2")), mirror=True,
                  port_base=int(port_base) if port_base else None,
                  inventory_path=Path(inventory) if inventory else None)
    with the_lab:
        yield the_lab
