"""Read what every GPU of a node is doing right now: utilization, memory in use, clocks, throttle
state and the processes holding it. validation/idle.py judges the reading.

Everything goes through a `Run` (argv, timeout) -> RawRun, so the same code reads the local node
(runner.run) or a remote one (a testinfra host, see `host_run`). Utilization, memory and clocks
come from `nvidia-smi --query-gpu=... --format=csv` (with its header, which names the columns; the
clock reason field's older name is tried when the driver does not know the newer one) or from the
burn-in's AMD telemetry sources in their `activity` form (amd-smi metric -u -m, rocm-smi
--showmeminfo vram); the processes from:

- NVIDIA: `nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_bus_id --format=csv`
- AMD: `amd-smi process --json`, else `rocm-smi --showpids` (which names no GPU: a process it lists
  is put on every GPU, since it holds at least one of them).

AMD's tools run as `sh -c 'echo <marker> $$; exec TOOL ...'`: the shell's pid is the tool's own,
so a tool that lists itself is not mistaken for someone else's work. A tool that fails or cannot
be parsed leaves its error in the reading, never an exception.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from validation import parsers
from validation.errors import ParseError, ProbeError, RocmFleetError
from validation.idle import GpuActivity
from validation.probes import telemetry, watch_sampler
from validation.records import GpuProcess
from validation.runner import RawRun

Run = Callable[[Sequence[str], float], RawRun]
SELF_MARKER = "rocm-fleet-tool-pid"
NVIDIA_APPS_ARGV = ("nvidia-smi", "--query-compute-apps=pid,process_name,used_memory,gpu_bus_id", "--format=csv")
NVIDIA_QUERY = ("index", "pci.bus_id", "utilization.gpu", "utilization.memory", "memory.used", "memory.total",
                "clocks.sm", "clocks.mem", "clocks.max.sm", "{reasons}", "pstate")
AMD_SMI_PROCESS_ARGV = ("amd-smi", "process", "--json")
ROCM_SMI_PIDS_ARGV = ("rocm-smi", "--showpids")


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityReading:
    """One look at a node's GPUs. `tool_pids` are the reading tools' own process ids."""

    source: str | None
    gpus: tuple[GpuActivity, ...]
    commands: tuple[str, ...]
    errors: tuple[str, ...]
    tool_pids: frozenset[int] = frozenset()

    @property
    def complete(self) -> bool:
        return bool(self.gpus) and not self.errors


def read_activity(run: Run, which: Callable[[str], Any], *, samples: int = 3, interval_s: float = 0.5,
                  settle_s: float = 0.0, timeout_s: float = 30.0) -> ActivityReading:
    """Sample utilization `samples` times `interval_s` apart (after `settle_s`), then list the processes.

    Utilization is the driver's average over its last sampling period (up to a second on NVIDIA), so
    a reading taken right after this run's own last kernel would still show it: the post-flight
    settles first."""
    time.sleep(settle_s)
    source: Any = telemetry.detect_source(which=which, run=run, activity=True)
    if isinstance(source, telemetry.NvidiaSmiSource):
        source = NvidiaActivity(run)
    if source is None:
        return ActivityReading(source=None, gpus=(), commands=(), errors=(
            "none of amd-smi, rocm-smi or nvidia-smi is on the node, so nothing can tell whether its GPUs "
            "are idle; install amd-smi (amd-smi-lib) or rocm-smi (NVIDIA: the driver's nvidia-smi)",))
    snapshots = []
    for i in range(max(1, samples)):
        if i:
            time.sleep(interval_s)
        snapshots.append(telemetry.read_once(source, t_s=i * interval_s, timeout_s=timeout_s))
    errors = [s.error for s in snapshots if s.error]
    by_gpu: dict[int, list[telemetry.GpuSample]] = {}
    for snap in snapshots:
        for sample in snap.samples:
            by_gpu.setdefault(sample.gpu, []).append(sample)
    processes, tool_pids, command, error = _processes(source.name, run, which, timeout_s)
    if error:
        errors.append(error)
    gpus = []
    for gpu, seen in sorted(by_gpu.items()):
        last = seen[-1]
        bus = telemetry.normalize_bus_id(last.bus_id)
        mine = tuple(p for p in processes if _on_gpu(p, gpu, bus))
        gpus.append(GpuActivity(
            gpu=gpu, bus_id=bus, busy_pct=tuple(s.util_pct for s in seen if s.util_pct is not None),
            vram_used_mib=last.vram_used_mib, vram_total_mib=last.vram_total_mib, gfx_clock_mhz=last.gfx_clock_mhz,
            throttled=last.throttled, throttle_status=last.throttle_status, processes=mine))
    commands = (*source.last_raw, *([command] if command else []))
    return ActivityReading(source=source.name, gpus=tuple(gpus), commands=tuple(commands), errors=tuple(errors),
                           tool_pids=frozenset(tool_pids))


class NvidiaActivity:
    """nvidia-smi --query-gpu with a header row; `read` has telemetry.Source's contract."""

    name = "nvidia-smi"

    def __init__(self, run: Run, query: Sequence[str] = NVIDIA_QUERY) -> None:
        self._run = run
        self._query = tuple(query)
        self._reasons = list(telemetry.NVIDIA_THROTTLE_FIELDS)   # the newer name first; the one that works stays
        self.last_raw: dict[str, str] = {}

    def argv(self) -> tuple[str, ...]:
        fields = ",".join(self._query).replace("{reasons}", self._reasons[0])
        return ("nvidia-smi", f"--query-gpu={fields}", "--format=csv")

    def read(self, timeout_s: float) -> tuple[telemetry.GpuSample, ...]:
        while True:
            argv = self.argv()
            raw = self._run(argv, timeout_s)
            if raw.ok or raw.timed_out or len(self._reasons) == 1:
                break
            self._reasons.pop(0)      # "Field ... is not a valid field to query": an older driver
        if not raw.ok:
            raise ProbeError(f"{' '.join(argv)} {'timed out' if raw.timed_out else f'exited {raw.rc}'}: "
                             f"{raw.stderr.strip()[:200]}")
        self.last_raw[" ".join(argv)] = raw.stdout
        return nvidia_samples(raw.stdout)


def nvidia_samples(text: str) -> tuple[telemetry.GpuSample, ...]:
    """`nvidia-smi --query-gpu=... --format=csv` (header row kept) -> one sample per GPU."""
    record = parsers.parse("nvidia-smi", text)
    out = []
    for g in record.gpus:
        f = g.fields
        mask_text = f.get("clocks_event_reasons.active") or f.get("clocks_throttle_reasons.active")
        mask = int(mask_text, 16) if mask_text and mask_text.startswith("0x") else None
        out.append(telemetry.GpuSample(
            gpu=g.index, bus_id=g.bus_id, util_pct=g.utilization_gpu_pct, vram_used_mib=g.memory_used_mib,
            vram_total_mib=g.memory_total_mib,
            gfx_clock_mhz=_leading_number(f.get("clocks.current.sm") or f.get("clocks.sm")),
            power_w=g.power_draw_w,
            throttled=None if mask is None else bool(mask & telemetry.NV_THROTTLE_BITS),
            power_capped=None if mask is None else bool(mask & telemetry.NV_POWER_CAP_BIT),
            throttle_status=mask_text))
    return tuple(out)


def _leading_number(text: str | None) -> float | None:
    """'345 MHz' -> 345.0; None for a missing or N/A cell."""
    head = (text or "").split(" ", 1)[0]
    try:
        return float(head)
    except ValueError:
        return None


def _on_gpu(process: GpuProcess, gpu: int, bus: str | None) -> bool:
    if process.bus_id is not None:
        return telemetry.normalize_bus_id(process.bus_id) == bus
    return process.gpu is None or process.gpu == gpu


def _processes(source: str, run: Run, which: Callable[[str], Any],
               timeout_s: float) -> tuple[tuple[GpuProcess, ...], set[int], str | None, str | None]:
    """(processes, the tool's own pids, the command line, an error or None)."""
    if source == "nvidia-smi":
        argv: Sequence[str] = NVIDIA_APPS_ARGV
        tool = "nvidia-smi"
    elif which("amd-smi"):
        argv, tool = _self_reporting(AMD_SMI_PROCESS_ARGV), "amd-smi"
    elif which("rocm-smi"):
        argv, tool = _self_reporting(ROCM_SMI_PIDS_ARGV), "rocm-smi"
    else:
        return (), set(), None, "no process view (amd-smi process or rocm-smi --showpids) on the node"
    command = " ".join(argv)
    try:
        raw = run(argv, timeout_s)
    except ProbeError as exc:
        return (), set(), command, f"{tool}: {exc}"
    if raw.timed_out or raw.rc != 0:
        why = "timed out" if raw.timed_out else f"exited {raw.rc}: {raw.stderr.strip()[:200]}"
        return (), set(), command, f"{command} {why}"
    text, tool_pids = _strip_self(raw.stdout)
    try:
        record = parsers.parse(tool, text)
    except (ParseError, RocmFleetError) as exc:
        return (), tool_pids, command, f"{tool} process view not understood: {exc}"
    return tuple(record.processes), tool_pids, command, None


def _self_reporting(argv: Sequence[str]) -> tuple[str, ...]:
    return ("sh", "-c", f"echo {SELF_MARKER} $$; exec {shlex.join(argv)}")


def _strip_self(stdout: str) -> tuple[str, set[int]]:
    pids, kept = set(), []
    for line in stdout.splitlines():
        if line.startswith(SELF_MARKER):
            pids.add(int(line.split()[1]))
        else:
            kept.append(line)
    return "\n".join(kept) + "\n", pids


GPU_DEVICES = ("/dev/kfd", "/dev/dri/renderD*", "/dev/nvidia[0-9]*")


def device_holders(run: Run, devices: Sequence[str] = GPU_DEVICES, timeout_s: float = 30.0) -> tuple[GpuProcess, ...]:
    """Every process with one of `devices` (shell patterns) open, from /proc/<pid>/fd: the compute and
    render nodes a GPU job holds, found without any vendor tool (root sees every process)."""
    # find reads every fd link itself; a shell loop forks per fd (3.2 s against 0.6 s here, on a loaded 2-core machine)
    matches = " -o ".join(f"-lname {shlex.quote(d)}" for d in devices)
    script = (f"find /proc/[0-9]*/fd -maxdepth 1 \\( {matches} \\) -printf '%h %l\\n' 2>/dev/null | "
              "while read -r dir target; do p=${dir#/proc/}; p=${p%/fd}; "
              "echo \"$p $target $(cat /proc/$p/comm 2>/dev/null)\"; done | sort -u")
    raw = run(("sh", "-c", script), timeout_s)
    found: dict[int, GpuProcess] = {}
    for line in raw.stdout.splitlines():
        pid, _, rest = line.partition(" ")
        device, _, name = rest.partition(" ")
        if pid.isdigit():
            found.setdefault(int(pid), GpuProcess(pid=int(pid), name=name or None, device=device))
    return tuple(found.values())


def host_run(host: Any) -> Run:
    """A Run that executes on a testinfra host (local or remote) under coreutils timeout."""
    def run(argv: Sequence[str], timeout_s: float) -> RawRun:
        start = time.perf_counter()
        out = host.run(f"timeout {max(1, int(timeout_s))} {shlex.join(argv)}")
        return RawRun(argv=tuple(argv), rc=out.rc if out.rc != 124 else None, stdout=out.stdout,
                      stderr=out.stderr, seconds=time.perf_counter() - start, timed_out=out.rc == 124)
    return run


def host_which(host: Any) -> Callable[[str], str | None]:
    """`which` on a testinfra host: the tool's name when it is on the host's PATH, else None."""
    return lambda tool: tool if host.exists(tool) else None


def own_pids(root: Path = Path("/proc"), me: int | None = None) -> frozenset[int]:
    """This process and every process descended from it (their /proc/<pid>/stat parent chain)."""
    return frozenset(watch_sampler.descendants(os.getpid() if me is None else me, root))
