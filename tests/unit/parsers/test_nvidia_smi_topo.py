"""nvidia-smi topo -m parser against real outputs (tests/fixtures/real/nvidia-smi-topo/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation import parsers
from validation.errors import ParseError
from validation.parsers import nvidia_smi_topo

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "nvidia-smi-topo"
DERIVED = FIXTURES / "derived" / "nvidia-smi-topo"
H100 = REAL / "h100-x8-ml-engineering-network-topo-m.txt"


def test_h100_space_aligned_matrix_reads_eight_gpus_all_nv18() -> None:
    rec = nvidia_smi_topo.parse(H100.read_text())
    assert rec.command_line == "nvidia-smi topo -m"
    assert [g.name for g in rec.gpus] == [f"GPU{i}" for i in range(8)]
    assert len(rec.links) == 56                                  # 8 x 7 ordered pairs, no self
    assert {link.connection for link in rec.links} == {"NV18"}
    assert {link.nvlink_count for link in rec.links} == {18}


def test_h100_cpu_and_numa_affinity_per_gpu() -> None:
    gpus = nvidia_smi_topo.parse(H100.read_text()).gpus
    assert [g.numa_affinity for g in gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert (gpus[0].cpu_affinity, gpus[7].cpu_affinity) == ("0-51", "52-103")
    assert gpus[0].gpu_numa_id is None                           # older layout: no "GPU NUMA ID" column


def test_a100_matrix_reads_nv12() -> None:
    rec = nvidia_smi_topo.parse((REAL / "a100-x8-ml-engineering-network-topo-m.txt").read_text())
    link = next(x for x in rec.links if (x.src, x.dst) == ("GPU3", "GPU6"))
    assert (link.connection, link.nvlink_count) == ("NV12", 12)
    assert rec.gpus[5].cpu_affinity == "24-47"


def test_tab_separated_layout_reads_the_same_matrix() -> None:
    rec = nvidia_smi_topo.parse((DERIVED / "h100-x8-ml-engineering-topo-m-tabs.txt").read_text())
    assert len(rec.links) == 56 and {link.connection for link in rec.links} == {"NV18"}
    assert [g.numa_affinity for g in rec.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert rec.gpus[4].cpu_affinity == "52-103"


def test_registered_under_its_own_tool_name() -> None:
    assert parsers.parse("nvidia-smi-topo", H100.read_text()).gpus[2].name == "GPU2"


def test_rejects_nvidia_smi_default_table_with_hint() -> None:
    text = (FIXTURES / "real" / "nvidia-smi" / "h200-x1-thamada-gls-nvidia-smi.txt").read_text()
    with pytest.raises(ParseError, match="topo -m"):
        nvidia_smi_topo.parse(text)


def test_rejects_a_row_with_a_cell_missing_naming_the_row() -> None:
    text = H100.read_text().replace("GPU5  NV18  NV18  NV18  NV18  NV18   X    NV18  NV18",
                                    "GPU5  NV18  NV18  NV18  NV18   X    NV18  NV18")
    with pytest.raises(ParseError, match="GPU5"):
        nvidia_smi_topo.parse(text)


def test_rejects_a_row_that_does_not_mark_itself_x() -> None:
    text = H100.read_text().replace("GPU1  NV18   X    NV18", "GPU1  NV18  NV18   X  ")
    with pytest.raises(ParseError, match="GPU1"):
        nvidia_smi_topo.parse(text)


def test_real_h200_capture_in_the_tools_own_layout_with_ansi_header() -> None:
    """Captured on the lent H200: tabs, an ANSI-underlined header row, a GPU NUMA ID column."""
    rec = nvidia_smi_topo.parse((REAL / "h200-x1-rocm-fleet-device-topo-m.txt").read_text())
    assert [g.name for g in rec.gpus] == ["GPU0"]
    assert rec.gpus[0].cpu_affinity == "0-15" and rec.gpus[0].numa_affinity == 0
    assert rec.gpus[0].gpu_numa_id is None           # "N/A"
    assert rec.links == ()
