"""Fleet aggregation over per-node results: statistics, outliers, and run-to-run comparison.

Pure functions over the JSON documents that validation/checks/results.py writes. A measurement
entry is {"metric", "subject", "value", "unit", "higher_is_better", "status", ...}; members of
a metric's population are (node, subject) pairs, so one slow GPU is named, not averaged away.

Outliers follow SuperBench's baseline generation: start with every member, take the median as
the baseline, drop members that deviate from it by more than the threshold in the bad
direction, recompute, and repeat until nothing more is dropped.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    node: str
    subject: str
    value: float


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricSummary:
    metric: str
    unit: str
    higher_is_better: bool
    count: int
    p50: float
    minimum: float
    maximum: float
    baseline: float                      # median after iterative outlier removal
    outliers: tuple[tuple[Member, float], ...]   # member and its deviation from the baseline (fraction)


@dataclass(frozen=True, slots=True, kw_only=True)
class Delta:
    node: str
    metric: str
    subject: str
    unit: str
    before: float | None
    after: float | None
    change: float | None                 # (after - before) / before; None when one side is missing
    regression: bool


def measurements(nodes: Iterable[dict[str, Any]]) -> dict[str, list[tuple[Member, dict[str, Any]]]]:
    """metric -> [(member, raw entry)] over every node's numeric measurements."""
    # A node that measured the same metric and subject twice in one run (a quick-tier sweep and
    # the acceptance sweep both time resnet50 at b32) is one member: its last measurement.
    latest: dict[tuple[str, str, str], tuple[Member, dict[str, Any]]] = {}
    for node in nodes:
        for entry in node.get("measurements", []):
            if isinstance(entry.get("value"), (int, float)):
                member = Member(node=node["host"], subject=str(entry.get("subject", "node")),
                                value=float(entry["value"]))
                latest[(entry["metric"], member.node, member.subject)] = (member, entry)
    by_metric: dict[str, list[tuple[Member, dict[str, Any]]]] = defaultdict(list)
    for (metric, _, _), row in latest.items():
        by_metric[metric].append(row)
    return by_metric


def _deviation(value: float, baseline: float, higher_is_better: bool) -> float:
    """How much worse than the baseline, as a fraction (positive = worse)."""
    if baseline == 0:
        return 0.0
    return (baseline - value) / abs(baseline) if higher_is_better else (value - baseline) / abs(baseline)


def iterative_baseline(members: list[Member], *, threshold: float, higher_is_better: bool,
                       max_rounds: int = 20) -> tuple[float, list[Member]]:
    """Baseline median and the members excluded as outliers (never all of them)."""
    kept = [m.value for m in members]
    for _ in range(max_rounds):
        baseline = statistics.median(kept)
        still = [v for v in kept if _deviation(v, baseline, higher_is_better) <= threshold]
        if len(still) == len(kept) or not still:
            break
        kept = still
    baseline = statistics.median(kept)
    outliers = [m for m in members if _deviation(m.value, baseline, higher_is_better) > threshold]
    return baseline, outliers


def summarize(nodes: Iterable[dict[str, Any]], *, outlier_threshold: float = 0.05) -> list[MetricSummary]:
    out = []
    for metric, rows in sorted(measurements(nodes).items()):
        members = [m for m, _ in rows]
        first = rows[0][1]
        higher = bool(first.get("higher_is_better", True))
        values = [m.value for m in members]
        baseline, outliers = iterative_baseline(members, threshold=outlier_threshold, higher_is_better=higher)
        out.append(MetricSummary(
            metric=metric, unit=str(first.get("unit", "")), higher_is_better=higher, count=len(members),
            p50=statistics.median(values), minimum=min(values), maximum=max(values), baseline=baseline,
            outliers=tuple((m, _deviation(m.value, baseline, higher)) for m in outliers)))
    return out


def compare(before: Iterable[dict[str, Any]], after: Iterable[dict[str, Any]], *,
            tolerance: float = 0.05) -> list[Delta]:
    """Per (node, metric, subject): the change from one run to the next; worse than tolerance = regression."""
    def index(nodes: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], tuple[Member, dict[str, Any]]]:
        return {(m.node, metric, m.subject): (m, e) for metric, rows in measurements(nodes).items() for m, e in rows}

    a, b = index(before), index(after)
    deltas = []
    for key in sorted(set(a) | set(b)):
        node, metric, subject = key
        old, new = a.get(key), b.get(key)
        entry = (new or old)[1]
        higher = bool(entry.get("higher_is_better", True))
        if old and new:
            change = (new[0].value - old[0].value) / abs(old[0].value) if old[0].value else 0.0
            worse = -change if higher else change
            regression = worse > tolerance
        else:
            change, regression = None, old is not None and new is None   # a metric that disappeared
        deltas.append(Delta(node=node, metric=metric, subject=subject, unit=str(entry.get("unit", "")),
                            before=old[0].value if old else None, after=new[0].value if new else None,
                            change=change, regression=regression))
    return deltas
