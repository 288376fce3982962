"""Judge every GPU and link against its peers: the node's own siblings, and the batch of nodes of
the same SKU. Pure: measurement entries in (the dicts validation/checks/results.py writes), verdicts out.

A member (one GPU, or one link, of one node) fails when it is worse than the median of its peers
by more than the allowed gap, where

    allowed gap = max(family floor, z × 1.4826 × MAD / median, median spread of the probe)

- the family floor: 5 % for throughput and bandwidth, 10 % for latency. Basis: SuperBench's
  published rule set flags a GEMM, memory-bandwidth, GPU-copy, NCCL or model-throughput result
  more than 5 % below its baseline (`lambda x:x<-0.05`) and a kernel-launch latency more than 10 %
  above it (microsoft/superbench-results v0.4.0/Azure-NDv4-A100/rule.yaml);
- the robust spread of the peers: a modified z-score above 3.5 marks an outlier (Iglewicz and
  Hoaglin; NIST/SEMATECH e-Handbook of Statistical Methods, section 1.3.5.17,
  https://www.itl.nist.gov/div898/handbook/eda/section3/eda35h.htm), so peers that scatter widely
  widen the gap instead of failing their slowest member. In a large population (a batch of
  thousands of GPUs) z grows so that, were the scatter normal noise, the chance of any false alarm
  among the N members stays at 5 % (Bonferroni: z = the normal quantile of 1 − 0.05/N, never
  below 3.5);
- the probe's own measured spread ((max - min) / median of its repeats, recorded as spread_pct):
  a difference smaller than the noise of one measurement is not evidence.

Only the worse side fails (slower, or higher latency); nothing fails for being faster. Members
measured while their GPU was busy or marked invalid never enter the median; they are still judged
against it. Fewer than MIN_PEERS members, or metrics outside the families (counts, temperatures,
memory sizes), are recorded with the reason instead.
"""

from __future__ import annotations

import functools
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from validation.codes import CODES
from validation.records import Status

MIN_PEERS = 4
Z_LIMIT = 3.5
FAMILY_ALPHA = 0.05       # chance of any false alarm in a population, were its scatter normal noise
MAD_TO_SIGMA = 1.4826
SIBLING, BATCH = "RF-SIBLING-GAP", "RF-BATCH-GAP"


@dataclass(frozen=True, slots=True, kw_only=True)
class Family:
    name: str
    floor: float          # the smallest gap that fails, as a fraction
    basis: str


THROUGHPUT = Family(name="throughput", floor=0.05, basis=(
    "SuperBench rule set: more than 5 % below baseline is defective for GEMM, memory bandwidth, GPU copy, "
    "NCCL and model throughput (microsoft/superbench-results v0.4.0/Azure-NDv4-A100/rule.yaml)"))
LATENCY = Family(name="latency", floor=0.10, basis=(
    "SuperBench rule set: kernel-launch latency more than 10 % above baseline is defective "
    "(microsoft/superbench-results v0.4.0/Azure-NDv4-A100/rule.yaml)"))
_FAMILY_BY_UNIT = {
    **dict.fromkeys(("TFLOPS", "GFLOPS", "TOPS", "GOPS", "GB/s", "Gb/s", "MB/s", "images/s"), THROUGHPUT),
    **dict.fromkeys(("ms", "us", "µs"), LATENCY),
}


# Tail statistics move with one slow sample in a hundred; peers are compared on central values only.
_TAIL = ("_p99", "_p999", "_max_")


def family_of(entry: Mapping[str, Any]) -> Family | None:
    """The family of a measurement, by its unit and direction; None = not judged against peers."""
    return _family(str(entry.get("metric", "")), str(entry.get("unit", "")), bool(entry.get("higher_is_better", True)))


@functools.lru_cache(maxsize=4096)        # a fleet has a few hundred metrics and millions of measurements
def _family(metric: str, unit: str, higher: bool) -> Family | None:
    if any(t in metric for t in _TAIL):
        return None
    family = _FAMILY_BY_UNIT.get(unit)
    if family is None:
        return None
    return family if higher == (family is THROUGHPUT) else None


def usable(entry: Mapping[str, Any]) -> bool:
    """May this measurement stand in a peer median (a real number, valid, not taken while busy)?"""
    value = entry.get("value")
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
            and entry.get("valid", True) is not False and not entry.get("measured_while_busy"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    node: str
    subject: str
    value: float
    spread_pct: float | None
    clean: bool                      # may stand in the median


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerVerdict:
    """One member judged against its peers (status FAIL), or one metric summarised (PASS/SKIP)."""

    status: Status
    metric: str
    node: str
    subject: str
    measured: float | None
    unit: str
    median: float | None
    gap: float | None                # how much worse than the median, as a fraction
    allowed: float | None
    peers: int
    reason: str
    code: str = ""
    hint: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Spread:
    median: float
    allowed: float
    why: str


def allowed_gap(members: Sequence[Member], family: Family, floor: float | None = None) -> Spread:
    """The median of the clean members and the gap allowed below (or above) it, with the reason."""
    values = [m.value for m in members if m.clean]
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    z = max(Z_LIMIT, statistics.NormalDist().inv_cdf(1 - FAMILY_ALPHA / len(values)))
    robust = z * MAD_TO_SIGMA * mad / abs(med) if med else 0.0
    spreads = [m.spread_pct for m in members if m.clean and m.spread_pct is not None]
    noise = statistics.median(spreads) / 100 if spreads else 0.0
    base = family.floor if floor is None else floor
    allowed = max(base, robust, noise)
    if allowed == base:
        why = f"the {family.name} floor {base:.0%}" if floor is None else f"the floor {base:.1%} set for this run"
    elif allowed == robust:
        why = f"the peers' own scatter ({z:.1f} robust sigmas = {robust:.1%})"
    else:
        why = f"the probe's measured spread ({noise:.1%})"
    return Spread(median=med, allowed=allowed, why=why)


def gap_of(value: float, median: float, family: Family) -> float:
    """How much worse than the median, as a fraction (negative = better)."""
    if not median:
        return 0.0
    return (median - value) / abs(median) if family is THROUGHPUT else (value - median) / abs(median)


def worse_text(gap: float, family: Family, whose: str) -> str:
    side = "below" if family is THROUGHPUT else "above"
    return f"{gap:.1%} {side} {whose}"


def judge_members(metric: str, unit: str, members: Sequence[Member], family: Family, *, code: str, scope: str,
                  min_peers: int = MIN_PEERS, floor: float | None = None) -> list[PeerVerdict]:
    """Every member worse than allowed (FAIL), else one PASS for the metric; SKIP when too few."""
    clean = [m for m in members if m.clean]
    nodes = {m.node for m in members}
    count = len(nodes) if code == BATCH else len(clean)
    what = "nodes" if code == BATCH else "members"
    if count < min_peers:
        return [PeerVerdict(status=Status.SKIP, metric=metric, node=n, subject="", measured=None, unit=unit,
                            median=None, gap=None, allowed=None, peers=count,
                            reason=f"record only: {metric} has {count} {what} usable for {scope}; peer verdicts "
                                   f"need at least {min_peers}") for n in sorted(nodes)]
    spread = allowed_gap(members, family, floor)
    out = []
    for m in members:
        gap = gap_of(m.value, spread.median, family)
        if gap > spread.allowed:
            busy = "" if m.clean else " (measured while busy or marked invalid)"
            out.append(PeerVerdict(
                status=Status.FAIL, metric=metric, node=m.node, subject=m.subject, measured=m.value, unit=unit,
                median=spread.median, gap=gap, allowed=spread.allowed, peers=len(clean), code=code,
                hint=CODES[code],
                reason=(f"{m.subject} {metric} {m.value:.4g} {unit}{busy} is "
                        f"{worse_text(gap, family, f'the median {spread.median:.4g} {unit} of {scope}')} "
                        f"({len(clean)} values; allowed gap {spread.allowed:.1%}: {spread.why})")))
    if not out:
        for n in sorted(nodes):
            out.append(PeerVerdict(
                status=Status.PASS, metric=metric, node=n, subject="", measured=None, unit=unit,
                median=spread.median, gap=None, allowed=spread.allowed, peers=len(clean),
                reason=f"{metric}: every member within {spread.allowed:.1%} of the median {spread.median:.4g} "
                       f"{unit} of {scope} ({len(clean)} values)"))
    return out


def _members(node: str, entries: Iterable[Mapping[str, Any]], *,
             node_level: bool = False) -> dict[str, tuple[str, Family, list[Member]]]:
    """metric -> (unit, family, members) for one node's per-GPU and per-link measurements (and its
    node-level ones, such as a collective's bus bandwidth, with `node_level`: they have no siblings
    but do have peers in the batch). A subject measured twice in a run is one member: its last."""
    latest: dict[tuple[str, str], tuple[Mapping[str, Any], Family]] = {}
    for e in entries:
        subject = str(e.get("subject", "node"))
        value = e.get("value")
        if (subject == "node" and not node_level) or value.__class__ not in (int, float):
            continue
        family = _family(str(e["metric"]), str(e.get("unit", "")), bool(e.get("higher_is_better", True)))
        if family is not None:
            latest[(str(e["metric"]), subject)] = (e, family)
    out: dict[str, tuple[str, Family, list[Member]]] = {}
    for (metric, subject), (e, family) in latest.items():
        spread = e.get("spread_pct")
        out.setdefault(metric, (str(e.get("unit", "")), family, []))[2].append(Member(
            node=node, subject=subject, value=float(e["value"]),
            spread_pct=float(spread) if isinstance(spread, (int, float)) else None, clean=usable(e)))
    return out


def judge_siblings(node: str, entries: Iterable[Mapping[str, Any]], *,
                   min_peers: int = MIN_PEERS) -> list[PeerVerdict]:
    """Each per-GPU / per-link metric of one node against the node's own median."""
    out: list[PeerVerdict] = []
    for metric, (unit, family, members) in sorted(_members(node, entries).items()):
        kind = "links" if any("->" in m.subject for m in members) else "GPUs"
        out += judge_members(metric, unit, members, family, code=SIBLING, scope=f"this node's {kind}",
                             min_peers=min_peers)
    return out


def sku_of(doc: Mapping[str, Any]) -> str:
    prov = doc.get("provenance") or {}
    return str(prov.get("declared_sku") or prov.get("sku") or "undeclared SKU")


def judge_batch(docs: Sequence[Mapping[str, Any]], *, min_nodes: int = MIN_PEERS,
                floor: float | None = None) -> list[PeerVerdict]:
    """Every member of every node against the median of the nodes of its SKU in the batch.
    Stand-in documents (a node that delivered nothing) take no part."""
    by_metric: dict[tuple[str, str], tuple[str, Family, list[Member]]] = {}
    for doc in docs:
        if doc.get("missing"):
            continue
        for metric, (unit, family, members) in _members(str(doc["host"]), doc.get("measurements") or (),
                                                        node_level=True).items():
            by_metric.setdefault((sku_of(doc), metric), (unit, family, []))[2].extend(members)
    out: list[PeerVerdict] = []
    for (sku, metric), (unit, family, members) in sorted(by_metric.items()):
        out += judge_members(metric, unit, members, family, code=BATCH, scope=f"the batch's {sku} nodes",
                             min_peers=min_nodes, floor=floor)
    return out


def by_node(verdicts: Iterable[PeerVerdict]) -> dict[str, list[PeerVerdict]]:
    out: dict[str, list[PeerVerdict]] = defaultdict(list)
    for v in verdicts:
        out[v.node].append(v)
    return dict(out)
