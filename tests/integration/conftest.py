"""The lab for the integration tests, and how the lab test files run side by side.

The session lab (`lab` fixture) serves the files that share one converged lab in file order (SESSION_LAB:
test_lab, test_provision, test_pull, ...); every other file brings its own lab. Removed at the end, also on
failure.

    ROCM_FLEET_LAB_HOSTS       host count (default 2)
    ROCM_FLEET_LAB_NAME        lab name, host name prefix and podman label value
                               (default rftest-<checkout key>, with -<xdist worker> when run side by side)
    ROCM_FLEET_LAB_PORT_BASE   host i listens for SSH on 127.0.0.1:<base+i> (default: free ports)
    ROCM_FLEET_LAB_INVENTORY   inventory to write (default inventories/lab/<lab name>.yml, so that
                               inventories/lab/group_vars/ applies)

The default name differs from `rocm-fleet lab up` (rflab-<checkout key>), so a lab started by hand keeps
its hosts. Names carry the checkout's key, so test runs from two clones never meet, and the xdist worker,
so two labs of one run never meet either.

Side by side (`.ci/test`'s `labs` part: `pytest tests/integration --lab-units side -n 2 --dist loadscope
--no-loadscope-reorder`; ROCM_FLEET_TEST_LAB_WORKERS=N for N at once; docs/testing.md has the measurements).
LabFileScheduling makes each file one work unit (its own lab, its module fixtures set up once) and the
SESSION_LAB files one unit together, handed out longest first (LONGEST_FIRST, from the measured times in
docs/testing.md). Not xdist's `xdist_group` marks: pytest 9.2 names a test by `_id`, and
pytest-xdist 3.8 still renames `_nodeid`, so the marks group nothing (tried: one file's tests ran on three
workers, each setting up the file's lab).
Kernel-wide settings (THP, NUMA balancing) are the machine's: every lab file holds them shared while it
runs, and a test that changes them on purpose (fixture `kernel_exclusive`) holds them alone: it waits until
no other lab file runs (tests/helpers/kernel_knobs.py). Beside another file each such test would wait for
that file's end, so the units with such a test run on their own after the rest (`--lab-units alone`,
`.ci/test`'s `labs-alone` part; alone_units finds them by the fixture).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import kernel_knobs
import pytest
from xdist.scheduler import LoadScopeScheduling

from validation.lab import Lab, default_lab_name

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
LAB_NAME = os.environ.get("ROCM_FLEET_LAB_NAME") or default_lab_name("rftest") + (f"-{WORKER}" if WORKER else "")
INTEGRATION = Path(__file__).resolve().parent

# The files that share the session lab, in file order: one work unit.
# test_tuning converges the session lab from what test_pull left and before test_version_rollback moves its
# packages to sid's and back (run after it, its first converge fails: apt's solver refuses sid's
# libhsa-runtime64-1 6.4.3 beside libamdhip64-5 5.7.1; seen 2026-12-07 when it ran last).
SESSION_LAB = ("test_lab", "test_provision", "test_pull", "test_tuning", "test_validation_tools",
               "test_version_rollback", "test_watch_remote")
# Work units, longest first (measured wall minutes on the 2-core machine, docs/testing.md): handed out in this
# order, the long ones start first and the short ones fill in behind them. A file not listed comes last.
LONGEST_FIRST = (
    "test_fleet", "test_remediate", "test_health", "test_rollout", "session-lab", "test_slurm",
    "test_active_checks", "test_multinode", "test_newcomer", "test_partition",
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
def kernel_settings() -> Iterator[None]:
    """The machine's kernel settings, held shared for the whole file: its converges write them, its checks
    judge them, and its lab's health mode reads them in the background, between the tests too."""
    with kernel_knobs.shared():
        yield


@pytest.fixture
def kernel_exclusive() -> Iterator[None]:
    """For a test that changes THP or NUMA balancing on purpose: it waits until no other lab file runs, and
    the settings it found are written back when it ends, before any other lab file may start."""
    with kernel_knobs.exclusive():
        found = kernel_knobs.read()
        try:
            yield
        finally:
            kernel_knobs.write(found)


def work_unit(nodeid: str) -> str:
    """The work unit of a test: its file's name, "session-lab" for the SESSION_LAB files."""
    stem = Path(nodeid.split("::", 1)[0]).stem
    return "session-lab" if stem in SESSION_LAB else stem


class LabFileScheduling(LoadScopeScheduling):
    """xdist's LoadScopeScheduling with a lab file (or the session lab's files together) as the scope."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LabFileScheduling | None:
    return LabFileScheduling(config, log) if config.getoption("dist") == "loadscope" else None


def alone_units(items: list[pytest.Item]) -> set[str]:
    """The work units with a test that changes the machine's kernel settings on purpose (kernel_exclusive):
    beside another lab file, each such test waits until that file has ended (and the file started after it,
    for the next such test), so these units run on their own (`--lab-units alone`) and the rest side by side
    (`--lab-units side`)."""
    return {work_unit(item.nodeid) for item in items if "kernel_exclusive" in getattr(item, "fixturenames", ())}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The lab tests of the units `--lab-units` asks for, grouped by work unit, the units longest first (each
    keeps its tests in file order)."""
    order = {name: i for i, name in enumerate(LONGEST_FIRST)}
    mine = [i for i in items if Path(str(i.fspath)).is_relative_to(INTEGRATION)]
    wanted = config.getoption("lab_units")
    if wanted != "all":
        alone = alone_units(mine)
        dropped = [i for i in mine if (work_unit(i.nodeid) in alone) != (wanted == "alone")]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            gone = {id(i) for i in dropped}
            mine = [i for i in mine if id(i) not in gone]
            items[:] = [i for i in items if id(i) not in gone]
    rank = {id(item): (order.get(work_unit(item.nodeid), len(order)), n) for n, item in enumerate(mine)}
    mine.sort(key=lambda item: rank[id(item)])
    others = [i for i in items if not Path(str(i.fspath)).is_relative_to(INTEGRATION)]
    items[:] = [*mine, *others]
