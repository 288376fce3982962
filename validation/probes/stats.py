"""Repeated timings and their summary: median and spread.

spread_pct is the full range of the samples relative to their median,
(max - min) / median * 100. With 5-20 repeats the range is what a reader can check by eye,
and it is stricter than an IQR-based figure: one slow sample shows up.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """Wall-clock seconds of each timed call. timed_out: the deadline cut the repeats short."""

    seconds: tuple[float, ...]
    warmup: int
    repeats: int
    timed_out: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """Samples of one metric. median/spread_pct are None when no sample finished in time."""

    metric: str
    unit: str
    values: tuple[float, ...]
    median: float | None
    spread_pct: float | None
    warmup: int
    repeats: int
    timed_out: bool = False

    @property
    def best(self) -> float | None:
        return max(self.values) if self.values else None


def spread_pct(values: Sequence[float]) -> float | None:
    """(max - min) / median * 100; None for no values or a zero median."""
    if not values:
        return None
    median = statistics.median(values)
    if median == 0:
        return None
    return (max(values) - min(values)) / abs(median) * 100.0


def summarize(
    metric: str,
    unit: str,
    values: Sequence[float],
    *,
    warmup: int,
    repeats: int,
    timed_out: bool = False,
) -> Measurement:
    values = tuple(float(v) for v in values)
    return Measurement(
        metric=metric,
        unit=unit,
        values=values,
        median=statistics.median(values) if values else None,
        spread_pct=spread_pct(values),
        warmup=warmup,
        repeats=repeats,
        timed_out=timed_out,
    )


def measure(
    fn: Callable[[], object],
    *,
    warmup: int,
    repeats: int,
    timeout_s: float,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Call fn `warmup` times untimed, then `repeats` times timed, within a wall-clock deadline.

    fn must finish its own work before returning (a GPU callable synchronizes its device).
    The deadline is checked between calls; a call already running is not interrupted (a hung
    kernel needs the process-level timeout of runner.run). Samples taken before the deadline
    are kept and timed_out is set.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got repeats={repeats} warmup={warmup}")
    deadline = clock() + timeout_s
    for _ in range(warmup):
        if clock() > deadline:
            log.warning("deadline of %.1f s reached during warm-up", timeout_s)
            return Timing(seconds=(), warmup=warmup, repeats=repeats, timed_out=True)
        fn()
    samples: list[float] = []
    for _ in range(repeats):
        if clock() > deadline:
            log.warning("deadline of %.1f s reached after %d of %d repeats", timeout_s, len(samples), repeats)
            return Timing(seconds=tuple(samples), warmup=warmup, repeats=repeats, timed_out=True)
        start = clock()
        fn()
        samples.append(clock() - start)
    return Timing(seconds=tuple(samples), warmup=warmup, repeats=repeats, timed_out=False)


def rate(metric: str, unit: str, timing: Timing, *, work: float) -> Measurement:
    """Turn a Timing into a rate: each value is work / seconds (work already in the unit's scale,
    e.g. TFLOP per sample for TFLOP/s)."""
    values = [work / s for s in timing.seconds if s > 0]
    return summarize(metric, unit, values, warmup=timing.warmup, repeats=timing.repeats, timed_out=timing.timed_out)
