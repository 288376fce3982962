"""Completeness and coverage (issue 15): an output cut short never passes and its verdict names what is
missing; a target defined over a range is judged only where the run covers it; no false FAIL where a
healthy run's configuration is not the one a target was measured with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation import extract, parsers
from validation.cli import main
from validation.judge import aggregate
from validation.records import Status
from validation.targets import load_targets

FIX = Path(__file__).resolve().parents[2] / "fixtures"


def judge_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    rc = main(["judge", "--json", *args])
    return rc, json.loads(capsys.readouterr().out)


def verdicts(doc: dict) -> list[dict]:
    return [v for f in doc["files"] for v in f["verdicts"]]


@pytest.mark.parametrize("spec, gpus, missing", [
    ("rccl-tests:derived/rccl-tests/mi300x-8gpu-rocm-blogs-allreduce-cut-after-256b.txt", None,
     "the table stops at 256 B of the 16 GiB its header declares"),
    ("rocminfo:derived/rocminfo/mi300x-augmxnt-cut-after-4-of-8-gpus.txt", "4", "after 4 GPU(s)"),
    ("rocm-smi:derived/rocm-smi/mi300x-augmxnt-concise-cut-after-gpu3.txt", "4", "after 4 GPU(s)"),
    ("amd-smi:derived/amd-smi/mi300x-x8-amdsmi-7.0.0-default-view-cut-after-gpu3.txt", "4", "after 4 GPU(s)"),
])
def test_an_output_cut_in_half_never_passes_and_names_what_is_missing(
        capsys: pytest.CaptureFixture[str], spec: str, gpus: str | None, missing: str) -> None:
    tool, _, path = spec.partition(":")
    args = ["--profile", "mi300x", *(["--gpus", gpus] if gpus else []), f"{tool}:{FIX / path}"]
    rc, doc = judge_json(capsys, *args)
    assert rc == 1 and doc["status"] == "error"
    (cut,) = [v for v in verdicts(doc) if v["code"] == "RF-INCOMPLETE-OUTPUT"]
    assert missing in cut["reason"] and cut["status"] == "error"


def test_amd_smi_static_text_cut_inside_the_last_gpu_is_truncated() -> None:
    record = parsers.parse("amd-smi", (FIX / "derived/amd-smi/mi300a-amdsmi-readme-static-cut-in-gpu3.txt").read_text())
    assert record.truncated is True
    assert [g.index for g in record.gpus] == [0, 1, 2, 3]
    whole = parsers.parse("amd-smi", (FIX / "real/amd-smi/mi300a-amdsmi-cli-readme-static.txt").read_text())
    assert whole.truncated is False


def test_rocm_smi_text_without_its_closing_line_is_truncated_but_json_is_not() -> None:
    cut = parsers.parse("rocm-smi", (FIX / "derived/rocm-smi/mi300x-augmxnt-concise-cut-after-gpu3.txt").read_text())
    whole = parsers.parse("rocm-smi", (FIX / "real/rocm-smi/mi300x-augmxnt-mi300-testing-concise.txt").read_text())
    js = parsers.parse("rocm-smi", (FIX / "real/rocm-smi/mi100-x6-telegraf-testdata-rocm571-json.txt").read_text())
    assert (cut.truncated, whole.truncated, js.truncated) == (True, False, False)


def test_a_complete_run_with_a_snip_only_in_the_launcher_preamble_is_whole() -> None:
    record = parsers.parse("rccl-tests", (FIX / "real/rccl-tests/mi300x-8gpu-hisohara-ai-scripts-aac8-allreduce.txt")
                           .read_text())
    assert (record.truncated, record.rows_elided, record.complete) == (True, False, True)
    assert extract.incompleteness("rccl-tests", record) is None


# --- coverage: the average bus bandwidth is defined over 1 KiB..2 GiB ----------------------------

def test_a_sweep_of_8b_to_128mib_is_not_judged_against_the_1k_2g_average(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIX / "derived/rccl-tests/mi300x-8gpu-rocm-blogs-allreduce-sweep-8b-128m.txt"
    rc, doc = judge_json(capsys, "--profile", "mi300x", str(path))
    (avg,) = [v for v in verdicts(doc) if v["metric"] == "allreduce_avg_busbw_gb_s"]
    assert avg["status"] == "skip" and avg["measured"] == 61.381
    assert "covers 8 B..128 MiB" in avg["reason"] and "1 KiB..2 GiB" in avg["reason"]
    assert rc == 0


def test_a_full_sweep_is_judged_on_the_average_over_exactly_1k_to_2g() -> None:
    record = parsers.parse("rccl-tests", (FIX / "real/rccl-tests/mi300x-8gpu-rocm-blogs-rccl-xgmi-allreduce.txt")
                           .read_text())
    (avg,) = [v for v in extract.collective(record, load_targets("mi300x")) if v.metric == "allreduce_avg_busbw_gb_s"]
    # 1 KiB..2 GiB: 22 sizes x 2 halves; typed sums of the fixture's busbw columns, 1024 B .. 2147483648 B
    oop = [0.14, 0.27, 0.54, 1.08, 2.12, 4.31, 8.33, 16.22, 27.20, 37.59, 66.93, 105.43, 141.91, 175.43, 197.26,
           240.57, 273.66, 294.55, 305.62, 310.46, 314.72, 316.04]
    inp = [0.14, 0.28, 0.56, 1.11, 2.20, 4.38, 8.57, 16.66, 27.72, 38.42, 67.64, 105.35, 56.92, 169.37, 188.66,
           229.38, 266.52, 291.48, 303.85, 309.64, 314.51, 315.94]
    assert avg.measured == pytest.approx((sum(oop) + sum(inp)) / 44, abs=1e-3)
    assert avg.status is Status.PASS and "avg over 1 KiB..2 GiB" in avg.subject


# --- no false FAIL on healthy published runs -----------------------------------------------------

def test_amds_published_8x_mi300x_all_reduce_passes_its_one_size_dip(capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge_json(capsys, "--profile", "mi300x",
                         str(FIX / "real/rccl-tests/mi300x-8gpu-rocm-blogs-rccl-xgmi-allreduce.txt"))
    (dip,) = [v for v in verdicts(doc) if v["metric"] == "collective_busbw_dip_max_fraction"]
    assert dip["status"] == "pass"
    assert "105.35 -> 56.92 GB/s from 2 MiB to 4 MiB, back to 169.37 GB/s at 8 MiB" in dip["reason"]
    assert rc == 0


def test_transferbench_p2p_cpu_to_gpu_is_recorded_not_held_to_the_healthcheck_limit(
        capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = judge_json(capsys, "--profile", "mi300x",
                         f"transferbench:{FIX / 'real/transferbench/mi300x-x8-transferbench-docs-presets-p2p.txt'}")
    to_gpu = [v for v in verdicts(doc) if v["metric"] == "tb_cpu_to_gpu_gb_s"]
    assert len(to_gpu) == 16 and {v["status"] for v in to_gpu} == {"skip"}
    assert "the CPU executes CPU->GPU copies" in to_gpu[0]["reason"]
    xgmi = [v for v in verdicts(doc) if v["metric"] == "xgmi_pair_gb_s"]
    assert len(xgmi) == 56 and {v["status"] for v in xgmi} == {"pass"}
    assert rc == 0


def test_a_16_rank_run_is_recorded_saying_it_spans_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIX / "real/rccl-tests/mi300x-16gpu-2node-hisohara-ai-scripts-aac10-allreduce-rocm642.txt"
    rc, doc = judge_json(capsys, "--profile", "mi300x", str(path))
    (at8,) = [v for v in verdicts(doc) if v["metric"] == "allreduce_busbw_8g_gb_s"]
    assert at8["status"] == "skip" and "spans nodes" in at8["reason"]
    assert "fewer than 8 MI300X GPUs only a fraction" in at8["reason"]  # the reason names both cases
    assert rc == 0


def test_aggregate_of_an_incomplete_record_is_error() -> None:
    path = FIX / "derived/rccl-tests/mi300x-8gpu-rocm-blogs-allreduce-cut-after-256b.txt"
    record = parsers.parse("rccl-tests", path.read_text())
    assert aggregate(extract.verdicts_for("rccl-tests", record, load_targets("mi300x"))) is Status.ERROR
