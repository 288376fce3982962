"""Watch a node's GPUs while the run measures them, and say what each measurement's window saw.

The idle pre-flight and post-flight look at the GPUs before the first probe and after the last;
a job that starts after the one and ends before the other is invisible to both, and the numbers
taken beside it would be judged as the hardware's. So while measuring checks run, a sampler on
the node itself (validation/probes/watch_sampler.py, started over the host's own connection: no
round trip per sample) runs the activity views every `interval_s`: utilization, memory, clocks,
clock-event/throttle status and power (`nvidia-smi --query-gpu`, `amd-smi metric`, `rocm-smi`),
and the process view (`nvidia-smi --query-compute-apps`, `amd-smi process`, `rocm-smi --showpids`).
The samples are parsed here with the same parsers as the pre-flight's reading.

`window()` turns the samples of a time span into what a measurement needs to know: foreign
processes seen (pid, name, memory, first and last seen), hardware/thermal clock reductions with
their reasons, how often the software power cap held the clocks, the largest gap between samples.
A sample counts for a window when it was taken within one interval before its start or inside it:
a view is the state of the moment it ran, so the sample just before a short measurement describes
its start.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import json
import re
import shlex
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from validation import parsers
from validation.errors import ParseError, RocmFleetError
from validation.idle import Ownership, describe
from validation.parsers._text import printable
from validation.probes import gpu_activity, telemetry
from validation.records import GpuProcess

SAMPLER = Path(__file__).with_name("watch_sampler.py")
DEFAULT_INTERVAL_S = 1.0
STARTUP_S = 5.0                   # the sampler writes its pid file within this after its start
REMOTE_DEADLINE_S = 24 * 3600     # a remote sampler's owner is on the controller: it stops by itself after this
# NVIDIA clock event reasons (nvml.h nvmlClocksEventReason*), named as nvidia-smi -q names them.
NV_REASONS = {0x1: "GPU idle", 0x2: "applications clocks setting", 0x4: "SW power cap", 0x8: "HW slowdown",
              0x10: "sync boost", 0x20: "SW thermal slowdown", 0x40: "HW thermal slowdown",
              0x80: "HW power brake slowdown", 0x100: "display clock setting"}
WATCH_NVIDIA_QUERY = (*gpu_activity.NVIDIA_QUERY, "power.draw")
# what `mktemp -d -t` made (in the node's TMPDIR), and nothing a shell could read another way
_WATCH_DIR = re.compile(r"/[A-Za-z0-9_./-]*/rocm-fleet-watch\.[A-Za-z0-9]{8}")


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchSample:
    """One tick of the sampler, parsed. `ours`: the run's own process ids at that moment."""

    t: float
    gpus: tuple[telemetry.GpuSample, ...]
    processes: tuple[GpuProcess, ...]
    ours: frozenset[int]
    errors: tuple[str, ...] = ()
    took_s: float | None = None      # how long the views took on the node

    @property
    def watched(self) -> bool:
        """Both views were read and understood: this sample can vouch for its moment."""
        return bool(self.gpus) and not self.errors


@dataclass(frozen=True, slots=True, kw_only=True)
class Sighting:
    gpu: int
    pid: int
    name: str | None
    vram_mib: float | None
    first_t: float
    last_t: float
    samples: int

    def describe(self) -> str:
        name = None if self.name is None else printable(self.name)[:80]     # the node's string: no escapes
        process = describe(GpuProcess(pid=self.pid, name=name, vram_mib=self.vram_mib))
        return f"gpu{self.gpu} {process} seen {_clock(self.first_t)}-{_clock(self.last_t)} UTC ({self.samples} samples)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Throttle:
    gpu: int
    reasons: tuple[str, ...]
    first_t: float
    last_t: float
    samples: int

    def describe(self) -> str:
        return (f"gpu{self.gpu} clocks reduced by {', '.join(self.reasons)} {_clock(self.first_t)}-"
                f"{_clock(self.last_t)} UTC ({self.samples} samples)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Unseen:
    """Memory on a GPU that neither the listed processes nor this run account for, over UNSEEN_MIB: someone
    the node cannot see (validation/probes/own_memory.py)."""

    gpu: int
    first_t: float
    last_t: float
    samples: int
    max_mib: float

    def describe(self) -> str:
        return (f"gpu{self.gpu} {self.max_mib:.0f} MiB in use that no listed process and not this run holds, "
                f"{_clock(self.first_t)}-{_clock(self.last_t)} UTC ({self.samples} samples): someone the node "
                "cannot see (another container, pod or PID namespace)")


Unaccounted = Callable[["WatchSample", telemetry.GpuSample, dict[int, float]], "float | None"]
"""(sample, one GPU of it, the listed processes on that GPU as pid -> MiB) -> MiB nothing accounts for."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """What the watcher saw from `start` to `end` on the GPUs asked about."""

    start: float
    end: float
    samples: int
    watched: int               # of them, samples whose views were both read and understood
    max_gap_s: float | None
    foreign: tuple[Sighting, ...] = ()
    throttled: tuple[Throttle, ...] = ()
    power_capped_pct: dict[int, float] = field(default_factory=dict)
    throttle_unspecified: dict[int, int] = field(default_factory=dict)     # "THROTTLED" without a reason
    busy_pct_max: dict[int, float] = field(default_factory=dict)
    power_w_max: dict[int, float] = field(default_factory=dict)
    gfx_clock_min_mhz: dict[int, float] = field(default_factory=dict)
    unseen: tuple[Unseen, ...] = ()
    unaccounted_mib_max: dict[int, float] = field(default_factory=dict)    # judged samples only
    errors: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "from": round(self.start, 3), "to": round(self.end, 3), "samples": self.samples,
            "watched": self.watched,
            "max_gap_s": None if self.max_gap_s is None else round(self.max_gap_s, 3),
            "foreign_processes": [{"gpu": s.gpu, "pid": s.pid, "name": s.name, "vram_mib": s.vram_mib,
                                   "first_seen": round(s.first_t, 3), "last_seen": round(s.last_t, 3),
                                   "samples": s.samples} for s in self.foreign],
            "throttled": [{"gpu": t.gpu, "reasons": list(t.reasons), "first_seen": round(t.first_t, 3),
                           "last_seen": round(t.last_t, 3), "samples": t.samples} for t in self.throttled],
            "power_capped_pct": {f"gpu{g}": v for g, v in sorted(self.power_capped_pct.items())},
            **({"throttle_status_unspecified": {f"gpu{g}": n for g, n in sorted(self.throttle_unspecified.items())}}
               if self.throttle_unspecified else {}),
            "busy_pct_max": {f"gpu{g}": v for g, v in sorted(self.busy_pct_max.items())},
            "power_w_max": {f"gpu{g}": v for g, v in sorted(self.power_w_max.items())},
            "gfx_clock_min_mhz": {f"gpu{g}": v for g, v in sorted(self.gfx_clock_min_mhz.items())},
            **({"unaccounted_mib_max": {f"gpu{g}": round(v, 1) for g, v in sorted(self.unaccounted_mib_max.items())}}
               if self.unaccounted_mib_max else {}),
            **({"unseen": [{"gpu": u.gpu, "first_seen": round(u.first_t, 3), "last_seen": round(u.last_t, 3),
                            "samples": u.samples, "max_mib": round(u.max_mib, 1)} for u in self.unseen]}
               if self.unseen else {}),
            **({"errors": list(self.errors)} if self.errors else {}),
        }


def throttle_reasons(sample: telemetry.GpuSample) -> tuple[str, ...]:
    """The hardware/thermal clock reductions a sample names (NVIDIA's clock event reasons); () when
    none, or when the tool says only "THROTTLED" (AMD's THROTTLE_STATUS also covers the package power
    limit a loaded GPU runs into, so it is recorded, not judged: `unspecified_throttle`)."""
    if not sample.throttled:
        return ()
    mask = telemetry._mask(sample.throttle_status)
    if mask is None:
        return ()
    return tuple(name for bit, name in NV_REASONS.items() if mask & bit and bit & telemetry.NV_THROTTLE_BITS)


def unspecified_throttle(sample: telemetry.GpuSample) -> bool:
    return bool(sample.throttled) and telemetry._mask(sample.throttle_status) is None


def window(samples: Sequence[WatchSample], start: float, end: float, *, interval_s: float,
           owner: Ownership, gpus: Iterable[int] | None = None, unaccounted: Unaccounted | None = None,
           unseen_mib: float = float("inf")) -> Window:
    """What the samples say about `gpus` (all: None) from `start` to `end`: those taken inside, and the
    last one taken before the start (the state the window began in) where it is at most three
    intervals old. A sample whose GPU view failed still counts its process view: a process on a GPU
    the view cannot place is put on every GPU asked about. `unaccounted` says, per sample and GPU, how
    much memory in use nothing accounts for; over `unseen_mib` it is someone the node cannot see."""
    wanted = None if gpus is None else set(gpus)
    taken = [s.t for s in samples]             # in the order taken: a run's hours of samples are sliced, not scanned
    first, last = bisect.bisect_right(taken, start), bisect.bisect_right(taken, end)
    inside = list(samples[first:last])
    if first and start - samples[first - 1].t <= 3 * interval_s:
        inside.insert(0, samples[first - 1])
    foreign: dict[tuple[int, int], list[Any]] = {}
    throttled: dict[int, list[Any]] = {}
    capped: dict[int, list[bool]] = {}
    unspecified: dict[int, int] = {}
    busy: dict[int, float] = {}
    power: dict[int, float] = {}
    clock: dict[int, float] = {}
    unseen: dict[int, list[Any]] = {}
    unaccounted_max: dict[int, float] = {}
    errors: list[str] = []
    for s in inside:
        errors.extend(e for e in s.errors if e not in errors)
        bus_of = {g.gpu: telemetry.normalize_bus_id(g.bus_id) for g in s.gpus}
        for p in s.processes:
            if p.pid in s.ours or not owner.is_foreign(p):
                continue
            on = [g for g, bus in bus_of.items() if gpu_activity._on_gpu(p, g, bus)] if bus_of else (
                [p.gpu] if p.gpu is not None else sorted(wanted or {0}))
            for gpu in on:
                if wanted is None or gpu in wanted:
                    seen = foreign.setdefault((gpu, p.pid), [p, s.t, s.t, 0])
                    seen[2], seen[3] = s.t, seen[3] + 1
        for g in s.gpus:
            if wanted is not None and g.gpu not in wanted:
                continue
            reasons = throttle_reasons(g)
            if reasons:
                seen_t = throttled.setdefault(g.gpu, [set(), s.t, s.t, 0])
                seen_t[0].update(reasons)
                seen_t[2], seen_t[3] = s.t, seen_t[3] + 1
            if unspecified_throttle(g):
                unspecified[g.gpu] = unspecified.get(g.gpu, 0) + 1
            if g.power_capped is not None:
                capped.setdefault(g.gpu, []).append(g.power_capped)
            if g.util_pct is not None:
                busy[g.gpu] = max(busy.get(g.gpu, 0.0), g.util_pct)
            if g.power_w is not None:
                power[g.gpu] = max(power.get(g.gpu, 0.0), g.power_w)
            if g.gfx_clock_mhz is not None:
                clock[g.gpu] = min(clock.get(g.gpu, g.gfx_clock_mhz), g.gfx_clock_mhz)
            if unaccounted is not None:
                bus = bus_of.get(g.gpu)
                listed = {p.pid: p.vram_mib or 0.0 for p in s.processes if gpu_activity._on_gpu(p, g.gpu, bus)}
                mib = unaccounted(s, g, listed)
                if mib is not None:
                    unaccounted_max[g.gpu] = max(unaccounted_max.get(g.gpu, mib), mib)
                    if mib > unseen_mib:
                        spell = unseen.setdefault(g.gpu, [s.t, s.t, 0, mib])
                        spell[1], spell[2], spell[3] = s.t, spell[2] + 1, max(spell[3], mib)
    times = [s.t for s in inside]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    if times:
        gaps += [max(0.0, times[0] - start), max(0.0, end - times[-1])]
    return Window(
        start=start, end=end, samples=len(inside), watched=sum(s.watched for s in inside),
        max_gap_s=max(gaps) if gaps else None,
        foreign=tuple(Sighting(gpu=gpu, pid=pid, name=p.name, vram_mib=p.vram_mib, first_t=a, last_t=b, samples=n)
                      for (gpu, pid), (p, a, b, n) in sorted(foreign.items())),
        throttled=tuple(Throttle(gpu=gpu, reasons=tuple(sorted(r)), first_t=a, last_t=b, samples=n)
                        for gpu, (r, a, b, n) in sorted(throttled.items())),
        power_capped_pct={g: round(100 * statistics.fmean(v), 1) for g, v in capped.items()},
        throttle_unspecified=unspecified, busy_pct_max=busy, power_w_max=power, gfx_clock_min_mhz=clock,
        unseen=tuple(Unseen(gpu=gpu, first_t=a, last_t=b, samples=n, max_mib=m)
                     for gpu, (a, b, n, m) in sorted(unseen.items())),
        unaccounted_mib_max=unaccounted_max, errors=tuple(errors))


# --- the views: which commands the sampler runs, and how their outputs are read -----------------


@dataclass(frozen=True, slots=True)
class Views:
    source: str
    gpus_argv: tuple[str, ...]
    processes_argv: tuple[str, ...]
    parse_gpus: Callable[[str], tuple[telemetry.GpuSample, ...]]
    process_tool: str

    def parse(self, tick: dict[str, Any], ignore_pids: frozenset[int] = frozenset()) -> WatchSample:
        errors: list[str] = []
        gpus: tuple[telemetry.GpuSample, ...] = ()
        processes: tuple[GpuProcess, ...] = ()
        views = tick.get("views") or {}
        for key, argv in (("gpus", self.gpus_argv), ("processes", self.processes_argv)):
            view = views.get(key) or {}
            if view.get("rc") != 0:
                why = view.get("err") or f"exited {view.get('rc')}"
                errors.append(printable(f"{shlex.join(argv)}: {why}")[:300])
        try:
            if (views.get("gpus") or {}).get("rc") == 0:
                gpus = self.parse_gpus(views["gpus"]["out"])
            if (views.get("processes") or {}).get("rc") == 0:
                processes = tuple(parsers.parse(self.process_tool, views["processes"]["out"]).processes)
        except (ParseError, RocmFleetError, ValueError, KeyError) as exc:
            errors.append(f"{self.source} view not understood: {exc}"[:300])
        if tick.get("error"):
            errors.append(f"the sampler's tick failed: {tick['error']}"[:300])
        tools = frozenset(int(p) for p in tick.get("tool_pids") or ())
        # the moment of the process view (it runs after the GPU view): what a sighting is dated by
        moment = (views.get("processes") or {}).get("t") or tick["t"]
        return WatchSample(t=float(moment), gpus=gpus,
                           processes=tuple(p for p in processes if p.pid not in tools | ignore_pids),
                           ours=frozenset(int(p) for p in tick.get("ours") or ()), errors=tuple(errors),
                           took_s=tick.get("took_s"))


def views_for(run: gpu_activity.Run, which: Callable[[str], Any], timeout_s: float = 30.0) -> Views | None:
    """The views this node has (amd-smi, rocm-smi, nvidia-smi, first found), None when none is there.
    nvidia-smi is asked once here, so the sampler gets the clock-reason field name this driver knows."""
    source = telemetry.detect_source(which=which, run=run, activity=True)
    if isinstance(source, telemetry.AmdSmiSource):
        return Views("amd-smi", telemetry.AMD_SMI_ACTIVITY_ARGV, gpu_activity.AMD_SMI_PROCESS_ARGV,
                     telemetry.parse_amd_smi_metric, "amd-smi")
    if isinstance(source, telemetry.RocmSmiSource):
        processes = gpu_activity.AMD_SMI_PROCESS_ARGV if which("amd-smi") else gpu_activity.ROCM_SMI_PIDS_ARGV
        return Views("rocm-smi", telemetry.ROCM_SMI_ACTIVITY_ARGV, processes, telemetry.parse_rocm_smi_json,
                     processes[0])
    if isinstance(source, telemetry.NvidiaSmiSource):
        nvidia = gpu_activity.NvidiaActivity(run, query=WATCH_NVIDIA_QUERY)
        with contextlib.suppress(RocmFleetError, ParseError):   # the sampler's own ticks say what is wrong
            nvidia.read(timeout_s)
        return Views("nvidia-smi", nvidia.argv(), gpu_activity.NVIDIA_APPS_ARGV, gpu_activity.nvidia_samples,
                     "nvidia-smi")
    return None


# --- the sampler on the node ---------------------------------------------------------------------


class Watcher:
    """One node's sampler: started once, read as often as needed (only what is new), stopped at the end."""

    def __init__(self, host: Any, views: Views, *, interval_s: float = DEFAULT_INTERVAL_S,
                 owner_pid: int | None = None, python: str | None = None) -> None:
        self.host = host
        self.views = views
        self.interval_s = interval_s
        self.owner_pid = owner_pid
        self.python = python or (sys.executable if host.backend.NAME == "local" else "python3")
        self.directory: str | None = None
        self.samples: list[WatchSample] = []
        self.started_at: float | None = None
        self.error: str | None = None
        self._offset = 0
        self._partial = ""

    def start(self) -> bool:
        """Put the sampler on the node and start it; False (with `error`) when that failed."""
        run = self.host.run("mktemp -d -t rocm-fleet-watch.XXXXXXXX")
        made = run.stdout.strip()
        if run.rc != 0 or not _WATCH_DIR.fullmatch(made):
            self.error = (f"cannot make the watcher's directory on the node: "
                          f"{printable(run.stderr.strip() or made)[:200]}")
            return False
        self.directory = made
        config = {"interval_s": self.interval_s, "out": f"{self.directory}/samples.jsonl",
                  "stop": f"{self.directory}/stop", "tick": f"{self.directory}/tick", "owner_pid": self.owner_pid,
                  "deadline": time.time() + REMOTE_DEADLINE_S, "timeout_s": max(10.0, 5 * self.interval_s),
                  "commands": {"gpus": list(self.views.gpus_argv), "processes": list(self.views.processes_argv)},
                  "run": uuid.uuid4().hex}
        marker = f"RF_WATCH_{uuid.uuid4().hex[:12]}"
        script = (f"cat > {self.directory}/sampler.py <<'{marker}'\n{SAMPLER.read_text()}\n{marker}\n"
                  f"cat > {self.directory}/config.json <<'{marker}'\n{json.dumps(config)}\n{marker}\n"
                  # the subshell's own output goes to the log too: a shell (bash) that does not exec the
                  # last command of a list would otherwise hold the connection open until the sampler ends
                  f"(cd / && exec setsid nohup {shlex.quote(self.python)} {self.directory}/sampler.py "
                  f"{self.directory}/config.json) > {self.directory}/sampler.log 2>&1 < /dev/null &")
        run = self.host.run(script)
        if run.rc != 0:
            self.error = f"cannot start the watcher on the node: {printable(run.stderr.strip())[:200]}"
            return False
        self.started_at = time.time()
        return True

    def read(self) -> list[WatchSample]:
        """Every sample taken so far (the new ones are fetched and parsed)."""
        if self.directory is None:
            return self.samples
        out = self.host.run(f"tail -c +{self._offset + 1} -- {self.directory}/samples.jsonl")
        if out.rc != 0:
            return self.samples
        text = self._partial + out.stdout
        self._offset += len(out.stdout.encode())
        lines = text.split("\n")
        self._partial = lines.pop()        # a line the sampler is still writing
        for line in lines:
            if line.strip():
                try:
                    self.samples.append(self.views.parse(json.loads(line)))
                except (ValueError, KeyError, TypeError) as exc:
                    self.error = f"a watcher sample was unreadable: {exc}"
        return self.samples

    def wait_past(self, moment: float, limit_s: float | None = None) -> list[WatchSample]:
        """Read until a sample taken after `moment` is in (at most `limit_s`, default three intervals
        and the views' time). The sampler is asked to take it at once (its tick file), not at its next
        interval: the run's first and last moments cost the views' time, not up to an interval."""
        deadline = time.time() + (limit_s if limit_s is not None else 3 * self.interval_s + 5)
        asked = False
        while True:
            samples = self.read()
            if (samples and samples[-1].t >= moment) or time.time() >= deadline:
                return samples
            if not asked and self.directory is not None:
                self.host.run(f"touch -- {self.directory}/tick")
                asked = True
            # a sampler that is gone will write nothing more (its pid file needs a moment after the start)
            if time.time() - (self.started_at or 0.0) > STARTUP_S and not self.alive():
                return samples
            time.sleep(min(0.2, self.interval_s / 4))

    def alive(self) -> bool:
        """The sampler's process (its pid file) is running and has not been told to stop."""
        return self.directory is not None and self.host.run(
            f"p=$(cat -- {self.directory}/pid 2>/dev/null) && [ -n \"$p\" ] && kill -0 \"$p\" 2>/dev/null "
            f"&& test ! -e {self.directory}/stop").rc == 0

    def cost(self) -> dict[str, Any]:
        """The sampler's own figures: the interval asked for and achieved, how long the views took."""
        return cost(self.samples, self.interval_s)

    def stop(self) -> None:
        """Read what is left, tell the sampler to stop and wait until it has (a view in progress ends
        first; past that it is killed), then remove its directory."""
        if self.directory is None:
            return
        self.read()
        wait = int(10 * (max(10.0, 5 * self.interval_s) + 2))
        self.host.run(f"d={self.directory}; touch -- \"$d/stop\"; p=$(cat -- \"$d/pid\" 2>/dev/null); i=0; "
                      f"while [ -n \"$p\" ] && kill -0 \"$p\" 2>/dev/null && [ $i -lt {wait} ]; do sleep 0.1; "
                      f"i=$((i + 1)); done; [ -n \"$p\" ] && kill -9 \"$p\" 2>/dev/null; rm -rf -- \"$d\"")
        self.directory = None


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(t))


def sighting_lines(found: Iterable[Sighting | Throttle]) -> str:
    return "; ".join(s.describe() for s in found)


def cost(samples: Sequence[WatchSample], interval_s: float) -> dict[str, Any]:
    took = [s.took_s for s in samples if s.took_s is not None]
    gaps = [b.t - a.t for a, b in itertools.pairwise(samples)]
    return {"interval_s": interval_s, "samples": len(samples),
            "interval_median_s": round(statistics.median(gaps), 3) if gaps else None,
            "interval_max_s": round(max(gaps), 3) if gaps else None,
            "views_median_s": round(statistics.median(took), 3) if took else None,
            "views_max_s": round(max(took), 3) if took else None}
