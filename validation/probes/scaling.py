"""Scaling: one probe on 1, 2, 4 and 8 GPUs at once; per-GPU figures, efficiency, slow GPUs.

Each GPU first runs the workload alone (its solo figure, all GPUs one after another in one
process). Then for each N the first N GPUs run it together, one process per GPU (spawned, so
Python's GIL never couples them), all released by one barrier. A worker that finishes its
samples keeps its GPU busy with a matmul loop until every worker has finished, so no timed
sample runs next to an idle neighbour.

- efficiency(N) = aggregate(N) / (N x single-GPU), where single-GPU is the mean solo figure of
  the N GPUs taking part: sum(per-GPU under load) / sum(their solo figures).
- slowdown of a GPU at N = 1 - figure under load / its solo figure. A GPU whose slowdown passes
  the threshold is named ("gpu5 slows 12% when neighbours are busy").

Probes measure; nothing here passes or fails a node.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import queue as queue_mod
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from validation.probes import model_bench, torch_probes

log = logging.getLogger(__name__)

COUNTS = (1, 2, 4, 8)
SLOW_THRESHOLD = 0.05  # a GPU more than 5 % slower under load than alone is named
_JOIN_S = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """What every GPU runs: probe "matmul" (matmul_tflops) or "resnet50" (resnet50_inference)."""

    probe: str
    dtype: str = "bf16"
    size: int = 8192  # matmul M = N = K
    batch: int = 256  # resnet50
    mode: str = "graph"  # resnet50
    image_size: int = 224  # resnet50
    warmup: int = 3
    repeats: int = 10
    latency_repeats: int = 20  # resnet50; latency is not what scaling reports
    target_sample_s: float = 0.1
    timeout_s: float = 120.0
    filler_size: int = 4096  # matmul that keeps a finished GPU busy

    @property
    def name(self) -> str:
        if self.probe == "matmul":
            return f"matmul_{self.dtype}_{self.size}"
        return f"resnet50_{self.dtype}_{self.mode}_b{self.batch}"

    @property
    def unit(self) -> str:
        return "TFLOP/s" if self.probe == "matmul" else "images/s"


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuFigure:
    """One GPU's median in one run; value None with the error when the probe failed there."""

    gpu: str
    value: float | None
    spread_pct: float | None
    error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalingPoint:
    """N GPUs at once. Without enough GPUs: empty figures and a reason."""

    n_gpus: int
    figures: tuple[GpuFigure, ...]
    aggregate: float | None
    efficiency: float | None
    reason: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Slowdown:
    gpu: str
    n_gpus: int
    solo: float
    loaded: float
    slowdown: float  # fraction: 0.12 = 12 % slower than alone


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalingResult:
    workload: str
    unit: str
    solo: tuple[GpuFigure, ...]
    points: tuple[ScalingPoint, ...]
    slow_threshold: float
    slow: tuple[Slowdown, ...]  # the worst slowdown of each GPU past the threshold

    def slow_messages(self) -> tuple[str, ...]:
        return tuple(describe_slowdown(s, self.unit) for s in self.slow)


def describe_slowdown(s: Slowdown, unit: str) -> str:
    return (f"{s.gpu} slows {s.slowdown * 100:.0f}% when neighbours are busy "
            f"(N={s.n_gpus}: {s.loaded:.4g} vs {s.solo:.4g} {unit} alone)")


# --- pure arithmetic -------------------------------------------------------------------------


def efficiency(loaded: Sequence[float | None], solo: Sequence[float | None]) -> float | None:
    """sum(loaded) / sum(solo) = aggregate(N) / (N x mean solo); None if any figure is missing."""
    if not loaded or len(loaded) != len(solo) or any(v is None for v in (*loaded, *solo)):
        return None
    total_solo = sum(v for v in solo if v is not None)
    return sum(v for v in loaded if v is not None) / total_solo if total_solo > 0 else None


def slowdowns(solo: Sequence[GpuFigure], points: Sequence[ScalingPoint]) -> tuple[Slowdown, ...]:
    """Every GPU's slowdown at every N > 1 (solo matched by GPU name)."""
    alone = {f.gpu: f.value for f in solo if f.value}
    out = []
    for point in points:
        if point.n_gpus < 2:
            continue
        for f in point.figures:
            base = alone.get(f.gpu)
            if base and f.value is not None:
                out.append(Slowdown(gpu=f.gpu, n_gpus=point.n_gpus, solo=base, loaded=f.value,
                                    slowdown=1 - f.value / base))
    return tuple(out)


def worst_slowdowns(all_slowdowns: Sequence[Slowdown], threshold: float) -> tuple[Slowdown, ...]:
    """Per GPU, its worst slowdown if that passes the threshold; in GPU order."""
    worst: dict[str, Slowdown] = {}
    for s in all_slowdowns:
        if s.slowdown > threshold and (s.gpu not in worst or s.slowdown > worst[s.gpu].slowdown):
            worst[s.gpu] = s
    return tuple(sorted(worst.values(), key=lambda s: _gpu_order(s.gpu)))


def _gpu_order(name: str) -> tuple[str, int]:
    stem = name.rstrip("0123456789")
    return stem, int(name[len(stem):] or 0)


# --- running ---------------------------------------------------------------------------------


def run_workload(device: torch.device, w: Workload) -> tuple[float | None, float | None]:
    """(median, spread_pct) of the workload's probe on one device."""
    kw: dict[str, Any] = {"warmup": w.warmup, "repeats": w.repeats, "timeout_s": w.timeout_s,
                          "target_sample_s": w.target_sample_s}
    result: object
    if w.probe == "matmul":
        result = torch_probes.matmul_tflops(device, w.dtype, size=w.size, **kw)
        m = getattr(result, "tflops", None)
    elif w.probe == "resnet50":
        result = model_bench.resnet50_inference(device, w.dtype, w.batch, mode=w.mode, image_size=w.image_size,
                                                latency_repeats=w.latency_repeats, **kw)
        m = getattr(result, "images_s", None)
    else:
        raise ValueError(f"unknown scaling probe {w.probe!r}; one of matmul, resnet50")
    if m is None:
        raise RuntimeError(getattr(result, "reason", "the probe returned no measurement"))
    return m.median, m.spread_pct


def _keep_busy(device: torch.device, w: Workload, done: Any, parties: int, deadline: float) -> None:
    """Matmuls on the device until every worker has reported (or the deadline passes)."""
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a = torch.randn(w.filler_size, w.filler_size, device=device).to(dtype)
    while done.value < parties and time.monotonic() < deadline:
        for _ in range(4):
            a = torch.mm(a, a).clamp_(-1, 1)
        if device.type == "cuda":
            torch.cuda.synchronize(device)


def _worker(worker: int, devices: Sequence[str], w: Workload, barrier: Any, done: Any, parties: int, out: Any,
            deadline_s: float) -> None:
    """Runs in its own process (or thread): wait at the barrier, measure each device in turn,
    report, then keep the last device busy until every party has reported."""
    deadline = time.monotonic() + deadline_s
    for d in devices:  # create the device contexts before the start, not inside the timed race
        torch.empty(1, device=d)
    try:
        barrier.wait(timeout=deadline_s)
    except threading.BrokenBarrierError:
        for i in range(len(devices)):
            out.put(((worker, i), None, None, "another worker failed before the start barrier"))
        return
    for i, d in enumerate(devices):
        try:
            value, spread = run_workload(torch.device(d), w)
            out.put(((worker, i), value, spread, None))
        except Exception as exc:  # a worker reports every failure; the parent records it per GPU
            log.exception("scaling worker on %s failed", d)
            out.put(((worker, i), None, None, f"{type(exc).__name__}: {exc}"[:300]))
    with done.get_lock():
        done.value += 1
    try:
        _keep_busy(torch.device(devices[-1]), w, done, parties, deadline)
    except Exception:  # the filler only keeps neighbours honest; its failure changes no figure
        log.exception("keep-busy load on %s failed", devices[-1])


class _Counter:
    """The thread-mode stand-in for multiprocessing.Value("i")."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def get_lock(self) -> threading.Lock:
        return self._lock


def run_together(groups: Sequence[Sequence[str]], w: Workload, *, workers: str = "process",
                 timeout_s: float = 600.0) -> tuple[GpuFigure, ...]:
    """Start one worker per group (each measures its devices in turn), all behind one barrier;
    returns a figure per device in `groups` order. A worker that does not report in time gets
    error "no result within N s"."""
    parties = len(groups)
    barrier: Any
    done: Any
    out: Any
    starters: list[Any]
    if workers == "process":
        ctx = mp.get_context("spawn")
        barrier, done, out = ctx.Barrier(parties), ctx.Value("i", 0), ctx.Queue()
        starters = [ctx.Process(target=_worker, args=(k, tuple(g), w, barrier, done, parties, out, timeout_s),
                                daemon=True) for k, g in enumerate(groups)]
    elif workers == "thread":
        barrier, done, out = threading.Barrier(parties), _Counter(), queue_mod.Queue()
        starters = [threading.Thread(target=_worker, args=(k, tuple(g), w, barrier, done, parties, out, timeout_s),
                                     daemon=True) for k, g in enumerate(groups)]
    else:
        raise ValueError(f"workers must be 'process' or 'thread', got {workers!r}")
    for s in starters:
        s.start()
    expected = [((k, i), d) for k, g in enumerate(groups) for i, d in enumerate(g)]
    got: dict[tuple[int, int], tuple[float | None, float | None, str | None]] = {}
    deadline = time.monotonic() + timeout_s
    while len(got) < len(expected) and time.monotonic() < deadline:
        try:
            key, value, spread, error = out.get(timeout=max(0.1, min(5.0, deadline - time.monotonic())))
        except queue_mod.Empty:
            if workers == "process" and not any(s.is_alive() for s in starters):
                break
            continue
        got[tuple(key)] = (value, spread, error)
    for s in starters:
        s.join(timeout=_JOIN_S)
        if isinstance(s, mp.process.BaseProcess) and s.is_alive():
            log.warning("scaling worker %s did not stop; killing it", s.pid)
            s.kill()
    missing = f"no result within {timeout_s:.0f} s (worker died or hung)"
    return tuple(GpuFigure(gpu=_label(d), value=got[k][0], spread_pct=got[k][1], error=got[k][2]) if k in got
                 else GpuFigure(gpu=_label(d), value=None, spread_pct=None, error=missing) for k, d in expected)


def _label(device: str) -> str:
    d = torch.device(device)
    return f"gpu{d.index}" if d.type == "cuda" else d.type


def scaling(w: Workload, devices: Sequence[str] | None = None, *, counts: Sequence[int] = COUNTS,
            slow_threshold: float = SLOW_THRESHOLD, workers: str = "process",
            timeout_s: float = 600.0) -> ScalingResult:
    """Solo figures for every device, then the first N devices together for each N in counts.

    devices default to every GPU ("cuda:0", ...). A count larger than the device list is a
    point with a reason, not an error: on a 1-GPU node only N=1 runs.
    """
    if devices is None:
        devices = tuple(f"cuda:{i}" for i in range(torch.cuda.device_count())) if torch.cuda.is_available() else ()
    devices = tuple(devices)
    if not devices:
        reason = "no GPU: PyTorch sees none (torch.cuda.is_available() is false)"
        none = tuple(ScalingPoint(n_gpus=n, figures=(), aggregate=None, efficiency=None, reason=reason)
                     for n in counts)
        return ScalingResult(workload=w.name, unit=w.unit, solo=(), points=none, slow_threshold=slow_threshold,
                             slow=())
    solo = run_together([devices], w, workers=workers, timeout_s=timeout_s)
    points: list[ScalingPoint] = []
    for n in counts:
        if n > len(devices):
            points.append(ScalingPoint(n_gpus=n, figures=(), aggregate=None, efficiency=None,
                                       reason=f"needs {n} GPUs, this node has {len(devices)}"))
            continue
        figures = solo[:1] if n == 1 else run_together([[d] for d in devices[:n]], w, workers=workers,
                                                        timeout_s=timeout_s)
        values = [f.value for f in figures]
        aggregate = sum(v for v in values if v is not None) if all(v is not None for v in values) else None
        points.append(ScalingPoint(n_gpus=n, figures=figures, aggregate=aggregate,
                                   efficiency=efficiency(values, [f.value for f in solo[:n]]), reason=None))
    slow = worst_slowdowns(slowdowns(solo, points), slow_threshold)
    return ScalingResult(workload=w.name, unit=w.unit, solo=solo, points=tuple(points),
                         slow_threshold=slow_threshold, slow=slow)
