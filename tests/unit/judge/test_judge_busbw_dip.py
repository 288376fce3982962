"""The bus-bandwidth dip rule on saved rccl-tests runs (issue 31, class 4): CVS check_bw_dip's 5 % between the
reference sizes, CVS's 10 % report flag elsewhere, so a healthy two-node plateau at the largest sizes passes and
a halved or slowed run still fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from validation.cli import main

FIX = Path(__file__).resolve().parents[2] / "fixtures"
REAL_2NODE = FIX / "real/rccl-tests/mi300x-16gpu-2node-hisohara-ai-scripts-aac10-allreduce-rocm642.txt"
DERIVED = FIX / "derived/rccl-tests"


def dip(capsys: pytest.CaptureFixture[str], path: Path, gpus: int) -> tuple[int, dict]:
    rc = main(["judge", "--profile", "mi300x", "--gpus", str(gpus), "--json", str(path)])
    doc = json.loads(capsys.readouterr().out)
    (verdict,) = [v for f in doc["files"] for v in f["verdicts"] if v["metric"] == "collective_busbw_dip_max_fraction"]
    return rc, verdict


def test_the_healthy_two_node_run_passes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdict = dip(capsys, REAL_2NODE, 16)
    assert rc == 0 and verdict["status"] == "pass"
    assert "no drop over 0.05 between the reference sizes 8 GiB, 16 GiB" in verdict["reason"]


def test_a_two_node_plateau_5_6_percent_below_its_peak_is_named_not_failed(capsys: pytest.CaptureFixture[str]) -> None:
    rc, verdict = dip(capsys, DERIVED / "mi300x-16gpu-2node-aac10-allreduce-plateau-5.6pct-from-1g.txt", 16)
    assert rc == 0 and verdict["status"] == "pass"
    assert "323.36 -> 305.25 GB/s from 512 MiB to 1 GiB (-5.6%)" in verdict["reason"]
    assert verdict["measured"] == pytest.approx(1 - 305.25 / 323.36, abs=1e-6)


@pytest.mark.parametrize("name, gpus, step", [
    ("mi300x-16gpu-2node-aac10-allreduce-drop-6pct-at-16g.txt", 16,
     "356.0 -> 334.64 GB/s from 8 GiB to 16 GiB (-6.0%, reference sizes)"),
    ("mi300x-16gpu-2node-aac10-allreduce-drop-12pct-from-1g.txt", 16,
     "323.36 -> 284.56 GB/s from 512 MiB to 1 GiB (-12.0%)"),
    ("mi300x-16gpu-2node-aac10-allreduce-slow-node-gpu-60.txt", 16,
     "323.36 -> 170.08 GB/s from 512 MiB to 1 GiB (-47.4%)"),
    ("mi300x-8gpu-aac8-allreduce-halved-busbw-1g-up.txt", 8,
     "309.04 -> 156.68 GB/s from 512 MiB to 1 GiB (-49.3%)"),
])
def test_a_drop_at_the_reference_sizes_or_beyond_the_report_flag_fails_naming_it(
        capsys: pytest.CaptureFixture[str], name: str, gpus: int, step: str) -> None:
    rc, verdict = dip(capsys, DERIVED / name, gpus)
    assert rc == 1 and (verdict["status"], verdict["code"]) == ("fail", "RF-RCCL-DIP")
    assert step in verdict["reason"]


def test_a_healthy_published_two_node_nccl_run_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """A real 16-GPU, two-node H100 all_reduce (GCP A3 Mega, public): no false FAIL from the dip rule."""
    path = FIX / "real/nccl-tests/h100-16gpu-2node-a3mega-ztan-allreduce.txt"
    rc = main(["judge", "--profile", "h100", "--gpus", "16", "--json", str(path)])
    doc = json.loads(capsys.readouterr().out)
    (verdict,) = [v for f in doc["files"] for v in f["verdicts"] if v["metric"] == "collective_busbw_dip_max_fraction"]
    assert rc == 0 and doc["status"] == "pass" and verdict["status"] == "pass"
