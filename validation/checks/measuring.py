"""Per-node state of one measuring run: were its GPUs busy, and what was measured on them.

The idle pre-flight (test_gpu_idle.py) fills it; the plugin skips every measuring check of a node
whose GPUs are busy unless the operator allowed it (`--rf-allow-busy`, which marks each number
`measured_while_busy`). While measuring checks run, the node's GPU watcher
(validation/probes/gpu_watch.py) samples the GPUs; at the end of each check every number it
recorded gets the window it was taken in and what the watcher saw there (`watch`): a foreign
process makes it `valid: false` (or `measured_while_busy` with --allow-busy), a hardware/thermal
clock reduction marks it `throttled`. The post-flight looks at the whole run once more; the
sibling check reads the numbers. Measurement entries are shared with the node's results
document, so a mark lands in both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from validation.idle import GPU_IN_SUBJECT, Ownership, names_gpu
from validation.probes import gpu_watch, own_memory, telemetry
from validation.results.node import NodeResults

# The checks that look at the GPUs' activity or at the numbers, rather than measure.
PREFLIGHT = "test_gpus_are_idle_before_measuring"
SIBLINGS = "test_every_gpu_and_link_keeps_up_with_its_siblings"
JUDGED = "test_the_performance_numbers_were_judged"
POSTFLIGHT = "test_gpus_stayed_idle_while_measuring"
ORDER = {PREFLIGHT: 0, SIBLINGS: 2, JUDGED: 2.5, POSTFLIGHT: 3}          # everything else: 1
MEASURING_TIERS = ("quick", "acceptance")
# Numbers recorded within this long after another, with no span of their own, come from that number's
# run: a ResNet configuration's p50/p99 latency and peak memory are recorded right after its images/s.
# Given their own empty span instead, they were judged by the one sample before it: on the lent H100
# (mid-run and copy loads against a site baseline) the latencies of a loaded run stayed valid and failed
# RF-MODEL-LOW as the hardware's while their images/s beside them was marked invalid.
SAME_RUN_S = 0.25
WATCH_OFF = "the watcher was turned off (--watch-interval 0)"
# A check that failed on one of these said a number is off; when someone else's process was on the
# GPU meanwhile, that says nothing about the hardware, so RF-GPU-BUSY takes its place. Any other
# failure (a wrong result, a tool that failed, ECC errors) stands, with the sighting added.
NUMBER_CODES = frozenset({
    "RF-GEMM-LOW", "RF-HBM-LOW", "RF-BW-HOST-LOW", "RF-BW-XGMI-LOW", "RF-BW-NVLINK-LOW", "RF-MIOPEN-LOW",
    "RF-MODEL-LOW", "RF-RCCL-BUSBW-LOW", "RF-RCCL-DIP", "RF-BELOW-TARGET", "RF-ABOVE-TARGET", "RF-SIBLING-GAP",
    "RF-POWER-LOW", "RF-BURNIN-SUSTAINED-DROP", "RF-NET-LOW", "RF-TIMEOUT", "RF-PROBE-UNSTABLE"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckWindow:
    """What the watcher saw while one check measured: the check's own span and each number's."""

    check: str
    whole: gpu_watch.Window
    foreign: tuple[gpu_watch.Sighting, ...]
    throttled: tuple[gpu_watch.Throttle, ...]
    numbers: int               # numbers the check recorded
    marked: int                # of them, marked invalid or measured_while_busy
    unseen: tuple[gpu_watch.Unseen, ...] = ()


@dataclass(slots=True)
class NodeMeasuring:
    node: str
    allow_busy: bool
    results: NodeResults | None = None
    checked: bool = False                                     # the pre-flight read the GPUs
    unreadable: str = ""                                      # why the pre-flight could not read them
    busy: dict[str, str] = field(default_factory=dict)       # "gpu0" -> why, found before measuring
    measurements: list[dict[str, Any]] = field(default_factory=list)
    watcher: gpu_watch.Watcher | None = None
    watch_error: str = ""                                     # why there is no watcher
    owner: Ownership = field(default_factory=Ownership)
    measured_from: float | None = None                        # the first measuring check's start
    measured_to: float | None = None                          # the last one's end
    windows: list[CheckWindow] = field(default_factory=list)
    own_memory: own_memory.OwnMemory | None = None            # this run's own device memory (local runs)
    own_memory_off: str = "not attached"                      # why there is no ledger
    main_pid: int | None = None                               # the run's own process (the watcher's owner)

    def skip_reason(self) -> str | None:
        """Why a measuring check must not run on this node now, or None."""
        if not self.busy or self.allow_busy:
            return None
        gpus = ", ".join(sorted(self.busy))
        return (f"not measured: {gpus} busy with someone else's work (RF-GPU-BUSY, see "
                f"{PREFLIGHT}); pass --allow-busy to measure anyway")

    def add(self, entry: dict[str, Any]) -> None:
        """A new measurement of this run: flagged when taken on a GPU found busy, then kept."""
        entry.setdefault("recorded_at", round(time.time(), 3))
        if self.busy and self.allow_busy and not entry["metric"].startswith("idle_") \
                and names_gpu(str(entry.get("subject", "")), self.busy):
            entry["measured_while_busy"] = True
        self.measurements.append(entry)
        if self.results is not None:
            self.results.add_measurement(entry)

    def mark(self, gpus: dict[str, str], *, invalid: bool) -> int:
        """Mark this run's numbers taken on `gpus` (subject -> why): invalid, or measured while busy.
        Returns how many numbers were marked."""
        count = 0
        for entry in self.measurements:
            if entry["metric"].startswith("idle_") or entry.get("value") is None:
                continue
            if names_gpu(str(entry.get("subject", "")), gpus):
                if invalid:
                    entry["valid"] = False
                    entry["invalid_reason"] = "; ".join(sorted(set(gpus.values())))[:500]
                else:
                    entry["measured_while_busy"] = True
                count += 1
        if count and self.results is not None:
            self.results.write()
        return count

    def unaccounted(self, sample: gpu_watch.WatchSample, gpu: telemetry.GpuSample,
                    listed: dict[int, float]) -> float | None:
        """Memory in use on `gpu` at `sample` that neither its listed processes nor this run account for."""
        return own_memory.unaccounted_mib(gpu.vram_used_mib, telemetry.normalize_bus_id(gpu.bus_id), listed,
                                          sample.ours, self.main_pid or -1, self.own_memory, sample.t)

    def mark_own_memory(self, moment: float) -> float:
        """A mark of this run's own device memory (a measuring check's start or end, the post-flight); returns
        `moment`. A ledger that cannot be read any more is given up, saying why."""
        if self.own_memory is not None:
            try:
                self.own_memory.mark(moment)
            except (RuntimeError, KeyError) as exc:
                self.own_memory, self.own_memory_off = None, f"PyTorch could not read its memory: {str(exc)[:200]}"
        return moment

    def window(self, samples: list[gpu_watch.WatchSample], start: float, end: float, interval: float,
               gpus: list[int] | None) -> gpu_watch.Window:
        """What the watcher saw from `start` to `end` on `gpus` (all: None), memory included where this run
        keeps its ledger."""
        return gpu_watch.window(samples, start, end, interval_s=interval, owner=self.owner, gpus=gpus,
                                unaccounted=self.unaccounted if self.own_memory is not None else None,
                                unseen_mib=own_memory.UNSEEN_MIB)

    def watch_check(self, check: str, start: float, end: float, first: int) -> CheckWindow | None:
        """Give the numbers recorded since index `first` (by the check that ran from `start` to `end`)
        their windows and what the watcher saw in them; None when nothing watches this node."""
        self.measured_from = start if self.measured_from is None else self.measured_from
        self.measured_to = end
        if self.watcher is not None:
            try:
                samples = self.watcher.read()
            except Exception as exc:
                self.watch_error = f"the watcher could not be read: {str(exc)[:200]}"
                self.watcher = None
        if self.watcher is None:
            for entry in self.measurements[first:]:
                entry["watch"] = {"samples": 0, "watched": 0, "not_watched": self.watch_error or "no watcher"}
            return None
        interval = self.watcher.interval_s
        previous = start
        marked, numbers = 0, 0
        named: set[int] | None = set()
        foreign: dict[tuple[int, int], gpu_watch.Sighting] = {}
        throttled: dict[int, gpu_watch.Throttle] = {}
        unseen: dict[int, gpu_watch.Unseen] = {}
        last_span: tuple[float, float] | None = None
        for entry in self.measurements[first:]:
            if entry["metric"].startswith("idle_"):
                continue
            # a number's own span: the tool run it came from (runner.RawRun.started_at); else, recorded in a
            # burst right after another number, that number's run (latency and memory beside images/s);
            # else since the last one
            taken_to = float(entry.get("taken_to") or entry.get("recorded_at") or end)
            if entry.get("taken_from"):
                taken_from = float(entry["taken_from"])
            elif last_span is not None and taken_to - last_span[1] <= SAME_RUN_S:
                taken_from, taken_to = last_span[0], max(taken_to, last_span[1])
            else:
                taken_from = previous
            previous, last_span = taken_to, (taken_from, taken_to)
            gpus = [int(n) for n in GPU_IN_SUBJECT.findall(str(entry.get("subject", "")))] or None
            named = None if gpus is None or named is None else named | set(gpus)
            seen = self.window(samples, taken_from, taken_to, interval, gpus)
            entry["watch"] = seen.to_json()
            foreign.update({(s.gpu, s.pid): s for s in seen.foreign})
            throttled.update({t.gpu: t for t in seen.throttled})
            unseen.update({u.gpu: u for u in seen.unseen})
            if entry.get("value") is None:
                continue
            numbers += 1
            if seen.throttled:
                entry["throttled"] = gpu_watch.sighting_lines(seen.throttled)[:500]
            if seen.foreign or seen.unseen:
                if seen.foreign:
                    why = "someone else's process on the GPU while it was measured: " + gpu_watch.sighting_lines(
                        seen.foreign)
                else:
                    why = "someone the node cannot see used the GPU while it was measured: " + "; ".join(
                        u.describe() for u in seen.unseen)
                if self.allow_busy:
                    entry["measured_while_busy"] = True
                else:
                    entry["valid"] = False
                    entry["invalid_reason"] = why[:500]
                marked += 1
        # the check's own span, on the GPUs its numbers name (all of them when it names none)
        whole = self.window(samples, start, end, interval, sorted(named) if named else None)
        foreign.update({(s.gpu, s.pid): s for s in whole.foreign if (s.gpu, s.pid) not in foreign})
        throttled.update({t.gpu: t for t in whole.throttled if t.gpu not in throttled})
        unseen.update({u.gpu: u for u in whole.unseen if u.gpu not in unseen})
        if self.results is not None:
            self.results.write()
        found = CheckWindow(check=check, whole=whole, foreign=tuple(foreign[k] for k in sorted(foreign)),
                            throttled=tuple(throttled[k] for k in sorted(throttled)), numbers=numbers, marked=marked,
                            unseen=tuple(unseen[k] for k in sorted(unseen)))
        self.windows.append(found)
        return found

    def note_siblings(self, metrics: set[str], usable: Any) -> None:
        """The sibling check compared these metrics across the node's GPUs or links: their usable
        entries count as judged by siblings (validation/judged.py)."""
        for entry in self.measurements:
            if entry["metric"] in metrics and usable(entry):
                entry["judged_by_siblings"] = True
        if self.results is not None:
            self.results.write()

    def unattributed(self, run: gpu_watch.Window) -> tuple[gpu_watch.Sighting, ...]:
        """Foreign processes the watcher saw over the whole run that no check's window caught (between
        checks, or after the last one ended and before the post-flight)."""
        caught = {(s.gpu, s.pid) for w in self.windows for s in w.foreign}
        return tuple(s for s in run.foreign if (s.gpu, s.pid) not in caught)

    def unseen_between(self, run: gpu_watch.Window) -> tuple[gpu_watch.Unseen, ...]:
        """Memory someone the node cannot see held over the whole run on a GPU no check's window caught it on."""
        caught = {u.gpu for w in self.windows for u in w.unseen}
        return tuple(u for u in run.unseen if u.gpu not in caught)
