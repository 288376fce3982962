"""RAS signals in validate and in the health mode (issue 33, item 1): CPER records, bad pages, PCIe AER and
machine checks, PCIe replay/NAK/recovery and xGMI counter growth, each failing with its own code and naming
the GPU.

MOCK where it must be, said plainly: no GPU exists here, so the checks get RecordedHost
(tests/helpers/recorded_host.py) answering with real outputs (tests/fixtures/real/*/SOURCES.md), or with the
lab's amd-smi stand-in (tests/integration/standins/amd_smi_standin.py) run for real on a state file: its
outputs are derived from the real formats, and every test that uses it says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from recorded_host import Out, RecordedHost

from validation import parsers, ras
from validation.checks import test_gpu_health as validate_checks
from validation.checks import test_health as checks
from validation.checks.outcome import CheckFailure
from validation.health_state import HealthState
from validation.parsers import amd_smi_ras, dmesg

STANDIN = Path(__file__).resolve().parents[2] / "integration" / "standins" / "amd_smi_standin.py"
AMD_SPEC = {"validation_gpu_count": 8, "validation_gpu_vendor": "amd"}
REAL = "real"


def record(*_: object, **__: object) -> None:
    return None


def standin(state_file: Path, *args: str, proc: Path | None = None) -> str:
    env = {**os.environ, "AMD_SMI_STANDIN_STATE": str(state_file)}
    env |= {"AMD_SMI_STANDIN_PROC": str(proc)} if proc else {}
    out = subprocess.run([sys.executable, str(STANDIN), *args], capture_output=True, text=True, check=True,
                         env=env, timeout=30)
    return out.stdout


def fake_proc(root: Path, boot_id: str, pid1_start: int) -> Path:
    """/proc as the stand-in reads a boot: the kernel's boot_id and PID 1's start time (field 22)."""
    (root / "sys" / "kernel" / "random").mkdir(parents=True, exist_ok=True)
    (root / "sys" / "kernel" / "random" / "boot_id").write_text(f"{boot_id}\n")
    (root / "1").mkdir(exist_ok=True)
    (root / "1" / "stat").write_text(f"1 (systemd) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 {pid1_start} "
                                     "100 200 18446744073709551615\n")
    return root


class StandinHost(RecordedHost):
    """RecordedHost whose amd-smi is the lab stand-in run on `state` (derived outputs, real formats)."""

    def __init__(self, state: Path, **kwargs: object) -> None:
        super().__init__({}, tools={"amd-smi"}, **kwargs)    # type: ignore[arg-type]
        self.state = state

    def run(self, command: str) -> Out:
        if "amd-smi " in command:
            argv = command.split("amd-smi ", 1)[1].split()
            return Out(0, standin(self.state, *argv))
        return super().run(command)


def inject(path: Path, **faults: object) -> Path:
    path.write_text(json.dumps(faults))
    return path


# --- the stand-in's outputs go through the real parsers ------------------------------------------------

def test_standin_outputs_parse_with_the_parsers_of_the_real_formats(tmp_path: Path) -> None:
    state = inject(tmp_path / "s.json", cper_fatal=1, cper_gpu=3, afids=[24, 29], bad_pages_retired=2,
                   bad_pages_pending=1, bad_pages_gpu=5, pcie_replay=7, pcie_gpu=1, xgmi_wafl=4, xgmi_gpu=6)
    entries = amd_smi_ras.parse_cper(standin(state, "ras", "--cper", "--severity", "all", "--folder",
                                             str(tmp_path / "cper"))).entries
    assert [(e.gpu, e.severity, e.afids) for e in entries] == [(3, "fatal", (24, 29))]
    pages = {p.gpu: p for p in amd_smi_ras.parse_bad_pages(standin(state, "bad-pages")).gpus}
    assert (pages[5].retired, pages[5].pending, pages[0].retired) == (2, 1, 0)
    for view in (["metric", "--pcie", "--ecc-blocks", "--json"], ["metric", "--pcie", "--ecc-blocks"]):
        gpus = {g.index: g for g in parsers.parse("amd-smi", standin(state, *view)).gpus}
        assert gpus[1].pcie_errors["replay_count"] == 7 and gpus[0].pcie_errors["replay_count"] == 0
        assert gpus[6].xgmi_wafl_correctable == 4


def test_standin_transient_faults_vanish_on_a_new_boot_and_persistent_ones_stay(tmp_path: Path) -> None:
    transient = inject(tmp_path / "t.json", cper_fatal=1, transient=True, boot="an-earlier-boot 17")
    assert amd_smi_ras.parse_cper(standin(transient, "ras", "--cper")).entries == ()
    assert "cper_fatal" not in json.loads(transient.read_text())
    persistent = inject(tmp_path / "p.json", bad_pages_retired=3, boot="an-earlier-boot 17")
    assert amd_smi_ras.parse_bad_pages(standin(persistent, "bad-pages")).gpus[0].retired == 3


def test_standin_transient_faults_vanish_on_a_lab_hosts_reboot_where_the_boot_id_stays(tmp_path: Path) -> None:
    """A lab host shares the machine's kernel: its reboot keeps boot_id and starts a new PID 1."""
    state = inject(tmp_path / "t.json", cper_fatal=1, transient=True)       # the injector wrote no boot
    before = fake_proc(tmp_path / "proc", "the-machines-boot", 4242)
    for _ in range(2):                                                       # the same boot: still there
        assert len(amd_smi_ras.parse_cper(standin(state, "ras", "--cper", proc=before)).entries) == 1
    assert json.loads(state.read_text())["boot"] == "the-machines-boot 4242"
    after = fake_proc(tmp_path / "proc", "the-machines-boot", 9001)          # rebooted: a new PID 1
    assert amd_smi_ras.parse_cper(standin(state, "ras", "--cper", proc=after)).entries == ()
    assert json.loads(state.read_text()) == {"boot": "the-machines-boot 9001", "transient": True}


# --- validate -------------------------------------------------------------------------------------------

def test_validate_fails_a_fatal_cper_record_naming_the_gpu_and_its_afid() -> None:
    fixture = f"{REAL}/amd-smi-ras/mi300-host-mxgpu-docs-cli-usage-ras-cper-fatal-afid24-29.txt"
    host = RecordedHost({"amd-smi ras": fixture}, tools={"amd-smi"})
    with pytest.raises(CheckFailure) as err:
        validate_checks.test_no_gpu_has_a_fatal_cper_record(host, 8, record)
    assert err.value.code == "RF-CPER-FATAL"
    assert "gpu1: 1 fatal CPER record(s), last 07/10/2025 09:04:15 fatal-2.cper, AFID 24, AFID 29" in err.value.message
    assert "AFID Event List" in err.value.message and "drain the node at once" in err.value.hint


def test_validate_records_bad_pages_and_passes_none_found() -> None:
    fixture = f"{REAL}/amd-smi-ras/mi300x-x8-rocm-blogs-amd-smi-overview-bad-pages.txt"
    host = RecordedHost({"amd-smi bad-pages": fixture}, tools={"amd-smi"})
    with pytest.raises(CheckFailure) as err:       # the real view is cut after two GPUs: no pass from it
        validate_checks.test_no_gpu_has_pages_pending_retirement(host, 8, record)
    assert err.value.code == "RF-INCOMPLETE-OUTPUT"


def test_validate_fails_pending_pages_and_says_when_amd_smi_has_no_ras(tmp_path: Path) -> None:
    host = StandinHost(inject(tmp_path / "s.json", bad_pages_pending=2, bad_pages_gpu=4))   # derived (stand-in)
    with pytest.raises(CheckFailure) as err:
        validate_checks.test_no_gpu_has_pages_pending_retirement(host, 8, record)
    assert err.value.code == "RF-BAD-PAGES" and "gpu4: 2 page(s) pending retirement" in err.value.message
    old = RecordedHost({}, tools={"amd-smi"})
    old.run = lambda command: Out(2, "", "amd-smi: error: argument : invalid choice: 'ras'")  # type: ignore[method-assign]
    with pytest.raises(CheckFailure) as err:
        validate_checks.test_no_gpu_has_a_fatal_cper_record(old, 8, record)
    assert err.value.code == "RF-NOT-REPORTED" and "CPER records cannot be read" in err.value.message


@pytest.mark.parametrize("fixture, code", [
    ("real/dmesg/mi300x-x8-rocm-issue4021-c28-qcm-fence-athub-apei-pcie-aer.txt", "RF-PCIE-AER-FATAL"),
    ("real/dmesg/sandy-bridge-rasdaemon-issue155-dmesg-tail-mce-machine-check-events.txt", "RF-MCE"),
])
def test_validate_kernel_log_fails_fatal_aer_and_machine_checks(fixture: str, code: str) -> None:
    host = RecordedHost({"dmesg": fixture})
    with pytest.raises(CheckFailure) as err:
        validate_checks.test_kernel_log_has_no_fatal_pcie_error_or_machine_check(host, 8, record)
    assert err.value.code == code


def test_validate_kernel_log_counts_corrected_aer_without_failing() -> None:
    seen: list[tuple] = []
    host = RecordedHost({"dmesg": "real/dmesg/amd-dgpu-coreboot-issue4-dmesg-aer-corrected-amd-switch-port.txt"})
    validate_checks.test_kernel_log_has_no_fatal_pcie_error_or_machine_check(
        host, 8, lambda *a, **k: seen.append((a[0], a[2], k["status"])))
    assert ("kernel_aer_corrected_reports", 2, "pass") in seen


# --- health mode: deltas since the last run ------------------------------------------------------------

def test_health_a_new_fatal_cper_fails_at_once_and_an_old_one_does_not(tmp_path: Path) -> None:
    state_file = inject(tmp_path / "s.json")
    first = HealthState(tmp_path, "node1")
    checks.test_no_new_cper_records_since_the_last_health_run(StandinHost(state_file), AMD_SPEC, first)
    first.save()
    inject(state_file, cper_fatal=1, cper_gpu=2)                                # derived (stand-in)
    second = HealthState(tmp_path, "node1")
    with pytest.raises(CheckFailure) as err:
        checks.test_no_new_cper_records_since_the_last_health_run(StandinHost(state_file), AMD_SPEC, second)
    assert err.value.code == "RF-CPER-FATAL" and "gpu2: 1 fatal CPER record(s) since the last run (0 -> 1)" in \
        err.value.message
    second.save()
    checks.test_no_new_cper_records_since_the_last_health_run(StandinHost(state_file), AMD_SPEC,
                                                             HealthState(tmp_path, "node1"))
    inject(state_file, cper_fatal=1, cper_gpu=2, cper_nonfatal=3)
    with pytest.raises(CheckFailure) as err:
        checks.test_no_new_cper_records_since_the_last_health_run(StandinHost(state_file), AMD_SPEC,
                                                                 HealthState(tmp_path, "node1"))
    assert err.value.code == "RF-CPER-NONFATAL" and "3 non-fatal CPER record(s)" in err.value.message


def test_health_retired_pages_that_grow_fail_grew_and_pending_ones_fail_bad_pages(tmp_path: Path) -> None:
    state_file = inject(tmp_path / "s.json", bad_pages_retired=1)
    first = HealthState(tmp_path, "node1")
    checks.test_no_bad_pages_pending_or_grown_since_the_last_health_run(StandinHost(state_file), AMD_SPEC, first)
    first.save()
    inject(state_file, bad_pages_retired=3)
    second = HealthState(tmp_path, "node1")
    with pytest.raises(CheckFailure) as err:
        checks.test_no_bad_pages_pending_or_grown_since_the_last_health_run(StandinHost(state_file), AMD_SPEC, second)
    assert err.value.code == "RF-BAD-PAGES-GREW" and "gpu0: retired pages 1 -> 3 (+2)" in err.value.message
    second.save()
    inject(state_file, bad_pages_retired=3, bad_pages_pending=1)
    with pytest.raises(CheckFailure) as err:
        checks.test_no_bad_pages_pending_or_grown_since_the_last_health_run(StandinHost(state_file), AMD_SPEC,
                                                                           HealthState(tmp_path, "node1"))
    assert err.value.code == "RF-BAD-PAGES"


def test_health_pcie_replays_and_xgmi_errors_that_grow_fail_with_their_codes(tmp_path: Path) -> None:
    state_file = inject(tmp_path / "s.json", pcie_replay=5, pcie_gpu=7)
    first = HealthState(tmp_path, "node1")
    checks.test_pcie_and_xgmi_link_errors_did_not_grow_since_the_last_health_run(
        StandinHost(state_file), AMD_SPEC, record, first)
    first.save()
    inject(state_file, pcie_replay=9, pcie_gpu=7)
    second = HealthState(tmp_path, "node1")
    with pytest.raises(CheckFailure) as err:
        checks.test_pcie_and_xgmi_link_errors_did_not_grow_since_the_last_health_run(
            StandinHost(state_file), AMD_SPEC, record, second)
    assert err.value.code == "RF-PCIE-REPLAY" and "gpu7 replay_count 5 -> 9 (+4)" in err.value.message
    second.save()
    inject(state_file, pcie_replay=9, pcie_gpu=7, xgmi_wafl=2, xgmi_gpu=3)
    third = HealthState(tmp_path, "node1")
    with pytest.raises(CheckFailure) as err:
        checks.test_pcie_and_xgmi_link_errors_did_not_grow_since_the_last_health_run(
            StandinHost(state_file), AMD_SPEC, record, third)
    assert err.value.code == "RF-XGMI-ERRORS" and "gpu3 xgmi_wafl_correctable 0 -> 2 (+2)" in err.value.message


def kernel_host(fixture: str, boot: str = "boot-1", uptime: str = "200000.0 1.0") -> RecordedHost:
    return RecordedHost({"dmesg": fixture}, files={"/proc/sys/kernel/random/boot_id": boot, "/proc/uptime": uptime})


def test_health_new_aer_lines_fail_once_and_corrected_ones_fail_pcie_aer(tmp_path: Path) -> None:
    fatal = "real/dmesg/mi300x-x8-rocm-issue4021-c28-qcm-fence-athub-apei-pcie-aer.txt"
    first = HealthState(tmp_path, "node1")
    with pytest.raises(CheckFailure) as err:
        checks.test_no_new_pcie_aer_or_machine_check_in_the_kernel_log_since_the_last_health_run(
            kernel_host(fatal), first)
    assert err.value.code == "RF-PCIE-AER-FATAL" and "0000:99:00.0" in err.value.message
    first.save()
    checks.test_no_new_pcie_aer_or_machine_check_in_the_kernel_log_since_the_last_health_run(  # same lines: not new
        kernel_host(fatal), HealthState(tmp_path, "node1"))
    corrected = "real/dmesg/amd-dgpu-coreboot-issue4-dmesg-aer-corrected-amd-switch-port.txt"
    with pytest.raises(CheckFailure) as err:
        checks.test_no_new_pcie_aer_or_machine_check_in_the_kernel_log_since_the_last_health_run(
            kernel_host(corrected, boot="boot-2"), HealthState(tmp_path, "node2"))
    assert err.value.code == "RF-PCIE-AER" and "0000:01:00.0: 1 corrected PCIe error(s)" in err.value.message


def test_an_aer_line_on_a_gpus_bdf_names_the_gpu() -> None:
    errors = dmesg.hardware_errors(dmesg.parse(
        (Path(__file__).resolve().parents[2] / "fixtures" / "real" / "dmesg" /
         "amd-dgpu-coreboot-issue4-dmesg-aer-corrected-amd-switch-port.txt").read_text()))
    found = ras.kernel_findings(errors, gpu_bdfs={"0000:01:00.0": 0}, nonfatal_fail=True)
    assert found[0].subject == "gpu0 (0000:01:00.0)" and found[0].code == "RF-PCIE-AER"
