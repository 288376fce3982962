"""rocminfo parser against real outputs (tests/fixtures/real/rocminfo/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import rocminfo

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "rocminfo"
DERIVED = FIXTURES / "derived" / "rocminfo"


def _parse(path: Path) -> rocminfo.RocminfoRecord:
    return rocminfo.parse(path.read_text())


def test_thamada_x4_lists_four_mi300x_and_two_epyc_cpus() -> None:
    info = _parse(REAL / "mi300x-x4-thamada-gls-rocminfo.txt")
    assert info.rocm_kernel_loaded is True
    assert info.rocm_kernel_version is None  # "ROCk module is loaded" names no version
    assert info.runtime_version == "1.1"
    assert info.truncated is False
    assert [c.marketing_name for c in info.cpus] == ["AMD EPYC 9474F 48-Core Processor"] * 2
    assert [g.marketing_name for g in info.gpus] == ["AMD Instinct MI300X"] * 4
    assert [g.number for g in info.gpus] == [3, 4, 5, 6]
    assert [g.node for g in info.gpus] == [2, 3, 4, 5]
    assert [g.uuid for g in info.gpus] == ["GPU-8d1457e2c20f59d2", "GPU-b4fa34630e85d42a",
                                           "GPU-e8986800e182538a", "GPU-eff71edc82169115"]


def test_thamada_x4_gpu_identity_fields() -> None:
    gpu = _parse(REAL / "mi300x-x4-thamada-gls-rocminfo.txt").gpus[0]
    assert gpu.gfx_target == "gfx942"
    assert gpu.chip_id == 0x74A1
    assert gpu.compute_units == 304
    assert gpu.isa_names == ("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",)
    assert gpu.vram_kib == 201310208


def test_bdfid_decodes_to_the_pci_address() -> None:
    # BDFID 9728 = 0x2600 -> 26:00.0 (rocm-smi -a of the same host prints PCI Bus 0000:26:00.0)
    gpus = _parse(REAL / "mi300x-x4-thamada-gls-rocminfo.txt").gpus
    assert [g.bdf for g in gpus] == ["26:00.0", "46:00.0", "65:00.0", "85:00.0"]


def test_gpu_pools_are_listed_in_order() -> None:
    gpu = _parse(REAL / "mi300x-x4-thamada-gls-rocminfo.txt").gpus[0]
    assert [p.segment for p in gpu.pools] == ["GLOBAL; FLAGS: COARSE GRAINED",
                                              "GLOBAL; FLAGS: EXTENDED FINE GRAINED",
                                              "GLOBAL; FLAGS: FINE GRAINED", "GROUP"]
    assert [p.size_kib for p in gpu.pools] == [201310208, 201310208, 201310208, 64]


def test_cpu_agents_have_no_gpu_fields() -> None:
    cpu = _parse(REAL / "mi300x-x4-thamada-gls-rocminfo.txt").cpus[1]
    assert cpu.device_type == "CPU"
    assert cpu.node == 1
    assert cpu.chip_id == 0
    assert cpu.compute_units == 96
    assert cpu.bdf is None
    assert cpu.vram_kib is None


def test_augmxnt_x8_reads_rock_version_and_runtime_ext_through_ansi_colour() -> None:
    info = _parse(REAL / "mi300x-augmxnt-mi300-testing-00-system-info.txt")
    assert info.rocm_kernel_loaded is True
    assert info.rocm_kernel_version == "6.8.5"
    assert info.runtime_version == "1.14"
    assert info.runtime_ext_version == "1.6"
    assert [c.marketing_name for c in info.cpus] == ["Intel(R) Xeon(R) Platinum 8470"] * 2
    assert len(info.gpus) == 8
    assert {g.chip_id for g in info.gpus} == {0x74A1}
    assert [g.node for g in info.gpus] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert info.gpus[-1].uuid == "GPU-873c089166b295ec"
    assert info.gpus[0].bdf == "1b:00.0"  # BDFID 6912 = 0x1b00


def test_mi210_sysinfo_reports_gfx90a_with_104_cus() -> None:
    info = _parse(REAL / "mi210-rocm-blogs-roc-profiling-sysinfo.txt")
    assert [g.marketing_name for g in info.gpus] == ["AMD Instinct MI210"] * 8
    assert {g.gfx_target for g in info.gpus} == {"gfx90a"}
    assert {g.chip_id for g in info.gpus} == {0x740F}
    assert {g.compute_units for g in info.gpus} == {104}
    assert [c.marketing_name for c in info.cpus] == ["AMD EPYC 7742 64-Core Processor"] * 2
    assert info.gpus[2].bdf == "03:00.0"  # BDFID 768


def test_elided_snippet_is_marked_truncated_and_keeps_the_headerless_gpu() -> None:
    info = _parse(REAL / "mi300x-ml-engineering-amd-debug-snippet.txt")
    assert info.truncated is True
    assert [c.marketing_name for c in info.cpus] == ["AMD EPYC 9534 64-Core Processor"]
    assert len(info.gpus) == 1
    assert info.gpus[0].number is None  # its "Agent N" header was cut away with "[...]"
    assert info.gpus[0].uuid == "GPU-ababaeeffecddc50"
    assert info.gpus[0].chip_id == 0x74A1


def test_gpu_less_lab_host_is_a_valid_record_with_rock_not_loaded() -> None:
    info = _parse(REAL / "lab-debian12-vm-nogpu-rocminfo.txt")
    assert info.rocm_kernel_loaded is False
    assert info.agents == ()
    assert info.gpus == ()
    assert len(info.messages) == 2  # the two libkmod stderr lines
    assert info.truncated is False


def test_derived_missing_gpu_reports_seven_gpus_without_the_removed_uuid() -> None:
    info = _parse(DERIVED / "mi300x-augmxnt-7of8-gpus-agent10-removed.txt")
    assert len(info.gpus) == 7
    assert "GPU-873c089166b295ec" not in {g.uuid for g in info.gpus}
    assert info.truncated is False


def test_rejects_random_text() -> None:
    with pytest.raises(ParseError) as err:
        rocminfo.parse("the quick brown fox\njumps over the lazy dog\n")
    assert err.value.tool == "rocminfo"
    assert err.value.line_no == 1


def test_rejects_nvidia_smi_output() -> None:
    text = (FIXTURES / "real" / "nvidia-smi" / "h200-x1-thamada-gls-nvidia-smi-a.txt").read_text()
    with pytest.raises(ParseError, match="rocminfo"):
        rocminfo.parse(text)


def test_rejects_empty_input() -> None:
    with pytest.raises(ParseError, match="empty input"):
        rocminfo.parse("  \n")


def test_cut_chip_id_names_the_line() -> None:
    lines = (REAL / "mi300x-x4-thamada-gls-rocminfo.txt").read_text().splitlines()
    cut = [line.replace("29857(0x74a1)", "29857(0x74") for line in lines]
    with pytest.raises(ParseError) as err:
        rocminfo.parse("\n".join(cut))
    assert err.value.line is not None and "Chip ID" in err.value.line
    assert err.value.line_no == lines.index(next(x for x in lines if "29857(0x74a1)" in x)) + 1
