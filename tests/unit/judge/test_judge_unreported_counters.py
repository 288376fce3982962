"""An unreported counter is never a pass (issue 31, class 6): amd-smi's N/A, a missing counter and a zero
differ, and an MI300X's xGMI link errors are judged from the XGMI_WAFL RAS block, since its XGMI_ERR reads
N/A (ROCm/rocm-systems#11468)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recorded_host import RecordedHost

from validation.checks import test_gpu_health as health
from validation.checks.outcome import CheckFailure
from validation.cli import main
from validation.parsers import amd_smi
from validation.targets import load_targets

FIX = Path(__file__).resolve().parents[2] / "fixtures"
WAFL = FIX / "real/amd-smi/unknown-xgmi-amdsmi-changelog-6.1.2-metric-ecc-blocks-xgmi-wafl.txt"
MI300X_METRIC = FIX / "real/amd-smi/mi300x-amdsmi-changelog-7.1.0-metric-elided-xgmi-err-na.txt"
DERIVED = FIX / "derived/amd-smi"


def judge(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, list[dict]]:
    rc = main(["judge", "--profile", "mi300x", "--gpus", "1", "--json", f"amd-smi:{path}"])
    doc = json.loads(capsys.readouterr().out)
    return rc, [v for f in doc["files"] for v in f["verdicts"]]


def test_the_parser_tells_n_a_from_missing_and_zero() -> None:
    gpu = amd_smi.parse(MI300X_METRIC.read_text()).gpus[0]
    assert gpu.xgmi_error_status is None and "xgmi_error_status" in gpu.not_available
    assert (gpu.ecc_uncorrectable, gpu.xgmi_wafl_uncorrectable) == (0, None)  # zero; missing (elided)
    assert "xgmi_wafl_uncorrectable" not in gpu.not_available
    wafl = amd_smi.parse(WAFL.read_text()).gpus[0]
    assert (wafl.xgmi_wafl_correctable, wafl.xgmi_wafl_uncorrectable, wafl.not_available) == (0, 0, ())


def test_zero_xgmi_wafl_errors_pass_with_the_basis(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdicts = judge(capsys, WAFL)
    (xgmi,) = [v for v in verdicts if v["metric"] == "xgmi_error_count"]
    assert rc == 0 and xgmi["status"] == "pass" and xgmi["subject"] == "gpu0 XGMI_WAFL"
    assert "rocm-systems#11468" in xgmi["reason"]


def test_an_mi300x_xgmi_err_of_n_a_is_not_reported_and_says_what_to_read(capsys: pytest.CaptureFixture[str]) -> None:
    for path in (MI300X_METRIC, DERIVED / "mi300x-amdsmi-changelog-7.1.0-metric-xgmi-err-na-only.txt"):
        rc, verdicts = judge(capsys, path)
        (xgmi,) = [v for v in verdicts if v["metric"] == "xgmi_error_count"]
        assert rc == 1 and (xgmi["status"], xgmi["code"]) == ("error", "RF-NOT-REPORTED")
        assert "XGMI_ERR as N/A" in xgmi["reason"] and "amd-smi metric --ecc-blocks" in xgmi["reason"]


@pytest.mark.parametrize("name, status, code, metric", [
    ("unknown-xgmi-amdsmi-changelog-6.1.2-ecc-blocks-xgmi-wafl-uncorrectable-2.txt", "fail", "RF-XGMI-ERRORS",
     "xgmi_error_count"),
    ("unknown-xgmi-amdsmi-changelog-6.1.2-ecc-blocks-xgmi-wafl-na.txt", "error", "RF-NOT-REPORTED", "xgmi_error_count"),
    ("unknown-amdsmi-docs-ras-metric-ecc-uncorrectable-na.txt", "error", "RF-NOT-REPORTED", "ecc_uncorrectable_count"),
])
def test_an_error_counter_that_is_not_zero_or_is_n_a_never_passes(capsys: pytest.CaptureFixture[str], name: str,
                                                                 status: str, code: str, metric: str) -> None:
    rc, verdicts = judge(capsys, DERIVED / name)
    (counter,) = [v for v in verdicts if v["metric"] == metric]
    assert rc == 1 and (counter["status"], counter["code"]) == (status, code)
    assert counter["subject"].startswith("gpu0")


def test_the_health_check_fails_an_xgmi_err_of_n_a_without_xgmi_wafl_counters() -> None:
    host = RecordedHost(every_path_exists=True, answers={
        "amd-smi metric": "derived/amd-smi/mi300x-amdsmi-changelog-7.1.0-metric-xgmi-err-na-only.txt"})
    with pytest.raises(CheckFailure) as err:
        health.test_ecc_and_xgmi_error_counters_are_zero(host, 1, load_targets("mi300x"), lambda *a, **k: None)
    assert err.value.code == "RF-NOT-REPORTED" and "gpu0 XGMI_ERR" in str(err.value)


def test_an_nvidia_ecc_count_printed_n_a_is_not_reported(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["judge", "--profile", "h200", "--gpus", "1", "--json",
               str(FIX / "derived/nvidia-smi/h200-x1-table-ecc-n-a.txt")])
    verdicts = [v for f in json.loads(capsys.readouterr().out)["files"] for v in f["verdicts"]]
    (ecc,) = [v for v in verdicts if v["metric"] == "ecc_uncorrectable_count"]
    assert rc == 1 and (ecc["status"], ecc["code"]) == ("error", "RF-NOT-REPORTED")
