"""How long a node's verdict vouches for it: `valid_until` in its results document.

A PASS says what the node was when it was measured. Drivers change, GPUs degrade, someone edits a
setting by hand; a fleet report that shows a months-old PASS as green hides exactly the node nobody
re-validated. So every complete run's document carries `valid_until` (its end plus the validity of the
highest tier it ran), and the reports turn a verdict read after that moment into an error,
RF-VALIDATION-EXPIRED (validation/report/load.py), until the node is validated again.

The validities are this project's policy, not a vendor's number:
- health, 1 h: the health mode runs every few minutes (roles/node_health, default 300 s); a node whose
  last health run is an hour old is no longer being watched;
- smoke, 24 h: the smoke tier runs around jobs and after every change; a day without one is a node
  out of the loop;
- quick, 7 days: the scheduled active checks run the quick tier on idle nodes; a week covers a schedule
  that yields to user jobs on a busy partition;
- acceptance, 30 days: an acceptance run vouches for hardware as received; after a month the node
  should carry a newer quick-tier result.
`rocm-fleet validate --valid-for HOURS` sets another validity for one run.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

VALID_FOR_HOURS = {"health": 1.0, "smoke": 24.0, "quick": 7 * 24.0, "acceptance": 30 * 24.0}
_HIGHEST_FIRST = ("acceptance", "quick", "smoke", "health")


def tier_of(expr: str | None) -> str | None:
    """The highest tier a run's marker expression ("smoke or quick", "(smoke) and not gpu") runs."""
    words = set(re.findall(r"[a-z_]+", expr or ""))
    return next((tier for tier in _HIGHEST_FIRST if tier in words), None)


def valid_until(expr: str | None, finished: dt.datetime, hours: float | None = None) -> str | None:
    """When a run of `expr` that finished at `finished` stops vouching for the node (ISO 8601, UTC); None for
    a run of no known tier and no given validity."""
    if hours is None:
        tier = tier_of(expr)
        if tier is None:
            return None
        hours = VALID_FOR_HOURS[tier]
    return (finished + dt.timedelta(hours=hours)).astimezone(dt.UTC).isoformat(timespec="seconds")


def expired_since(doc: Mapping[str, Any], now: dt.datetime) -> dt.datetime | None:
    """The moment a complete document's verdict stopped vouching for its node, when that is before `now`;
    None while it is valid, or for a document that says nothing of its validity (written before it did).
    A valid_until that is not a time (a number, 'garbage') vouches for nothing: expired as of `now`."""
    if not doc.get("complete") or "valid_until" not in doc or doc.get("valid_until") is None:
        return None
    until = parsed(doc["valid_until"])
    if until is None:
        return now
    return until if until < now else None


def parsed(raw: object) -> dt.datetime | None:
    """A document's valid_until as a time (one without a zone is UTC); None where it is not a time."""
    try:
        until = dt.datetime.fromisoformat(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if until is not None and until.tzinfo is None:
        until = until.replace(tzinfo=dt.UTC)
    return until
