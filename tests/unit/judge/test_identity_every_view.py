"""Count, identity and memory from every view that lists GPUs (issue 31, classes 1 and 2).

Values are typed from the fixtures: the ROCm 7.0 default view prints eight '...Instinct MI300X OAM' with
'283/196592 MB'; rocminfo prints 'Compute Unit: 304' per MI300X; the H100 -a log 'Total : 81559 MiB'.
Each derived file's edit is in tests/fixtures/derived/<tool>/SOURCES.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation import extract, identity, parsers
from validation.cli import main
from validation.records import Status
from validation.targets import load_targets

FIX = Path(__file__).resolve().parents[2] / "fixtures"
TRUNCATED = "real/amd-smi/mi300x-x8-rocm-install-docs-ray-default-view-truncated-names-7.0.0.txt"
AUGMXNT = "real/rocminfo/mi300x-augmxnt-mi300-testing-00-system-info.txt"
H100_A = "real/nvidia-smi/h100-sxm-x8-thamada-gls-nvidia-smi-a.txt"


def judged(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict]]:
    rc = main(["judge", "--json", *argv])
    doc = json.loads(capsys.readouterr().out)
    return rc, [v for f in doc["files"] for v in f["verdicts"]]


def failing(verdicts: list[dict]) -> list[tuple[str, str]]:
    return [(v["code"], v["subject"]) for v in verdicts if v["status"] in ("fail", "error")]


def test_the_truncated_name_view_of_eight_healthy_mi300x_passes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdicts = judged(capsys, "--profile", "mi300x", "--gpus", "8", str(FIX / TRUNCATED))
    assert rc == 0 and not failing(verdicts)
    (sku,) = [v for v in verdicts if v["metric"] == "gpu_identity"]
    assert sku["status"] == "pass" and "'...Instinct MI300X OAM' (mi300x)" in sku["reason"]
    (count,) = [v for v in verdicts if v["metric"] == "gpu_count"]
    assert (count["status"], count["measured"]) == ("pass", 8)   # judged although the view has a UEC column
    (ceiling,) = [v for v in verdicts if v["metric"] == "gpu_identity_memory_mib"]
    assert (ceiling["status"], ceiling["measured"]) == ("pass", 196592)


def test_seven_of_eight_gpus_in_a_default_view_with_ecc_fail_naming_the_missing_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdicts = judged(capsys, "--profile", "mi300x", "--gpus", "8",
                          str(FIX / "derived/amd-smi/mi300x-x8-amdsmi-7.0.0-truncated-names-7of8-gpu7-removed.txt"))
    assert rc == 1 and failing(verdicts) == [("RF-GPU-MISSING", "node (amd-smi), missing gpu7")]


def test_a_truncated_name_of_another_gpu_is_a_sku_mismatch(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdicts = judged(capsys, "--profile", "mi300x", "--gpus", "8",
                          str(FIX / "derived/amd-smi/mi300x-x8-amdsmi-7.0.0-truncated-names-gpu0-mi210.txt"))
    assert rc == 1 and failing(verdicts) == [("RF-SKU-MISMATCH", "gpu0 (0000:05:00.0) (amd-smi)")]
    (bad,) = [v for v in verdicts if v["status"] == "fail"]
    assert "'...Instinct MI210 OAM'" in bad["reason"] and "declared mi300x" in bad["reason"]


def test_one_gpu_with_half_its_memory_fails_low_vram(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdicts = judged(capsys, "--profile", "mi300x", "--gpus", "8",
                          str(FIX / "derived/amd-smi/mi300x-x8-amdsmi-7.0.0-truncated-names-gpu3-vram-halved.txt"))
    assert rc == 1 and failing(verdicts) == [("RF-VRAM-LOW", "gpu3 (0000:65:00.0) (amd-smi)")]
    (low,) = [v for v in verdicts if v["status"] == "fail"]
    assert low["measured"] == 103.07                     # 98296 MiB in decimal GB


def test_a_view_filtered_to_one_gpu_records_the_count_instead_of_failing_it() -> None:
    # `amd-smi metric -e --gpu 0` shows the GPU it was asked for, not the node's eight
    record = parsers.parse("amd-smi", (FIX / "derived/amd-smi/unknown-amdsmi-docs-ras-metric-ecc-uncorrectable-1.txt")
                           .read_text())
    (count,) = [v for v in extract.verdicts_for("amd-smi", record, load_targets("mi300x")) if v.metric == "gpu_count"]
    assert count.status is Status.SKIP and "(--gpu 0)" in count.reason


def test_rocminfo_judges_the_compute_units_of_every_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdicts = judged(capsys, "--profile", "mi300x", str(FIX / AUGMXNT))
    (cus,) = [v for v in verdicts if v["metric"] == "compute_unit_count"]
    assert rc == 0 and (cus["status"], cus["measured"]) == ("pass", 304)


def test_rocminfo_with_one_gpu_at_half_its_compute_units_fails_that_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdicts = judged(capsys, "--profile", "mi300x",
                          str(FIX / "derived/rocminfo/mi300x-augmxnt-gpu4-compute-units-halved.txt"))
    assert rc == 1 and failing(verdicts) == [("RF-CU-COUNT", "gpu4 (9d:00.0) (rocminfo)")]


def test_rocminfo_judges_memory_from_its_coarse_grained_pool(capsys: pytest.CaptureFixture[str]) -> None:
    _, verdicts = judged(capsys, "--profile", "mi300x", str(FIX / AUGMXNT))
    (floor,) = [v for v in verdicts if v["metric"] == "vram_per_gpu_gb"]
    assert (floor["status"], floor["measured"]) == ("pass", 206.14)   # 201310208 KB = 196592 MiB


def test_an_h100_with_an_h200s_memory_is_not_an_h100(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdicts = judged(capsys, "--profile", "h100", "--gpus", "8",
                          str(FIX / "derived/nvidia-smi/h100-sxm-x8-gpu0-memory-143771-mib.txt"))
    assert rc == 1 and failing(verdicts) == [("RF-SKU-MISMATCH", "gpu0 (00000000:18:00.0) (nvidia-smi)")]
    (bad,) = [v for v in verdicts if v["status"] == "fail"]
    assert "143771 MiB, more than h100's 81920 MiB" in bad["reason"] and "it fits h200" in bad["reason"]


def test_healthy_h100_and_h200_are_within_their_capacity(capsys: pytest.CaptureFixture[str]) -> None:
    h200 = "real/nvidia-smi/h200-x1-thamada-gls-nvidia-smi-a.txt"
    for sku, count, path in (("h100", "8", H100_A), ("h200", "1", h200)):
        rc, verdicts = judged(capsys, "--profile", sku, "--gpus", count, str(FIX / path))
        ceilings = {v["measured"] for v in verdicts if v["metric"] == "gpu_identity_memory_mib"}
        assert rc == 0 and ceilings == ({81559} if sku == "h100" else {143771})


def test_a_partitioned_profile_records_memory_and_judges_the_partitions_compute_units() -> None:
    profile = load_targets("mi300x", partition="CPX/NPS4")
    # rocm-smi shows every CPX partition of an MI300X with the whole GPU's memory (ROCm/ROCm#4750)
    gpus = [identity.GpuIdentity(subject="gpu0", device_id=0x74A1, compute_units=38, vram_mib=196592, tool="rocminfo")]
    by_metric = {v.metric: v.status for v in identity.judge(gpus, profile)}
    assert by_metric == {"gpu_identity": Status.PASS, "compute_unit_count": Status.PASS,
                         "vram_per_gpu_gb": Status.SKIP}
