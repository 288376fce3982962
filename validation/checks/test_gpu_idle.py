"""The GPUs are free before anything is measured, stay free while it is, and are free after the last probe.

A number measured while someone else's job runs on the GPU describes that job, not the hardware.
The pre-flight runs before every quick or acceptance check (the plugin orders it first); when a
GPU is busy it fails with RF-GPU-BUSY naming the GPU, the processes and what they hold, and the
node's measuring checks are skipped. With `--rf-allow-busy` (`rocm-fleet validate --allow-busy`)
the operator measures anyway: the pre-flight is skipped with what it found, and every number
taken on a busy GPU is marked `measured_while_busy`.

While the measuring checks run, the node's GPU watcher (validation/probes/gpu_watch.py) samples
the GPUs every second: a foreign process seen in a number's window makes it `valid: false` and
fails that check RF-GPU-BUSY, a hardware/thermal clock reduction fails it RF-GPU-THROTTLED (the
plugin, validation/checks/plugin.py). The post-flight runs after everything else (the plugin's
RunOrder): it waits for the watcher's last sample, fails RF-GPU-BUSY for a foreign process seen
at any moment of the run that no check's window caught, fails RF-GPU-ACTIVITY-UNKNOWN when numbers
went unwatched, records the watcher's cost, and reads the GPUs once more at rest.
Limits and their sources: validation/targets/common.yaml and each SKU's idle_vram_used_mib.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest

from validation import idle, judged
from validation.checks.measuring import WATCH_OFF, NodeMeasuring
from validation.checks.outcome import CheckFailure, expect, fail_on_verdicts
from validation.judge import Verdict
from validation.probes import gpu_activity, gpu_watch, own_memory
from validation.records import Status

pytestmark = [pytest.mark.quick, pytest.mark.gpu]


def _ignored(spec: dict) -> frozenset[str]:
    return frozenset(str(n) for n in spec.get("validation_idle_ignore_processes") or ())


def _ownership(host: Any, spec: dict, reading: gpu_activity.ActivityReading) -> idle.Ownership:
    ignored = _ignored(spec)
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
    measuring_state.owner = idle.Ownership(ignored_names=_ignored(spec))   # the watcher's, while measuring
    try:
        verdicts, reading = _look(host, spec, targets, record, idle.BEFORE)
    except CheckFailure as failure:
        measuring_state.unreadable = failure.message
        raise
    measuring_state.checked = True
    measuring_state.busy = idle.busy_gpus(verdicts)
    if host.backend.NAME == "local" and not measuring_state.busy and not reading.errors:
        # the GPUs are idle now: what is in use is the base, and this run's own share is known from here on
        measuring_state.own_memory, measuring_state.own_memory_off = own_memory.attach(reading.gpus)
        measuring_state.main_pid = os.getpid()
    elif host.backend.NAME != "local":
        measuring_state.own_memory_off = "a remote host: its probes run in processes of their own"
    if measuring_state.busy and measuring_state.allow_busy:
        found = "; ".join(measuring_state.busy.values())
        pytest.skip(f"measuring anyway (--allow-busy): {found}; every number taken on "
                    f"{', '.join(sorted(measuring_state.busy))} is marked measured_while_busy")
    _fail(verdicts, reading)


def test_gpus_stayed_idle_while_measuring(host: Any, spec: dict, targets: Any, record: Any,
                                          measuring_state: NodeMeasuring) -> None:
    """No GPU became busy at any moment while this run measured; numbers taken beside someone else's
    work are marked invalid, and nothing measured went unwatched."""
    if measuring_state.unreadable:
        _stop_watch(measuring_state)
        pytest.skip(f"the pre-flight could not read the GPUs' activity ({measuring_state.unreadable[:200]})")
    if not measuring_state.checked:
        _stop_watch(measuring_state)
        pytest.skip("the pre-flight did not run, so there is no 'before' to compare with")
    if measuring_state.busy and not measuring_state.allow_busy:
        _stop_watch(measuring_state)
        pytest.skip("nothing was measured: the pre-flight found the GPUs busy")
    seen_during, unseen_during = _whole_run(measuring_state)
    torch = sys.modules.get("torch")
    if host.backend.NAME == "local" and torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()    # our own cached blocks are not someone else's memory
    verdicts, reading = _look(host, spec, targets, record, idle.AFTER)
    became = {gpu: why for gpu, why in idle.busy_gpus(verdicts).items() if gpu not in measuring_state.busy}
    if became and measuring_state.watcher is None:      # unwatched: every number of that GPU is suspect
        marked = measuring_state.mark(became, invalid=not measuring_state.allow_busy)
        became = {gpu: f"{why}; {marked} numbers measured on it marked "
                  + ("measured_while_busy" if measuring_state.allow_busy else "invalid") for gpu, why in became.items()}
    _stop_watch(measuring_state)
    between = " (between measurements: no number was taken while it ran)"
    if measuring_state.allow_busy and (became or seen_during or unseen_during):
        pytest.skip("measured with --allow-busy; someone else's work was on the GPUs: "
                    + "; ".join([*became.values(), *(s.describe() for s in seen_during),
                                 *(u.describe() for u in unseen_during)])[:1500])
    problems = [*(f"{s.describe()}{between}" for s in seen_during), *became.values()]
    unseen = [f"{u.describe()}{between}" for u in unseen_during]
    if problems or unseen:
        # someone the node can name makes it RF-GPU-BUSY; only work no process view shows is RF-GPU-UNSEEN
        named = seen_during or any(code == idle.BUSY for code in _became_codes(verdicts, became))
        raise CheckFailure(idle.BUSY if named else idle.UNSEEN,
                           "someone else's work used the GPUs during this run: " + "; ".join(problems + unseen))
    unwatched = [m for m in measuring_state.measurements if needs_watching(m)
                 and _unwatched(m.get("watch"), measuring_state)]
    expect(not unwatched, "RF-GPU-ACTIVITY-UNKNOWN",
           f"{len(unwatched)} numbers were measured while nothing watched the GPUs "
           f"({measuring_state.watch_error or 'no sample in their windows had its views read and understood'}), e.g. "
           + ", ".join(f"{m['metric']} {m['subject']}" for m in unwatched[:5]))
    verdicts = [v for v in verdicts if not (v.code in idle.BUSY_CODES and v.subject in measuring_state.busy)]
    _fail([v for v in verdicts if v.status is not Status.SKIP], reading)


def _became_codes(verdicts: list[Verdict], became: dict[str, str]) -> list[str]:
    """The busy codes of the GPUs that became busy since the pre-flight."""
    return [v.code for v in verdicts if v.subject in became and v.status is Status.FAIL and v.code in idle.BUSY_CODES]


def _whole_run(state: NodeMeasuring) -> tuple[tuple[gpu_watch.Sighting, ...], tuple[gpu_watch.Unseen, ...]]:
    """Foreign processes, and memory someone the node cannot see held, that the watcher saw from the first
    measuring check to now and no check's window caught; the watcher's cost and totals, and this run's own
    memory ledger, go into the results document."""
    watcher = state.watcher
    if watcher is None or state.measured_from is None:
        return (), ()
    samples = watcher.wait_past(time.time())
    now = state.mark_own_memory(time.time())     # the samples up to now get their bound
    run = state.window(samples, state.measured_from, now, watcher.interval_s, None)
    if state.results is not None:
        state.results.doc["watch"] = {
            **watcher.cost(), "from": round(state.measured_from, 3), "to": round(run.end, 3),
            "checks": len(state.windows), "checks_with_foreign_processes": sum(1 for w in state.windows if w.foreign),
            "checks_with_unseen_memory": sum(1 for w in state.windows if w.unseen),
            "checks_throttled": sum(1 for w in state.windows if w.throttled),
            "numbers_marked": sum(w.marked for w in state.windows), "run": run.to_json(),
            "own_memory": state.own_memory.to_json() if state.own_memory is not None
            else {"off": state.own_memory_off}}
        state.results.write()
    return state.unattributed(run), state.unseen_between(run)


def _stop_watch(state: NodeMeasuring) -> None:
    if state.watcher is not None:
        state.watcher.stop()


def needs_watching(measurement: dict) -> bool:
    """A number a measuring check took (the plugin gave it a window: `watch`), or any performance number
    (a throughput or a latency, validation/judged.py), is what someone else's work would change. A fact
    a check that loads nothing records, such as a GPU's NUMA node, is not: on the lent H200 at 3360e7f
    the topology check's gpu_numa_node failed every idle run as unwatched."""
    if measurement.get("value") is None or str(measurement.get("metric", "")).startswith("idle_"):
        return False
    return "watch" in measurement or judged.is_performance(measurement)


def _unwatched(watch: dict | None, state: NodeMeasuring) -> bool:
    """A number no sample vouches for: the watcher failed, or no sample of its window (the last one
    before it included) had both views read and understood. Turned off on purpose (--watch-interval
    0), the numbers say so and nothing fails."""
    if state.watch_error == WATCH_OFF:
        return False
    watch = watch or {}
    return int(watch.get("watched", watch.get("samples", 0)) or 0) == 0
