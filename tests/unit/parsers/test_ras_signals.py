"""The RAS signals MI300X reports, parsed from real public outputs (SOURCES.md of each folder): CPER records
with their AFIDs, bad pages, PCIe AER and machine checks in the kernel log, PCIe replay/NAK/recovery
counters. Expected values typed from the files."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation import parsers
from validation.errors import ParseError
from validation.parsers import amd_smi_ras, dmesg

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


def text(path: str) -> str:
    return (REAL / path).read_text()


def test_rocm_amd_smi_cper_table_gives_each_gpus_fatal_record_and_afid() -> None:
    record = amd_smi_ras.parse_cper(text("amd-smi-ras/unknown-x8-amdsmi-docs-cli-tool-ras-cper-severity-all-"
                                         "afid30.txt"))
    assert record.command_line == "sudo amd-smi ras --cper --severity all --folder /tmp/cper_dump/"
    assert [e.gpu for e in record.entries] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert {e.severity for e in record.entries} == {"fatal"}
    assert record.entries[7].file_name == "fatal-8.cper" and record.entries[7].afids == (30,)
    assert record.entries[0].timestamp == "2000/06/27 10:45:13"


def test_host_amd_smi_cper_row_with_two_afids_and_lower_case_severity() -> None:
    record = amd_smi_ras.parse_cper(text("amd-smi-ras/mi300-host-mxgpu-docs-cli-usage-ras-cper-fatal-"
                                         "afid24-29.txt"))
    assert [(e.gpu, e.severity, e.afids) for e in record.entries] == [(0, "fatal", (24,)), (1, "fatal", (24, 29))]
    assert record.entries[1].timestamp == "07/10/2025 09:04:15"


def test_a_cper_table_without_rows_is_no_record_and_a_stray_line_is_refused() -> None:
    header = "timestamp            gpu_id  severity             file_name         list of afids\n"
    assert amd_smi_ras.parse_cper(header).entries == ()
    with pytest.raises(ParseError, match="unrecognised line"):      # derived: the table with a foreign line
        amd_smi_ras.parse_cper(header + "Permission denied\n")


def test_mi300x_bad_pages_none_found_are_zero_and_the_cut_is_seen() -> None:
    record = amd_smi_ras.parse_bad_pages(text("amd-smi-ras/mi300x-x8-rocm-blogs-amd-smi-overview-bad-pages.txt"))
    assert [(p.gpu, p.retired, p.pending, p.unreservable) for p in record.gpus] == [(0, 0, 0, 0), (1, 0, 0, 0)]
    assert record.truncated


def test_bad_pages_printed_na_is_not_a_zero() -> None:
    # derived in the test: amd-smi prints N/A when amdsmi_get_gpu_bad_page_info fails (amdsmi_commands.py)
    record = amd_smi_ras.parse_bad_pages("GPU: 0\n    RETIRED: N/A\n    PENDING: N/A\n    UN_RES: N/A\n")
    assert (record.gpus[0].retired, record.gpus[0].pending) == (None, None)


def test_sysfs_bad_pages_count_retired_and_pending() -> None:
    pages = amd_smi_ras.parse_vram_bad_pages(text("sysfs-ras/linux-amdgpu-ras-kernel-doc-gpu-vram-bad-pages-"
                                                  "example.txt"))
    assert (pages.retired, pages.pending, pages.unreservable) == (1, 1, 0)


@pytest.mark.parametrize("name, kinds", [
    pytest.param("radeon-fury-nano-rocm-issue32-dmesg-aer-uncorrected-fatal-root-port.txt",
                 [("aer-fatal", "0000:00:1c.4", 942.18023)], id="old-wording-fatal-on-the-gpus-root-port"),
    pytest.param("amd-dgpu-coreboot-issue4-dmesg-aer-corrected-amd-switch-port.txt",
                 [("aer-corrected", "0000:01:00.0", 4.921244), ("aer-corrected", "0000:00:01.0", 4.959884)],
                 id="corrected-message-received-from-the-gpus-switch-port"),
    pytest.param("sandy-bridge-rasdaemon-issue155-dmesg-tail-mce-machine-check-events.txt",
                 [("mce", None, 1366.830245)], id="machine-check-events-logged"),
    pytest.param("mi300x-x8-rocm-issue4021-c28-qcm-fence-athub-apei-pcie-aer.txt",
                 [("aer-fatal", "0000:99:00.0", 126748.505486), ("aer-fatal", "0000:9a:01.0", 126748.505607)],
                 id="mi300x-firmware-first-ghes-fatal-pcie-sections"),
])
def test_kernel_log_hardware_errors_name_severity_and_device(name: str, kinds: list) -> None:
    errors = dmesg.hardware_errors(dmesg.parse(text(f"dmesg/{name}")))
    assert [(e.kind, e.bdf, e.line.seconds) for e in errors] == kinds


def test_amdgpu_lines_are_no_hardware_error_and_aer_lines_no_gpu_error() -> None:
    record = dmesg.parse(text("dmesg/mi300x-x8-rocm-issue4021-c5-athub-ue-reset-resume-smu.txt"))
    assert dmesg.hardware_errors(record) == ()
    fury = dmesg.parse(text("dmesg/radeon-fury-nano-rocm-issue32-dmesg-aer-uncorrected-fatal-root-port.txt"))
    assert all("AER: Uncorrected" not in line.text for line in dmesg.gpu_errors(fury))


def test_amd_smi_metric_pcie_counters_are_read_per_gpu() -> None:
    one = parsers.parse("amd-smi", text("amd-smi/unknown-amdsmi-changelog-6.1.0-metric-P-pcie-l0-recovery-1.txt"))
    assert one.gpus[0].pcie_errors == {"replay_count": 0, "l0_to_recovery_count": 1, "replay_roll_over_count": 0,
                                       "nak_sent_count": 0, "nak_received_count": 0}
    two = parsers.parse("amd-smi", text("amd-smi/mi3xx-x2-amdsmi-changelog-6.3.0-metric-pcie.txt"))
    assert [g.pcie_errors.get("lc_perf_other_end_recovery") for g in two.gpus] == [0, 0] and two.truncated
