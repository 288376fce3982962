"""How much of a node's performance was judged, and against what.

A run that records every number and judges none cannot fail on performance: an operator must see
that before trusting its PASS. A performance number is a throughput or a latency (the units the
sibling and batch verdicts compare, validation/peers.py). Each one is, in this order:

- invalid: `valid: false` (measured beside someone else's work, or unstable): judged by nothing, not
  the hardware's;
- judged against a site baseline: it has a verdict and its metric is one the run's baseline applied
  (the results' provenance.baseline.applied);
- judged against a target: it has a verdict against the SKU's published target (or an inventory
  override);
- judged against its siblings: no verdict of its own, but the sibling check compared it with the
  node's other GPUs or links (`judged_by_siblings`);
- record-only, with the reason its entry gives (no published target, too few GPUs, ...).

The batch verdict (RF-BATCH-GAP) judges whole metrics across nodes in the fleet report; it is
counted there, per node, as `batch_metrics`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from validation import peers

VERDICTS = ("pass", "warn", "fail")
_NO_TARGET = re.compile(r"^record only: no published \S+ target for (\S+?);?(?:\s|$)")


def is_performance(entry: Mapping[str, Any]) -> bool:
    return (isinstance(entry.get("value"), (int, float)) and not str(entry.get("metric", "")).startswith("idle_")
            and str(entry.get("unit", "")) in peers.PERFORMANCE_UNITS)


def basis(entry: Mapping[str, Any], baseline_metrics: Iterable[str] = ()) -> str:
    """'invalid', 'baseline', 'target', 'siblings' or 'record-only' (see the module docstring)."""
    if entry.get("valid") is False:
        return "invalid"
    if entry.get("status") in VERDICTS and entry.get("reason"):
        return "baseline" if entry.get("metric") in set(baseline_metrics) else "target"
    if entry.get("judged_by_siblings"):
        return "siblings"
    return "record-only"


def why_record_only(entry: Mapping[str, Any]) -> str:
    reason = str(entry.get("reason") or "").strip()
    found = _NO_TARGET.match(reason)
    if found:
        return f"no published target for {found.group(1)} and no site baseline for it"
    return reason.split(";")[0][:120] or "recorded without a verdict"


def summarize(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The node's counts: performance numbers, judged (by what), record-only (why), invalid."""
    applied = ((doc.get("provenance") or {}).get("baseline") or {})
    baseline_metrics = set(applied.get("applied") or ()) if isinstance(applied, Mapping) else set()
    numbers = [e for e in doc.get("measurements") or () if isinstance(e, Mapping) and is_performance(e)]
    kinds = Counter(basis(e, baseline_metrics) for e in numbers)
    why = Counter(why_record_only(e) for e in numbers if basis(e, baseline_metrics) == "record-only")
    judged = kinds["target"] + kinds["baseline"] + kinds["siblings"]
    return {"numbers": len(numbers), "judged": judged,
            "by": {k: kinds[k] for k in ("target", "baseline", "siblings")},
            "record_only": kinds["record-only"], "record_only_why": dict(why.most_common()),
            "invalid": kinds["invalid"]}


def of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The summary the run wrote (`judged`), else one made from the document's measurements."""
    found = doc.get("judged")
    return dict(found) if isinstance(found, Mapping) else summarize(doc)


def line(summary: Mapping[str, Any]) -> str:
    """'54 numbers: 4 judged (target 4), 50 record-only, 0 invalid' (one line, for terminals and reports)."""
    if not summary.get("numbers"):
        return "no performance number measured"
    by = ", ".join(f"{k} {v}" for k, v in (summary.get("by") or {}).items() if v)
    batch = f", batch {summary['batch_metrics']} metrics" if summary.get("batch_metrics") else ""
    judged = f"{summary['judged']} judged" + (f" ({by}{batch})" if by or batch else "")
    return (f"{summary['numbers']} numbers: {judged}, {summary['record_only']} record-only, "
            f"{summary['invalid']} invalid")
