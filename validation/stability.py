"""Stable numbers: a probe whose own samples scatter more than its family allows is measured once
more, and a number still unstable then is not taken as the hardware's speed.

A probe takes repeated samples and records their spread, (max - min) / median x 100
(validation/probes/stats.py). On an idle, healthy GPU that spread stays within a range typical of
the probe; a foreign load, a clock that throttles or a neighbour that steals the host shows up as
a wider one. `measure_steadily` calls the probe, compares each figure's spread with its family's
bound (SPREAD_BOUNDS), calls the probe once more when a figure is out of bounds, and keeps, per
figure, the first measurement within bounds. A figure out of bounds both times is unstable: the
check records it with status fail, `valid: false` and RF-PROBE-UNSTABLE, never judges it against a
target, and it stands in no sibling, batch or baseline median.

Each bound is MARGIN times the largest spread of that family in the idle runs on a real GPU
listed in IDLE_RUNS, rounded up to 0.1 %; tests/unit/probes/test_stability.py recomputes the
spreads from those runs' recorded samples and holds every bound to its basis. The runs are on one
NVIDIA H200 (12) and one NVIDIA H100 (8): bounds from the H200 alone failed healthy idle H100 runs
(fp32 matmul spread 3.6 % against a 1.1 % bound), so every card a bound is meant for must be in
its basis. No AMD GPU has run the suite, so an MI300X's own idle spread is not part of it yet.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

UNSTABLE = "RF-PROBE-UNSTABLE"
MARGIN = 3.0

# Results documents of quick and acceptance runs on the lent NVIDIA H200 (driver 580.159.04), GPU
# idle. The first ten passed the idle pre-flight (no foreign process, 0 % utilization, no throttle
# reason); the last two ran before the pre-flight existed, from one script that ran nothing else on
# the machine (docs/measurements/h200.md, h200-suite-acceptance.md).
IDLE_RUNS = (
    *(f"tests/fixtures/real/results/h200/h200-idle-{i}.json" for i in range(1, 9)),
    "docs/measurements/h200-2026-12-03-evening/h200-x1.json",
    "docs/measurements/h200-2026-12-03-evening/head/h200-x1.json",
    "docs/measurements/h200-2026-12-02/suite-results.json",
    "docs/measurements/h200-2026-12-02-suite-acceptance/run2/h200-x1.json",
    # the lent NVIDIA H100 (driver 580.159.04), quick tier idle, 2026-12-06
    # (docs/measurements/h100-2026-12-06-fault-matrix.md)
    *(f"tests/fixtures/real/results/h100/h100-{commit}-idle-{n}.json"
      for commit in ("b3dd7bc", "ec99d18") for n in ("1", "2", "3", "nowatch")),
)
_RUNS = "20 idle runs, 12 on an H200 and 8 on an H100 (IDLE_RUNS)"


class Sampled(Protocol):
    """What a probe's measurement offers (Measurement in validation/probes/stats.py)."""

    @property
    def values(self) -> tuple[float, ...]: ...

    @property
    def median(self) -> float | None: ...

    @property
    def spread_pct(self) -> float | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SpreadBound:
    """The widest spread of one family of metrics that still counts as a stable measurement."""

    family: str
    pattern: str                         # a regular expression that matches the whole metric name
    bound_pct: float
    idle_max_pct: float                  # the largest spread of the family in IDLE_RUNS
    basis: str
    batches: tuple[int, int] | None = None   # only metrics whose `_b<batch>_` lies in [low, high)

    def matches(self, metric: str) -> bool:
        found = re.fullmatch(self.pattern, metric)
        if found is None:
            return False
        if self.batches is None:
            return True
        batch = int(found["batch"])
        return self.batches[0] <= batch < self.batches[1]


def _bound(family: str, pattern: str, idle_max_pct: float, where: str, *,
           batches: tuple[int, int] | None = None, note: str = "") -> SpreadBound:
    bound = math.ceil(round(MARGIN * idle_max_pct * 10, 6)) / 10
    basis = (f"max spread {idle_max_pct:g} % over {_RUNS} ({where}); bound {MARGIN:g}x that, rounded up "
             f"to 0.1 %" + (f"; {note}" if note else ""))
    return SpreadBound(family=family, pattern=pattern, bound_pct=bound, idle_max_pct=idle_max_pct, basis=basis,
                       batches=batches)


_DT = r"[a-z0-9]+"
SPREAD_BOUNDS: tuple[SpreadBound, ...] = (
    _bound("matmul bf16", r"torch_matmul_bf16_tflops", 15.98, "h100-b3dd7bc-idle-nowatch"),
    _bound("matmul fp16", r"torch_matmul_fp16_tflops", 11.89, "h100-b3dd7bc-idle-1"),
    _bound("matmul fp8", r"torch_matmul_fp8_tflops", 11.51, "h100-b3dd7bc-idle-2"),
    _bound("matmul tf32", r"torch_matmul_tf32_tflops", 14.71, "h100-b3dd7bc-idle-1"),
    _bound("matmul fp32", r"torch_matmul_fp32_tflops", 3.61, "h100-ec99d18-idle-2"),
    _bound("matmul fp64", r"torch_matmul_fp64_tflops", 12.72, "h100-b3dd7bc-idle-1"),
    _bound("device copy", r"torch_device_copy_gb_s", 0.21, "h100-b3dd7bc-idle-3"),
    _bound("host<->device copy", r"torch_(h2d|d2h)(_remote)?_gb_s", 8.37, "h100-b3dd7bc-idle-2, h2d",
           note="the remote-NUMA copies share it: the H200 host has one NUMA node"),
    _bound("conv2d stem 7x7", rf"torch_conv2d_stem_7x7_{_DT}_tflops", 2.18, "h100-b3dd7bc-idle-1, bf16"),
    _bound("conv2d res2 1x1", rf"torch_conv2d_res2_1x1_{_DT}_tflops", 3.28, "h200-idle-4, fp16"),
    _bound("conv2d res2 3x3", rf"torch_conv2d_res2_3x3_{_DT}_tflops", 16.72, "h200-idle-2, fp16"),
    _bound("conv2d res4 3x3", rf"torch_conv2d_res4_3x3_{_DT}_tflops", 18.25, "h100-b3dd7bc-idle-3, bf16"),
    _bound("ResNet-50 graph", rf"resnet50_{_DT}_graph_b(?P<batch>\d+)_images_s", 1.26,
           "h200-2026-12-02-suite-acceptance, fp32 batch 256"),
    _bound("ResNet-50 eager, batch >= 128", rf"resnet50_{_DT}_eager_b(?P<batch>\d+)_images_s", 2.76,
           "h200-2026-12-02-suite-acceptance, bf16 batch 128", batches=(128, 1 << 31)),
    _bound("ResNet-50 eager, batch < 128", rf"resnet50_{_DT}_eager_b(?P<batch>\d+)_images_s", 71.99,
           "h200-2026-12-02-suite-acceptance, bf16 batch 1", batches=(1, 128),
           note="small eager batches are bound by kernel launches from Python, so their spread says "
                "little and only a wild one is caught"),
)


def bound_for(metric: str) -> SpreadBound | None:
    """The spread bound of `metric`'s family; None where no family has one (nothing is checked)."""
    for bound in SPREAD_BOUNDS:
        if bound.matches(metric):
            return bound
    return None


def out_of_bounds(metric: str, measurement: Sampled) -> bool:
    """Do the samples of `metric` spread more than its family allows?"""
    bound = bound_for(metric)
    spread = measurement.spread_pct
    return bound is not None and spread is not None and spread > bound.bound_pct


def _samples(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in values) + "]"


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """One figure of a probe as it is recorded: the measurement kept, and the first one when that
    was out of bounds and the probe ran again."""

    metric: str
    subject: str
    measurement: Sampled
    first: Sampled | None = None

    @property
    def bound(self) -> SpreadBound | None:
        return bound_for(self.metric)

    @property
    def unstable(self) -> bool:
        return out_of_bounds(self.metric, self.measurement)

    def reason(self) -> str:
        """Why an unstable figure is not judged: the GPU, the metric and every sample."""
        bound = self.bound
        limit = f"the {bound.family} bound of {bound.bound_pct:g} %" if bound else "its bound"
        spreads = [m for m in (self.first, self.measurement) if m is not None]
        said = "; ".join(f"spread {m.spread_pct or 0:.1f} %, samples {_samples(m.values)}" for m in spreads)
        return (f"{self.subject} {self.metric} unstable: measured {len(spreads)} times, every time above {limit} "
                f"({said}); not judged as the hardware's speed")

    def extra(self) -> dict[str, Any]:
        """The fields of the figure's measurement entry: samples and spread, the bound, the retry."""
        out: dict[str, Any] = {"samples": list(self.measurement.values), "spread_pct": self.measurement.spread_pct,
                               "repeats": len(self.measurement.values)}
        bound = self.bound
        if bound is not None:
            out["spread_bound_pct"] = bound.bound_pct
        if self.first is not None:
            out.update(remeasured=True, first_samples=list(self.first.values),
                       first_spread_pct=self.first.spread_pct)
        if self.unstable:
            out.update(valid=False, invalid_reason=self.reason()[:500])
        return out


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Steady(Generic[T]):
    """Every attempt of one probe call (one, or two when a figure was out of bounds), and each
    figure as it is recorded. `result` is the last attempt; a wrong result in any attempt counts."""

    attempts: tuple[T, ...]
    figures: dict[str, Figure] = field(default_factory=dict)

    @property
    def result(self) -> T:
        return self.attempts[-1]

    @property
    def unstable(self) -> list[Figure]:
        return [f for f in self.figures.values() if f.unstable]


def measure_steadily(probe: Callable[[], T], figures: Callable[[T], Mapping[str, Sampled]], *,
                     subject: str) -> Steady[T]:
    """Call `probe`; when a figure of its result (metric -> measurement, by `figures`) spreads more
    than its family's bound, call it once more. Each figure keeps its first measurement within
    bounds, else the second one (then unstable). A probe that measured nothing (a skip) gives no
    figures and is not repeated."""
    first = probe()
    measured = dict(figures(first))
    if not any(out_of_bounds(metric, m) for metric, m in measured.items()):
        return Steady((first,), {metric: Figure(metric=metric, subject=subject, measurement=m)
                                 for metric, m in measured.items()})
    again = probe()
    remeasured = dict(figures(again))
    kept: dict[str, Figure] = {}
    for metric, m in measured.items():
        if out_of_bounds(metric, m) and metric in remeasured:
            kept[metric] = Figure(metric=metric, subject=subject, measurement=remeasured[metric], first=m)
        else:
            kept[metric] = Figure(metric=metric, subject=subject, measurement=m)
    return Steady((first, again), kept)


def describe(unstable: Sequence[Figure], *, shown: int = 8) -> str:
    """One failure message for the unstable figures of a check."""
    more = f"; and {len(unstable) - shown} more" if len(unstable) > shown else ""
    return "; ".join(f.reason() for f in unstable[:shown]) + more
