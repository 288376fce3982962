"""Progress of long runs: which check runs on which node, how many are done, elapsed against expected.

Node side, the plugin keeps `<results dir>/progress-<node>.json` current: it is rewritten atomically
when a check starts and when it finishes, and once more when the session ends. Expected durations
come from the node's previous results document (each check's recorded `duration_s`) and, for the
checks it does not list, from a per-tier budget; where that run also left its progress file, the
whole time each check took there (setup and teardown included) is preferred. Controller side,
`rocm-fleet progress` reads these files and turns each into one line (`view` and `format_line`).

The progress document has no `host` key, so `validation.report.load_run` never mistakes it for a
results document in the same directory.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from validation.files import write_atomically

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
KIND = "rocm-fleet-progress"
PREFIX = "progress-"
# Expected seconds for one check that no previous run recorded, by tier. Coarse on purpose: a quick
# tier is minutes for some hundred checks (most are per GPU or per link); in the acceptance tier one
# check runs the burn-in and the others judge it (900 s each over-promised four hours for a 4.5-min
# run on the H200). A check without a tier gets the quick budget. The second run knows better.
TIER_BUDGET_S = {"smoke": 2.0, "quick": 10.0, "acceptance": 60.0}
# Order in which one check's phase outcomes win (setup error beats a passing call).
_WORST = ("error", "fail", "skip", "pass")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds")


def progress_path(directory: Path, node: str) -> Path:
    return directory / f"{PREFIX}{node}.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedCheck:
    nodeid: str          # pytest's id of the item
    check_id: str        # the id the results document uses for it
    tier: str | None
    expected_s: float
    from_previous: bool  # True: the previous run's duration; False: the tier budget


def previous_durations(path: Path, node: str) -> dict[str, float]:
    """check id -> seconds from a results document (each check's call duration_s), overlaid with the
    whole per-check times of the progress file beside it when there is one; {} when unreadable."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        log.warning("previous results %s are unreadable (%s); expected times come from tier budgets", path, exc)
        return {}
    checks = doc.get("checks", []) if isinstance(doc, dict) else []
    durations = {str(c["id"]): float(c["duration_s"]) for c in checks
                 if isinstance(c, dict) and "id" in c and isinstance(c.get("duration_s"), (int, float))}
    try:
        sidecar = json.loads(progress_path(path.parent, node).read_text())
    except (OSError, ValueError):
        return durations
    took = sidecar.get("durations_s") if isinstance(sidecar, dict) else None
    if isinstance(took, dict):
        durations.update({str(k): float(v) for k, v in took.items() if isinstance(v, (int, float))})
    return durations


def find_previous(results_dir: Path, node: str, explicit: Path | None = None) -> Path | None:
    """The node's previous results document.

    `explicit` is a results document or a run directory holding `<node>.json`. Without it: the
    newest `<node>.json` among the run directories next to `results_dir`, including one already in
    `results_dir` itself (a re-used run id), which is only overwritten once the first check runs.
    """
    if explicit is not None:
        candidate = explicit / f"{node}.json" if explicit.is_dir() else explicit
        if candidate.is_file():
            return candidate
        log.warning("no previous results for %s at %s; expected times come from tier budgets", node, candidate)
        return None
    parent = results_dir.resolve().parent
    if not parent.is_dir():
        return None
    found = [d / f"{node}.json" for d in parent.iterdir() if d.is_dir() and (d / f"{node}.json").is_file()]
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def plan(checks: Iterable[tuple[str, str, str | None]], durations: Mapping[str, float]) -> tuple[PlannedCheck, ...]:
    """(nodeid, check id, tier) per check -> its expected duration, previous run first, else tier budget."""
    planned = []
    for nodeid, check_id, tier in checks:
        known = durations.get(check_id)
        expected = known if known is not None else TIER_BUDGET_S.get(tier or "quick", TIER_BUDGET_S["quick"])
        planned.append(PlannedCheck(nodeid=nodeid, check_id=check_id, tier=tier, expected_s=expected,
                                    from_previous=known is not None))
    return tuple(planned)


def write_atomic(path: Path, doc: Mapping[str, Any]) -> None:
    # no secrets in it; an unprivileged `rocm-fleet progress` may read it
    write_atomically(path, json.dumps(doc, indent=2) + "\n", mode=0o644)


class NodeProgress:
    """One node's progress file, rewritten at each check start and finish."""

    def __init__(self, path: Path, node: str, *, tier: str, checks: tuple[PlannedCheck, ...],
                 previous: Path | None, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], dt.datetime] = utcnow) -> None:
        self.path, self.node, self.tier, self.checks, self.previous = path, node, tier, checks, previous
        self._clock, self._wall = clock, wall
        self._t0 = clock()
        self._started_at = _iso(wall())
        self._by_id = {c.nodeid: c for c in checks}
        self._done: set[str] = set()
        self._outcome: dict[str, str] = {}
        self._took: dict[str, float] = {}
        self._current: tuple[PlannedCheck, float, str] | None = None
        self.state = "running"

    def begin(self) -> None:
        """The node's run starts now (a process that got the node after others: not at planning)."""
        self._t0 = self._clock()
        self._started_at = _iso(self._wall())

    def start(self, nodeid: str) -> None:
        check = self._by_id.get(nodeid)
        if check is not None:
            self._current = (check, self._clock(), _iso(self._wall()))
            self.write()

    def report(self, nodeid: str, outcome: str) -> None:
        """Fold one phase's outcome (pass, fail, skip, error) into the check's."""
        if nodeid in self._by_id:
            old = self._outcome.get(nodeid, "pass")
            self._outcome[nodeid] = min(old, outcome, key=_WORST.index)

    def finish(self, nodeid: str) -> None:
        if nodeid not in self._by_id:
            return
        self._done.add(nodeid)
        self._outcome.setdefault(nodeid, "pass")
        if self._current is not None and self._current[0].nodeid == nodeid:
            self._took[self._current[0].check_id] = round(self._clock() - self._current[1], 3)
            self._current = None
        self.write()

    def close(self) -> None:
        self._current = None
        self.state = "finished" if len(self._done) == len(self.checks) else "interrupted"
        self.write()

    def document(self) -> dict[str, Any]:
        now = self._clock()
        pending = sum(c.expected_s for c in self.checks if c.nodeid not in self._done)
        current = None
        if self._current is not None:
            check, since, started_at = self._current
            running = now - since
            pending += max(0.0, check.expected_s - running) - check.expected_s
            current = {"nodeid": check.nodeid, "tier": check.tier, "started_at": started_at,
                       "running_s": round(running, 1), "expected_s": round(check.expected_s, 1)}
        counts = dict.fromkeys(reversed(_WORST), 0)
        for outcome in self._outcome.values():
            counts[outcome] += 1
        known = sum(c.from_previous for c in self.checks)
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "node": self.node,
            "tier": self.tier,
            "state": self.state,
            "current": current,
            "done": len(self._done),
            "total": len(self.checks),
            "counts": counts,
            "started_at": self._started_at,
            "updated_at": _iso(self._wall()),
            "elapsed_s": round(now - self._t0, 1),
            "expected_total_s": round(sum(c.expected_s for c in self.checks), 1),
            "expected_remaining_s": round(max(0.0, pending), 1),
            "expected_from": {"previous_results": str(self.previous) if self.previous else None,
                              "checks_from_previous": known, "checks_from_tier_budget": len(self.checks) - known},
            "durations_s": dict(self._took),     # whole time per finished check: the next run's expectations
        }

    def write(self) -> None:
        try:
            write_atomic(self.path, self.document())
        except OSError as exc:   # progress is a convenience: never let it stop the checks
            log.warning("cannot write progress file %s: %s", self.path, exc)


class ProgressBook:
    """Every node's progress in one session, addressed by pytest node id.

    `only_started`: a process that runs some of the session's nodes (a pytest-xdist worker)
    writes and closes only the nodes whose checks it started; another process owns the others."""

    def __init__(self, nodes: Iterable[NodeProgress], *, only_started: bool = False) -> None:
        self.nodes = tuple(nodes)
        self._owner = {c.nodeid: n for n in self.nodes for c in n.checks}
        self._only_started = only_started
        self._started: set[str] = set()

    def start(self, nodeid: str) -> None:
        if (node := self._owner.get(nodeid)) is not None:
            if self._only_started and node.node not in self._started:
                node.begin()
            self._started.add(node.node)
            node.start(nodeid)

    def report(self, nodeid: str, when: str, *, passed: bool, failed: bool) -> None:
        """One phase's report: a failing call is a fail, a failing setup or teardown an error."""
        if (node := self._owner.get(nodeid)) is not None:
            failure = "fail" if when == "call" else "error"
            node.report(nodeid, failure if failed else ("pass" if passed else "skip"))

    def finish(self, nodeid: str) -> None:
        if (node := self._owner.get(nodeid)) is not None:
            node.finish(nodeid)

    def close(self) -> None:
        for node in self.nodes:
            if not self._only_started or node.node in self._started:
                node.close()


def start_book(results_dir: Path, checks_by_node: Mapping[str, list[tuple[str, str, str | None]]], *,
               tier: str, previous: Path | None = None, only_started: bool = False) -> ProgressBook:
    """Plan every node's checks and return the book; each node's first progress file is written now,
    or, with `only_started`, when its first check starts in this process."""
    results_dir.mkdir(parents=True, exist_ok=True)
    nodes = []
    for node, checks in checks_by_node.items():
        source = find_previous(results_dir, node, previous)
        durations = previous_durations(source, node) if source else {}
        progress = NodeProgress(progress_path(results_dir, node), node, tier=tier,
                                checks=plan(checks, durations), previous=source)
        if not only_started:
            progress.write()
        nodes.append(progress)
    return ProgressBook(nodes, only_started=only_started)


# ---- controller side: read the files, one line per node ----------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressView:
    node: str
    state: str                   # running, stale, finished, interrupted
    verdict: str | None          # pass or fail once something failed or the run ended; None while clean
    done: int
    total: int
    failed: int
    current: str | None          # node id of the running check
    current_expected_s: float | None
    elapsed_s: float             # up to now for a running node, up to the last write otherwise
    expected_total_s: float
    expected_remaining_s: float
    age_s: float                 # seconds since the file last changed


def load_progress(directory: Path) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(directory.glob(f"{PREFIX}*.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            log.warning("skipping %s: %s", path, exc)
            continue
        if isinstance(doc, dict) and doc.get("kind") == KIND:
            docs.append(doc)
    return docs


def read_progress(path: Path) -> dict[str, Any] | None:
    """The node's progress document as it stands, or None while there is none."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None                            # not written yet, or replaced as we read it
    return found if isinstance(found, dict) and found.get("kind") == KIND else None


def wait_until_done(path: Path, seconds: float, *, interval_s: float = 0.1) -> dict[str, Any]:
    """The node's progress document once its run is no longer running, or as it stands after `seconds`
    (`{}` while there is none yet). Run on the node, this is a long poll: the controller asks every
    `seconds` and still learns of the end within `interval_s`, for one remote command per window."""
    deadline = time.monotonic() + seconds
    doc: dict[str, Any] = {}
    while True:
        found = read_progress(path)
        if found is not None:
            doc = found
            if doc.get("state") != "running":
                return doc
        if time.monotonic() >= deadline:
            return doc
        time.sleep(interval_s)


def view(doc: Mapping[str, Any], *, now: dt.datetime, stale_after_s: float) -> ProgressView:
    """Classify one progress document. A running node is stale when its file has not changed for
    longer than its running check's expected time plus `stale_after_s` (hung, killed or unreachable)."""
    updated = dt.datetime.fromisoformat(doc["updated_at"])
    age = max(0.0, (now - updated).total_seconds())
    current = doc.get("current") or None
    state = doc.get("state", "running")
    failed = int(doc["counts"].get("fail", 0)) + int(doc["counts"].get("error", 0))
    elapsed = float(doc["elapsed_s"])
    if state == "running":
        allowance = stale_after_s + max(0.0, float(current["expected_s"]) - float(current["running_s"])) \
            if current else stale_after_s
        if age > allowance:
            state = "stale"
        else:
            elapsed += age
    verdict = "fail" if failed or state in ("stale", "interrupted") else ("pass" if state == "finished" else None)
    remaining = float(doc["expected_remaining_s"])
    if state == "running":
        remaining = max(0.0, remaining - age)
    return ProgressView(node=str(doc["node"]), state=state, verdict=verdict, done=int(doc["done"]),
                        total=int(doc["total"]), failed=failed, current=current["nodeid"] if current else None,
                        current_expected_s=float(current["expected_s"]) if current else None,
                        elapsed_s=round(elapsed, 1), expected_total_s=float(doc["expected_total_s"]),
                        expected_remaining_s=round(remaining, 1), age_s=round(age, 1))


def duration(seconds: float) -> str:
    """61 -> '1m01s', 3725 -> '1h02m05s', 9.4 -> '9s'."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def format_line(v: ProgressView, *, width: int = 20) -> str:
    count = f"{v.done}/{v.total}"
    failed = f", {v.failed} failed" if v.failed else ""
    if v.state == "running":
        check = v.current or "(between checks)"
        return (f"{v.node:<{width}} running     {count:>7}  {check}  elapsed {duration(v.elapsed_s)} of "
                f"~{duration(v.expected_total_s)} expected, ~{duration(v.expected_remaining_s)} left{failed}")
    if v.state == "stale":
        check = f"  {v.current} (expected ~{duration(v.current_expected_s or 0)})" if v.current else ""
        return (f"{v.node:<{width}} stale       {count:>7}{check}  no update for {duration(v.age_s)}; "
                f"hung, killed or unreachable{failed}")
    if v.state == "interrupted":
        return f"{v.node:<{width}} interrupted {count:>7}  stopped after {duration(v.elapsed_s)}{failed}"
    return (f"{v.node:<{width}} finished    {count:>7}  {(v.verdict or '').upper()} in {duration(v.elapsed_s)} "
            f"(expected ~{duration(v.expected_total_s)}){failed}")
