"""The lab for the integration tests, and how the lab test files run side by side.

The session lab (`lab` fixture) serves the files that share one converged lab in file order (marked
`xdist_group("session-lab")`: test_lab, test_provision, test_pull, ...); every other file brings its own
lab. Removed at the end, also on failure.

    ROCM_FLEET_LAB_HOSTS       host count (default 2)
    ROCM_FLEET_LAB_NAME        lab name, host name prefix and podman label value
                               (default rftest-<checkout key>, with -<xdist worker> when run side by side)
    ROCM_FLEET_LAB_PORT_BASE   host i listens for SSH on 127.0.0.1:<base+i> (default: free ports)
    ROCM_FLEET_LAB_INVENTORY   inventory to write (default inventories/lab/<lab name>.yml, so that
                               inventories/lab/group_vars/ applies)

The default name differs from `rocm-fleet lab up` (rflab-<checkout key>), so a lab started by hand keeps
its hosts. Names carry the checkout's key, so test runs from two clones never meet, and the xdist worker,
so two labs of one run never meet either.

Side by side (`.ci/test`, docs/testing.md): `pytest tests/integration -n N --dist loadgroup`. Each file is
one work unit (its own lab, its module fixtures set up once), the session-lab files one unit together, and
the units are handed out longest first (LONGEST_FIRST, from the measured times in docs/testing.md).
Kernel-wide settings (THP, NUMA balancing) are the machine's: every lab file holds them shared while it
runs, a file whose selected tests change them on purpose (marker `kernel_writer`) exclusive
(tests/helpers/kernel_knobs.py); `.ci/test` runs those tests (`-m kernel_writer`) before the others.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import kernel_knobs
import pytest

from validation.lab import Lab, default_lab_name

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
LAB_NAME = os.environ.get("ROCM_FLEET_LAB_NAME") or default_lab_name("rftest") + (f"-{WORKER}" if WORKER else "")
INTEGRATION = Path(__file__).resolve().parent

# Work units, longest first (measured wall minutes on the 2-core machine, docs/testing.md): handed out in this
# order, the long ones start first and the short ones fill in behind them. A file not listed comes last.
LONGEST_FIRST = (
    "session-lab", "test_remediate", "test_fleet", "test_health", "test_rollout", "test_active_checks",
    "test_slurm", "test_multinode", "test_partition", "test_newcomer",
)


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """A running lab with the mirror; `lab.info` has hosts, inventory, key, known_hosts, mirror."""
    inventory = os.environ.get("ROCM_FLEET_LAB_INVENTORY")
    port_base = os.environ.get("ROCM_FLEET_LAB_PORT_BASE")
    the_lab = Lab(LAB_NAME, int(os.environ.get("ROCM_FLEET_LAB_HOSTS", "2")), mirror=True,
                  port_base=int(port_base) if port_base else None,
                  inventory_path=Path(inventory) if inventory else
                  INTEGRATION.parents[1] / "inventories" / "lab" / f"{LAB_NAME}.yml")
    with the_lab:
        yield the_lab


@pytest.fixture(scope="module", autouse=True)
def kernel_settings(request: pytest.FixtureRequest) -> Iterator[None]:
    """The machine's kernel settings for the whole file: held shared by a file that only reads or converges
    them (its lab's health mode reads them in the background, between the tests too), exclusive by a file
    of which a selected test changes them on purpose (marker `kernel_writer`; .ci/test runs those alone)."""
    writes = any(item.get_closest_marker("kernel_writer") for item in request.session.items
                 if getattr(item, "module", None) is request.module)
    with kernel_knobs.exclusive() if writes else kernel_knobs.shared():
        yield


def _unit(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    return str(marker.args[0]) if marker else Path(str(item.fspath)).stem


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every integration file one work unit (unless it names its group), the units longest first."""
    order = {name: i for i, name in enumerate(LONGEST_FIRST)}
    mine = [i for i in items if Path(str(i.fspath)).is_relative_to(INTEGRATION)]
    for item in mine:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(_unit(item)))
    rank = {id(item): (order.get(_unit(item), len(order)), n) for n, item in enumerate(mine)}
    mine.sort(key=lambda item: rank[id(item)])
    others = [i for i in items if not Path(str(i.fspath)).is_relative_to(INTEGRATION)]
    items[:] = [*mine, *others]
