"""validation/probes/stats.py: repeats, deadline, median and spread."""

from __future__ import annotations

import pytest

from validation.probes.stats import measure, rate, spread_pct, summarize


class FakeClock:
    """Advances by `step` seconds on every reading."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_spread_is_range_over_median_in_percent() -> None:
    assert spread_pct([9.0, 10.0, 11.0]) == pytest.approx(20.0)
    assert spread_pct([5.0]) == 0.0
    assert spread_pct([]) is None


def test_summarize_gives_median_and_keeps_every_value() -> None:
    m = summarize("x", "GB/s", [3, 1, 2, 10], warmup=2, repeats=4)
    assert m.values == (3.0, 1.0, 2.0, 10.0)
    assert m.median == 2.5
    assert m.spread_pct == pytest.approx(360.0)
    assert m.best == 10.0
    assert (m.warmup, m.repeats, m.timed_out) == (2, 4, False)


def test_no_samples_gives_none_not_zero() -> None:
    m = summarize("x", "GB/s", [], warmup=1, repeats=3, timed_out=True)
    assert (m.median, m.spread_pct, m.best) == (None, None, None)


def test_measure_calls_warmup_plus_repeats_and_times_only_repeats() -> None:
    calls: list[int] = []
    timing = measure(lambda: calls.append(1), warmup=2, repeats=5, timeout_s=100, clock=FakeClock(1.0))
    assert len(calls) == 7
    assert len(timing.seconds) == 5
    assert all(s == 1.0 for s in timing.seconds)
    assert not timing.timed_out


def test_measure_stops_at_the_deadline_and_keeps_what_it_has() -> None:
    # every clock reading advances 1 s: start=1, warm-up check=2, then each repeat reads 3 times
    calls: list[int] = []
    timing = measure(lambda: calls.append(1), warmup=1, repeats=100, timeout_s=8, clock=FakeClock(1.0))
    assert timing.timed_out
    assert 0 < len(timing.seconds) < 100
    assert len(calls) == 1 + len(timing.seconds)


def test_rate_divides_work_by_each_sample() -> None:
    # clock readings: the deadline, then (deadline check, start, end) per repeat
    calls = iter([0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 1.5, 1.5, 1.5, 3.5])  # samples of 0.5, 1.0 and 2.0 s
    timing = measure(lambda: None, warmup=0, repeats=3, timeout_s=1e9, clock=lambda: next(calls, 10.0))
    m = rate("copy", "GB/s", timing, work=4.0)
    assert m.values == (8.0, 4.0, 2.0)
    assert m.median == 4.0


def test_measure_refuses_zero_repeats() -> None:
    with pytest.raises(ValueError, match="repeats"):
        measure(lambda: None, warmup=0, repeats=0, timeout_s=1)
