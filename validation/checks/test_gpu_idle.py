"""The GPUs are free before anything is measured, and were still free after the last probe.

A number measured while someone else's job runs on the GPU describes that job, not the hardware.
The pre-flight runs before every quick or acceptance check (the plugin orders it first); when a
GPU is busy it fails with RF-GPU-BUSY naming the GPU, the processes and what they hold, and the
node's measuring checks are skipped. With `--rf-allow-busy` (`rocm-fleet validate --allow-busy`)
the operator measures anyway: the pre-flight is skipped with what it found, and every number
taken on a busy GPU is marked `measured_while_busy`. The post-flight runs after everything else:
a GPU that became busy during the run fails it, and the numbers taken on it are marked
`valid: false` so no report, baseline or batch verdict treats them as the hardware's.
Limits and their sources: validation/targets/common.yaml and each SKU's idle_vram_used_mib.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from validation import idle
from validation.checks.measuring import NodeMeasuring
from validation.checks.outcome import CheckFailure, expect, fail_on_verdicts
from validation.judge import Verdict
from validation.probes import gpu_activity
from validation.records import Status

pytestmark = [pytest.mark.quick, pytest.mark.gpu]


def _ownership(host: Any, spec: dict, reading: gpu_activity.ActivityReading) -> idle.Ownership:
    ignored = frozenset(str(n) for n in spec.get("validation_idle_ignore_processes") or ())
    if host.backend.NAME != "local":
        return idle.Ownership(pids=reading.tool_pids, ignored_names=ignored)
    mine = gpu_activity.own_pids() | reading.tool_pids
    listed = {p.pid for g in reading.gpus for p in g.processes}
    torch = sys.modules.get("torch")
    holds_context = bool(torch is not None and torch.cuda.is_initialized())
    return idle.Ownership(pids=mine, ignored_names=ignored, context_unlisted=holds_context and not listed & mine)


SETTLE_S = {idle.BEFORE: 0.0, idle.AFTER: 2.0}    # let this run's own last kernels leave the utilization window


def _look(host: Any, spec: dict, targets: Any, record: Any, phase: str) -> tuple[list[Verdict], Any]:
    reading = gpu_activity.read_activity(gpu_activity.host_run(host), gpu_activity.host_which(host),
                                         settle_s=SETTLE_S[phase])
    expect(reading.gpus, "RF-GPU-ACTIVITY-UNKNOWN",
           f"cannot tell whether the GPUs are idle {phase}: " + ("; ".join(reading.errors) or "no GPU reported"))
    verdicts = idle.judge_activity(reading.gpus, targets, _ownership(host, spec, reading), phase=phase)
    by_gpu = {f"gpu{g.gpu}": g for g in reading.gpus}
    for v in verdicts:
        gpu = by_gpu[v.subject]
        extra: dict[str, Any] = {"phase": phase, "source": reading.source}
        if v.metric == "idle_foreign_processes":
            extra["processes"] = [{"pid": p.pid, "name": p.name, "vram_mib": p.vram_mib} for p in gpu.processes]
        if v.metric == "idle_throttled":
            extra.update(throttle_status=gpu.throttle_status, gfx_clock_mhz=gpu.gfx_clock_mhz)
        if v.metric == "idle_gpu_busy_pct":
            extra["samples"] = list(gpu.busy_pct)
        record(v.metric, v.subject, v.measured if isinstance(v.measured, (int, float)) else None, v.unit,
               higher_is_better=False, status=v.status.value, reason=v.reason, code=v.code, **extra)
    return verdicts, reading


def _fail(verdicts: list[Verdict], reading: Any) -> None:
    fail_on_verdicts(verdicts)
    expect(not reading.errors, "RF-GPU-ACTIVITY-UNKNOWN", "the GPUs' activity was read only in part: "
           + "; ".join(reading.errors))


def test_gpus_are_idle_before_measuring(host: Any, spec: dict, targets: Any, record: Any,
                                        measuring_state: NodeMeasuring) -> None:
    """No other process, load, memory or clock throttling is on any GPU before the first probe."""
    try:
        verdicts, reading = _look(host, spec, targets, record, idle.BEFORE)
    except CheckFailure as failure:
        measuring_state.unreadable = failure.message
        raise
    measuring_state.checked = True
    measuring_state.busy = idle.busy_gpus(verdicts)
    if measuring_state.busy and measuring_state.allow_busy:
        found = "; ".join(measuring_state.busy.values())
        pytest.skip(f"measuring anyway (--allow-busy): {found}; every number taken on "
                    f"{', '.join(sorted(measuring_state.busy))} is marked measured_while_busy")
    _fail(verdicts, reading)


def test_gpus_stayed_idle_while_measuring(host: Any, spec: dict, targets: Any, record: Any,
                                          measuring_state: NodeMeasuring) -> None:
    """No GPU became busy while this run measured it; numbers taken on one that did are marked invalid."""
    if measuring_state.unreadable:
        pytest.skip(f"the pre-flight could not read the GPUs' activity ({measuring_state.unreadable[:200]})")
    if not measuring_state.checked:
        pytest.skip("the pre-flight did not run, so there is no 'before' to compare with")
    if measuring_state.busy and not measuring_state.allow_busy:
        pytest.skip("nothing was measured: the pre-flight found the GPUs busy")
    torch = sys.modules.get("torch")
    if host.backend.NAME == "local" and torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()    # our own cached blocks are not someone else's memory
    verdicts, reading = _look(host, spec, targets, record, idle.AFTER)
    became = {gpu: why for gpu, why in idle.busy_gpus(verdicts).items() if gpu not in measuring_state.busy}
    if became and measuring_state.allow_busy:
        marked = measuring_state.mark(became, invalid=False)
        pytest.skip(f"{', '.join(sorted(became))} became busy during the run (--allow-busy): {marked} numbers "
                    "marked measured_while_busy")
    if became:
        marked = measuring_state.mark(became, invalid=True)
        raise CheckFailure("RF-GPU-BUSY", f"{'; '.join(became.values())}; the {marked} numbers measured on "
                           f"{', '.join(sorted(became))} are marked invalid: they do not describe the hardware")
    verdicts = [v for v in verdicts if not (v.code == "RF-GPU-BUSY" and v.subject in measuring_state.busy)]
    _fail([v for v in verdicts if v.status is not Status.SKIP], reading)
