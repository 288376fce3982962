"""Is a GPU free to be measured? Pure verdicts over one reading of its activity.

A number measured on a GPU that someone else's work is using describes that work, not the
hardware. So before the first probe and again after the last one, each GPU is judged on:

- `idle_foreign_processes` (equal 0): processes other than this validation run that hold the GPU,
  as nvidia-smi / amd-smi / rocm-smi list them. Any such process means busy, as in Meta GCM's
  `running_procs` health check and DCGM's deployment checks ("conflicting processes").
- `idle_gpu_busy_pct` (ceiling): the median of a few utilization samples; an idle GPU reads 0 %.
- `idle_vram_used_mib` (ceiling): memory in use less what this run's own process holds; catches
  a process the views cannot list (another PID namespace, a name that needs root to read).
- `idle_throttled` (equal 0): a thermal or hardware clock reduction active while idle (NVIDIA:
  HW slowdown, SW/HW thermal, power brake; AMD: THROTTLE_STATUS THROTTLED). Azure NHC's
  clock-throttling check flags every reason but idle, none and the software power cap.

The ceilings live in each SKU's target file with their sources; a SKU without one records the
reading with the reason. Verdict codes: RF-GPU-BUSY, RF-GPU-THROTTLED, and RF-GPU-UNSEEN where the
utilization or memory says busy but no process the views list is on that GPU: the tools cannot name
whose work it is (another container, pod or PID namespace), and an empty process list must not be
read as an idle GPU.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from validation.judge import Verdict, judge_value
from validation.records import GpuProcess, Status
from validation.targets.model import TargetProfile

BEFORE, AFTER = "before measuring", "after measuring"
BUSY, UNSEEN = "RF-GPU-BUSY", "RF-GPU-UNSEEN"
BUSY_CODES = frozenset({BUSY, UNSEEN})
UNSEEN_WORDS = ("and no process the node can list is on it: someone it cannot see (another container, pod or PID "
                "namespace)")
GPU_IN_SUBJECT = re.compile(r"\bgpu(\d+)\b")


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuActivity:
    """One GPU's activity as the tools showed it; None = the tool did not report the value."""

    gpu: int
    bus_id: str | None = None
    busy_pct: tuple[float, ...] = ()           # utilization samples, oldest first
    vram_used_mib: float | None = None
    vram_total_mib: float | None = None
    gfx_clock_mhz: float | None = None
    throttled: bool | None = None
    throttle_status: str | None = None
    processes: tuple[GpuProcess, ...] = ()    # every process a view lists on this GPU


@dataclass(frozen=True, slots=True, kw_only=True)
class Ownership:
    """What belongs to this validation run: its own process ids, and process names the site
    declared harmless (a resident monitoring agent). `context_unlisted` is true when this run's
    process holds a GPU context that the process view does not list (another PID namespace),
    so its memory cannot be told apart and the memory ceiling is not judged."""

    pids: frozenset[int] = frozenset()
    ignored_names: frozenset[str] = frozenset()
    context_unlisted: bool = False

    def is_foreign(self, process: GpuProcess) -> bool:
        return process.pid not in self.pids and (process.name or "") not in self.ignored_names


def foreign(activity: GpuActivity, owner: Ownership) -> tuple[GpuProcess, ...]:
    return tuple(p for p in activity.processes if owner.is_foreign(p))


def describe(process: GpuProcess) -> str:
    memory = f" ({process.vram_mib:g} MiB)" if process.vram_mib is not None else ""
    return f"pid {process.pid} {process.name or '(name not readable)'}{memory}"


def judge_activity(activity: Sequence[GpuActivity], profile: TargetProfile, owner: Ownership, *,
                   phase: str = BEFORE, processes_listed: bool = True) -> list[Verdict]:
    """Four verdicts per GPU (see the module docstring); reasons name the GPU, PIDs and names.
    `processes_listed`: the reading includes a process view, so a busy GPU none of whose processes it
    lists is RF-GPU-UNSEEN (a view of load alone cannot tell)."""
    verdicts: list[Verdict] = []
    for gpu in sorted(activity, key=lambda a: a.gpu):
        subject = f"gpu{gpu.gpu}"
        others = foreign(gpu, owner)
        own_mib = sum(p.vram_mib or 0.0 for p in gpu.processes if not owner.is_foreign(p))
        verdicts.append(_explained(
            judge_value("idle_foreign_processes", subject, len(others), profile), phase,
            f"{len(others)} process{'es' if len(others) != 1 else ''} of someone else: "
            + ", ".join(describe(p) for p in others)))
        unseen = f" {UNSEEN_WORDS}" if processes_listed and not others else ""
        busy = statistics.median(gpu.busy_pct) if gpu.busy_pct else None
        verdicts.append(_explained(
            judge_value("idle_gpu_busy_pct", subject, busy, profile), phase,
            f"{busy:g} % utilization (median of {len(gpu.busy_pct)} samples: "
            f"{', '.join(f'{v:g}' for v in gpu.busy_pct)}){unseen}" if busy is not None else ""))
        if owner.context_unlisted:
            verdicts.append(_skip(profile, "idle_vram_used_mib", subject, gpu.vram_used_mib,
                                  "this run's own GPU context is not in the process view (another PID "
                                  "namespace), so memory in use cannot be told apart from someone else's"))
        else:
            used = None if gpu.vram_used_mib is None else max(0.0, gpu.vram_used_mib - own_mib)
            mine = f", less {own_mib:g} MiB held by this run" if own_mib else ""
            verdicts.append(_explained(
                judge_value("idle_vram_used_mib", subject, used, profile), phase,
                f"{used:g} MiB of memory in use{mine}{unseen}" if used is not None else ""))
        if unseen:
            verdicts[-2:] = [_unseen(v) for v in verdicts[-2:]]
        throttled = None if gpu.throttled is None else int(gpu.throttled)
        verdicts.append(_explained(
            judge_value("idle_throttled", subject, throttled, profile), phase,
            f"clocks held down while idle (status {gpu.throttle_status})"))
    return verdicts


def _unseen(verdict: Verdict) -> Verdict:
    """A load or memory verdict that says busy on a GPU no listed process is on: RF-GPU-UNSEEN."""
    if verdict.status is not Status.FAIL or verdict.code != BUSY:
        return verdict
    return dataclasses.replace(verdict, code=UNSEEN)


def busy_gpus(verdicts: Iterable[Verdict]) -> dict[str, str]:
    """subject -> the reasons it is busy (RF-GPU-BUSY and RF-GPU-UNSEEN verdicts; throttling is not 'busy')."""
    out: dict[str, list[str]] = {}
    for v in verdicts:
        if v.status is Status.FAIL and v.code in BUSY_CODES:
            out.setdefault(v.subject, []).append(v.reason)
    return {subject: "; ".join(reasons) for subject, reasons in out.items()}


def names_gpu(subject: str, gpus: Iterable[str]) -> bool:
    """Does a measurement subject ("gpu3", "host -> gpu0", "gpu5 -> gpu2") involve one of `gpus`?
    A subject naming no GPU ("node") involves all of them."""
    found = {f"gpu{n}" for n in GPU_IN_SUBJECT.findall(subject)}
    return not found or bool(found & set(gpus))


def _explained(verdict: Verdict, phase: str, detail: str) -> Verdict:
    if verdict.status in (Status.PASS, Status.SKIP, Status.ERROR) or not detail:
        return verdict
    source = verdict.target.source if verdict.target else ""
    return dataclasses.replace(verdict, reason=f"{verdict.subject} {phase}: {detail}; allowed: {_allowed(verdict)} "
                                               f"({source})")


def _allowed(verdict: Verdict) -> str:
    target = verdict.target
    if target is None or target.threshold is None:
        return "no limit"
    if target.direction == "equal":
        return "none" if target.threshold == 0 else f"{target.threshold}"
    return f"at most {target.threshold:g} {target.unit}"


def _skip(profile: TargetProfile, metric: str, subject: str, measured: float | None, why: str) -> Verdict:
    target = profile.get(metric)
    return Verdict(status=Status.SKIP, subject=subject, metric=metric, measured=measured,
                   unit=target.unit if target else "", target=target, reason=f"not judged: {why}")
