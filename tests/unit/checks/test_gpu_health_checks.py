"""The GPU health checks' logic on real tool outputs.

MOCK, said plainly: no AMD GPU exists here, so the testinfra `host` is replaced by a stand-in
that answers each command with a verbatim real output from tests/fixtures/real (8 x MI300X,
ROCm blogs' amd-smi overview) or a derived variant. Everything after the command — parsing,
unit conversion, judging against the mi300x targets, the failure code and the GPU named — is
the real code path of validation/checks/test_gpu_health.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_host import RecordedHost

from validation.checks import test_gpu_health as health
from validation.checks.outcome import CheckFailure
from validation.targets import load_targets

FIX = Path(__file__).resolve().parents[2] / "fixtures"
AMD_SMI = FIX / "real/amd-smi"


@pytest.fixture
def recorded() -> list[tuple]:
    return []


def recorder(store: list[tuple]):
    def add(metric, subject, value, unit, **extra):
        store.append((metric, subject, value, unit, extra.get("status")))
    return add


def test_vram_of_every_mi300x_clears_192_gb(recorded: list) -> None:
    host = RecordedHost(every_path_exists=True, answers={
        "amd-smi monitor": "real/amd-smi/mi300x-x8-amdsmi-changelog-6.1.0-monitor-ptumv.txt"})
    health.test_every_gpu_has_the_skus_memory(host, 8, load_targets("mi300x"), recorder(recorded))
    assert len(recorded) == 8
    assert {r[4] for r in recorded} == {"pass"}
    assert all(round(r[2], 1) == 205.8 for r in recorded)     # 196300 MiB -> 205.8 GB decimal


def test_the_same_firmware_on_all_gpus_passes_and_a_wrong_pin_names_the_gpus() -> None:
    host = RecordedHost(every_path_exists=True, answers={
        "amd-smi firmware": "real/amd-smi/mi300x-rocm-blogs-amd-smi-overview-firmware.txt"})
    health.test_firmware_is_the_same_on_every_gpu_and_matches_any_pins(host, 8, {})
    with pytest.raises(CheckFailure) as err:
        health.test_firmware_is_the_same_on_every_gpu_and_matches_any_pins(
            host, 8, {"validation_firmware_pins": {"CP_MEC1": "1"}})
    assert err.value.code == "RF-FIRMWARE" and "pinned 1" in str(err.value) and "gpu0" in str(err.value)


def test_one_uncorrectable_ecc_error_fails_naming_the_gpu(recorded: list) -> None:
    host = RecordedHost(every_path_exists=True, answers={
        "--ecc": "derived/amd-smi/unknown-amdsmi-docs-ras-metric-ecc-uncorrectable-1.txt",
        "--xgmi-err": "real/amd-smi/mi300x-rocm-blogs-amd-smi-overview-metric.txt"})
    with pytest.raises(CheckFailure) as err:
        health.test_ecc_and_xgmi_error_counters_are_zero(host, 8, load_targets("mi300x"), recorder(recorded))
    assert err.value.code == "RF-ECC" and "gpu0 ecc_uncorrectable_count 1" in str(err.value)


def test_a_link_trained_at_x8_fails_as_a_downgrade(recorded: list) -> None:
    host = RecordedHost(every_path_exists=True, answers={
        "lspci": "derived/lspci/cx7-lenovo-sd665n-lnksta-x8-downgraded.txt"})
    with pytest.raises(CheckFailure) as err:
        health.test_every_gpu_link_runs_at_its_full_pcie_speed_and_width(host, 8, load_targets("mi300x"),
                                                                          recorder(recorded))
    assert err.value.code == "RF-PCIE-DOWNGRADED" and "03:00.0" in str(err.value)
