"""amd-smi parser against real outputs (tests/fixtures/real/amd-smi/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import amd_smi

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "amd-smi"
DERIVED = FIXTURES / "derived" / "amd-smi"


def _parse(name: str, where: Path = REAL) -> amd_smi.AmdSmiRecord:
    return amd_smi.parse((where / name).read_text())


def test_static_mi300a_readme_reads_four_gpus_and_four_cpus() -> None:
    rec = _parse("mi300a-amdsmi-cli-readme-static.txt")
    assert rec.command == "static"
    assert rec.command_line == "amd-smi static"
    assert rec.cpu_count == 4
    assert [g.index for g in rec.gpus] == [0, 1, 2, 3]
    assert {g.market_name for g in rec.gpus} == {"MI300A"}
    assert {g.device_id for g in rec.gpus} == {0x74A0}
    assert [g.bdf for g in rec.gpus[:2]] == ["0000:01:00.0", "0001:01:00.0"]
    gpu = rec.gpus[0]
    assert gpu.vram_type == "HBM"
    assert gpu.vram_total_mib == 64289
    assert gpu.power_cap_w == 550.0
    assert gpu.pcie_width_max == 16
    assert gpu.pcie_speed_max_gt_s == 32.0
    assert (gpu.compute_partition, gpu.memory_partition) == ("SPX", "NPS1")
    assert rec.truncated is False


def test_static_blog_is_truncated_but_keeps_gpu0() -> None:
    rec = _parse("mi300x-rocm-blogs-amd-smi-overview-static.txt")
    assert rec.truncated is True
    assert len(rec.gpus) == 1
    gpu = rec.gpus[0]
    assert gpu.market_name == "MI300X-O"
    assert gpu.device_id == 0x74A1
    assert gpu.bdf == "0000:05:00.0"
    assert gpu.oam_id == 7


def test_list_reads_bdf_and_uuid_per_gpu() -> None:
    rec = _parse("mi300x-rocm-blogs-amd-smi-overview-list.txt")
    assert rec.command == "list"
    assert rec.truncated is True
    assert [(g.index, g.bdf, g.uuid) for g in rec.gpus] == [
        (0, "0000:05:00.0", "afff74a1-0000-1000-8054-e92b0a5d57c8"),
        (1, "0000:26:00.0", "0aff74a1-0000-1000-805b-ce698de95724"),
        (2, "0000:46:00.0", "97ff74a1-0000-1000-8065-fa81273af9ce"),
    ]


def test_firmware_becomes_a_dict_of_fw_id_to_version() -> None:
    rec = _parse("mi300x-rocm-blogs-amd-smi-overview-firmware.txt")
    assert rec.command == "firmware"
    assert rec.truncated is True
    fw = rec.gpus[0].firmware
    assert len(fw) == 10
    assert fw["CP_MEC1"] == "147"
    assert fw["PSP_SOSDRV"] == "36.02.4C"
    assert fw["TA_XGMI"] == "20.00.01.13"
    assert fw["PM"] == "85.110.0"


def test_metric_reads_power_usage_and_gfx_clock() -> None:
    rec = _parse("mi300x-rocm-blogs-amd-smi-overview-metric.txt")
    assert rec.command == "metric"
    gpu = rec.gpus[0]
    assert gpu.power_w == 234.0
    assert gpu.gfx_util_pct == 100.0
    assert gpu.mem_util_pct == 0.0
    assert gpu.gfx_clock_mhz == 2102.0


def test_metric_ecc_totals_are_zero_in_the_real_output() -> None:
    gpu = _parse("unknown-amdsmi-docs-ras-metric-ecc.txt").gpus[0]
    assert (gpu.ecc_correctable, gpu.ecc_uncorrectable, gpu.ecc_deferred) == (0, 0, 0)


def test_derived_ecc_uncorrectable_count_of_one_is_reported() -> None:
    gpu = _parse("unknown-amdsmi-docs-ras-metric-ecc-uncorrectable-1.txt", DERIVED).gpus[0]
    assert gpu.ecc_uncorrectable == 1
    assert gpu.ecc_correctable == 0


def test_monitor_putm_reads_eight_rows_with_units() -> None:
    rec = _parse("mi300x-rocm-blogs-amd-smi-overview-monitor-putm.txt")
    assert rec.command == "monitor"
    assert [g.power_w for g in rec.gpus] == [182.0, 143.0, 117.0, 116.0, 118.0, 118.0, 116.0, 118.0]
    assert rec.gpus[0].temperature_hotspot_c == 42.0
    assert rec.gpus[0].temperature_memory_c == 41.0
    assert rec.gpus[0].gfx_util_pct == 83.0
    assert rec.gpus[0].gfx_clock_mhz == 1613.0
    assert rec.gpus[1].mem_clock_mhz == 1173.0


def test_monitor_with_vram_columns() -> None:
    rec = _parse("mi300x-x8-amdsmi-changelog-6.1.0-monitor-ptumv.txt")
    assert len(rec.gpus) == 8
    assert {g.vram_total_mib for g in rec.gpus} == {196300}
    assert rec.gpus[4].vram_used_mib == 284
    assert rec.gpus[7].temperature_hotspot_c == 34.0


def test_topology_text_gives_56_xgmi_links_with_weight_15_and_one_hop() -> None:
    rec = _parse("mi300x-x8-amdsmi-changelog-6.1.0-topology.txt")
    assert rec.command == "topology"
    assert len(rec.gpus) == 8
    assert rec.gpus[7].bdf == "0000:df:00.0"
    assert len(rec.links) == 56
    assert {link.link_type for link in rec.links} == {"XGMI"}
    assert {link.weight for link in rec.links} == {15}
    assert {link.hops for link in rec.links} == {1}
    assert all(link.accessible for link in rec.links)
    assert {link.numa_bandwidth for link in rec.links} == {"50000-50000"}


def test_truncated_topology_keeps_access_and_weight_only() -> None:
    rec = _parse("mi300x-rocm-blogs-amd-smi-overview-topology.txt")
    assert rec.truncated is True
    assert len(rec.links) == 56
    first = rec.links[0]
    assert (first.src_bdf, first.dst_bdf, first.weight, first.accessible) == (
        "0000:05:00.0", "0000:26:00.0", 15, True)
    assert first.link_type is None and first.hops is None


def test_xgmi_table_reads_bit_rate_and_per_peer_counters() -> None:
    rec = _parse("mi300x-x8-amdsmi-changelog-6.1.0-xgmi.txt")
    assert rec.command == "xgmi"
    assert len(rec.xgmi) == 56
    assert {x.bit_rate_gbit_s for x in rec.xgmi} == {32.0}
    assert {x.max_bandwidth_gbit_s for x in rec.xgmi} == {512.0}
    gpu3_to_gpu2 = next(x for x in rec.xgmi if x.src_gpu == 3 and x.dst_bdf == "0000:38:00.0")
    assert (gpu3_to_gpu2.read_kb, gpu3_to_gpu2.write_kb) == (2, 1)


def test_truncated_xgmi_blog_reads_the_two_gpus_shown() -> None:
    rec = _parse("mi300x-rocm-blogs-amd-smi-overview-xgmi.txt")
    assert rec.truncated is True
    assert {x.src_gpu for x in rec.xgmi} == {0, 1}
    gpu0_to_c6 = next(x for x in rec.xgmi if x.src_gpu == 0 and x.dst_bdf == "c6:00.0")
    assert (gpu0_to_c6.read_kb, gpu0_to_c6.write_kb) == (9774, 1134)


def test_boxed_default_view_mi300x() -> None:
    rec = _parse("mi300x-hipfile-docs-known-issues-default-view-7.1.1.txt")
    assert rec.command == "default"
    assert (rec.tool_version, rec.driver_version, rec.rocm_version) == ("26.2.0+021c61fc", "6.16.6", "7.1.1")
    (gpu,) = rec.gpus
    assert (gpu.index, gpu.bdf, gpu.market_name) == (0, "0000:a6:00.0", "AMD Instinct MI300X")
    assert (gpu.power_w, gpu.power_cap_w, gpu.temperature_hotspot_c) == (129.0, 750.0, 46.0)
    assert (gpu.vram_used_mib, gpu.vram_total_mib) == (283, 196592)
    assert gpu.ecc_uncorrectable == 0
    assert gpu.oam_id == 2
    assert (gpu.compute_partition, gpu.memory_partition) == ("SPX", "NPS1")


def test_boxed_default_view_vf_and_two_gpu_host_with_processes() -> None:
    vf = _parse("mi300x-vf-hipfile-docs-known-issues-default-view-7.2.1.txt")
    assert vf.gpus[0].market_name == "AMD Instinct MI300X VF"
    assert vf.gpus[0].vram_total_mib == 196288
    two = _parse("rx9070xt-x2-rocm-issue5812-default-view-7.1.1.txt")
    assert [g.bdf for g in two.gpus] == ["0000:04:00.0", "0000:07:00.0"]
    assert [g.vram_used_mib for g in two.gpus] == [84, 347]
    assert two.gpus[1].gfx_util_pct == 3.0
    assert two.gpus[0].compute_partition is None  # "N/A" partition mode


def test_json_topology_6_1_1_schema_links_over_pcie() -> None:
    rec = _parse("unknown-2gpu-pcie-amdsmi-changelog-6.1.1-topology-json.txt")
    assert rec.output_format == "json"
    assert rec.command == "topology"
    assert [g.bdf for g in rec.gpus] == ["0000:08:00.0", "0000:44:00.0"]
    assert [(x.src_gpu, x.dst_gpu, x.link_type, x.accessible) for x in rec.links] == [
        (0, 1, "PCIE", False), (1, 0, "PCIE", False)]


def test_json_value_unit_objects_are_unwrapped() -> None:
    rec = _parse("unknown-amdsmi-changelog-6.1.0-metric-power-json.txt")
    assert rec.gpus[0].power_w == 10.0


def test_json_gpu_data_wrapper_of_7x_is_unwrapped() -> None:
    # shape of 7.x --json; the numbers are taken from the 6.1.0 changelog fixture above
    text = '{"gpu_data": [{"gpu": 0, "power": {"socket_power": {"value": 10, "unit": "W"}}}]}'
    assert amd_smi.parse(text).gpus[0].power_w == 10.0


def test_jq_filtered_json_fails_with_a_hint() -> None:
    with pytest.raises(ParseError, match="filtered output"):
        _parse("mi300x-rocm-blogs-amd-smi-overview-static-json-jq-vram.txt")


def test_rejects_random_text() -> None:
    with pytest.raises(ParseError) as err:
        amd_smi.parse("lorem ipsum dolor\nsit amet\n")
    assert err.value.tool == "amd-smi"
    assert err.value.line_no == 1


def test_rejects_rocm_smi_output() -> None:
    text = (FIXTURES / "real" / "rocm-smi" / "mi300x-x4-thamada-gls-concise.txt").read_text()
    with pytest.raises(ParseError, match="amd-smi"):
        amd_smi.parse(text)


def test_monitor_row_with_a_missing_cell_names_the_line() -> None:
    lines = (REAL / "mi300x-rocm-blogs-amd-smi-overview-monitor-putm.txt").read_text().splitlines()
    assert "1173 MHz" in lines[3]  # GPU 1's MEM_CLOCK
    lines[3] = lines[3].replace("1173 MHz", "")
    with pytest.raises(ParseError) as err:
        amd_smi.parse("\n".join(lines))
    assert err.value.line_no == 4


def test_full_7x_metric_on_an_apu_reads_edge_temperature_vram_and_ecc() -> None:
    rec = _parse("ryzen-ai-apu-blog-metric-7x.txt")
    assert rec.command == "metric"
    (gpu,) = rec.gpus
    assert gpu.temperature_edge_c == 28.0
    assert gpu.temperature_hotspot_c is None  # HOTSPOT: N/A
    assert (gpu.vram_total_mib, gpu.vram_used_mib) == (65536, 1512)
    assert (gpu.ecc_correctable, gpu.ecc_uncorrectable, gpu.ecc_deferred) == (0, 0, 0)
    assert gpu.power_w is None  # SOCKET_POWER: N/A
    assert gpu.xgmi_error_status is None  # XGMI_ERR: N/A


def test_7x_monitor_short_column_names_with_all_values_na() -> None:
    rec = _parse("ryzen-ai-apu-blog-monitor-putm-7x.txt")
    assert rec.command == "monitor"
    (gpu,) = rec.gpus
    assert gpu.index == 0
    assert (gpu.power_w, gpu.power_cap_w, gpu.temperature_hotspot_c, gpu.gfx_util_pct) == (None, None, None, None)
