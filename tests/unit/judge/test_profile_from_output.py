"""`judge` without --profile chooses the profile the outputs' GPUs show, and refuses with the candidates
when they fit several (issue 31, class 7). Evidence typed from the fixtures: the VF rocminfo's Chip ID
0x74b5 and 'AMD Instinct MI300X VF'; the H200 -a log 'Device Id : 0x233510DE'; the thamada rocm-smi -a
'MI3SRIOV' VBIOS with Device ID 0x74a1; hipblaslt-bench v600's 'AMD Radeon Graphics gfx942'.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation.cli import main

FIX = Path(__file__).resolve().parents[2] / "fixtures"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    rc = main(["judge", "--json", *argv])
    captured = capsys.readouterr()
    out = captured.out.strip()
    return rc, (json.loads(out) if out.startswith("{") and rc != 2 else {}), captured.err


@pytest.mark.parametrize("path, profile", [
    ("real/amd-smi/mi300x-x8-rocm-install-docs-ray-default-view-truncated-names-7.0.0.txt", "mi300x"),
    ("real/rocminfo/mi300x-vf-msp-docs-amd-droplet-rocminfo-7.2.4.txt", "mi300x-vf"),
    ("real/nvidia-smi/h200-x1-thamada-gls-nvidia-smi-a.txt", "h200"),
    ("real/rccl-tests/mi300x-8gpu-hisohara-ai-scripts-aac8-allreduce.txt", "mi300x"),
])
def test_an_output_that_names_its_gpu_chooses_the_profile(capsys: pytest.CaptureFixture[str], path: str,
                                                           profile: str) -> None:
    rc, doc, err = run(capsys, str(FIX / path))
    assert rc in (0, 1) and doc["profile"] == profile
    assert f"judging with --profile {profile}, chosen from the outputs" in err


def test_a_view_of_every_gpu_in_cpx_nps4_chooses_that_partition(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc, err = run(capsys, str(FIX / "derived/amd-smi/mi300x-x8-amdsmi-7.0.0-truncated-names-all-cpx-nps4.txt"))
    assert rc == 0 and "--profile mi300x --partition CPX/NPS4" in err
    assert not [v for f in doc["files"] for v in f["verdicts"] if v["metric"] == "gpu_partition"
                and v["status"] != "pass"]


@pytest.mark.parametrize("path, says", [
    # an SR-IOV VBIOS with the bare-metal id: the bare-metal part or its VF
    ("real/rocm-smi/mi300x-x4-thamada-gls-rocm-smi-a.txt", ["more than one profile", "mi300x (", "mi300x-vf ("]),
    # a gfx target alone names a family
    ("real/hipblaslt-bench/mi300x-superbench-test-hipblaslt-v600.txt",
     ["only a GPU family", "gfx942", "mi300x, mi300x-hf, mi300x-vf, mi308x, mi325x"]),
    # a partitioned GPU: 38 CUs, memory mode not shown
    ("derived/rocminfo/mi300x-augmxnt-all-gpus-38-compute-units-cpx.txt",
     ["38 compute units", "whole GPU's 304", "--partition with one of CPX/NPS4"]),
    ("derived/amd-smi/mi300x-x8-amdsmi-7.0.0-default-view-gpu3-cpx-nps4.txt",
     ["several partition modes (CPX/NPS4, SPX/NPS1)"]),
    ("real/rocminfo/mi210-rocm-blogs-roc-profiling-sysinfo.txt", ["no profile fits", "device id 0x740f"]),
])
def test_an_ambiguous_output_is_refused_with_the_candidates(capsys: pytest.CaptureFixture[str], path: str,
                                                            says: list[str]) -> None:
    rc, _, err = run(capsys, str(FIX / path))
    assert rc == 2 and err.startswith("rocm-fleet: error: ") and err.count("\n") == 1
    assert all(s in err for s in says), err


def test_outputs_of_different_skus_in_one_call_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, str(FIX / "real/nvidia-smi/h200-x1-thamada-gls-nvidia-smi-a.txt"),
                     str(FIX / "real/rocminfo/mi300x-augmxnt-mi300-testing-00-system-info.txt"))
    assert rc == 2 and "more than one profile: h200 (" in err and "mi300x (" in err


def test_a_given_profile_is_used_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc, err = run(capsys, "--profile", "mi300x", "--gpus", "4",
                       str(FIX / "real/rocm-smi/mi300x-x4-thamada-gls-rocm-smi-a.txt"))
    assert rc == 0 and doc["profile"] == "mi300x" and "chosen from the outputs" not in err
