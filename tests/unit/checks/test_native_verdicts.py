"""A native tool's finished run becomes a verdict only when something was judged: a real RVS GST
run passes on its numbers, a run whose numbers have no target is recorded and skipped (never a
PASS), and a run that printed nothing the judge reads fails (never a PASS). The runs are given as
RawRun objects because no AMD GPU exists here; the RVS output is AMD's own published one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from validation.checks.outcome import CheckFailure
from validation.checks.test_native_probes import judge_run
from validation.runner import RawRun
from validation.targets import load_targets

# AMD's published run elides lines with "..." (an incomplete record, which fails as such); the
# lines it shows are kept as printed.
GST = "\n".join(line for line in (Path(__file__).resolve().parents[2] / "fixtures" / "real" / "rvs"
                                  / "mi300x-system-acceptance-docs-gst-single.txt").read_text().splitlines()
                if line != "...")
ARGV = ["rvs", "-c", "MI300X-gst_single-all-gpus-at-once.conf"]


def _run(stdout: str, rc: int = 0) -> RawRun:
    return RawRun(argv=tuple(ARGV), rc=rc, stdout=stdout, stderr="", seconds=35.0, timed_out=False)


def _judge(stdout: str, rc: int = 0) -> list[tuple[str, str, Any, str]]:
    recorded: list[tuple[str, str, Any, str]] = []

    def record(metric: str, subject: str, value: Any, unit: str, **kw: Any) -> None:
        recorded.append((metric, subject, value, kw["status"]))

    judge_run("rvs", ARGV, _run(stdout, rc), load_targets("mi300x"), record)
    return recorded


def test_a_published_gst_run_passes_on_its_own_numbers_judged_against_our_targets() -> None:
    assert _judge(GST) == [("gemm_fp8_rand_tflops", "gpu id 28851 (gst-1215Tflops-4K4K8K-rand-fp8)", 1687.129,
                            "pass")]


def test_a_gst_action_of_another_shape_is_recorded_and_skipped_never_passed() -> None:
    # Derived in memory from the real run: the action renamed as newer RVS confs name theirs.
    renamed = GST.replace("gst-1215Tflops-4K4K8K-rand-fp8", "gst-1000Tflops-8K-fp8_r")
    seen: list[tuple[str, Any, str]] = []
    with pytest.raises(pytest.skip.Exception, match="nothing judged, 1 measurement"):
        judge_run("rvs", ARGV, _run(renamed), load_targets("mi300x"),
                  lambda metric, subject, value, unit, **kw: seen.append((metric, value, kw["status"])))
    assert seen == [("gemm_other_shape_tflops", 1687.129, "skip")]


@pytest.mark.parametrize(("rc", "code"), [(0, "RF-NOT-REPORTED"), (1, "RF-TOOL-FAILED")])
def test_a_run_that_printed_nothing_the_judge_reads_fails_by_its_exit_status(rc: int, code: str) -> None:
    header_only = "\n".join(GST.splitlines()[:3])  # the action's name and module, no GFLOPS line
    with pytest.raises(CheckFailure) as failed:
        _judge(header_only, rc)
    assert failed.value.code == code
