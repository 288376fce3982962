"""What a saved amd-smi / rocm-smi / nvidia-smi view shows the GPUs doing: processes and load.

A saved view has no "this run" of ours, so every process it lists is someone's work. The view is
judged with the idle limits of validation/idle.py (`idle_foreign_processes`, `idle_gpu_busy_pct`,
`idle_vram_used_mib`; ceilings in validation/targets, one source of truth), on the values the view
reports and no others: a view without a process list says nothing about processes, one without
utilization nothing about load. A busy GPU is a WARN with code RF-GPU-BUSY, not a FAIL: a view
taken under load is no fault of the hardware, and the view's other verdicts (count, SKU, ECC) hold
under load; `judge --strict` makes it fail (docs/judging.md, "A view taken under load").

Processes are put on the GPU the view names (index, PCI bus id or UUID); one that names none
(`rocm-smi --showpids` prints a count of GPUs) is judged for the node. Process names are made
printable (validation/parsers/_text.py) before they reach a reason.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

from validation import idle
from validation.judge import Verdict
from validation.parsers._text import printable
from validation.records import GpuProcess, Status, normalize_bus_id
from validation.targets.model import TargetProfile

PHASE = "in this saved view"
VIEW_TOOLS = ("amd-smi", "rocm-smi", "nvidia-smi")
_ONE_SAMPLE = re.compile(r" \(median of 1 samples: [^)]*\)")


@dataclasses.dataclass(slots=True)
class _Gpu:
    label: str
    bus_id: str | None = None
    uuid: str | None = None
    busy_pct: float | None = None
    vram_used_mib: float | None = None
    processes: list[GpuProcess] = dataclasses.field(default_factory=list)


def _gpus(tool: str, record: Any) -> list[tuple[int, _Gpu]]:
    out = []
    for g in record.gpus:
        if tool == "amd-smi":
            gpu = _Gpu(f"gpu{g.index}", bus_id=normalize_bus_id(g.bdf), uuid=g.uuid, busy_pct=g.gfx_util_pct,
                       vram_used_mib=g.vram_used_mib)
        elif tool == "rocm-smi":
            used = None if g.vram_used_bytes is None else round(g.vram_used_bytes / (1 << 20), 1)
            gpu = _Gpu(f"gpu{g.index}", bus_id=normalize_bus_id(g.pci_bus), busy_pct=g.gpu_busy_pct,
                       vram_used_mib=used)
        else:
            gpu = _Gpu(f"gpu{g.index}", bus_id=normalize_bus_id(g.bus_id), uuid=g.uuid,
                       busy_pct=g.utilization_gpu_pct, vram_used_mib=g.memory_used_mib)
        out.append((g.index, gpu))
    return out


def lists_processes(tool: str, record: Any) -> bool:
    """Does the view carry a process list (with or without rows)?"""
    return bool(record.processes) or (tool, getattr(record, "view", None) or getattr(record, "command", None)) in {
        ("amd-smi", "process"), ("rocm-smi", "showpids"), ("rocm-smi", "showpidgpus"), ("nvidia-smi", "apps")}


def _place(process: GpuProcess, gpus: dict[int, _Gpu], extra: dict[str, _Gpu]) -> None:
    """Put a process on the GPU the view names for it, else on a GPU known only by its bus id or UUID,
    else on the node."""
    bus = normalize_bus_id(process.bus_id)
    found = (gpus.get(process.gpu) if process.gpu is not None else None) or next(
        (g for g in gpus.values() if (bus and g.bus_id == bus) or (process.gpu_uuid and g.uuid == process.gpu_uuid)),
        None)
    if found is None:
        label = (f"gpu {bus}" if bus else f"gpu {printable(process.gpu_uuid)}" if process.gpu_uuid
                 else f"gpu{process.gpu}" if process.gpu is not None else "node (the view names no GPU)")
        found = extra.setdefault(label, _Gpu(label))
    name = printable(process.name) if process.name is not None else None
    same = next((i for i, p in enumerate(found.processes) if p.pid == process.pid), None)
    if same is None:
        found.processes.append(dataclasses.replace(process, name=name))
    elif found.processes[same].name is None and name is not None:   # rocm-smi -a lists a pid in two sections
        found.processes[same] = dataclasses.replace(process, name=name)


def judge(tool: str, record: Any, profile: TargetProfile) -> list[Verdict]:
    """Per GPU: the processes the view lists, its utilization and memory in use against the idle limits.
    Nothing for a view that shows neither processes nor load; a busy GPU is WARN RF-GPU-BUSY."""
    if tool not in VIEW_TOOLS:
        return []
    known = dict(_gpus(tool, record))
    extra: dict[str, _Gpu] = {}
    for process in record.processes:
        _place(process, known, extra)
    with_processes = lists_processes(tool, record)
    entries = [*known.values(), *extra.values()]
    if not with_processes and all(g.busy_pct is None for g in entries):
        return []        # a view without processes or load (static, topology, a GPU list)
    verdicts: list[Verdict] = []
    for slot, gpu in enumerate(entries):
        metrics = {"idle_foreign_processes"} if with_processes else set()
        if gpu.busy_pct is not None:
            metrics.add("idle_gpu_busy_pct")
        if gpu.vram_used_mib is not None:
            metrics.add("idle_vram_used_mib")
        activity = idle.GpuActivity(gpu=slot, busy_pct=() if gpu.busy_pct is None else (gpu.busy_pct,),
                                    vram_used_mib=gpu.vram_used_mib, processes=tuple(gpu.processes))
        for v in idle.judge_activity([activity], profile, idle.Ownership(), phase=PHASE,
                                     processes_listed=with_processes):
            if v.metric in metrics:
                verdicts.append(_saved(v, f"gpu{slot}", gpu.label))
    return verdicts


def _saved(verdict: Verdict, slot: str, label: str) -> Verdict:
    """The view's own GPU name in subject and reason; a busy GPU is WARN, not FAIL (module docstring)."""
    reason = _ONE_SAMPLE.sub("", verdict.reason)      # a view is one sample, not a median
    if slot != label:
        reason = reason.replace(f"{slot} ", f"{label} ", 1)
    status = Status.WARN if verdict.status is Status.FAIL else verdict.status
    return dataclasses.replace(verdict, subject=label, reason=reason, status=status)


def busy(verdicts: Iterable[Verdict]) -> list[str]:
    """The subjects a saved view shows busy (its RF-GPU-BUSY or RF-GPU-UNSEEN verdicts that are not PASS), in
    order."""
    return list(dict.fromkeys(v.subject for v in verdicts
                              if v.code in idle.BUSY_CODES and v.status in (Status.WARN, Status.FAIL)))
