"""Shared paths and markers for the project's own tests.

tests/unit        no host, no network; the default run
tests/integration lab hosts under podman (marker `lab`)
tests/gpu         a real GPU (marker `gpu`), run on the lent device machine
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "real"
DERIVED = ROOT / "tests" / "fixtures" / "derived"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--lab-units", choices=("all", "side", "alone"), default="all",
                     help="lab files (tests/integration/conftest.py): 'side' those that may run beside each other, "
                          "'alone' those that change the machine's kernel settings on purpose, 'all' (default) both")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).relative_to(ROOT).parts
        if parts[:2] == ("tests", "integration"):
            item.add_marker(pytest.mark.lab)
        elif parts[:2] == ("tests", "gpu"):
            item.add_marker(pytest.mark.gpu)
