"""nvidia-smi parser against real outputs (tests/fixtures/real/nvidia-smi/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import nvidia_smi

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "nvidia-smi"


def _parse(name: str) -> nvidia_smi.NvidiaSmiRecord:
    return nvidia_smi.parse((REAL / name).read_text())


def test_query_h200_single_gpu() -> None:
    rec = _parse("h200-x1-thamada-gls-nvidia-smi-a.txt")
    assert (rec.view, rec.driver_version, rec.cuda_version, rec.attached_gpus) == ("query", "550.90.12", "12.4", 1)
    (gpu,) = rec.gpus
    assert (gpu.name, gpu.bus_id) == ("NVIDIA H200", "00000000:03:00.0")
    assert gpu.uuid == "GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732"
    assert (gpu.serial, gpu.vbios_version) == ("1753724031847", "96.00.A5.00.03")
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (143771, 1)
    assert (gpu.pcie_gen_max, gpu.pcie_gen_current, gpu.pcie_width_max, gpu.pcie_width_current) == (5, 5, 16, 16)
    assert (gpu.temperature_c, gpu.power_draw_w, gpu.power_limit_w) == (28.0, 74.58, 700.0)
    assert gpu.ecc_mode == "Enabled"
    assert (gpu.ecc_uncorrectable_volatile, gpu.ecc_uncorrectable_aggregate) == (0, 0)
    assert (gpu.remapped_rows_uncorrectable, gpu.remapping_failure) == (0, False)
    assert rec.truncated is False


def test_query_utilization_is_read_under_the_580_drivers_gpu_key() -> None:
    # driver 580.159.04 prints "Utilization / GPU : 99 %" (550 printed "Gpu"), lines 42-43 of each file
    busy = _parse("h200-x1-rocm-fleet-busy-q-utilization-memory-clock-performance-pids.txt")
    idle = _parse("h200-x1-rocm-fleet-idle-q-utilization-memory-clock-performance-pids.txt")
    assert [g.utilization_gpu_pct for g in busy.gpus] == [99.0]
    assert [g.utilization_gpu_pct for g in idle.gpus] == [0.0]


def test_query_h100_sxm_eight_gpus() -> None:
    rec = _parse("h100-sxm-x8-thamada-gls-nvidia-smi-a.txt")
    assert (rec.driver_version, rec.cuda_version, rec.attached_gpus) == ("565.57.01", "12.7", 8)
    assert len(rec.gpus) == 8
    assert {g.name for g in rec.gpus} == {"NVIDIA H100 80GB HBM3"}
    assert {g.memory_total_mib for g in rec.gpus} == {81559}
    assert rec.gpus[0].bus_id == "00000000:18:00.0"
    assert [g.index for g in rec.gpus] == list(range(8))


def test_query_job_view_keeps_the_minor_number_apart_from_the_index() -> None:
    rec = _parse("h100-jdh4-job-data-2023-della-nvidia-smi-a.txt")
    (gpu,) = rec.gpus
    assert (gpu.index, gpu.minor_number) == (0, 7)
    assert gpu.bus_id == "00000000:DB:00.0"
    assert (gpu.power_draw_w, gpu.power_limit_w) == (71.53, 700.0)
    assert rec.driver_version == "560.35.03"


def test_default_table_h200() -> None:
    rec = _parse("h200-x1-thamada-gls-nvidia-smi.txt")
    assert (rec.view, rec.driver_version, rec.cuda_version) == ("table", "550.90.12", "12.4")
    (gpu,) = rec.gpus
    assert (gpu.index, gpu.name, gpu.bus_id, gpu.persistence_mode) == (0, "NVIDIA H200", "00000000:03:00.0", "On")
    assert (gpu.temperature_c, gpu.performance_state, gpu.power_draw_w, gpu.power_limit_w) == (28.0, "P0", 74.0, 700.0)
    assert (gpu.memory_used_mib, gpu.memory_total_mib, gpu.utilization_gpu_pct) == (1, 143771, 0.0)
    assert gpu.ecc_uncorrectable_volatile == 0


def test_query_gpu_csv_with_header_and_elision_marker() -> None:
    rec = _parse("h100-ml-engineering-query-gpu-vbios-csv.txt")
    assert (rec.view, rec.truncated) == ("csv", True)
    assert [(g.name, g.bus_id, g.vbios_version) for g in rec.gpus] == [
        ("NVIDIA H100 80GB HBM3", "00000000:04:00.0", "96.00.89.00.01"),
        ("NVIDIA H100 80GB HBM3", "00000000:8B:00.0", "96.00.89.00.01"),
    ]


def test_query_gpu_csv_noheader_takes_columns_from_the_command_line() -> None:
    lines = (REAL / "h100-ml-engineering-query-gpu-vbios-csv.txt").read_text().splitlines()
    noheader = [lines[0].replace("--format=csv", "--format=csv,noheader"), lines[2]]
    (gpu,) = nvidia_smi.parse("\n".join(noheader)).gpus
    assert (gpu.name, gpu.bus_id, gpu.vbios_version) == ("NVIDIA H100 80GB HBM3", "00000000:04:00.0",
                                                         "96.00.89.00.01")


def test_query_gpu_csv_noheader_without_command_line_is_refused() -> None:
    row = (REAL / "h100-ml-engineering-query-gpu-vbios-csv.txt").read_text().splitlines()[2]
    with pytest.raises(ParseError, match="without a header"):
        nvidia_smi.parse(row + "\n")


def test_rejects_random_text() -> None:
    with pytest.raises(ParseError) as err:
        nvidia_smi.parse("nothing to see here\n")
    assert (err.value.tool, err.value.line_no) == ("nvidia-smi", 1)


def test_rejects_amd_smi_boxed_view() -> None:
    text = (FIXTURES / "real" / "amd-smi" / "mi300x-hipfile-docs-known-issues-default-view-7.1.1.txt").read_text()
    with pytest.raises(ParseError, match="nvidia-smi"):
        nvidia_smi.parse(text)


# --- driver 580 power keys and section views (issue 31, class 5) -----------------------------------------------------

POWER_580 = "rtx3090-x4-garylvov-dev-env-q-d-power-580.txt"
DERIVED = FIXTURES / "derived" / "nvidia-smi"


def test_query_power_draw_is_read_under_the_580_drivers_average_key() -> None:
    # 580.65.06 prints 'Average Power Draw' and 'Instantaneous Power Draw' where 565 printed 'Power Draw'
    rec = _parse(POWER_580)
    assert [g.power_draw_w for g in rec.gpus] == [13.44, 12.98, 9.52, 31.91]
    assert [g.power_limit_w for g in rec.gpus] == [480.0, 420.0, 420.0, 450.0]
    assert rec.driver_version == "580.65.06" and rec.truncated is False


def test_a_section_view_saved_without_its_command_line_is_complete() -> None:
    rec = nvidia_smi.parse((DERIVED / "rtx3090-x4-q-d-power-580-no-command-line.txt").read_text())
    assert rec.command_line is None and len(rec.gpus) == 4 and rec.truncated is False


def test_a_section_view_cut_after_its_last_gpu_line_is_truncated() -> None:
    rec = nvidia_smi.parse((DERIVED / "rtx3090-x4-q-d-power-580-no-command-line-cut-at-gpu3.txt").read_text())
    assert len(rec.gpus) == 4 and rec.truncated is True


def test_a_full_log_without_its_processes_section_is_still_truncated() -> None:
    lines = (REAL / "h200-x1-thamada-gls-nvidia-smi-a.txt").read_text().splitlines()
    cut = lines[:next(i for i, line in enumerate(lines) if line.strip().startswith("Processes"))]
    assert nvidia_smi.parse("\n".join(cut)).truncated is True
