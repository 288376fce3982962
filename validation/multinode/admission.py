"""Node admission: which nodes may join the cluster. Pure.

A node is admitted when
1. its single-node validation passed (worst check status pass or warn, run complete), and
2. it has at least one pairwise run that met the target, and no failed run with a *cleared*
   partner (a node that passed with someone else), and
3. where per-rail checks were run (`cluster rails --json`), they did not fail on it (a
   missing or down rail, a wrong RoCE GID, a slow or failing ib_write_bw pair); a node missing
   from those results is rejected, one they list as skip (tools not installed) is noted.

Rule 2 names the culprit: a slow node fails with every partner, so it is never cleared and its
failed runs do not count against the partners that pass elsewhere. With a single pair that
fails, neither node is cleared and both are rejected ("cannot tell which"). A run passes when it
finished in time, reported the judged size, met the bus bandwidth target (or the target is
record-only) and had #wrong == 0 everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from validation.judge import Verdict, judge_target
from validation.multinode.targets import IN_PLACE, WRONG_TARGET, MultinodeTarget
from validation.parsers._collective_table import CollectiveRun, SizeRow
from validation.records import FAILING, Status

PASSING = (Status.PASS, Status.WARN, Status.SKIP)
SINGLE_NODE_OK = ("pass", "warn")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupRun:
    """One multi-node run (a pair, a batch, all nodes) as admission sees it."""

    nodes: tuple[str, ...]
    busbw_gb_s: float | None      # at the target's size and half; None = not reported
    wrong: int | None             # worst #wrong over every row; None = not reported
    timed_out: bool
    error: str                    # why the run gave no usable output; "" when it did
    output_hosts: tuple[str, ...]  # hosts named in the output's Rank lines (may be empty)


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgedRun:
    run: GroupRun
    verdicts: tuple[Verdict, ...]
    passed: bool
    reason: str                   # "" when passed


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeAdmission:
    node: str
    admitted: bool
    single_node: str              # pass, warn, fail, ..., or "missing"
    busbw_gb_s: float | None      # lowest busbw of the runs that count for this node
    reasons: tuple[str, ...]      # why not admitted (empty when admitted)
    notes: tuple[str, ...]        # e.g. failed runs with a partner that was not cleared


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionReport:
    target: MultinodeTarget
    runs: tuple[JudgedRun, ...]
    nodes: tuple[NodeAdmission, ...]

    @property
    def admitted(self) -> tuple[str, ...]:
        return tuple(n.node for n in self.nodes if n.admitted)

    @property
    def rejected(self) -> tuple[NodeAdmission, ...]:
        return tuple(n for n in self.nodes if not n.admitted)


def _row(run: CollectiveRun, size_bytes: int) -> SizeRow | None:
    return next((row for row in run.rows if row.size_bytes == size_bytes), None)


def group_run(nodes: Sequence[str], record: CollectiveRun | None, target: MultinodeTarget, *,
              timed_out: bool = False, error: str = "") -> GroupRun:
    """A parsed rccl-tests run (or none: timeout, failure) -> the numbers admission needs."""
    busbw = wrong = None
    hosts: tuple[str, ...] = ()
    if record is not None:
        row = _row(record, target.size_bytes)
        if row is not None:
            half = row.in_place if target.place == IN_PLACE else row.out_of_place
            busbw = half.busbw_gb_s
        counts = [m.wrong for r in record.rows for m in (r.out_of_place, r.in_place) if m.wrong is not None]
        wrong = max(counts) if counts else None
        hosts = tuple(sorted({d.host for d in record.devices}))
    return GroupRun(nodes=tuple(nodes), busbw_gb_s=busbw, wrong=wrong, timed_out=timed_out, error=error,
                    output_hosts=hosts)


def judge_run(run: GroupRun, target: MultinodeTarget) -> JudgedRun:
    subject = "+".join(run.nodes)
    if run.timed_out:
        return JudgedRun(run=run, verdicts=(), passed=False, reason=f"run {subject} timed out")
    if run.error:
        return JudgedRun(run=run, verdicts=(), passed=False, reason=f"run {subject} failed: {run.error}")
    if run.output_hosts and set(run.output_hosts) != set(run.nodes):
        return JudgedRun(run=run, verdicts=(), passed=False,
                         reason=f"run {subject}: its output names hosts {', '.join(run.output_hosts)}, "
                                "not the scheduled nodes")
    where = f"{subject} @ {target.size_bytes >> 30} GiB {target.place.replace('_', '-')}"
    verdicts = (judge_target(target.target, where, run.busbw_gb_s),
                judge_target(WRONG_TARGET, subject, run.wrong))
    failed = [v for v in verdicts if v.status not in PASSING]
    return JudgedRun(run=run, verdicts=verdicts, passed=not failed,
                     reason="; ".join(v.reason for v in failed))


def admit(nodes: Sequence[str], single_node: Mapping[str, str], runs: Sequence[GroupRun],
          target: MultinodeTarget, rails: Mapping[str, tuple[str, Sequence[str]]] | None = None) -> AdmissionReport:
    """Admit or reject every node in `nodes` (see the module docstring for the rule).

    `rails`: node -> (status, reasons) of `cluster rails`; a node it does not list is not judged on rails."""
    judged = tuple(judge_run(r, target) for r in runs)
    cleared = {n for j in judged if j.passed for n in j.run.nodes}
    out = []
    for node in nodes:
        mine = [j for j in judged if node in j.run.nodes]
        status = single_node.get(node, "missing")
        reasons: list[str] = []
        notes: list[str] = []
        if status == "missing":
            reasons.append("no single-node validation result")
        elif status not in SINGLE_NODE_OK:
            reasons.append(f"single-node validation: {status}")
        rail_status, rail_reasons = (rails or {}).get(node, ("", ()))
        if rail_status in FAILING:
            reasons.append(f"per-rail checks {rail_status}: {'; '.join(rail_reasons) or 'no reason given'}")
        elif rail_status == "skip":
            notes.append(f"per-rail checks skipped: {'; '.join(rail_reasons)}")
        if not mine:
            reasons.append("no multi-node run includes this node")
        elif node not in cleared:
            partners = {p for j in mine for p in j.run.nodes if p != node}
            good = sorted(partners & cleared)
            if good:
                why = f"failed with cleared partner(s) {', '.join(good)}"
            elif len(partners) == 1:
                why = "no multi-node run passed (one partner only: cannot tell which node is at fault)"
            else:
                why = "no multi-node run passed with any partner"
            reasons.append(why + ": " + "; ".join(j.reason for j in mine))
        else:
            for j in mine:
                if j.passed:
                    continue
                blamed = [p for p in j.run.nodes if p != node and p in cleared]
                if blamed:
                    reasons.append(f"failed with cleared partner(s) {', '.join(blamed)}: {j.reason}")
                else:
                    notes.append(f"ignored (partner not cleared): {j.reason}")
        counted = [j.run.busbw_gb_s for j in mine if j.run.busbw_gb_s is not None
                   and (j.passed or any(p in cleared for p in j.run.nodes if p != node))]
        out.append(NodeAdmission(node=node, admitted=not reasons, single_node=status,
                                 busbw_gb_s=min(counted) if counted else None, reasons=tuple(reasons),
                                 notes=tuple(notes)))
    return AdmissionReport(target=target, runs=judged, nodes=tuple(out))
