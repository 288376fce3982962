"""Fleet aggregation over per-node results: statistics, batch verdicts, and run-to-run comparison.

Pure functions over the JSON documents that validation/results/node.py writes. A measurement
entry is {"metric", "subject", "value", "unit", "higher_is_better", "status", ...}; members of
a metric's population are (node, subject) pairs, so one slow GPU is named, not averaged away.
Numbers marked invalid or measured while their GPU was busy stay out of every statistic.

Outliers are verdicts (validation/peers.py): a member worse than the robust median of the nodes
of its SKU by more than the allowed gap fails with RF-BATCH-GAP, and `with_batch_checks` adds that
verdict to its node as a check, so the node's status and every report's exit code follow.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from validation import judged, peers
from validation.records import Status


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    node: str
    subject: str
    value: float


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricSummary:
    metric: str
    sku: str
    unit: str
    higher_is_better: bool
    count: int
    p50: float
    minimum: float
    maximum: float
    baseline: float                                # the batch median of the valid members
    outliers: tuple[tuple[Member, float], ...]    # member and how much worse than the median (fraction)
    judged: str                                    # "judged", or why no batch verdict was possible


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
    higher_is_better: bool = True


def measurements(nodes: Iterable[Mapping[str, Any]]) -> dict[str, list[tuple[Member, Mapping[str, Any]]]]:
    """metric -> [(member, raw entry)] over every node's valid numeric measurements."""
    # A node that measured the same metric and subject twice in one run (a quick-tier sweep and
    # the acceptance sweep both time resnet50 at b32) is one member: its last measurement.
    latest: dict[tuple[str, str, str], tuple[Member, Mapping[str, Any]]] = {}
    usable = peers.usable
    for node in nodes:
        host = node["host"]
        for entry in node.get("measurements", []):
            if usable(entry):
                member = Member(node=host, subject=str(entry.get("subject", "node")), value=float(entry["value"]))
                latest[(entry["metric"], host, member.subject)] = (member, entry)
    by_metric: dict[str, list[tuple[Member, Mapping[str, Any]]]] = defaultdict(list)
    for (metric, _, _), row in latest.items():
        by_metric[metric].append(row)
    return by_metric


def summarize(nodes: Sequence[Mapping[str, Any]], *, floor: float | None = None,
              verdicts: Sequence[peers.PeerVerdict] | None = None,
              batch: peers.Batch | None = None) -> list[MetricSummary]:
    """One summary per SKU and metric; outliers are the batch verdicts' failures (`verdicts`, when
    the caller already has them from peers.judge_batch). `batch`: the nodes' numbers, where the
    caller gathered them already (a fleet report keeps no measurement entries); `nodes` then only
    name each node's SKU and give the order."""
    order = None if batch is None else [str(n["host"]) for n in nodes]
    if batch is None:
        batch = peers.Batch.of(nodes)
    if verdicts is None:
        verdicts = batch.judge(floor=floor, order=order)
    failures: dict[str, list[peers.PeerVerdict]] = defaultdict(list)
    judged: dict[str, str] = {}
    for v in verdicts:
        if v.status is Status.FAIL:
            failures[v.metric].append(v)
        judged.setdefault(v.metric, "judged" if v.status is not Status.SKIP else v.reason)
    sku_of = {str(n["host"]): peers.sku_of(n) for n in nodes}
    out = []
    for metric, sku, unit, higher, values in batch.values(order=order):
        median = statistics.median(values)
        bad = [(Member(node=v.node, subject=v.subject, value=float(v.measured or 0.0)), float(v.gap or 0.0))
               for v in failures.get(metric, []) if sku_of.get(v.node) == sku]
        out.append(MetricSummary(
            metric=metric, sku=sku, unit=unit, higher_is_better=higher, count=len(values),
            p50=median, minimum=min(values), maximum=max(values), baseline=median, outliers=tuple(bad),
            judged=judged.get(metric, "not a throughput or latency: no batch verdict")))
    return out


def with_batch_checks(nodes: Sequence[Mapping[str, Any]], *, floor: float | None = None,
                      verdicts: Sequence[peers.PeerVerdict] | None = None) -> list[dict[str, Any]]:
    """Copies of the node documents with one more check each, `batch_peers`: FAIL (RF-BATCH-GAP)
    naming every GPU or link of the node that the batch left behind, PASS when all kept up, SKIP
    with the reason when the batch was too small to judge."""
    per_node = peers.by_node(verdicts if verdicts is not None else peers.judge_batch(nodes, floor=floor))
    out = []
    for doc in nodes:
        copy = dict(doc)
        if doc.get("missing"):
            out.append(copy)
            continue
        verdicts = per_node.get(str(doc["host"]), [])
        copy["judged"] = {**judged.of(doc), "batch_metrics": len({v.metric for v in verdicts
                                                                  if v.status in (Status.PASS, Status.FAIL)})}
        bad = [v for v in verdicts if v.status is Status.FAIL]
        if bad:
            status, code, hint = "fail", peers.BATCH, bad[0].hint
            message = "; ".join(v.reason for v in bad[:8]) + (f"; and {len(bad) - 8} more" if len(bad) > 8 else "")
        elif any(v.status is Status.PASS for v in verdicts):
            status, code, hint = "pass", None, None
            message = f"{sum(v.status is Status.PASS for v in verdicts)} metrics within their batch gap"
        else:
            status, code, hint = "skip", None, None
            message = verdicts[0].reason if verdicts else "no throughput or latency was measured on this node"
        copy["checks"] = [*doc.get("checks", []), {
            "id": "batch_peers", "name": "batch_peers", "tier": doc.get("tier"), "needs_gpu": True,
            "status": status, "code": code, "message": message, "hint": hint, "duration_s": 0.0,
            "verdicts": [{"metric": v.metric, "subject": v.subject, "measured": v.measured, "median": v.median,
                          "gap": v.gap, "allowed": v.allowed, "reason": v.reason} for v in bad]}]
        out.append(copy)
    return out


def compare(before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]], *,
            tolerance: float = 0.05) -> list[Delta]:
    """Per (node, metric, subject): the change from one run to the next; worse than tolerance = regression.
    A number that disappeared (or is invalid in the later run) is a regression too."""
    def index(nodes: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], tuple[Member, Mapping[str, Any]]]:
        return {(m.node, metric, m.subject): (m, e) for metric, rows in measurements(nodes).items() for m, e in rows}

    a, b = index(before), index(after)
    deltas = []
    for key in sorted(set(a) | set(b)):
        node, metric, subject = key
        old, new = a.get(key), b.get(key)
        entry = (new or old)[1]   # type: ignore[index]   # one of them is present: the key came from a or b
        higher = bool(entry.get("higher_is_better", True))
        if old and new:
            change = (new[0].value - old[0].value) / abs(old[0].value) if old[0].value else 0.0
            worse = -change if higher else change
            regression = worse > tolerance
        else:
            change, regression = None, old is not None and new is None   # a metric that disappeared
        deltas.append(Delta(node=node, metric=metric, subject=subject, unit=str(entry.get("unit", "")),
                            before=old[0].value if old else None, after=new[0].value if new else None,
                            change=change, regression=regression, higher_is_better=higher))
    return deltas
