"""rocm-smi parser against real outputs (tests/fixtures/real/rocm-smi/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import rocm_smi

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "rocm-smi"
DERIVED = FIXTURES / "derived" / "rocm-smi"


def _parse(name: str, where: Path = REAL) -> rocm_smi.RocmSmiRecord:
    return rocm_smi.parse((where / name).read_text())


def test_concise_62_layout_reads_did_guid_node_and_partitions() -> None:
    rec = _parse("mi300x-augmxnt-mi300-testing-concise.txt")
    assert (rec.view, rec.layout) == ("concise", "6.2+")
    assert [g.index for g in rec.gpus] == list(range(8))
    assert {g.device_id for g in rec.gpus} == {0x74A1}
    assert [g.guid for g in rec.gpus] == [55354, 41632, 47045, 60169, 56024, 705, 59108, 10985]
    assert [g.node_id for g in rec.gpus] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert [g.temperature_c for g in rec.gpus] == [43.0, 47.0, 40.0, 43.0, 43.0, 38.0, 44.0, 42.0]
    assert [g.power_w for g in rec.gpus] == [136.0, 142.0, 122.0, 134.0, 142.0, 135.0, 135.0, 135.0]
    gpu = rec.gpus[0]
    assert gpu.temperature_sensor == "Junction"
    assert (gpu.memory_partition, gpu.compute_partition, gpu.partition_id) == ("NPS1", "SPX", 0)
    assert (gpu.sclk_mhz, gpu.mclk_mhz, gpu.power_cap_w) == (132.0, 900.0, 750.0)
    assert (gpu.perf_level, gpu.vram_used_pct, gpu.gpu_busy_pct) == ("auto", 0.0, 0.0)


def test_concise_60_61_layout_reads_model_and_name_line() -> None:
    rec = _parse("mi300x-ml-engineering-amd-debug.txt")
    assert (rec.view, rec.layout) == ("concise", "6.0-6.1")
    assert [g.name for g in rec.gpus] == ["AMD Instinct MI300X"] * 8
    assert {(g.model_id, g.revision) for g in rec.gpus} == {(0x74A1, 0)}
    assert [g.power_w for g in rec.gpus] == [173.0, 179.0, 180.0, 178.0, 175.0, 175.0, 175.0, 176.0]
    assert [g.vram_used_pct for g in rec.gpus] == [0.0, 0.0, 0.0, 17.0, 0.0, 0.0, 0.0, 0.0]
    assert rec.gpus[0].memory_partition == "NPS1"
    assert rec.gpus[0].partition_id is None  # this layout has no partition ID column


def test_concise_padded_lines_and_single_gpu_variants() -> None:
    x4 = _parse("mi300x-x4-thamada-gls-concise.txt")
    assert [g.temperature_c for g in x4.gpus] == [35.0, 37.0, 34.0, 38.0]
    assert [g.power_w for g in x4.gpus] == [133.0, 131.0, 131.0, 137.0]
    x1 = _parse("mi300x-x1-thamada-gls-concise.txt")
    assert [(g.temperature_c, g.power_w, g.sclk_mhz) for g in x1.gpus] == [(41.0, 121.0, 131.0)]
    grok = _parse("mi300x-rocm-blogs-grok1.txt")
    assert [g.temperature_c for g in grok.gpus] == [35.0, 37.0, 40.0, 36.0, 38.0, 35.0, 39.0, 37.0]


def test_concise_under_load_reads_682_w_and_full_utilisation() -> None:
    (gpu,) = _parse("mi300x-rocm-blogs-llama-lora-concise-under-load.txt").gpus
    assert (gpu.power_w, gpu.sclk_mhz, gpu.mclk_mhz) == (682.0, 1653.0, 1300.0)
    assert (gpu.gpu_busy_pct, gpu.vram_used_pct, gpu.temperature_c) == (100.0, 43.0, 71.0)
    assert gpu.guid == 47056


def test_concise_mi210_edge_sensor_and_na_partitions() -> None:
    rec = _parse("mi210-rocm-blogs-affinity-concise.txt")
    assert len(rec.gpus) == 8
    assert {g.name for g in rec.gpus} == {"Instinct MI210"}
    assert {(g.model_id, g.revision) for g in rec.gpus} == {(0x0C34, 0x02)}
    gpu = rec.gpus[0]
    assert (gpu.temperature_sensor, gpu.temperature_c, gpu.power_w) == ("Edge", 34.0, 43.0)
    assert (gpu.memory_partition, gpu.compute_partition) == (None, None)
    assert gpu.mclk_mhz == 1600.0


def test_concise_legacy_5x_layout() -> None:
    rec = _parse("mi250-rocm-blogs-llama2-lora-concise-legacy.txt")
    assert (rec.view, rec.layout) == ("concise", "5.x")
    assert [(g.temperature_c, g.power_w, g.sclk_mhz) for g in rec.gpus] == [
        (52.0, 179.0, 1700.0), (52.0, 171.0, 1650.0)]
    assert [g.vram_used_pct for g in rec.gpus] == [65.0, 66.0]
    assert rec.gpus[0].temperature_sensor == "DieEdge"
    assert rec.gpus[0].gpu_busy_pct == 100.0


def test_showtopo_reads_56_xgmi_links_and_numa_nodes() -> None:
    rec = _parse("mi300x-augmxnt-vllm-collect-env-showtopo.txt")
    assert rec.view == "showtopo"
    assert len(rec.links) == 56
    assert {(x.link_type, x.weight, x.hops) for x in rec.links} == {("XGMI", 15, 1)}
    assert [g.numa_node for g in rec.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [g.numa_affinity for g in rec.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_showtoponuma_mi210() -> None:
    rec = _parse("mi210-rocm-blogs-affinity-showtoponuma.txt")
    assert [g.numa_node for g in rec.gpus] == [3, 2, 1, 0, 7, 6, 5, 4]
    assert rec.links == ()


def test_showproductname_61_layout() -> None:
    rec = _parse("mi300x-rocm-blogs-llama-lora-showproductname.txt")
    assert rec.view == "showproductname"
    (gpu,) = rec.gpus
    assert gpu.name == "AMD Instinct MI300X OAM"
    assert (gpu.model_id, gpu.revision, gpu.node_id, gpu.guid) == (0x74A1, 0, 2, 47056)
    assert (gpu.card_sku, gpu.gfx_version) == ("MI3SRIOV", "gfx942")
    assert gpu.card_vendor == "Advanced Micro Devices, Inc. [AMD/ATI]"


def test_showproductname_60_layout_keeps_series_as_printed() -> None:
    (gpu,) = _parse("mi210-rocm-blogs-vit-inference-showproductname.txt").gpus
    assert gpu.name == "0x740f"  # this rocm-smi printed the device id as the series
    assert (gpu.model_id, gpu.card_sku) == (0x0C34, "D67301V")


def test_pasted_together_product_lines_are_rejected() -> None:
    with pytest.raises(ParseError) as err:
        _parse("mi210-rocm-blogs-dbrx-showproductname.txt")
    assert err.value.line_no == 8
    assert "Card series" in str(err.value)


def test_all_report_reads_identity_power_firmware_and_partitions() -> None:
    rec = _parse("mi300x-x4-thamada-gls-rocm-smi-a.txt")
    assert rec.view == "all"
    assert rec.driver_version == "6.7.0"
    assert [g.pci_bus for g in rec.gpus] == ["0000:26:00.0", "0000:46:00.0", "0000:65:00.0", "0000:85:00.0"]
    assert [g.serial_number for g in rec.gpus] == ["692347006052", "692347005894", "692347006047",
                                                   "692347005902"]
    gpu = rec.gpus[0]
    assert (gpu.device_id, gpu.unique_id, gpu.vbios_version) == (0x74A1, "0x8d1457e2c20f59d2",
                                                                 "113-MI3SRIOV-001")
    assert (gpu.temperature_junction_c, gpu.temperature_memory_c) == (35.0, 33.0)
    assert (gpu.power_w, gpu.power_cap_w) == (133.0, 750.0)
    assert (gpu.compute_partition, gpu.memory_partition) == ("SPX", "NPS1")
    assert gpu.memory_vendor == "samsung"
    assert gpu.pcie_replay_count == 0
    assert gpu.firmware["MEC"] == "138"
    assert gpu.firmware["SOS"] == "0x0036024b"
    assert gpu.firmware["TA XGMI"] == "32.00.01.19"
    assert "ASD" not in gpu.firmware  # "get_firmware_version_ASD, Not supported"


def test_json_57_keys_with_topology_in_system() -> None:
    rec = _parse("mi100-x6-telegraf-testdata-rocm571-json.txt")
    assert rec.view == "json"
    assert rec.driver_version == "6.2.4"
    assert len(rec.gpus) == 6
    assert {g.device_id for g in rec.gpus} == {0x738C}
    assert [g.pci_bus for g in rec.gpus] == ["0000:1E:00.0", "0000:22:00.0", "0000:3F:00.0",
                                             "0000:43:00.0", "0000:46:00.0", "0000:49:00.0"]
    gpu = rec.gpus[0]
    assert gpu.name == "Arcturus GL-XL [Instinct MI100]"
    assert gpu.vram_total_bytes == 34342961152
    assert (gpu.power_w, gpu.power_cap_w) == (39.0, 290.0)
    assert gpu.firmware["MEC"] == "65"
    assert len(rec.links) == 30
    assert {(x.link_type, x.weight, x.hops) for x in rec.links} == {("PCIE", 40, 2)}


def test_gpu_less_lab_host_reports_driver_not_initialised() -> None:
    rec = _parse("lab-debian12-vm-nogpu-rocm-smi.txt")
    assert rec.view == "no-driver"
    assert rec.driver_initialized is False
    assert rec.gpus == ()


def test_derived_missing_gpu_row_leaves_index_5_absent() -> None:
    rec = _parse("mi300x-augmxnt-concise-gpu5-row-removed.txt", DERIVED)
    assert [g.index for g in rec.gpus] == [0, 1, 2, 3, 4, 6, 7]


def test_rejects_random_text() -> None:
    with pytest.raises(ParseError) as err:
        rocm_smi.parse("hello\nworld\n")
    assert (err.value.tool, err.value.line_no) == ("rocm-smi", 1)


def test_rejects_nvidia_smi_output() -> None:
    text = (FIXTURES / "real" / "nvidia-smi" / "h200-x1-thamada-gls-nvidia-smi.txt").read_text()
    with pytest.raises(ParseError, match="rocm-smi"):
        rocm_smi.parse(text)


def test_concise_row_with_a_missing_column_names_the_line() -> None:
    lines = (REAL / "mi300x-augmxnt-mi300-testing-concise.txt").read_text().splitlines()
    assert lines[8].startswith("0 ")
    lines[8] = lines[8].replace("132Mhz", "", 1)
    with pytest.raises(ParseError) as err:
        rocm_smi.parse("\n".join(lines))
    assert err.value.line_no == 9
    assert "columns" in str(err.value)


def test_topology_matrix_cut_after_its_header_fails_clearly() -> None:
    # found by the property test: a --showtopo output truncated right after the header row
    lines = (REAL / "mi300x-augmxnt-vllm-collect-env-showtopo.txt").read_text().splitlines()
    with pytest.raises(ParseError, match="without rows") as err:
        rocm_smi.parse("\n".join(lines[:4]))
    assert err.value.line_no == 4


def test_unreadable_number_in_a_gpu_field_names_the_line() -> None:
    # found by the property test: a stray byte before the GUID used to crash int()
    lines = (REAL / "mi300x-rocm-blogs-llama-lora-showproductname.txt").read_text().splitlines()
    index = next(i for i, x in enumerate(lines) if "GUID" in x)
    lines[index] = lines[index].replace("47056", "\u00b247056")
    with pytest.raises(ParseError, match="GUID") as err:
        rocm_smi.parse("\n".join(lines))
    assert err.value.line_no == index + 1
