"""This run's own device memory, as its own process knows it: what the GPU watcher needs to tell a neighbour
it cannot see from the run itself.

Inside a container (its own PID namespace) the drivers name GPU processes by their host PIDs, so the
process views list neither the run's own process nor anyone else's (NVIDIA/nvidia-docker#1483: "you will
always get the host pids, not the container pids"; amd-smi: ROCm/rocm-systems#3752), while the memory in
use is the device's whole (docs/performance-verdicts.md). The run's own share of it is its context and
whatever its caching allocator (PyTorch, CUDA or ROCm) reserved, which this process can read at any
moment without a tool:

- `attach`, right after the pre-flight found the GPUs idle: the memory in use before this process
  touched the GPU (`base`, from the pre-flight's reading) and after its context was made on every GPU,
  less what the allocator holds, is the context's own (`context_mib`).
- `mark`, at every measuring check's start and end: the allocator's reserved bytes now and its
  cumulative reserved bytes (`reserved_bytes.all.allocated`, which `reset_peak_memory_stats`, called by
  the model probes, leaves alone). Between two marks the allocator never held more than what it held
  at the first plus what it reserved since: a bound that needs no peak counter.

`allowance(t, bus)` is that bound for a sample taken at `t`, plus the context: memory this run may hold
then. Memory in use above the base, the processes the view lists and this allowance, is held by someone
the node cannot see (validation/checks/measuring.py). Local runs only: on a remote host the probes run in
processes of their own, and only the process views can speak for them.
"""

from __future__ import annotations

import bisect
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from validation.probes import telemetry

MIB = float(1 << 20)
UNSEEN_MIB = 512.0
"""Memory in use on a GPU that neither the listed processes nor this run account for, above which someone
the node cannot see holds it: below the smallest neighbour there is, a bare context (612 MiB for a process
holding one CUDA tensor on the lent H200: tests/fixtures/real/nvidia-smi/
h200-x1-rocm-fleet-own-context-query-compute-apps.txt; a job's data comes on top), and above what the
run's own memory outside its allocator grows by (lazily loaded kernels, library handles), which every
number's window records as `unaccounted_mib_max` (docs/measurements/ has the lent GPU's)."""


@dataclass(frozen=True, slots=True)
class Mark:
    t: float
    reserved_mib: dict[str, float]          # bus -> the allocator's reserved MiB now
    cumulative_mib: dict[str, float]        # bus -> MiB it ever reserved (never reset)


@dataclass(slots=True)
class OwnMemory:
    """The run's own device memory by GPU (keyed by normalized PCI bus id, the tools' own key)."""

    devices: dict[str, int]                              # bus -> torch device index
    base_mib: dict[str, float] = field(default_factory=dict)
    context_mib: dict[str, float] = field(default_factory=dict)
    marks: list[Mark] = field(default_factory=list)

    def mark(self, t: float) -> None:
        torch = sys.modules["torch"]
        reserved, cumulative = {}, {}
        for bus, index in self.devices.items():
            stats = torch.cuda.memory_stats(index)
            reserved[bus] = stats.get("reserved_bytes.all.current", 0) / MIB
            cumulative[bus] = stats.get("reserved_bytes.all.allocated", 0) / MIB
        self.marks.append(Mark(t, reserved, cumulative))

    def allowance(self, t: float, bus: str) -> float | None:
        """The most memory this run can have held on `bus` at `t`: its context, and its allocator's bound
        over the marks around `t` (the one before and the one after, so a sample read a moment late is
        covered too). None when `t` is outside the marks (no bound yet) or the GPU is not this run's."""
        if bus not in self.devices or not self.marks or t < self.marks[0].t:
            return None
        after = bisect.bisect_left(self.marks, t, key=lambda m: m.t)    # the first mark at or after t
        if after >= len(self.marks):
            return None
        first, last = self.marks[max(0, after - 2)], self.marks[after]
        bound = first.reserved_mib[bus] + (last.cumulative_mib[bus] - first.cumulative_mib[bus])
        return self.context_mib.get(bus, 0.0) + bound

    def to_json(self) -> dict[str, Any]:
        return {"base_mib": {b: round(v, 1) for b, v in sorted(self.base_mib.items())},
                "context_mib": {b: round(v, 1) for b, v in sorted(self.context_mib.items())},
                "marks": len(self.marks), "unseen_mib": UNSEEN_MIB}


def attach(gpus: Sequence[Any]) -> tuple[OwnMemory | None, str]:
    """This process's ledger over the GPUs the pre-flight read (`GpuActivity` with bus ids and memory in use),
    its context made on each; (None, why) where it cannot be kept. Call only on an idle node."""
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not importable in the run's own process"
    try:
        if not torch.cuda.is_available():
            return None, "PyTorch sees no GPU"
        devices: dict[str, int] = {}
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            domain, bus_no, dev = (getattr(props, k, None) for k in ("pci_domain_id", "pci_bus_id", "pci_device_id"))
            if None in (domain, bus_no, dev):
                return None, "PyTorch does not say which PCI device each of its GPUs is"
            devices[telemetry.normalize_bus_id(f"{domain:08x}:{bus_no:02x}:{dev:02x}.0") or ""] = index
        read = {telemetry.normalize_bus_id(g.bus_id): g for g in gpus if g.bus_id}
        base = {bus: float(read[bus].vram_used_mib) - sum(p.vram_mib or 0.0 for p in read[bus].processes)
                for bus in devices if bus in read and read[bus].vram_used_mib is not None}
        if not base:
            return None, "the pre-flight read no memory in use on the GPUs PyTorch sees"
        ledger = OwnMemory(devices={bus: i for bus, i in devices.items() if bus in base}, base_mib=base)
        for bus, index in ledger.devices.items():
            free, total = torch.cuda.mem_get_info(index)        # makes the context on that GPU
            used = (total - free) / MIB
            ledger.context_mib[bus] = max(0.0, used - base[bus] - torch.cuda.memory_reserved(index) / MIB)
        ledger.mark(time.time())
    except (RuntimeError, AttributeError, AssertionError) as exc:
        return None, f"PyTorch could not read the GPUs' memory: {str(exc)[:200]}"
    return ledger, ""


def unaccounted_mib(used_mib: float | None, bus: str | None, listed: Mapping[int, float], ours: frozenset[int],
                    main_pid: int, own: OwnMemory | None, t: float) -> float | None:
    """Memory in use on one GPU at one sample that nothing accounts for: above the GPU's base, the processes
    the view lists there (pid -> MiB) and this run's own share. None when it cannot be said: no reading, no
    ledger, or this run has processes besides its own one that the view does not show (a probe's tool
    could hold memory no one can see)."""
    if used_mib is None or bus is None or own is None or bus not in own.base_mib:
        return None
    allowance = own.allowance(t, bus)
    if allowance is None:
        return None
    sees_us = bool(ours & set(listed))
    if not sees_us and ours - {main_pid}:
        return None
    own_listed = sum(mib for pid, mib in listed.items() if pid in ours)
    others = sum(mib for pid, mib in listed.items() if pid not in ours)
    return used_mib - own.base_mib[bus] - others - max(own_listed, allowance)
