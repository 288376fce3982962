"""GPU telemetry during a burn-in: a sampler thread, per-GPU summaries and the gate verdicts.

Sources (the first one on PATH wins, in this order):
- `amd-smi metric -p -c -t -e` (text view): parsed by validation/parsers/amd_smi.py, which reads
  power, edge/hotspot/memory temperature, GFX/MEM clock and the ECC totals from this view (its
  JSON path reads fewer fields). THROTTLE_STATUS is read here (the parser has no field for it).
- `rocm-smi --showtemp --showpower --showmaxpower --showclocks --showuse --json`: parsed by
  validation/parsers/rocm_smi.py; current sclk/mclk ("sclk clock speed:" "(1402Mhz)") are read
  here. No ECC and no throttle status from this source: those gates then say "not reported".
- `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`: parsed by
  validation/parsers/nvidia_smi.py (named columns come back in `fields`). The throttle bitmask
  is a second query, because its field was renamed (clocks_throttle_reasons ->
  clocks_event_reasons) and an unknown field fails the whole query.

Every call has its own timeout (runner.run); a failed or timed-out call becomes a snapshot with
an error and no samples, so a hung tool costs one interval and never the run. The summary and
gate functions below are pure: snapshots in, numbers and verdicts out.
"""

from __future__ import annotations

import json
import logging
import re
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dc_fields
from typing import Any

from validation import parsers, runner
from validation.errors import ParseError, ProbeError
from validation.judge import Verdict, judge_value
from validation.records import Status, normalize_bus_id  # noqa: F401  (telemetry.normalize_bus_id)
from validation.targets.model import TargetProfile

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 5.0
DEFAULT_CALL_TIMEOUT_S = 30.0

AMD_SMI_ARGV = ("amd-smi", "metric", "-p", "-c", "-t", "-e")
ROCM_SMI_ARGV = ("rocm-smi", "--showtemp", "--showpower", "--showmaxpower", "--showclocks", "--showuse", "--json")
NVIDIA_FIELDS = (
    "index", "pci.bus_id", "temperature.gpu", "temperature.memory", "power.draw", "power.limit",
    "clocks.sm", "clocks.mem", "utilization.gpu",
    "ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total",
)
# The idle pre-flight also asks for memory in use (amd-smi -u -m: USAGE and MEM_USAGE sections).
AMD_SMI_ACTIVITY_ARGV = (*AMD_SMI_ARGV, "-u", "-m")
ROCM_SMI_ACTIVITY_ARGV = (*ROCM_SMI_ARGV[:-1], "--showmeminfo", "vram", "--json")
NVIDIA_ACTIVITY_FIELDS = (*NVIDIA_FIELDS, "memory.used", "memory.total")
NVIDIA_THROTTLE_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
# nvidia-smi clock event reason bits (nvml.h nvmlClocksEventReason*): clocks held down by
# heat or by the hardware, as opposed to the software power cap (0x4) a loaded GPU runs into.
NV_THROTTLE_BITS = 0x8 | 0x20 | 0x40 | 0x80   # HW slowdown, SW thermal, HW thermal, HW power brake
NV_POWER_CAP_BIT = 0x4



@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSample:
    """One GPU at one moment; None = this source did not report the value."""

    gpu: int                                # the tool's GPU index
    bus_id: str | None = None               # "0000:04:00.0" where the tool reports it
    temperature_c: float | None = None      # the hottest sensor reported: hotspot/junction, else GPU/edge
    temperature_edge_c: float | None = None
    temperature_hotspot_c: float | None = None
    temperature_memory_c: float | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    gfx_clock_mhz: float | None = None      # SCLK / SM clock
    mem_clock_mhz: float | None = None      # MCLK
    util_pct: float | None = None
    vram_used_mib: float | None = None
    vram_total_mib: float | None = None
    throttled: bool | None = None           # thermal / hardware clock reduction in force
    power_capped: bool | None = None        # clocks held by the software power cap (NVIDIA only)
    throttle_status: str | None = None      # as printed: "UNTHROTTLED", "0x0000000000000004"
    ecc_correctable: int | None = None
    ecc_uncorrectable: int | None = None
    ecc_deferred: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """One poll of the source. error: why no samples came back (tool failed, timed out, unparsable)."""

    t_s: float                              # seconds since the sampler started
    seconds: float                          # how long the tool took
    samples: tuple[GpuSample, ...]
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuTelemetry:
    """Telemetry of one GPU over a run. Counters: before/after read outside the load."""

    gpu: int
    samples: int
    temperature_max_c: float | None
    temperature_edge_max_c: float | None
    temperature_hotspot_max_c: float | None
    temperature_memory_max_c: float | None
    power_max_w: float | None
    power_mean_w: float | None
    power_cap_w: float | None
    gfx_clock_median_mhz: float | None
    gfx_clock_min_mhz: float | None
    mem_clock_median_mhz: float | None
    throttled_fraction: float | None        # of the samples that reported a status
    power_capped_fraction: float | None
    ecc_correctable_before: int | None
    ecc_correctable_after: int | None
    ecc_uncorrectable_before: int | None
    ecc_uncorrectable_after: int | None
    ecc_deferred_before: int | None
    ecc_deferred_after: int | None
    notes: tuple[str, ...] = ()

    @property
    def ecc_correctable_delta(self) -> int | None:
        return _delta(self.ecc_correctable_before, self.ecc_correctable_after)

    @property
    def ecc_uncorrectable_delta(self) -> int | None:
        return _delta(self.ecc_uncorrectable_before, self.ecc_uncorrectable_after)

    @property
    def ecc_deferred_delta(self) -> int | None:
        return _delta(self.ecc_deferred_before, self.ecc_deferred_after)


def _delta(before: int | None, after: int | None) -> int | None:
    """after - before; None when either is unknown or the counter went backwards (reset)."""
    if before is None or after is None or after < before:
        return None
    return after - before


# --- parsing: one function per source, each on top of the project's parser -------------------


def parse_amd_smi_metric(text: str) -> tuple[GpuSample, ...]:
    """`amd-smi metric` text (or --json) -> one sample per GPU."""
    record = parsers.parse("amd-smi", text)
    throttle = _amd_throttle_status(text)
    out = []
    for g in record.gpus:
        status = throttle.get(g.index)
        hottest = g.temperature_hotspot_c if g.temperature_hotspot_c is not None else g.temperature_edge_c
        out.append(GpuSample(
            gpu=g.index, bus_id=g.bdf, temperature_c=hottest, temperature_edge_c=g.temperature_edge_c,
            temperature_hotspot_c=g.temperature_hotspot_c, temperature_memory_c=g.temperature_memory_c,
            power_w=g.power_w, power_cap_w=g.power_cap_w, gfx_clock_mhz=g.gfx_clock_mhz,
            mem_clock_mhz=g.mem_clock_mhz, util_pct=g.gfx_util_pct,
            vram_used_mib=g.vram_used_mib, vram_total_mib=g.vram_total_mib,
            throttled=None if status is None else status != "UNTHROTTLED", throttle_status=status,
            ecc_correctable=g.ecc_correctable, ecc_uncorrectable=g.ecc_uncorrectable,
            ecc_deferred=g.ecc_deferred,
        ))
    return tuple(out)


_AMD_GPU = re.compile(r"^GPU: (\d+)\s*$")
_AMD_THROTTLE = re.compile(r"^\s+THROTTLE_STATUS: (\S+)\s*$")


def _amd_throttle_status(text: str) -> dict[int, str]:
    """GPU index -> THROTTLE_STATUS ("THROTTLED"/"UNTHROTTLED"); N/A is left out."""
    body = [line for line in text.splitlines() if line.strip() and not line.startswith(("$", "WARNING:"))]
    if body and body[0].lstrip().startswith(("[", "{")):
        return _amd_throttle_json("\n".join(body))
    out: dict[int, str] = {}
    gpu: int | None = None
    for line in text.splitlines():
        if m := _AMD_GPU.match(line):
            gpu = int(m.group(1))
        elif (m := _AMD_THROTTLE.match(line)) and gpu is not None and m.group(1) != "N/A":
            out[gpu] = m.group(1)
    return out


def _amd_throttle_json(body: str) -> dict[int, str]:
    doc = json.loads(body)
    entries = doc.get("gpu_data", []) if isinstance(doc, dict) else doc
    out: dict[int, str] = {}
    for entry in entries:
        status = (entry.get("power") or {}).get("throttle_status") if isinstance(entry, dict) else None
        if isinstance(status, str) and status != "N/A":
            out[int(entry["gpu"])] = status
    return out


def parse_rocm_smi_json(text: str) -> tuple[GpuSample, ...]:
    """`rocm-smi ... --json` -> one sample per card (no ECC, no throttle status)."""
    record = parsers.parse("rocm-smi", text)
    clocks = _rocm_smi_clocks(text)
    out = []
    for g in record.gpus:
        hot = g.temperature_junction_c
        edge = g.temperature_edge_c
        sclk, mclk = clocks.get(g.index, (None, None))
        out.append(GpuSample(
            gpu=g.index, bus_id=g.pci_bus, temperature_c=hot if hot is not None else edge,
            temperature_edge_c=edge, temperature_hotspot_c=hot, temperature_memory_c=g.temperature_memory_c,
            power_w=g.power_w, power_cap_w=g.power_cap_w, gfx_clock_mhz=sclk, mem_clock_mhz=mclk,
            util_pct=g.gpu_busy_pct, vram_used_mib=_mib(g.vram_used_bytes), vram_total_mib=_mib(g.vram_total_bytes),
        ))
    return tuple(out)


_MHZ = re.compile(r"\((\d+(?:\.\d+)?)Mhz\)")


def _rocm_smi_clocks(text: str) -> dict[int, tuple[float | None, float | None]]:
    body = text[text.index("{"):]
    doc = json.loads(body)
    out: dict[int, tuple[float | None, float | None]] = {}
    for key, fields in doc.items():
        card = re.fullmatch(r"card(\d+)", str(key))
        if card is None or not isinstance(fields, dict):
            continue
        found = []
        for name in ("sclk clock speed:", "mclk clock speed:"):
            m = _MHZ.search(str(fields.get(name, "")))
            found.append(float(m.group(1)) if m else None)
        out[int(card.group(1))] = (found[0], found[1])
    return out


def nvidia_command_line(fields: Sequence[str]) -> str:
    return f"$ nvidia-smi --query-gpu={','.join(fields)} --format=csv,noheader,nounits"


def parse_nvidia_smi_csv(text: str, fields: Sequence[str] = NVIDIA_FIELDS,
                         throttle: Mapping[int, str] | None = None) -> tuple[GpuSample, ...]:
    """`nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits` -> one sample per GPU.

    The parser needs the command line to name the columns of a header-less CSV, so it is put in
    front of the text when missing. throttle: GPU index -> the active clock event reason mask.
    """
    if not text.lstrip().startswith("$"):
        text = f"{nvidia_command_line(fields)}\n{text}"
    record = parsers.parse("nvidia-smi", text)
    out = []
    for g in record.gpus:
        f = g.fields
        index = _int(f.get("index"))
        gpu = index if index is not None else g.index
        mask_text = (throttle or {}).get(gpu)
        mask = _mask(mask_text)
        out.append(GpuSample(
            gpu=gpu, bus_id=g.bus_id, temperature_c=g.temperature_c,
            temperature_memory_c=_num(f.get("temperature.memory")),
            power_w=g.power_draw_w, power_cap_w=g.power_limit_w, gfx_clock_mhz=_num(f.get("clocks.sm")),
            mem_clock_mhz=_num(f.get("clocks.mem")), util_pct=g.utilization_gpu_pct,
            vram_used_mib=_num(f.get("memory.used")), vram_total_mib=_num(f.get("memory.total")),
            throttled=None if mask is None else bool(mask & NV_THROTTLE_BITS),
            power_capped=None if mask is None else bool(mask & NV_POWER_CAP_BIT),
            throttle_status=mask_text,
            ecc_correctable=_int(f.get("ecc.errors.corrected.volatile.total")),
            ecc_uncorrectable=_int(f.get("ecc.errors.uncorrected.volatile.total")),
        ))
    return tuple(out)


def parse_nvidia_throttle_csv(text: str) -> dict[int, str]:
    """`nvidia-smi --query-gpu=index,<reasons field> --format=csv,noheader` -> index -> mask."""
    out: dict[int, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("$"):
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 2 or not cells[0].isdecimal():
            raise ParseError("nvidia-smi", "throttle query row is not 'index, mask'", line_no=n, line=line,
                             expected="'0, 0x0000000000000000'")
        out[int(cells[0])] = cells[1]
    return out


def _num(raw: str | None) -> float | None:
    if raw is None:
        return None
    m = re.match(r"^-?\d+(?:\.\d+)?", raw.strip())
    return float(m.group(0)) if m else None


def _int(raw: str | None) -> int | None:
    value = _num(raw)
    return None if value is None else int(value)


def _mib(raw_bytes: int | None) -> float | None:
    return None if raw_bytes is None else raw_bytes / (1 << 20)


def _mask(raw: str | None) -> int | None:
    if raw is None or not re.fullmatch(r"0x[0-9a-fA-F]+", raw.strip()):
        return None
    return int(raw.strip(), 16)


# --- sources: which tool to ask and how ----------------------------------------------------------

Run = Callable[[Sequence[str], float], runner.RawRun]


def _run(argv: Sequence[str], timeout_s: float) -> runner.RawRun:
    return runner.run(argv, timeout_s)


class Source:
    """One telemetry tool. read() returns the samples or raises ProbeError saying why not.

    `activity` asks the tool for memory in use as well (the idle pre-flight needs it)."""

    name = "none"

    def __init__(self, run: Run = _run, *, activity: bool = False) -> None:
        self._run = run
        self.activity = activity
        self.last_raw: dict[str, str] = {}   # command line -> its latest stdout (kept for fixtures/debugging)

    def read(self, timeout_s: float) -> tuple[GpuSample, ...]:
        raise NotImplementedError

    def _call(self, argv: Sequence[str], timeout_s: float) -> str:
        raw = self._run(argv, timeout_s)
        if raw.timed_out:
            raise ProbeError(f"{argv[0]} ran past {timeout_s:.0f} s")
        if raw.rc != 0:
            raise ProbeError(f"{' '.join(argv)} exited {raw.rc}: {raw.stderr.strip()[:200]}")
        self.last_raw[" ".join(argv)] = raw.stdout
        return raw.stdout


class AmdSmiSource(Source):
    name = "amd-smi"

    def read(self, timeout_s: float) -> tuple[GpuSample, ...]:
        return parse_amd_smi_metric(self._call(AMD_SMI_ACTIVITY_ARGV if self.activity else AMD_SMI_ARGV, timeout_s))


class RocmSmiSource(Source):
    name = "rocm-smi"

    def read(self, timeout_s: float) -> tuple[GpuSample, ...]:
        return parse_rocm_smi_json(self._call(ROCM_SMI_ACTIVITY_ARGV if self.activity else ROCM_SMI_ARGV,
                                              timeout_s))


class NvidiaSmiSource(Source):
    name = "nvidia-smi"

    def __init__(self, run: Run = _run, *, activity: bool = False) -> None:
        super().__init__(run, activity=activity)
        self._throttle_fields = list(NVIDIA_THROTTLE_FIELDS)   # the first that works is kept

    def read(self, timeout_s: float) -> tuple[GpuSample, ...]:
        fields = NVIDIA_ACTIVITY_FIELDS if self.activity else NVIDIA_FIELDS
        argv = ("nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits")
        text = self._call(argv, timeout_s)
        return parse_nvidia_smi_csv(text, fields, self._throttle(timeout_s))

    def _throttle(self, timeout_s: float) -> dict[int, str]:
        while self._throttle_fields:
            name = self._throttle_fields[0]
            argv = ("nvidia-smi", f"--query-gpu=index,{name}", "--format=csv,noheader")
            raw = self._run(argv, timeout_s)
            if raw.rc == 0 and not raw.timed_out:
                self.last_raw[" ".join(argv)] = raw.stdout
                return parse_nvidia_throttle_csv(raw.stdout)
            if raw.timed_out:
                return {}
            log.info("nvidia-smi does not know %s (rc %s); trying the older name", name, raw.rc)
            self._throttle_fields.pop(0)
        return {}


SOURCES: tuple[type[Source], ...] = (AmdSmiSource, RocmSmiSource, NvidiaSmiSource)


def detect_source(which: Callable[[str], str | None] = runner.which, run: Run = _run, *,
                  activity: bool = False) -> Source | None:
    """The first telemetry tool on PATH (amd-smi, rocm-smi, nvidia-smi), None if none is."""
    for cls in SOURCES:
        if which(cls.name):
            return cls(run, activity=activity)
    return None


def read_once(source: Source, t_s: float, timeout_s: float) -> Snapshot:
    """One poll; every failure becomes a Snapshot with the reason, never an exception."""
    start = time.perf_counter()
    try:
        samples = source.read(timeout_s)
        error = None if samples else f"{source.name} reported no GPU"
    except (ProbeError, ParseError, ValueError, KeyError) as exc:
        samples, error = (), f"{source.name}: {exc}"
    return Snapshot(t_s=round(t_s, 3), seconds=round(time.perf_counter() - start, 3), samples=samples,
                    error=error)


class Sampler:
    """Poll a source every interval_s on a daemon thread until stop(); keeps every snapshot.

    The first poll happens at start. A poll that takes longer than the interval delays the next
    one (polls never overlap). on_snapshot, when given, sees every snapshot as it arrives.
    """

    def __init__(self, source: Source, *, interval_s: float = DEFAULT_INTERVAL_S,
                 call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
                 on_snapshot: Callable[[Snapshot], None] | None = None) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.source = source
        self.interval_s = interval_s
        self.call_timeout_s = call_timeout_s
        self.on_snapshot = on_snapshot
        self.snapshots: list[Snapshot] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="telemetry-sampler", daemon=True)
        self._t0 = 0.0

    def start(self) -> Sampler:
        self._t0 = time.perf_counter()
        self._thread.start()
        return self

    def stop(self) -> tuple[Snapshot, ...]:
        self._stop.set()
        self._thread.join(self.call_timeout_s + self.interval_s + 5)
        if self._thread.is_alive():
            log.warning("telemetry sampler still busy after stop; keeping %d snapshots", len(self.snapshots))
        return tuple(self.snapshots)

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = time.perf_counter()
            snap = read_once(self.source, began - self._t0, self.call_timeout_s)
            self.snapshots.append(snap)
            if snap.error:
                log.warning("telemetry poll at %.1f s: %s", snap.t_s, snap.error)
            if self.on_snapshot is not None:
                self.on_snapshot(snap)
            self._stop.wait(max(0.0, self.interval_s - (time.perf_counter() - began)))


# --- summaries and gates (pure) ----------------------------------------------------------------


def summarize(snapshots: Iterable[Snapshot], before: Snapshot | None = None,
              after: Snapshot | None = None) -> dict[int, GpuTelemetry]:
    """Per GPU: maxima, means, medians, throttled share of samples, ECC counters before/after.

    ECC counters come from `before`/`after` (read outside the load); where those lack a GPU or
    a counter, the first/last load sample that has it stands in (a note says so).
    """
    snaps = list(snapshots)
    by_gpu: dict[int, list[GpuSample]] = {}
    for snap in snaps:
        for s in snap.samples:
            by_gpu.setdefault(s.gpu, []).append(s)
    edge_gpus = {s.gpu for snap in (before, after) if snap is not None for s in snap.samples}
    out: dict[int, GpuTelemetry] = {}
    for gpu in sorted(set(by_gpu) | edge_gpus):
        samples = by_gpu.get(gpu, [])
        notes: list[str] = []
        counters: dict[str, int | None] = {}
        for name in ("ecc_correctable", "ecc_uncorrectable", "ecc_deferred"):
            first = _counter(before, gpu, name)
            last = _counter(after, gpu, name)
            if first is None:
                first = next((getattr(s, name) for s in samples if getattr(s, name) is not None), None)
                if first is not None:
                    notes.append(f"{name} before: first load sample (no reading before the load)")
            if last is None:
                last = next((getattr(s, name) for s in reversed(samples) if getattr(s, name) is not None), None)
                if last is not None:
                    notes.append(f"{name} after: last load sample (no reading after the load)")
            if first is not None and last is not None and last < first:
                notes.append(f"{name} went backwards {first} -> {last} (counter reset?); delta unknown")
            counters[f"{name}_before"], counters[f"{name}_after"] = first, last
        throttle = [s.throttled for s in samples if s.throttled is not None]
        capped = [s.power_capped for s in samples if s.power_capped is not None]
        power = _values(samples, "power_w")
        clocks = _values(samples, "gfx_clock_mhz")
        mclk = _values(samples, "mem_clock_mhz")
        caps = _values(samples, "power_cap_w")
        out[gpu] = GpuTelemetry(
            gpu=gpu, samples=len(samples),
            temperature_max_c=_max(samples, "temperature_c"),
            temperature_edge_max_c=_max(samples, "temperature_edge_c"),
            temperature_hotspot_max_c=_max(samples, "temperature_hotspot_c"),
            temperature_memory_max_c=_max(samples, "temperature_memory_c"),
            power_max_w=max(power) if power else None,
            power_mean_w=round(statistics.fmean(power), 3) if power else None,
            power_cap_w=min(caps) if caps else None,
            gfx_clock_median_mhz=statistics.median(clocks) if clocks else None,
            gfx_clock_min_mhz=min(clocks) if clocks else None,
            mem_clock_median_mhz=statistics.median(mclk) if mclk else None,
            throttled_fraction=round(sum(throttle) / len(throttle), 6) if throttle else None,
            power_capped_fraction=round(sum(capped) / len(capped), 6) if capped else None,
            notes=tuple(notes),
            **counters,
        )
    return out


def _counter(snap: Snapshot | None, gpu: int, name: str) -> int | None:
    if snap is None:
        return None
    return next((getattr(s, name) for s in snap.samples if s.gpu == gpu), None)


def _values(samples: Sequence[GpuSample], name: str) -> list[float]:
    return [v for v in (getattr(s, name) for s in samples) if v is not None]


def _max(samples: Sequence[GpuSample], name: str) -> float | None:
    values = _values(samples, name)
    return max(values) if values else None


# metric name -> (GpuTelemetry attribute, unit, higher_is_better)
TELEMETRY_GATES: dict[str, tuple[str, str, bool]] = {
    "burnin_temperature_max_c": ("temperature_max_c", "°C", False),
    "burnin_power_max_w": ("power_max_w", "W", False),
    "burnin_ecc_uncorrectable_delta": ("ecc_uncorrectable_delta", "count", False),
    "burnin_ecc_correctable_delta": ("ecc_correctable_delta", "count", False),
    "burnin_throttled_fraction": ("throttled_fraction", "fraction", False),
}


def gate_values(telemetry: GpuTelemetry) -> dict[str, float | int | None]:
    """The gate measurements of one GPU, keyed by target metric."""
    return {metric: getattr(telemetry, attr) for metric, (attr, _, _) in TELEMETRY_GATES.items()}


def judge_gates(values: Mapping[str, Mapping[str, float | int | None]], profile: TargetProfile) -> list[Verdict]:
    """values: subject ("gpu3") -> metric -> measurement. One verdict per subject and metric.

    A value the source did not report is ERROR "not reported" (judge_value), never a pass,
    except for a record-only metric: nothing is judged there, so it is SKIP with the reason.
    """
    out = []
    for subject, metrics in values.items():
        for metric, value in metrics.items():
            target = profile.get(metric)
            if value is None and target is not None and target.threshold is None:
                out.append(Verdict(status=Status.SKIP, subject=subject, metric=metric, measured=None,
                                   unit=target.unit, target=target,
                                   reason=f"record only: {subject} {metric} not reported by this source"))
            else:
                out.append(judge_value(metric, subject, value, profile))
    return out


def snapshot_to_json(snap: Snapshot) -> dict[str, Any]:
    """A snapshot as JSON, leaving out what the source did not report."""
    return {"t_s": snap.t_s, "seconds": snap.seconds, "error": snap.error,
            "samples": [{f.name: getattr(s, f.name) for f in dc_fields(s) if getattr(s, f.name) is not None}
                        for s in snap.samples]}


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuInventory:
    """Identity of one GPU for the acceptance record; None = not reported."""

    gpu: int
    serial: str | None
    vbios_version: str | None
    bus_id: str | None
    extra: dict[str, str] = field(default_factory=dict)


ROCM_SMI_INVENTORY_ARGV = ("rocm-smi", "--showserial", "--showvbios", "--showbus", "--json")
NVIDIA_INVENTORY_FIELDS = ("index", "serial", "vbios_version", "pci.bus_id", "uuid")


def inventory_from_rocm_smi(text: str) -> tuple[GpuInventory, ...]:
    """`rocm-smi --showserial --showvbios --showbus --json`: board serial and VBIOS per card."""
    record = parsers.parse("rocm-smi", text)
    return tuple(GpuInventory(gpu=g.index, serial=g.serial_number, vbios_version=g.vbios_version,
                              bus_id=g.pci_bus) for g in record.gpus)


def _nvidia_index(gpu: Any) -> int:
    """The GPU's index: the `index` column where the query has one, else its position."""
    index = _int(gpu.fields.get("index"))
    return int(gpu.index) if index is None else index


def inventory_from_nvidia_smi(text: str) -> tuple[GpuInventory, ...]:
    """`nvidia-smi --query-gpu=index,serial,vbios_version,pci.bus_id,uuid --format=csv,noheader`."""
    if not text.lstrip().startswith("$"):
        text = f"$ nvidia-smi --query-gpu={','.join(NVIDIA_INVENTORY_FIELDS)} --format=csv,noheader\n{text}"
    record = parsers.parse("nvidia-smi", text)
    return tuple(GpuInventory(gpu=_nvidia_index(g), serial=g.serial, vbios_version=g.vbios_version, bus_id=g.bus_id,
                              extra={"uuid": g.uuid} if g.uuid else {}) for g in record.gpus)


def read_inventory(source: Source | None, run: Run = _run,
                   timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> tuple[tuple[GpuInventory, ...], str | None]:
    """Serials and VBIOS per GPU through the tool that fits the source; (inventory, error)."""
    if source is None:
        return (), "no telemetry tool (amd-smi, rocm-smi, nvidia-smi) on PATH"
    if isinstance(source, NvidiaSmiSource):
        argv: tuple[str, ...] = ("nvidia-smi", f"--query-gpu={','.join(NVIDIA_INVENTORY_FIELDS)}",
                                 "--format=csv,noheader")
        parse = inventory_from_nvidia_smi
    else:
        argv, parse = ROCM_SMI_INVENTORY_ARGV, inventory_from_rocm_smi
    try:
        raw = run(argv, timeout_s)
    except ProbeError as exc:
        return (), str(exc)
    if not raw.ok:
        return (), f"{' '.join(argv)}: rc {raw.rc}, timed out {raw.timed_out}: {raw.stderr.strip()[:200]}"
    try:
        return parse(raw.stdout), None
    except ParseError as exc:
        return (), f"{argv[0]} output not understood: {exc}"
