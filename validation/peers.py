"""Judge every GPU and link against its peers: the node's own siblings, and the batch of nodes of
the same SKU. Pure: measurement entries in (the dicts validation/results/node.py writes), verdicts out.

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

import bisect
import functools
import operator
import statistics
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, groupby, pairwise, repeat
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

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Unpickled (from a reading process) as the same object: families are compared by identity."""
        return _family_named, (self.name,)


THROUGHPUT = Family(name="throughput", floor=0.05, basis=(
    "SuperBench rule set: more than 5 % below baseline is defective for GEMM, memory bandwidth, GPU copy, "
    "NCCL and model throughput (microsoft/superbench-results v0.4.0/Azure-NDv4-A100/rule.yaml)"))
LATENCY = Family(name="latency", floor=0.10, basis=(
    "SuperBench rule set: kernel-launch latency more than 10 % above baseline is defective "
    "(microsoft/superbench-results v0.4.0/Azure-NDv4-A100/rule.yaml)"))


def _family_named(name: str) -> Family:
    return {THROUGHPUT.name: THROUGHPUT, LATENCY.name: LATENCY}[name]


_FAMILY_BY_UNIT = {
    **dict.fromkeys(("TFLOPS", "GFLOPS", "TOPS", "GOPS", "GB/s", "Gb/s", "MB/s", "images/s"), THROUGHPUT),
    **dict.fromkeys(("ms", "us", "µs"), LATENCY),
}


# The units of a throughput or a latency: what "a performance number" means (validation/judged.py).
PERFORMANCE_UNITS = frozenset(_FAMILY_BY_UNIT)

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
    return _spread([m.value for m in members if m.clean],
                   [m.spread_pct for m in members if m.clean and m.spread_pct is not None], family, floor)


def _spread(values: list[float], spreads: list[float], family: Family, floor: float | None) -> Spread:
    """allowed_gap over the clean members' values and their recorded spreads."""
    ordered = sorted(values)
    med = statistics.median(ordered)
    mad = statistics.median(_deviations(ordered, med))
    z = max(Z_LIMIT, statistics.NormalDist().inv_cdf(1 - FAMILY_ALPHA / len(values)))
    robust = z * MAD_TO_SIGMA * mad / abs(med) if med else 0.0
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


def _deviations(ordered: list[float], med: float) -> list[float]:
    """|v - med| for every v of `ordered` (sorted), sorted: the values below the median give med - v
    (the same float: rounding is symmetric) in rising order when walked backwards, those from it
    v - med, so sorting joins two rising runs in one pass instead of sorting a million numbers."""
    below = bisect.bisect_left(ordered, med)
    return sorted([*map(operator.sub, repeat(med), reversed(ordered[:below])),
                   *map(operator.sub, ordered[below:], repeat(med))])


def gap_of(value: float, median: float, family: Family) -> float:
    """How much worse than the median, as a fraction (negative = better)."""
    if not median:
        return 0.0
    return (median - value) / abs(median) if family is THROUGHPUT else (value - median) / abs(median)


def worse_text(gap: float, family: Family, whose: str) -> str:
    side = "below" if family is THROUGHPUT else "above"
    return f"{gap:.1%} {side} {whose}"


@dataclass(slots=True, kw_only=True)
class Columns:
    """A population's members column by column: member i is node hosts[owners[i]], subjects[i],
    measured values[i], with spreads[i] (None = not recorded) and clean[i] (may stand in the
    median). A batch of 10,000 eight-GPU nodes has over a million members; columns hold them in a
    fraction of the memory of one object each."""

    hosts: Sequence[str] = field(default_factory=list)
    owners: Sequence[int] = field(default_factory=lambda: array("l"))
    subjects: list[str] = field(default_factory=list)
    values: array = field(default_factory=lambda: array("d"))
    spreads: list[float | None] = field(default_factory=list)
    clean: bytearray | bytes = field(default_factory=bytearray)

    @classmethod
    def of(cls, members: Iterable[Member]) -> Columns:
        hosts: dict[str, int] = {}
        out = cls()
        for m in members:
            out.owners.append(hosts.setdefault(m.node, len(hosts)))   # type: ignore[attr-defined]
            out.subjects.append(m.subject)
            out.values.append(m.value)
            out.spreads.append(m.spread_pct)
            out.clean.append(m.clean)                                  # type: ignore[union-attr]
        out.hosts = list(hosts)
        return out

    def node(self, i: int) -> str:
        return self.hosts[self.owners[i]]

    def nodes(self) -> list[str]:
        """The members' nodes, each once, sorted."""
        return sorted({self.hosts[o] for o in set(self.owners)})


def judge_members(metric: str, unit: str, members: Sequence[Member], family: Family, *, code: str, scope: str,
                  min_peers: int = MIN_PEERS, floor: float | None = None) -> list[PeerVerdict]:
    """Every member worse than allowed (FAIL), else one PASS for the metric; SKIP when too few."""
    return judge_columns(metric, unit, Columns.of(members), family, code=code, scope=scope, min_peers=min_peers,
                         floor=floor)


def judge_columns(metric: str, unit: str, members: Columns, family: Family, *, code: str, scope: str,
                  min_peers: int = MIN_PEERS, floor: float | None = None) -> list[PeerVerdict]:
    """judge_members over a population held as columns."""
    clean = list(compress(members.values, members.clean))
    nodes = members.nodes()
    count = len(nodes) if code == BATCH else len(clean)
    what = "nodes" if code == BATCH else "members"
    if count < min_peers:
        return [PeerVerdict(status=Status.SKIP, metric=metric, node=n, subject="", measured=None, unit=unit,
                            median=None, gap=None, allowed=None, peers=count,
                            reason=f"record only: {metric} has {count} {what} usable for {scope}; peer verdicts "
                                   f"need at least {min_peers}") for n in nodes]
    spreads = members.spreads
    recorded = [] if spreads.count(None) == len(spreads) else [
        s for s, c in zip(spreads, members.clean, strict=True) if c and s is not None]
    spread = _spread(clean, recorded, family, floor)
    median, allowed = spread.median, spread.allowed
    out = []
    for i in _worse_than(members.values, median, allowed, family):
        value = members.values[i]
        gap = gap_of(value, median, family)
        busy = "" if members.clean[i] else " (measured while busy or marked invalid)"
        subject = members.subjects[i]
        out.append(PeerVerdict(
            status=Status.FAIL, metric=metric, node=members.node(i), subject=subject, measured=value, unit=unit,
            median=median, gap=gap, allowed=allowed, peers=len(clean), code=code, hint=CODES[code],
            reason=(f"{subject} {metric} {value:.4g} {unit}{busy} is "
                    f"{worse_text(gap, family, f'the median {median:.4g} {unit} of {scope}')} "
                    f"({len(clean)} values; allowed gap {allowed:.1%}: {spread.why})")))
    if not out:
        reason = (f"{metric}: every member within {allowed:.1%} of the median {median:.4g} {unit} of {scope} "
                  f"({len(clean)} values)")
        out = [PeerVerdict(status=Status.PASS, metric=metric, node=n, subject="", measured=None, unit=unit,
                           median=median, gap=None, allowed=allowed, peers=len(clean), reason=reason) for n in nodes]
    return out


def _worse_than(values: Sequence[float], median: float, allowed: float, family: Family) -> list[int]:
    """Indexes of the values whose gap_of exceeds `allowed`: the same arithmetic, a column at a time."""
    if not median:
        return list(range(len(values))) if allowed < 0.0 else []       # every gap is 0.0
    scale = abs(median)
    if family is THROUGHPUT:      # (median - v) / |median| > allowed
        gaps = map(operator.truediv, map(operator.sub, repeat(median), values), repeat(scale))
    else:                         # (v - median) / |median| > allowed
        gaps = map(operator.truediv, map(operator.sub, values, repeat(median)), repeat(scale))
    return list(compress(range(len(values)), map(operator.gt, gaps, repeat(allowed))))


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
    return Batch.of(docs).judge(min_nodes=min_nodes, floor=floor)


_NUMBERS = frozenset({int, float})


def _last_of_each(metrics: Sequence[Any], subjects: Sequence[str], chosen: Iterable[int]) -> list[int]:
    """The chosen indexes, one per (metric, subject): in the order each pair first appears, the
    index of its last appearance (a subject measured twice in a run is one member: its last)."""
    chosen = list(chosen)
    pairs = zip(map(metrics.__getitem__, chosen), map(subjects.__getitem__, chosen), strict=True)
    return list(dict(zip(pairs, chosen, strict=True)).values())


def _clean(entries: list[dict[str, Any]], values: list[Any]) -> bytes | bytearray:
    """Per numeric entry: may it stand in a median (usable)? Most entries carry neither flag."""
    valid = list(map(dict.get, entries, repeat("valid")))
    busy = list(map(dict.get, entries, repeat("measured_while_busy")))
    if valid.count(None) == len(valid) and busy.count(None) == len(busy) and all(map(operator.eq, values, values)):
        return b"\x01" * len(values)
    return bytearray(map(all, zip(map(operator.eq, values, values),                  # not NaN
                                  map(operator.is_not, valid, repeat(False)),       # absent = valid
                                  map(operator.not_, busy), strict=True)))


def _family_of_entry(metric: Any, unit: Any, higher: Any) -> Family | None:
    """_family of an entry's metric, unit and higher_is_better as they stand in the entry."""
    return _family(str(metric), str(unit), bool(higher))


@dataclass(frozen=True, slots=True)
class _Run:
    """Consecutive entries of one document that go to one population, in member order."""

    metric: Any
    indexes: tuple[int, ...]
    subjects: tuple[str, ...]
    head: tuple[str, Any]          # (unit, family) of a member run, (unit, higher_is_better) of a value run
    span: slice | None             # the same indexes as a slice, where they are consecutive

    @classmethod
    def of(cls, metric: Any, indexes: list[int], subjects: tuple[str, ...], head: tuple[str, Any]) -> _Run:
        first, last = indexes[0], indexes[-1]
        span = slice(first, last + 1) if last - first + 1 == len(indexes) and indexes == sorted(indexes) else None
        return cls(metric=metric, indexes=tuple(indexes), subjects=tuple(map(subjects.__getitem__, indexes)),
                   head=head, span=span)

    def take(self, column: Sequence[Any]) -> Iterable[Any]:
        return column[self.span] if self.span is not None else map(column.__getitem__, self.indexes)


@dataclass(frozen=True, slots=True)
class _Placement:
    members: tuple[_Run, ...]
    values: tuple[_Run, ...]


@functools.lru_cache(maxsize=256)
def _placement(labels: tuple[tuple[Any, ...], tuple[str, ...], tuple[Any, ...], tuple[Any, ...], bytes, bool]
               ) -> _Placement:
    """Where a document's numeric entries go, from their (metrics, subjects, units, higher_is_better,
    usable flags) and whether the node takes part in batch verdicts (not a stand-in)."""
    metrics, subjects, units, highers, clean, judged = labels
    everything = range(len(metrics))
    members: list[_Run] = []
    if judged:
        families = list(map(_family_of_entry, metrics, units, highers))
        names = [m if m.__class__ is str else str(m) for m in metrics]
        for metric, run in groupby(_last_of_each(names, subjects, compress(everything, families)),
                                   key=names.__getitem__):
            entries = list(run)
            members.append(_Run.of(metric, entries, subjects, (str(units[entries[0]]), families[entries[0]])))
    values = []
    for metric, run in groupby(_last_of_each(metrics, subjects, compress(everything, clean)),
                               key=metrics.__getitem__):
        entries = list(run)
        values.append(_Run.of(metric, entries, subjects, (str(units[entries[0]]), bool(highers[entries[0]]))))
    return _Placement(members=tuple(members), values=tuple(values))


def _spread_pct(spread: Any) -> float | None:
    return float(spread) if isinstance(spread, (int, float)) else None


@dataclass(slots=True)
class _Gathered:
    """One population's columns as the documents came, and each contributing document's first
    entry's (unit, family or higher_is_better): the population takes the first node's."""

    owners: array = field(default_factory=lambda: array("l"))     # index of the member's document
    subjects: list[str] = field(default_factory=list)
    values: array = field(default_factory=lambda: array("d"))
    spreads: list[float | None] = field(default_factory=list)
    clean: bytearray = field(default_factory=bytearray)
    heads: list[tuple[int, str, Any]] = field(default_factory=list)


class Batch:
    """The numbers of a batch of nodes, gathered one node document at a time: per (SKU, metric)
    the members that batch verdicts judge (judge_batch's rules: a (metric, subject) measured twice
    on a node is one member, its last; busy or invalid members are judged but stay out of the
    median; stand-in documents take no part), and per (metric, SKU) the usable values that fleet
    summaries describe (validation/fleet.py). A fleet report reads thousands of documents, keeps
    these columns and lets every document's measurement entries go.

    Populations list their members node by node in the order the documents were added, or in
    `order` (host names) where the caller lists its nodes otherwise."""

    def __init__(self) -> None:
        self.hosts: list[str] = []
        self._members: dict[tuple[str, str], _Gathered] = {}       # (sku, metric)
        self._values: dict[tuple[str, str], _Gathered] = {}        # (metric, sku): values and heads only
        self._names: dict[str, str] = {}                           # one string per distinct subject

    @classmethod
    def of(cls, docs: Iterable[Mapping[str, Any]]) -> Batch:
        batch = cls()
        for doc in docs:
            batch.add(doc)
        return batch

    def add(self, doc: Mapping[str, Any]) -> None:
        """Gather one document's numbers, by the rules of _members and usable(): a member is an
        entry with a numeric value and a family (by metric, unit, direction), the last of its
        (metric, subject); a usable value is a number, not NaN, not marked invalid or busy, the
        last usable one of its (metric, subject).

        This runs for every measurement entry of a fleet (over a million at 10,000 nodes). Which
        entry goes where depends only on the entries' labels (metric, subject, unit, direction,
        usable or not), and the nodes of a fleet share a handful of label sequences; so the
        placement is worked out once per sequence (_placement, cached) and each document only
        has its columns read and its numbers copied."""
        entries = list(doc.get("measurements") or ())
        values = list(map(dict.get, entries, repeat("value")))
        numeric = list(map(_NUMBERS.__contains__, map(type, values)))
        if not all(numeric):
            entries, values = list(compress(entries, numeric)), list(compress(values, numeric))
        if not entries:
            return
        owner = len(self.hosts)
        self.hosts.append(str(doc["host"]))
        sku = sku_of(doc)
        clean = _clean(entries, values)
        labels = (tuple(map(operator.getitem, entries, repeat("metric"))),
                  tuple(map(str, map(dict.get, entries, repeat("subject"), repeat("node")))),
                  tuple(map(dict.get, entries, repeat("unit"), repeat(""))),
                  tuple(map(dict.get, entries, repeat("higher_is_better"), repeat(True))),
                  bytes(clean), not doc.get("missing"))
        try:
            placement = _placement(labels)
        except TypeError:                  # a label that cannot be a cache key (not from a JSON document)
            placement = _placement.__wrapped__(labels)
        spreads = list(map(dict.get, entries, repeat("spread_pct")))
        recorded = spreads.count(None) != len(spreads)
        for run in placement.members:
            cols = self._gathered(self._members, (sku, run.metric), owner, run.head)
            cols.owners.extend(repeat(owner, len(run.subjects)))
            cols.subjects.extend(run.subjects)
            cols.values.extend(run.take(values))           # array("d") takes ints as float() does
            cols.spreads.extend(map(_spread_pct, run.take(spreads)) if recorded else repeat(None, len(run.subjects)))
            cols.clean.extend(run.take(clean))
        for run in placement.values:
            self._gathered(self._values, (run.metric, sku), owner, run.head).values.extend(run.take(values))

    def extend(self, other: Batch) -> None:
        """Add another batch's nodes after this one's (as if its documents had been added here)."""
        shift = len(self.hosts)
        self.hosts += other.hosts
        for table, theirs in ((self._members, other._members), (self._values, other._values)):
            for key, cols in theirs.items():
                mine = table.get(key)
                if mine is None:
                    mine = table[key] = _Gathered()
                mine.owners.extend(o + shift for o in cols.owners)
                mine.subjects.extend(map(self._names.setdefault, cols.subjects, cols.subjects))
                mine.values.extend(cols.values)
                mine.spreads.extend(cols.spreads)
                mine.clean.extend(cols.clean)
                mine.heads.extend((o + shift, *rest) for o, *rest in cols.heads)

    @staticmethod
    def _gathered(table: dict[tuple[str, str], _Gathered], key: tuple[str, str], owner: int,
                  head: tuple[str, Any]) -> _Gathered:
        """The population `key`, with this document's head noted where it is its first contribution."""
        cols = table.get(key)
        if cols is None:
            cols = table[key] = _Gathered()
        if not cols.heads or cols.heads[-1][0] != owner:
            cols.heads.append((owner, *head))
        return cols

    def judge(self, *, min_nodes: int = MIN_PEERS, floor: float | None = None,
              order: Sequence[str] | None = None) -> list[PeerVerdict]:
        """judge_batch over the gathered members."""
        rank = self._rank(order)
        out: list[PeerVerdict] = []
        for (sku, metric), cols in sorted(self._members.items(), key=lambda kv: kv[0]):
            _, unit, family = self._head(cols, rank)
            out += judge_columns(metric, unit, self._columns(cols, rank), family, code=BATCH,
                                 scope=f"the batch's {sku} nodes", min_peers=min_nodes, floor=floor)
        return out

    def values(self, order: Sequence[str] | None = None) -> Iterator[tuple[str, str, str, bool, array]]:
        """(metric, sku, unit, higher_is_better, usable values) by metric and SKU; unit and direction
        are the first node's."""
        rank = self._rank(order)
        for (metric, sku), cols in sorted(self._values.items(), key=lambda kv: kv[0]):
            _, unit, higher = self._head(cols, rank)
            yield metric, sku, unit, higher, cols.values

    def _rank(self, order: Sequence[str] | None) -> dict[str, int] | None:
        """Each host's place in `order`, or None where the documents already came in that order."""
        if order is None:
            return None
        rank = {host: i for i, host in enumerate(order)}
        places = [rank[host] for host in self.hosts]
        return None if all(a < b for a, b in pairwise(places)) else rank

    def _head(self, cols: _Gathered, rank: dict[str, int] | None) -> tuple[int, str, Any]:
        return cols.heads[0] if rank is None else min(cols.heads, key=lambda h: rank[self.hosts[h[0]]])

    def _columns(self, cols: _Gathered, rank: dict[str, int] | None) -> Columns:
        hosts = self.hosts
        if rank is None:
            return Columns(hosts=hosts, owners=cols.owners, subjects=cols.subjects, values=cols.values,
                           spreads=cols.spreads, clean=cols.clean)
        places = [rank[hosts[o]] for o in cols.owners]
        perm = sorted(range(len(places)), key=places.__getitem__)    # stable: a node's members keep their order
        return Columns(hosts=hosts, owners=array("l", map(cols.owners.__getitem__, perm)),
                       subjects=list(map(cols.subjects.__getitem__, perm)),
                       values=array("d", map(cols.values.__getitem__, perm)),
                       spreads=list(map(cols.spreads.__getitem__, perm)),
                       clean=bytes(map(cols.clean.__getitem__, perm)))


def by_node(verdicts: Iterable[PeerVerdict]) -> dict[str, list[PeerVerdict]]:
    out: dict[str, list[PeerVerdict]] = defaultdict(list)
    for v in verdicts:
        out[v.node].append(v)
    return dict(out)
