"""Fuzz (issue 15): a healthy real output that passes against its own SKU, cut after any line, never
passes on less than it had: it is refused (ParseError / RocmFleetError, exit 2), judged not-PASS
(incomplete, GPUs missing, no closing line), or, where the cut removed only lines no verdict reads (a
trailing '#'), judged exactly as the whole output. A saved view's activity verdicts (validation/
saved_activity.py) are the one allowance: a cut may drop a whole Processes box, which a view may lack
(amd-smi/mi300x-hipfile-docs-known-issues-default-view-7.1.1.txt prints none), so the cut output's
activity verdicts are a subset of the whole's (a cut never invents a process or load) and every other
verdict is the whole's. FUZZ_EXAMPLES raises the example count for a longer local run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from healthy_fixtures import HEALTHY, UNDER_LOAD
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from validation import extract, parsers
from validation.errors import RocmFleetError
from validation.judge import aggregate
from validation.records import Status
from validation.targets import load_targets

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "real"


def _profile(tool: str, record: object, sku: str, gpus: int | None) -> object:
    ranks = getattr(record, "ranks", None)
    return load_targets(sku, gpu_count=gpus or (ranks if tool in ("rccl-tests", "nccl-tests") else None))


def _key(verdicts: list, activity: bool = False) -> list[tuple[str, str, object, str]]:
    return sorted((v.metric, v.subject, v.measured, v.status.value) for v in verdicts
                  if v.metric.startswith("idle_") == activity)


@pytest.mark.parametrize("tool, name, sku, gpus", HEALTHY + UNDER_LOAD,
                         ids=[f"{t}/{n}" for t, n, _, _ in HEALTHY + UNDER_LOAD])
def test_a_healthy_output_cut_after_any_line_never_passes(tool: str, name: str, sku: str, gpus: int | None) -> None:
    lines = (FIX / tool / name).read_text().splitlines(keepends=True)
    content = [i for i, line in enumerate(lines) if line.strip() and not line.startswith("$ ")]
    whole = parsers.parse(tool, "".join(lines))
    whole_verdicts = extract.saved_verdicts(tool, whole, _profile(tool, whole, sku, gpus))
    expected, activity = _key(whole_verdicts), _key(whole_verdicts, activity=True)

    @settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(content[:-1] or [0]))
    def check(last_kept: int) -> None:
        kept = lines[:last_kept + 1]
        if not any(line.strip() for line in lines[last_kept + 1:]):
            return  # only blank lines were cut: the output is whole
        try:
            record = parsers.parse(tool, "".join(kept))
            profile = _profile(tool, record, sku, gpus)
            verdicts = extract.saved_verdicts(tool, record, profile)
        except RocmFleetError:
            return
        if aggregate(verdicts) in (Status.PASS, Status.SKIP, Status.WARN):
            assert _key(verdicts) == expected, (
                f"{name} cut after line {last_kept + 1} of {len(lines)} passes on less than the whole output: "
                f"{sorted(set(_key(verdicts)) ^ set(expected))[:4]}")
            assert set(_key(verdicts, activity=True)) <= set(activity), (
                f"{name} cut after line {last_kept + 1} shows activity the whole output does not: "
                f"{sorted(set(_key(verdicts, activity=True)) - set(activity))[:4]}")

    check()
