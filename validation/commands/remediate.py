"""`rocm-fleet remediate begin|end`: one remediation attempt on this node, as playbooks/remediate.yml runs it.

`begin` reads the node's Slurm state. A node this project drained (reason "rocm-fleet health: ..." or an
attempt left by a run that was cut short, "rocm-fleet remediate: ...") gets a plan from the policy in
validation/remediate.py, from the failure codes in its reason and the attempts in its record:

- reboot: the attempt is recorded (before the reboot, so a cut-short attempt counts too) and the reason
  becomes "rocm-fleet remediate: attempt n/K for RF-..." (the health mode leaves it alone meanwhile);
- hold: the reason becomes "rocm-fleet: needs physical action: RF-... (why)"; the playbook then
  collects a support bundle. The health mode never resumes a node held so.
Any other node (not drained, drained by an administrator, already held) is skipped and left as it is.
A node of ours on which a job still runs (the health mode drains mid-job; a drain lets running jobs
finish) is "busy": nothing is changed, and the playbook asks again until the jobs end or its wait is
over (validation/occupancy.py: the node's allocation and every user's jobs in squeue).

`end` takes the verdict after the reboot (--passed or --failed, with the failing results documents) and
resumes the node, holds it for physical action, or leaves it drained for the next run ("retry", reason
"rocm-fleet remediate: RF-... (attempt n/K failed; ...)", which the health mode never resumes: only a
remediation run that passes both the health mode and the tiers puts the node back); only while the
reason is still the one `begin` set.

The record (--record, default /var/lib/rocm-fleet/remediate.json) survives reboots and holds every
attempt and the drain history. Prints one JSON document with --json. Exit 0 when the node is in service,
was skipped or is busy (nothing changed), 1 when it stays drained (reboot planned, held, retry), 2 when no
decision was possible.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

from validation import occupancy, remediate, slurm
from validation.errors import RocmFleetError
from validation.records import FAILING

DEFAULT_RECORD = Path("/var/lib/rocm-fleet/remediate.json")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("remediate", help="one remediation attempt on this node (begin / end), for remediate.yml",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = p.add_subparsers(dest="step", required=True, metavar="STEP")
    for name, text in (("begin", "plan the attempt: reboot, hold for physical action, or skip"),
                       ("end", "after the reboot and the checks: resume, hold, or leave for a later try")):
        step = steps.add_parser(name, help=text)
        step.add_argument("--slurm-node", default=None, help="the Slurm node name (default: the short host name)")
        step.add_argument("--record", type=Path, default=DEFAULT_RECORD,
                          help=f"the node's remediation record (default {DEFAULT_RECORD}; survives reboots)")
        step.add_argument("--max-attempts", type=int, required=True, help="attempts per window (>= 1)")
        step.add_argument("--window-hours", type=float, required=True, help="the window in hours (> 0)")
        step.add_argument("--run-id", required=True, help="the playbook run's id, recorded with the attempt")
        step.add_argument("--json", action="store_true", help="print one JSON document")
        if name == "end":
            verdict = step.add_mutually_exclusive_group(required=True)
            verdict.add_argument("--passed", action="store_true", help="the checks after the reboot passed")
            verdict.add_argument("--failed", action="store_true", help="they failed (or did not run)")
            step.add_argument("--results", type=Path, action="append", default=[], metavar="FILE",
                              help="a results document of the checks after the reboot (repeatable)")
            step.add_argument("--rebooted", choices=["yes", "no"], default="yes", help="whether the node rebooted")
    p.set_defaults(run=run)


def _run(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _scontrol(argv: list[str]) -> None:
    done = _run(argv)
    if done.returncode != 0:
        raise RocmFleetError(f"{' '.join(argv[:3])} failed (rc {done.returncode}): {done.stderr.strip()[:200]}; "
                             "check that slurmctld answers from this node (scontrol ping)")


def slurm_state(node: str) -> slurm.SlurmNode:
    shown = _run(slurm.show_argv(node))
    if shown.returncode != 0:
        raise RocmFleetError(f"scontrol show node {node} failed (rc {shown.returncode}): {shown.stderr.strip()[:200]}")
    return slurm.parse_show_node(shown.stdout, node)


def occupied(node: str) -> str | None:
    """Why no reboot may start now (None: no job runs there), read fresh from Slurm."""
    probe = occupancy.probe_argv("slurm", node)
    try:
        done = _run(probe)
    except subprocess.TimeoutExpired:
        return occupancy.why_occupied("slurm", node, None, "", "scontrol or squeue did not answer in 30 s")
    return occupancy.why_occupied("slurm", node, done.returncode, done.stdout, done.stderr) or None


def failing_codes(paths: list[Path]) -> tuple[str, ...]:
    """The codes of the failing checks in results documents (a missing document adds RF-NODE-NO-RESULTS)."""
    codes: list[str] = []
    for path in paths:
        try:
            doc = json.loads(path.read_text())
            checks = doc["checks"]
            if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
                raise TypeError("checks is not a list of objects")
        except (OSError, ValueError, KeyError, TypeError):
            codes.append("RF-NODE-NO-RESULTS")        # missing, unreadable or of the wrong shape: no verdict
            continue
        codes += [_code(c.get("code")) for c in checks if c.get("status") in FAILING]
    return tuple(dict.fromkeys(codes))


def _code(value: object) -> str:
    """A check's code as a results document gives it; anything that is not one code is RF-CHECK-FAILED."""
    return value if isinstance(value, str) and remediate.CODE.fullmatch(value) else "RF-CHECK-FAILED"


def _codes_text(codes: tuple[str, ...]) -> str:
    return " ".join(codes) or "(no code)"


def begin(args: argparse.Namespace, node: str, now: dt.datetime) -> dict[str, Any]:
    state = slurm_state(node)
    if not state.drained:
        return {"action": "skip", "why": "not drained"}
    if state.needs_physical_action:
        return {"action": "skip", "why": f"already held: {state.reason}"}
    if not (state.drained_by_health or state.drained_by_remediation):
        return {"action": "skip", "why": f"drained by someone else ({state.reason}): left alone"}
    busy = occupied(node)
    if busy:
        return {"action": "busy", "why": f"{busy}: not rebooted while a job runs", "was": state.reason}
    doc = remediate.load(args.record, node)
    attempts = [dataclasses.replace(a, result="interrupted") if a.result == "pending" else a
                for a in remediate.attempts_of(doc)]
    codes = remediate.codes_in(state.reason or "")
    plan = remediate.plan_before(codes, attempts, now=now, max_attempts=args.max_attempts,
                                 window_hours=args.window_hours)
    if plan.action == "reboot":
        number = max((a.number for a in attempts), default=0) + 1
        attempts.append(remediate.Attempt(number=number, run_id=args.run_id, started=now, codes=codes,
                                          result="pending"))
        prefix, text = slurm.REMEDIATE_PREFIX, f"attempt {plan.attempt}/{args.max_attempts} for {_codes_text(codes)}"
        event = "remediating"
    else:
        prefix, text, event = slurm.PHYSICAL_PREFIX, f"{_codes_text(codes)} ({plan.why})", "held"
    argv = slurm.reason_argv(node, prefix, text)
    doc = remediate.with_event(remediate.with_attempts(doc, attempts), now, event, argv[-1].removeprefix("Reason="),
                               f"was: {state.reason}")
    remediate.save(args.record, doc)      # before Slurm changes: a reboot or a crash after it loses nothing
    _scontrol(argv)
    return {"action": plan.action, "why": plan.why, "codes": list(codes), "attempt": plan.attempt,
            "reason": argv[-1].removeprefix("Reason="), "was": state.reason}


def end(args: argparse.Namespace, node: str, now: dt.datetime) -> dict[str, Any]:
    doc = remediate.load(args.record, node)
    attempts = remediate.attempts_of(doc)
    pending = [a for a in attempts if a.result == "pending" and a.run_id == args.run_id]
    if not pending:
        raise RocmFleetError(f"no attempt of run {args.run_id} is pending in {args.record}; run `rocm-fleet remediate "
                             "begin` first")
    current = pending[-1]
    codes_after = failing_codes(args.results) if args.failed else ()
    plan = remediate.plan_after(current, bool(args.passed), codes_after, attempts, now=now,
                                max_attempts=args.max_attempts, window_hours=args.window_hours)
    finished = dataclasses.replace(current, result="passed" if args.passed else "failed", codes_after=codes_after,
                                   rebooted=args.rebooted == "yes")
    attempts = [finished if a is current else a for a in attempts]
    state = slurm_state(node)
    shown = f"attempt {plan.attempt}/{args.max_attempts}"
    out: dict[str, Any] = {"action": plan.action, "why": plan.why, "codes": list(plan.codes), "attempt": plan.attempt,
                           "was": state.reason}
    argv: list[str] | None
    if not state.drained_by_remediation:
        argv, out["action"] = None, "left"
        now_in = f"{'+'.join(sorted(state.states))}, {state.reason}"
        out["why"] = f"the node's state changed meanwhile ({now_in}): left alone"
    elif plan.action == "resume":
        argv = slurm.resume_argv(node)
    elif plan.action == "hold":
        argv = slurm.reason_argv(node, slurm.PHYSICAL_PREFIX, f"{_codes_text(plan.codes)} ({plan.why})")
    else:
        # remediation's own prefix: the health mode must not resume a node that failed after its reboot
        # (slurm.decide resumes only its own drains); the next remediation run takes it up again
        argv = slurm.reason_argv(node, slurm.REMEDIATE_PREFIX,
                                 f"{_codes_text(plan.codes)} ({shown} failed; the next run tries again)")
    reason = "" if argv is None or plan.action == "resume" else argv[-1].removeprefix("Reason=")
    doc = remediate.with_event(remediate.with_attempts(doc, attempts), now,
                               {"resume": "resumed", "hold": "held", "retry": "retry"}.get(out["action"], "left"),
                               reason, f"{shown}: {plan.why}")
    remediate.save(args.record, doc)
    if argv is not None:
        _scontrol(argv)
    out["reason"] = reason
    return out


def run(args: argparse.Namespace) -> int:
    remediate.check_limits(args.max_attempts, args.window_hours)
    node = slurm.check_node(args.slurm_node or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0])
    now = dt.datetime.now(dt.UTC)
    result = begin(args, node, now) if args.step == "begin" else end(args, node, now)
    summary = {"schema_version": 1, "node": node, "step": args.step, "max_attempts": args.max_attempts,
               "window_hours": args.window_hours, "record": str(args.record), **result}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"remediate {args.step} {node}: {summary['action']}: {summary['why']}")
    return 0 if summary["action"] in ("skip", "busy", "resume") else 1
