"""`rocm-fleet judge`: saved real outputs pass, derived-degraded ones fail naming the GPU or link."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation.cli import main

FIX = Path(__file__).resolve().parents[2] / "fixtures"


def judge(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    rc = main(["judge", "--profile", "mi300x", "--json", *args])
    out = capsys.readouterr().out
    return rc, (json.loads(out) if out.strip().startswith("{") else {})


def failures(doc: dict) -> list[dict]:
    return [v for f in doc["files"] for v in f["verdicts"] if v["status"] == "fail"]


def test_healthy_8_gpu_allreduce_passes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge(capsys, str(FIX / "real/rccl-tests/mi300x-8gpu-hisohara-ai-scripts-aac8-allreduce.txt"))
    assert rc == 0 and doc["status"] == "pass"


def test_halved_bus_bandwidth_fails_at_the_8_gib_target(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge(capsys, str(FIX / "derived/rccl-tests/mi300x-8gpu-aac8-allreduce-halved-busbw-1g-up.txt"))
    assert rc == 1
    low = [v for v in failures(doc) if v["code"] == "RF-RCCL-BUSBW-LOW"]
    assert low and low[0]["metric"] == "allreduce_busbw_8g_gb_s" and low[0]["measured"] < 304 * 0.95


def test_one_wrong_element_is_data_corruption(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge(capsys, str(FIX / "derived/rccl-tests/mi300x-8gpu-aac8-allreduce-wrong1-256m.txt"))
    assert rc == 1
    (wrong,) = [v for v in failures(doc) if v["code"] == "RF-RCCL-WRONG"]
    assert wrong["measured"] == 1 and "268435456" in wrong["subject"]


def test_one_weak_xgmi_pair_fails_and_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge(capsys, "transferbench:" + str(FIX / "derived/transferbench/mi300x-x8-p2p-weak-gpu2-to-gpu5.txt"))
    assert rc == 1
    xgmi = [v for v in failures(doc) if v["metric"] == "xgmi_pair_gb_s"]
    assert [v["subject"] for v in xgmi] == ["gpu2 -> gpu5"]


def test_missing_gpu_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge(capsys, str(FIX / "derived/rocm-smi/mi300x-augmxnt-concise-gpu5-row-removed.txt"))
    assert rc == 1
    (missing,) = failures(doc)
    assert missing["code"] == "RF-GPU-MISSING" and "missing gpu5" in missing["subject"] and missing["measured"] == 7


def test_link_trained_at_x8_is_a_downgrade_naming_the_device(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge(capsys, str(FIX / "derived/lspci/cx7-lenovo-sd665n-lnksta-x8-downgraded.txt"))
    assert rc == 1
    (down,) = failures(doc)
    assert down["code"] == "RF-PCIE-DOWNGRADED" and down["measured"] == 8 and down["subject"].startswith("03:00.0")


def test_one_uncorrectable_ecc_error_fails_the_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge(capsys, str(FIX / "derived/amd-smi/unknown-amdsmi-docs-ras-metric-ecc-uncorrectable-1.txt"))
    assert rc == 1
    (ecc,) = failures(doc)
    assert ecc["code"] == "RF-ECC" and ecc["subject"] == "gpu0"


def test_two_node_run_is_not_judged_against_single_node_targets(capsys: pytest.CaptureFixture[str]) -> None:
    two_node = FIX / "real/rccl-tests/mi300x-16gpu-2node-hisohara-ai-scripts-aac10-allreduce-rocm642.txt"
    rc, doc = judge(capsys, str(two_node))
    assert rc == 0
    statuses = {v["metric"]: v["status"] for f in doc["files"] for v in f["verdicts"]}
    assert statuses["allreduce_busbw_8g_gb_s"] == "skip"      # record only for 16 ranks


def test_garbage_is_no_verdict(tmp_path: Path) -> None:
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nthis is not a tool output\n")
    assert main(["judge", "--profile", "mi300x", str(junk)]) == 2


def test_unknown_sku_is_no_verdict() -> None:
    assert main(["judge", "--profile", "mi999x",
                 str(FIX / "real/rccl-tests/mi300x-8gpu-hisohara-ai-scripts-aac8-allreduce.txt")]) == 2


def test_rvs_gst_is_judged_with_our_own_target_not_rvs_met_flag(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge(capsys, "rvs:" + str(FIX / "real/rvs/mi300x-system-acceptance-docs-gst-single.txt"))
    (gst,) = [v for f in doc["files"] for v in f["verdicts"] if v["metric"] == "gemm_fp8_rand_tflops"]
    assert gst["measured"] == 1687.129 and gst["status"] == "pass"
    assert "28851" in gst["subject"]
    # the docs excerpt is elided ("..."), so the file as a whole cannot pass (issue 15)
    assert rc == 1
    (cut,) = [v for f in doc["files"] for v in f["verdicts"] if v["code"] == "RF-INCOMPLETE-OUTPUT"]
    assert cut["status"] == "error"


def test_skips_are_one_line_per_reason_and_every_failure_keeps_its_own_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The 8-GPU topology gives 56 record-only link weights: one line naming how many links and the value;
    -v lists them all. A failure is never folded into a summary."""
    topology = str(FIX / "real/amd-smi/mi300x-x8-amdsmi-changelog-6.1.0-topology.txt")
    assert main(["judge", "--profile", "mi300x", topology]) == 0
    short = capsys.readouterr().out.splitlines()
    (skip,) = [line for line in short if line.lstrip().startswith("SKIP")]
    assert "topology_weight on 56 subjects (gpu0 -> gpu1 … gpu7 -> gpu6) = 15 weight: record only: no threshold" in skip
    assert main(["judge", "--profile", "mi300x", "-v", topology]) == 0
    assert sum(line.lstrip().startswith("SKIP") for line in capsys.readouterr().out.splitlines()) == 56

    weak = "transferbench:" + str(FIX / "derived/transferbench/mi300x-x8-p2p-weak-gpu2-to-gpu5.txt")
    assert main(["judge", "--profile", "mi300x", weak]) == 1
    out = capsys.readouterr().out
    rc, doc = judge(capsys, weak)
    assert rc == 1 and failures(doc)
    for failure in failures(doc):
        assert failure["reason"] in out
