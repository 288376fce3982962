"""`rocm-fleet judge` on the newer tool formats of issue 31, class 5: hipblaslt-bench 100200 with
--print_kernel_info, and nvidia-smi 580 section views saved without their command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation.cli import main

FIX = Path(__file__).resolve().parents[2] / "fixtures"
KERNEL_INFO = FIX / "real/hipblaslt-bench/mi350x-hipblaslt-tunning-helper-print-kernel-info-v100200-8192.txt"


def judge(capsys: pytest.CaptureFixture[str], profile: str, *args: str) -> tuple[int, list[dict]]:
    rc = main(["judge", "--profile", profile, "--json", *args])
    doc = json.loads(capsys.readouterr().out)
    return rc, [v for f in doc["files"] for v in f["verdicts"]]


def test_a_print_kernel_info_run_is_recognised_and_judged_for_its_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    """Recognised without naming the tool; an MI350X is no MI300X, so it fails the identity, never passes."""
    rc, verdicts = judge(capsys, "mi300x", str(KERNEL_INFO))
    assert rc == 1
    assert {v["code"] for v in verdicts if v["status"] == "fail"} == {"RF-SKU-MISMATCH"}
    (gemm,) = [v for v in verdicts if v["metric"] == "gemm_other_shape_tflops"]
    assert gemm["measured"] == pytest.approx(1292.11)


@pytest.mark.parametrize("name", ["mi350x-v100200-print-kernel-info-cut-after-solution-index.txt",
                                  "mi350x-v100200-print-kernel-info-cut-after-the-row.txt"])
def test_a_print_kernel_info_run_cut_short_is_incomplete(capsys: pytest.CaptureFixture[str], name: str) -> None:
    rc, verdicts = judge(capsys, "mi300x", str(FIX / "derived/hipblaslt-bench" / name))
    assert rc == 1 and "RF-INCOMPLETE-OUTPUT" in {v["code"] for v in verdicts}


def test_a_580_section_view_without_its_command_is_not_incomplete(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdicts = judge(capsys, "h100", "--gpus", "4",
                         "nvidia-smi:" + str(FIX / "derived/nvidia-smi/rtx3090-x4-q-d-power-580-no-command-line.txt"))
    assert "RF-INCOMPLETE-OUTPUT" not in {v["code"] for v in verdicts}
    rc, verdicts = judge(capsys, "h100", "--gpus", "4", "nvidia-smi:" + str(
        FIX / "derived/nvidia-smi/rtx3090-x4-q-d-power-580-no-command-line-cut-at-gpu3.txt"))
    assert rc == 1 and "RF-INCOMPLETE-OUTPUT" in {v["code"] for v in verdicts}
