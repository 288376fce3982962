"""lscpu parser against real outputs (tests/fixtures/real/lscpu/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import lscpu

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "lscpu"


def test_two_socket_h100_host_has_two_numa_nodes_with_cpus() -> None:
    rec = lscpu.parse((REAL / "h100-node-jdh4-job-data-2023-della-lscpu.txt").read_text())
    assert (rec.sockets, rec.numa_node_count, rec.cpus) == (2, 2, 96)
    assert rec.model_name == "Intel(R) Xeon(R) Platinum 8468"
    assert rec.cpu_numa_nodes == (0, 1)
    assert rec.numa_cpus[1].startswith("1,3,5,7")


def test_single_socket_lab_machine_has_one_numa_node() -> None:
    rec = lscpu.parse((REAL / "lab-kvm-1socket-lscpu.txt").read_text())
    assert (rec.sockets, rec.numa_node_count, rec.cpus) == (1, 1, 2)
    assert rec.cpu_numa_nodes == (0,)


def test_rejects_rocminfo_output() -> None:
    text = (FIXTURES / "real" / "rocminfo").glob("*.txt").__next__().read_text()
    with pytest.raises(ParseError):
        lscpu.parse(text)
