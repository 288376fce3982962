"""GPU process views: every process the tools list becomes a GpuProcess (pid, name, GPU, MiB).

Expectations are typed from the fixtures (tests/fixtures/real/*/SOURCES.md). amd-smi sizes are
binary (its "GB" is GiB: see amd_smi._PROCESS_MEMORY_MIB), so '1.9 GB' is 1.9 x 1024 MiB.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import amd_smi, nvidia_smi, rocm_smi
from validation.records import GpuProcess

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real"
DERIVED = FIXTURES / "derived"


def _amd(name: str, where: Path = REAL) -> amd_smi.AmdSmiRecord:
    return amd_smi.parse((where / "amd-smi" / name).read_text())


def _rocm(name: str, where: Path = REAL) -> rocm_smi.RocmSmiRecord:
    return rocm_smi.parse((where / "rocm-smi" / name).read_text())


def _nv(name: str) -> nvidia_smi.NvidiaSmiRecord:
    return nvidia_smi.parse((REAL / "nvidia-smi" / name).read_text())


def _rows(processes: tuple[GpuProcess, ...]) -> list[tuple[int, str | None, int | None, float | None]]:
    return [(p.pid, p.name, p.gpu, p.vram_mib) for p in processes]


# --- amd-smi process (text) ------------------------------------------------------------------

def test_amd_smi_process_62_non_root_name_is_none_and_vram_in_mib() -> None:
    rec = _amd("unknown-amdsmi-changelog-6.2.0-process-name-na.txt")
    assert rec.command == "process"
    assert _rows(rec.processes) == [(1693982, None, 0, 10.1 * 1024)]


def test_amd_smi_process_62_under_sudo_names_the_process() -> None:
    rec = _amd("unknown-amdsmi-changelog-6.2.0-sudo-process-transferbench.txt")
    assert _rows(rec.processes) == [(1693982, "TransferBench", 0, 10.1 * 1024)]


def test_amd_smi_process_64_vf_reads_gpu0_process() -> None:
    rec = _amd("mi300x-vf-amdsmi-issue130-process-6.4.0.txt")
    assert _rows(rec.processes) == [(2266127, None, 0, 1945.6)]


def test_amd_smi_process_none_detected_on_four_gpus_behind_a_job_notice() -> None:
    rec = _amd("mi300a-x4-rocm-issue4411-process-none-6.3.1.txt")
    assert rec.command == "process"
    assert [g.index for g in rec.gpus] == [0, 1, 2, 3]
    assert rec.processes == ()


# --- amd-smi process --json ------------------------------------------------------------------

def test_amd_smi_process_json_62_two_processes_without_memory_usage() -> None:
    rec = _amd("unknown-amdsmi-changelog-6.2.0-process-json-two-procs.txt")
    assert rec.command == "process"
    # only mem_usage is printed (a total, not VRAM): VRAM is not reported, so None
    assert _rows(rec.processes) == [(420157, "TransferBench", 0, None), (420315, "rvs", 0, None)]


def test_amd_smi_process_json_72_bytes_become_mib_per_gpu() -> None:
    rec = _amd("r9700-x2-rocm-issue5706-process-json-7.2.0.txt")
    assert len(rec.processes) == 8
    by_key = {(p.gpu, p.pid): p for p in rec.processes}
    big = by_key[(1, 213952)]
    assert big.name == "/usr/bin/python3.12"
    assert big.vram_mib == pytest.approx(21008920000 / 2**20, abs=1e-3)
    assert by_key[(0, 213534)].vram_mib == pytest.approx(56000 / 2**20, abs=1e-3)
    assert {p.pid for p in rec.processes} == {213534, 213890, 213952, 213953}
    assert {p.gpu for p in rec.processes} == {0, 1}


# --- amd-smi default view (7.x) --------------------------------------------------------------

def test_amd_smi_default_view_70_lists_rvs_on_every_gpu() -> None:
    rec = _amd("mi300x-x8-amdsmi-changelog-7.0.0-default-view-processes-rvs.txt")
    vram_gb = [2.0, 2.2, 2.3, 2.3, 2.1, 2.0, 2.1, 2.1]
    assert _rows(rec.processes) == [(2427396, "rvs", gpu, pytest.approx(gb * 1024)) for gpu, gb in enumerate(vram_gb)]


def test_amd_smi_default_view_72_mixes_kb_and_gb_and_reads_a_unitless_fan() -> None:
    rec = _amd("r9700-x2-rocm-issue5706-default-view-processes-7.2.0.txt")
    assert len(rec.gpus) == 2
    assert rec.gpus[0].gfx_util_pct == 100.0
    assert rec.gpus[0].market_name == "...Radeon AI PRO R9700"
    rows = _rows(rec.processes)
    assert rows[0] == (213534, "python3.12", 0, pytest.approx(54.7 / 1024, abs=1e-3))
    assert rows[2] == (213952, "python3.12", 0, pytest.approx(19.6 * 1024))
    assert rows[7] == (213953, "python3.12", 1, pytest.approx(19.1 * 1024))


def test_amd_smi_default_view_accepts_the_elevated_permissions_trailer() -> None:
    rec = _amd("mi300x-vf-msp-docs-default-view-trailer-7.2.4.txt")
    assert (rec.tool_version, rec.rocm_version, rec.driver_version) == ("26.2.2+97f5574fe2", "7.2.4", "6.16.13")
    assert [g.market_name for g in rec.gpus] == ["AMD Instinct MI300X VF"]
    assert _rows(rec.processes) == [(1823, None, 0, 0.0), (4212, None, 0, 0.0)]


def test_amd_smi_default_view_refuses_an_unknown_trailer_line() -> None:
    with pytest.raises(ParseError, match="line outside the boxed view") as err:
        _amd("mi300x-vf-msp-docs-default-view-unknown-trailer.txt", DERIVED)
    assert err.value.line_no == 20


def test_amd_smi_default_view_na_name_on_two_radeon_gpus() -> None:
    rec = _amd("rx9070xt-x2-rocm-issue5812-default-view-7.1.1.txt")
    assert _rows(rec.processes) == [(5300, None, 0, 0.0), (5300, None, 1, 0.0)]


@pytest.mark.parametrize("name, gpus", [
    ("mi300x-k8s-dra-driver-docs-default-view-guest-passthrough-7.0.0.txt", 1),
    ("mi300x-x8-rocm-install-docs-ray-default-view-27.0.0.txt", 8),
])
def test_amd_smi_default_view_no_running_processes_found(name: str, gpus: int) -> None:
    rec = _amd(name)
    assert rec.processes == ()
    assert len(rec.gpus) == gpus


def test_amd_smi_default_view_27_one_field_per_header_line() -> None:
    rec = _amd("mi300x-x8-rocm-install-docs-ray-default-view-27.0.0.txt")
    assert (rec.tool_version, rec.driver_version, rec.rocm_version) == ("27.0.0+6b0e43f3", "7.1.0.0", "10.0.0")
    assert rec.gpus[7].bdf == "0000:dd:00.0"


# --- amd-smi monitor -q / --process ----------------------------------------------------------

def test_amd_smi_monitor_q_62_reads_the_gpu_row_and_the_process_table() -> None:
    rec = _amd("unknown-16gb-amdsmi-changelog-6.2.0-monitor-q-rvs.txt")
    (gpu,) = rec.gpus
    assert (gpu.power_w, gpu.gfx_util_pct, gpu.vram_used_mib, gpu.vram_total_mib) == (199.0, 99.0, 1235, 16335)
    assert _rows(rec.processes) == [(1564865, "rvs", 0, pytest.approx(1.1 * 1024))]


def test_amd_smi_monitor_process_64_reads_vram_usage_in_gib() -> None:
    rec = _amd("mi300x-vf-amdsmi-issue130-monitor-process-6.4.0.txt")
    (gpu,) = rec.gpus
    assert (gpu.vram_used_mib, gpu.vram_total_mib) == (round(3.1 * 1024), round(191.7 * 1024))
    assert _rows(rec.processes) == [(2266127, None, 0, pytest.approx(2.8 * 1024))]


def test_amd_smi_monitor_without_process_table_lists_none() -> None:
    assert _amd("mi300x-vf-amdsmi-issue130-monitor-6.4.0.txt").processes == ()


def test_amd_smi_refuses_json_cut_by_head_with_a_hint() -> None:
    with pytest.raises(ParseError, match="ends before the document") as err:
        _amd("r9700-rocm-issue5706-metric-gpu0-json-head40-7.2.0.txt")
    assert "cut" in (err.value.hint or "")


# --- rocm-smi --showpids / --showpidgpus -----------------------------------------------------

def test_rocm_smi_showpids_gpu_column_is_a_count_so_gpu_is_none() -> None:
    rec = _rocm("mi250x-x8gcd-rocm-issue3364-showpids-colabfold.txt")
    assert rec.view == "showpids"
    assert _rows(rec.processes) == [(3458806, "colabfold_batch", None, pytest.approx(1254109184 / 2**20, abs=1e-3))]


@pytest.mark.parametrize("name, pid, proc", [
    ("mi300a-rocm-issue4411-showpids-daemon-6.3.3.txt", 1058463, "<daemon>"),
    ("mi300a-rocm-issue4411-comment1-showpids-kfd-open.txt", 1075718, "kfd_open"),
    ("mi300a-x4-rocm-issue4411-comment6-showpids-kfd-open-6.3.1.txt", 1684258, "kfd_open"),
])
def test_rocm_smi_showpids_lists_a_process_that_only_opened_kfd(name: str, pid: int, proc: str) -> None:
    assert _rows(_rocm(name).processes) == [(pid, proc, None, 0.0)]


def test_rocm_smi_56_showpids_excerpt_with_unknown_memory() -> None:
    rec = _rocm("w6800-rocm-issue2595-showpids-unknown-5.6.0.txt")
    assert [p.pid for p in rec.processes] == [1304, 1423, 964, 992, 962, 9194, 979, 959]
    assert [p.name for p in rec.processes[:3]] == ["gunicorn", "python", "flask"]
    assert {p.vram_mib for p in rec.processes} == {None}
    assert {p.gpu for p in rec.processes} == {None}


def test_rocm_smi_all_view_unknown_process_name_is_none() -> None:
    rec = _rocm("mi300x-x4-thamada-gls-rocm-smi-a.txt")
    assert _rows(rec.processes) == [(1188185, None, None, None), (1188185, None, None, None)]


def test_rocm_smi_showpidgpus_zero_devices() -> None:
    rec = _rocm("mi300a-rocm-issue4411-showpidgpus-6.3.3.txt")
    assert rec.view == "showpidgpus"
    assert _rows(rec.processes) == [(1058463, None, None, None)]


def test_rocm_smi_showpidgpus_lists_one_entry_per_device_index() -> None:
    rec = _rocm("mi300a-rocm-issue4411-showpidgpus-two-devices.txt", DERIVED)
    assert _rows(rec.processes) == [(1058463, None, 0, None), (1058463, None, 1, None)]


# --- nvidia-smi (the views issue 15 added fixtures for) --------------------------------------

def test_nvidia_smi_mig_table_skips_the_mig_box_and_reads_the_process() -> None:
    rec = _nv("h100-mig-gpu-operator-runbook-table-mig-process.txt")
    assert [g.name for g in rec.gpus] == ["NVIDIA H100 80GB HBM3"]
    assert _rows(rec.processes) == [(51445, "/usr/bin/python3", 0, 1668.0)]


def test_nvidia_smi_empty_processes_box_under_load() -> None:
    rec = _nv("a100-sxm4-x2-xtuner-doc-table-empty-process-box.txt")
    assert [g.utilization_gpu_pct for g in rec.gpus] == [100.0, 100.0]
    assert rec.processes == ()


def test_nvidia_smi_apps_keyed_by_gpu_uuid_with_a_not_found_name() -> None:
    rec = _nv("h200-x8-exp23-release-note-query-compute-apps-before-not-found.txt")
    assert rec.view == "apps"
    assert len(rec.processes) == 8
    assert _rows(rec.processes)[7] == (1758887, None, None, 58060.0)
    assert _rows(rec.processes)[2] == (1425258, "python3", None, 105842.0)
    assert {p.bus_id for p in rec.processes} == {None}  # a UUID is not a bus id


def test_nvidia_smi_apps_header_only_is_an_idle_gpu() -> None:
    rec = _nv("rtxpro6000-hami-mig-doc-query-compute-apps-header-only.txt")
    assert (rec.view, rec.processes) == ("apps", ())


def test_nvidia_smi_apps_two_processes_with_one_name() -> None:
    rec = _nv("gb10-llm-d-gpu-kind-query-compute-apps-2-vllm.txt")
    assert _rows(rec.processes) == [(3858903, "VLLM::EngineCore", None, 6265.0),
                                    (3880364, "VLLM::EngineCore", None, 5530.0)]


def test_nvidia_smi_apps_header_only_without_its_command_line_is_still_a_process_list() -> None:
    path = DERIVED / "nvidia-smi" / "rtxpro6000-hami-mig-query-compute-apps-header-only-no-command.txt"
    rec = nvidia_smi.parse(path.read_text())
    assert (rec.view, rec.command_line, rec.processes, rec.gpus) == ("apps", None, (), ())
