"""Burn-in: sustained bf16 matmul on every GPU at once, checked for correctness, with telemetry.

One worker thread per GPU loops C = A @ B (fixed seeded inputs, `size`^3) for `duration_s`.
Correctness: once, at the start, a 64x64 slice of C is compared with a float64 CPU reference
(so a GPU that is wrong from the first result is caught); that first full C is then kept as the
reference, and every `check_interval_s` (and at the end) the latest C is compared with it
element by element. GEMM on one GPU with one library version gives bit-identical results run to
run, so any differing element is a wrong result, and its GPU is named. Throughput is recorded
per time window (`windows` equal slices of the run); last window / first window is the
sustained/initial ratio, where thermal throttling shows.

run_acceptance() wraps the burn-in in a telemetry Sampler (validation/probes/telemetry.py)
with a reading before and after the load; acceptance_values(), acceptance_verdicts() and
acceptance_summary() turn the result into gate measurements, verdicts and one JSON-ready
summary per node. The workers run in threads of this process: a hung kernel cannot be killed,
so a worker that outlives duration + grace is reported as TIMEOUT and left behind (daemon).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from validation.judge import Verdict, aggregate, judge_timeout
from validation.probes import telemetry, torch_probes
from validation.records import Status
from validation.targets.model import TargetProfile

log = logging.getLogger(__name__)

DEFAULT_DURATION_S = 600.0
DEFAULT_SIZE = 8192
DEFAULT_WINDOWS = 10
DEFAULT_CHECK_INTERVAL_S = 30.0
GRACE_S = 120.0
CHECK_SLICE = 64
# float64 CPU reference vs the first device result on the checked slice (torch_probes' bf16 bound)
REFERENCE_TOLERANCE = {"bf16": 1e-2, "fp16": 5e-3, "fp32": 1e-4}
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

# A test hook: called with (worker index, check number, the result tensor) just before each
# comparison; tests use it to corrupt a result on purpose. None in real runs.
Inject = Callable[[int, int, torch.Tensor], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class BurninConfig:
    duration_s: float = DEFAULT_DURATION_S
    size: int = DEFAULT_SIZE
    dtype: str = "bf16"
    windows: int = DEFAULT_WINDOWS
    check_interval_s: float = DEFAULT_CHECK_INTERVAL_S
    batch_target_s: float = 0.2       # matmuls per timed batch: about this long
    warmup_s: float = 2.0             # GPUs only: reach sustained clocks before timing
    grace_s: float = GRACE_S
    seed: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    index: int
    start_s: float                    # since the timed load began
    end_s: float
    iterations: int
    tflops: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    t_s: float
    iteration: int
    wrong_elements: int               # elements that differ from the reference result


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuBurnin:
    """One worker's run. label: "gpu3" (or "cpu1" in CPU tests)."""

    label: str
    index: int
    device: str
    name: str
    bus_id: str | None
    m: int
    dtype: str
    iterations: int
    seconds: float
    tflops: float | None              # over the whole timed load
    windows: tuple[Window, ...]
    checks: tuple[Check, ...]
    reference_rel_err: float | None   # first result vs float64 CPU reference on the slice
    reference_tolerance: float
    error: str | None = None
    timed_out: bool = False

    @property
    def reference_ok(self) -> bool:
        return self.reference_rel_err is not None and self.reference_rel_err <= self.reference_tolerance

    @property
    def wrong_results(self) -> int | None:
        """Checks that found a wrong result (+1 if the very first result was wrong); None if no check ran."""
        if self.reference_rel_err is None:
            return None
        return sum(1 for c in self.checks if c.wrong_elements) + (0 if self.reference_ok else 1)

    @property
    def sustained_ratio(self) -> float | None:
        if len(self.windows) < 2 or self.windows[0].tflops <= 0:
            return None
        return round(self.windows[-1].tflops / self.windows[0].tflops, 6)


@dataclass(frozen=True, slots=True, kw_only=True)
class BurninReport:
    config: BurninConfig
    started_at: str
    seconds: float
    gpus: tuple[GpuBurnin, ...]


def device_bus_id(device: torch.device) -> str | None:
    """'0000:04:00.0' for a GPU from torch's device properties; None on CPU or when unknown."""
    if device.type != "cuda":
        return None
    props = torch.cuda.get_device_properties(torch_probes.gpu_index(device))
    bus, dev, domain = (getattr(props, f"pci_{k}_id", None) for k in ("bus", "device", "domain"))
    if bus is None or dev is None:
        return None
    return f"{domain or 0:04x}:{bus:02x}:{dev:02x}.0"


def _label(device: torch.device, position: int) -> str:
    return f"gpu{torch_probes.gpu_index(device)}" if device.type == "cuda" else f"{device.type}{position}"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _Worker:
    """The loop on one device; fills self.result (or leaves it None if it never finishes)."""

    def __init__(self, position: int, device: torch.device, config: BurninConfig, stop: threading.Event,
                 inject: Inject | None) -> None:
        self.position, self.device, self.config, self.stop, self.inject = position, device, config, stop, inject
        self.label = _label(device, position)
        self.result: GpuBurnin | None = None

    def run(self) -> None:
        try:
            self.result = self._run()
        except Exception as exc:  # a device error must name the GPU, not kill the other workers
            log.exception("burn-in worker %s failed", self.label)
            self.result = self._empty(error=f"{type(exc).__name__}: {exc}")

    def _empty(self, **kw: Any) -> GpuBurnin:
        cfg = self.config
        return GpuBurnin(label=self.label, index=self.position, device=str(self.device), name=self._name(),
                         bus_id=None, m=cfg.size, dtype=cfg.dtype, iterations=0, seconds=0.0, tflops=None,
                         windows=(), checks=(), reference_rel_err=None,
                         reference_tolerance=REFERENCE_TOLERANCE[cfg.dtype], **kw)

    def _name(self) -> str:
        if self.device.type == "cuda":
            return torch.cuda.get_device_name(torch_probes.gpu_index(self.device))
        return self.device.type

    def _run(self) -> GpuBurnin:
        cfg, device = self.config, self.device
        if device.type == "cuda":
            torch.cuda.set_device(device)
        n = cfg.size
        gen = torch.Generator(device=device).manual_seed(cfg.seed)
        a = torch.randn(n, n, device=device, generator=gen, dtype=torch.float32).to(_DTYPES[cfg.dtype])
        b = torch.randn(n, n, device=device, generator=gen, dtype=torch.float32).to(_DTYPES[cfg.dtype])
        c = torch.empty(n, n, device=device, dtype=_DTYPES[cfg.dtype])

        def step() -> None:
            torch.mm(a, b, out=c)

        step()
        _sync(device)
        s = min(CHECK_SLICE, n)
        ref_slice = a[:s].cpu().to(torch.float64) @ b[:, :s].cpu().to(torch.float64)
        got = c[:s, :s].cpu().to(torch.float64)
        rel_err = (got - ref_slice).abs().max().item() / (ref_slice.abs().max().item() or 1.0)
        reference = c.clone()     # the reference result, computed once
        batch = self._batch_size(step)
        if device.type == "cuda":
            end_warmup = time.perf_counter() + cfg.warmup_s
            while time.perf_counter() < end_warmup and not self.stop.is_set():
                for _ in range(batch):
                    step()
                _sync(device)

        flops = 2 * n * n * n
        windows: list[Window] = []
        checks: list[Check] = []
        t0 = time.perf_counter()
        window_len = cfg.duration_s / max(1, cfg.windows)
        w_start, w_iters, iterations = 0.0, 0, 0
        next_check = cfg.check_interval_s
        now = 0.0
        while now < cfg.duration_s and not self.stop.is_set():
            for _ in range(batch):
                step()
            _sync(device)
            iterations += batch
            w_iters += batch
            now = time.perf_counter() - t0
            if now >= (len(windows) + 1) * window_len and w_iters:
                windows.append(_window(len(windows), w_start, now, w_iters, flops))
                w_start, w_iters = now, 0
            if now >= next_check:
                checks.append(self._check(c, reference, len(checks), now, iterations))
                next_check = now + cfg.check_interval_s
        seconds = time.perf_counter() - t0
        if w_iters:
            tail = _window(len(windows), w_start, seconds, w_iters, flops)
            if windows and tail.end_s - tail.start_s < window_len / 2:   # a short tail joins the last window
                last = windows.pop()
                tail = _window(last.index, last.start_s, seconds, last.iterations + w_iters, flops)
            windows.append(tail)
        checks.append(self._check(c, reference, len(checks), seconds, iterations))
        return GpuBurnin(
            label=self.label, index=self.position, device=str(device), name=self._name(),
            bus_id=device_bus_id(device), m=n, dtype=cfg.dtype, iterations=iterations,
            seconds=round(seconds, 3),
            tflops=round(flops * iterations / seconds / 1e12, 6) if seconds > 0 else None,
            windows=tuple(windows), checks=tuple(checks), reference_rel_err=rel_err,
            reference_tolerance=REFERENCE_TOLERANCE[cfg.dtype],
        )

    def _batch_size(self, step: Callable[[], None]) -> int:
        fastest = math.inf
        for _ in range(3):
            start = time.perf_counter()
            step()
            _sync(self.device)
            fastest = min(fastest, time.perf_counter() - start)
        return max(1, min(10_000, math.ceil(self.config.batch_target_s / max(fastest, 1e-9))))

    def _check(self, c: torch.Tensor, reference: torch.Tensor, number: int, t_s: float, iteration: int) -> Check:
        if self.inject is not None:
            self.inject(self.position, number, c)
        wrong = int(torch.ne(c, reference).sum().item())
        if wrong:
            log.error("%s: %d elements differ from the reference result at %.1f s", self.label, wrong, t_s)
        return Check(t_s=round(t_s, 3), iteration=iteration, wrong_elements=wrong)


def _window(index: int, start: float, end: float, iterations: int, flops: int) -> Window:
    seconds = max(end - start, 1e-9)
    return Window(index=index, start_s=round(start, 3), end_s=round(end, 3), iterations=iterations,
                  tflops=round(flops * iterations / seconds / 1e12, 6))


def run_burnin(devices: Sequence[torch.device | str], config: BurninConfig, *,
               inject: Inject | None = None) -> BurninReport:
    """Run one worker per device, all at once; a worker that does not finish in time is TIMEOUT."""
    if config.dtype not in _DTYPES:
        raise ValueError(f"burn-in dtype must be one of {', '.join(_DTYPES)}, got {config.dtype!r}")
    if not devices:
        raise ValueError("no device to burn in")
    stop = threading.Event()
    workers = [_Worker(i, torch.device(d), config, stop, inject) for i, d in enumerate(devices)]
    threads = [threading.Thread(target=w.run, name=f"burnin-{w.label}", daemon=True) for w in workers]
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    deadline = t0 + config.duration_s + config.grace_s
    for t in threads:
        t.join(max(0.0, deadline - time.perf_counter()))
    stop.set()
    results = []
    for w, t in zip(workers, threads, strict=True):
        if t.is_alive() or w.result is None:
            log.error("burn-in worker %s still running %.0f s after its end; reported as TIMEOUT",
                      w.label, config.grace_s)
            results.append(w._empty(timed_out=True,
                                    error=f"did not finish within duration + {config.grace_s:.0f} s"))
        else:
            results.append(w.result)
    return BurninReport(config=config, started_at=started, seconds=round(time.perf_counter() - t0, 3),
                        gpus=tuple(results))


# --- with telemetry --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptanceRun:
    """A burn-in with the telemetry read before, during and after it."""

    burnin: BurninReport
    source: str | None                          # telemetry tool, None when none was found
    interval_s: float
    before: telemetry.Snapshot | None
    after: telemetry.Snapshot | None
    snapshots: tuple[telemetry.Snapshot, ...]
    telemetry: dict[int, telemetry.GpuTelemetry]  # by the tool's GPU index
    smi_index: dict[str, int]                   # burn-in label -> the tool's GPU index


def run_acceptance(devices: Sequence[torch.device | str], config: BurninConfig, *,
                   source: telemetry.Source | None, interval_s: float = telemetry.DEFAULT_INTERVAL_S,
                   call_timeout_s: float = telemetry.DEFAULT_CALL_TIMEOUT_S,
                   inject: Inject | None = None,
                   on_snapshot: Callable[[telemetry.Snapshot], None] | None = None) -> AcceptanceRun:
    """Read telemetry, start the sampler, burn in, stop the sampler, read again."""
    before = after = None
    snapshots: tuple[telemetry.Snapshot, ...] = ()
    if source is not None:
        before = telemetry.read_once(source, 0.0, call_timeout_s)
        sampler = telemetry.Sampler(source, interval_s=interval_s, call_timeout_s=call_timeout_s,
                                    on_snapshot=on_snapshot).start()
        try:
            report = run_burnin(devices, config, inject=inject)
        finally:
            snapshots = sampler.stop()
        after = telemetry.read_once(source, report.seconds, call_timeout_s)
    else:
        log.warning("no telemetry tool on PATH: the burn-in runs without temperature/power/ECC gates")
        report = run_burnin(devices, config, inject=inject)
    summary = telemetry.summarize(snapshots, before, after)
    return AcceptanceRun(burnin=report, source=source.name if source else None, interval_s=interval_s,
                         before=before, after=after, snapshots=snapshots, telemetry=summary,
                         smi_index=match_gpus(report.gpus, (before, *snapshots)))


def match_gpus(gpus: Sequence[GpuBurnin], snapshots: Sequence[telemetry.Snapshot | None]) -> dict[str, int]:
    """Burn-in label -> the telemetry tool's GPU index: by PCI bus id where both report one,
    else by the device index (CUDA/HIP order can differ from the tool's when
    CUDA_DEVICE_ORDER / *_VISIBLE_DEVICES are set; the bus id avoids naming the wrong GPU)."""
    by_bus: dict[str, int] = {}
    for snap in snapshots:
        for s in snap.samples if snap is not None else ():
            bus = telemetry.normalize_bus_id(s.bus_id)
            if bus is not None:
                by_bus.setdefault(bus, s.gpu)
    out = {}
    for g in gpus:
        bus = telemetry.normalize_bus_id(g.bus_id)
        if bus is not None and bus in by_bus:
            out[g.label] = by_bus[bus]
        else:
            digits = "".join(ch for ch in g.label if ch.isdigit())
            out[g.label] = int(digits) if digits else g.index
    return out


# metric -> (unit, higher_is_better) for the burn-in's own measurements
BURNIN_METRICS: dict[str, tuple[str, bool]] = {
    "burnin_wrong_results_count": ("count", False),
    "burnin_bf16_tflops": ("TFLOPS", True),
    "burnin_sustained_ratio": ("ratio", True),
}
METRIC_UNITS: dict[str, tuple[str, bool]] = {
    **BURNIN_METRICS,
    **{metric: (unit, better) for metric, (_, unit, better) in telemetry.TELEMETRY_GATES.items()},
}


def acceptance_values(run: AcceptanceRun) -> dict[str, dict[str, float | int | None]]:
    """subject ("gpu3") -> gate metric -> measurement, for every GPU that was burned in."""
    out: dict[str, dict[str, float | int | None]] = {}
    for g in run.burnin.gpus:
        tele = run.telemetry.get(run.smi_index.get(g.label, -1))
        values: dict[str, float | int | None] = {
            "burnin_wrong_results_count": g.wrong_results,
            f"burnin_{g.dtype}_tflops": g.tflops,
            "burnin_sustained_ratio": g.sustained_ratio,
        }
        if tele is not None:
            values.update(telemetry.gate_values(tele))
        else:
            values.update({metric: None for metric in telemetry.TELEMETRY_GATES})
        out[g.label] = values
    return out


def acceptance_verdicts(run: AcceptanceRun, profile: TargetProfile) -> list[Verdict]:
    """Every gate for every GPU; a worker that hung gets TIMEOUT for its burn-in metrics."""
    verdicts: list[Verdict] = []
    values = acceptance_values(run)
    for g in run.burnin.gpus:
        mine = values[g.label]
        if g.timed_out:
            own = (set(BURNIN_METRICS) | {f"burnin_{g.dtype}_tflops"}) & set(mine)
            limit = run.burnin.config.duration_s + run.burnin.config.grace_s
            verdicts.extend(judge_timeout(m, g.label, limit, profile) for m in sorted(own))
            mine = {m: v for m, v in mine.items() if m not in own}
        verdicts.extend(telemetry.judge_gates({g.label: mine}, profile))
    return verdicts


def acceptance_summary(run: AcceptanceRun, verdicts: Sequence[Verdict],
                       inventory: Sequence[telemetry.GpuInventory] = (),
                       inventory_error: str | None = None) -> dict[str, Any]:
    """One JSON-ready document per node: measurements, per-GPU verdicts, node verdict, inventory."""
    inv = {i.gpu: i for i in inventory}
    by_subject: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_subject.setdefault(v.subject, []).append(v)
    gpus: dict[str, Any] = {}
    for g in run.burnin.gpus:
        smi = run.smi_index.get(g.label)
        tele = run.telemetry.get(smi) if smi is not None else None
        own = by_subject.get(g.label, [])
        item = inv.get(smi) if smi is not None else None
        gpus[g.label] = {
            "name": g.name, "smi_index": smi, "bus_id": g.bus_id,
            "serial": item.serial if item else None, "vbios_version": item.vbios_version if item else None,
            "tflops": g.tflops,
            "tflops_first_window": g.windows[0].tflops if g.windows else None,
            "tflops_last_window": g.windows[-1].tflops if g.windows else None,
            "sustained_ratio": g.sustained_ratio, "iterations": g.iterations, "seconds": g.seconds,
            "checks": len(g.checks), "wrong_results": g.wrong_results,
            "reference_rel_err": g.reference_rel_err, "error": g.error, "timed_out": g.timed_out,
            "windows": [asdict(w) for w in g.windows],
            "telemetry": None if tele is None else {
                **asdict(tele), "ecc_correctable_delta": tele.ecc_correctable_delta,
                "ecc_uncorrectable_delta": tele.ecc_uncorrectable_delta,
                "ecc_deferred_delta": tele.ecc_deferred_delta},
            "verdicts": {v.metric: {"status": v.status.value, "measured": v.measured, "unit": v.unit,
                                    "code": v.code or None, "reason": v.reason} for v in own},
            "verdict": aggregate(own).value,
        }
    errors = [s.error for s in run.snapshots if s.error]
    cfg = run.burnin.config
    return {
        "kind": "rocm-fleet acceptance summary",
        "verdict": _node_verdict(verdicts, run).value,
        "started_at": run.burnin.started_at,
        "duration_s": cfg.duration_s, "seconds": run.burnin.seconds, "dtype": cfg.dtype, "size": cfg.size,
        "windows": cfg.windows, "check_interval_s": cfg.check_interval_s,
        "telemetry_source": run.source, "telemetry_interval_s": run.interval_s,
        "telemetry_snapshots": len(run.snapshots), "telemetry_errors": len(errors),
        "telemetry_first_error": errors[0] if errors else None,
        "inventory_error": inventory_error,
        "gpus": gpus,
    }


def _node_verdict(verdicts: Sequence[Verdict], run: AcceptanceRun) -> Status:
    if any(g.error and not g.timed_out for g in run.burnin.gpus):
        return Status.ERROR
    return aggregate(verdicts)

