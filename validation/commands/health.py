"""`rocm-fleet health`: the fast health mode, on the node, between validations.

Runs every check marked `health` (validation/checks/health.py: presence and identity, driver,
PCIe link, firmware, error-counter and kernel-log deltas since the last run, leftover processes,
throttling and idle temperature, configuration drift) against the node's declared state, in
seconds and without loading a GPU. Then, as asked:

- `--textfile FILE`: a Prometheus textfile for node_exporter's textfile collector (atomic write);
- `--slurm`: drain the node when the flap policy says so (validation/flap.py: a code drains after N
  consecutive failing runs, fatal codes and flapping codes at once), with why as the reason
  (`Reason="rocm-fleet health: RF-GPU-BUSY failed 3 consecutive runs; RF-ECC (fatal, at once)"`), and
  resume it once the codes that drained it pass again, only if the health mode drained it itself; a
  node drained for a fatal code stays drained until remediation or a person resumes it.
  Slurm runs it as HealthCheckProgram (roles/node_health sets that up).
- `--drain-after CODE=N` (repeatable): drain after N consecutive failing runs of CODE instead of the
  policy's default; `--show-policy` prints the policy in effect and exits.

One run at a time per state directory: a run holds `<state-dir>/.lock` from before its checks until its
state is saved, and a second run (a prolog beside the interval run, an operator by hand) waits for it, at
most `--timeout` + LOCK_SLACK_S seconds (the first run's own longest time), then gives up with exit 2.
A history that cannot be read is moved aside, never written over, and the node's drain is kept as it is
for that run (validation/health_state.py, docs/health.md).

Exit 0 when healthy, 1 when a check failed (also below its streak: only the drain waits), 2 when no
verdict was possible.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from validation import flap, names, slurm
from validation.commands.validate import checks_argv, checks_env
from validation.errors import RocmFleetError
from validation.files import write_atomically
from validation.health_state import HealthState, now
from validation.records import FAILING
from validation.report import load_run
from validation.report.health_text import textfile

DEFAULT_SPEC = Path("/etc/rocm-fleet/spec.yml")
DEFAULT_STATE = Path("/var/lib/rocm-fleet/health")
CONTEXTS = ("interval", "prolog", "epilog", "manual")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("health", help="fast health checks on this node (Slurm HealthCheckProgram, timers)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spec", type=Path, default=DEFAULT_SPEC,
                   help=f"the node's declared state (default {DEFAULT_SPEC})")
    p.add_argument("--state-dir", type=Path, default=DEFAULT_STATE,
                   help=f"the node's health memory and last results (default {DEFAULT_STATE}; survives reboots)")
    p.add_argument("--node-name", default=None, help="this node's name in results (default: the short host name)")
    p.add_argument("--context", choices=CONTEXTS, default="manual",
                   help="who runs it: interval (Slurm/timer; leftover processes only when no job runs), prolog, "
                   "epilog, manual (default)")
    p.add_argument("--textfile", type=Path, default=None, metavar="FILE",
                   help="write a Prometheus textfile here (node_exporter textfile collector)")
    p.add_argument("--slurm", action="store_true", help="drain this node on failure, resume it when it passes "
                   "again (only a drain the health mode made)")
    p.add_argument("--slurm-node", default=None, help="the Slurm node name (default $SLURMD_NODENAME, else the "
                   "short host name)")
    p.add_argument("--drain-after", action="append", default=[], metavar="CODE=N",
                   help="drain after N consecutive failing runs of CODE (repeatable; default: the policy in "
                   "validation/flap.py, 1 for fatal codes, 3 for codes that can be transient)")
    p.add_argument("--show-policy", action="store_true",
                   help="print the flap policy in effect (with any --drain-after) and exit")
    p.add_argument("--accept-changes", action="store_true",
                   help="take the firmware found now as the node's recorded set (after a validation passed on it)")
    p.add_argument("--timeout", type=int, default=60, help="seconds before the checks are stopped (default 60)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=run)


def _run(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def jobs_running(node: str) -> bool:
    out = _run(slurm.jobs_argv(node))
    if out.returncode != 0:
        raise RocmFleetError(f"squeue failed for node {node} (rc {out.returncode}): {out.stderr.strip()[:200]}")
    return bool(out.stdout.strip())


def slurm_state(node: str) -> slurm.SlurmNode:
    shown = _run(slurm.show_argv(node))
    if shown.returncode != 0:
        raise RocmFleetError(f"scontrol show node {node} failed (rc {shown.returncode}): {shown.stderr.strip()[:200]}")
    return slurm.parse_show_node(shown.stdout, node)


def slurm_act(node: str, wanted: str, reason: str, state: slurm.SlurmNode) -> tuple[str | None, bool]:
    """Drain or resume as slurm.decide says for what the flap policy wants, on the node in `state` (read
    before the policy ran); returns (what was done, drained by the health mode now)."""
    action = slurm.decide(wanted, state, reason)
    if action is not None:
        argv = slurm.drain_argv(node, reason) if action == "drain" else slurm.resume_argv(node)
        done = _run(argv)
        if done.returncode != 0:
            raise RocmFleetError(f"{' '.join(argv[:3])} failed (rc {done.returncode}): {done.stderr.strip()[:200]}")
    drained = action == "drain" or (action is None and state.drained_by_health)
    return action, drained


LAST = "last"              # the last whole run's results, which the support bundle and a person read
STALE_S = 3600             # a run directory left this long by a run that died is removed by the next run
LOCK = ".lock"             # held (flock) by the run that owns the state directory; never removed, so a
#                            waiting run and a new one always lock the same file
LOCK_SLACK_S = 100
"""Beyond a run's --timeout, how long it may still hold the state: its Slurm calls (squeue, scontrol show,
scontrol update: 30 s each at most) and saving. A second run waits this plus its own --timeout."""
LOCK_POLL_S = 0.2


@contextlib.contextmanager
def state_lock(state_dir: Path, wait_s: float) -> Iterator[None]:
    """Hold the state directory for one run. Another run that holds it is waited for (up to `wait_s`):
    it reads the node's memory before its checks and writes it after them, so two at once would count one
    moment twice, lose one's update and race on `last`. After `wait_s` the other run is not ending as a run
    does, and this one gives up (exit 2) rather than hang a Slurm prolog or a timer."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise RocmFleetError(f"--state-dir {state_dir}: cannot open its lock file {LOCK} ({exc.strerror}); run as "
                             "the user that owns it (root for the timer and Slurm) or pass another --state-dir") \
            from None
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RocmFleetError(
                        f"another `rocm-fleet health` run holds {state_dir} (its {LOCK}) and did not end within "
                        f"{wait_s:g} s; see whether a run hangs (`ps -ef | grep rocm-fleet`), then run again") \
                        from None
                time.sleep(LOCK_POLL_S)
        yield
    finally:
        os.close(fd)            # closing the descriptor releases the lock


def fresh_run_dir(state_dir: Path) -> Path:
    """An empty directory beside `last` for this run's results (two runs at once, a prolog beside the
    interval run, each get their own); run directories a killed run left behind are removed."""
    state_dir.mkdir(parents=True, exist_ok=True)
    for left in (*state_dir.glob(".run-*"), *state_dir.glob(".old-*")):
        try:
            if time.time() - left.stat().st_mtime > STALE_S:
                shutil.rmtree(left, ignore_errors=True)
        except OSError:
            continue
    return Path(tempfile.mkdtemp(dir=state_dir, prefix=".run-"))


def publish(run_dir: Path, last: Path) -> Path:
    """This run's results become `last` whole: a reader sees the previous run or this one, never one being
    written (the support bundle once packed a health run two checks in, complete: false). Called with the
    state directory locked (state_lock): two runs publishing at once failed one of them."""
    old = last.with_name(f".old-{os.getpid()}-{last.name}")
    if last.exists():
        last.rename(old)
    run_dir.rename(last)
    shutil.rmtree(old, ignore_errors=True)
    return last


def show_policy(overrides: dict[str, int], as_json: bool) -> int:
    rows = flap.policy_table(overrides)
    if as_json:
        print(json.dumps({"schema_version": 1, "default_drain_after": flap.DEFAULT_DRAIN_AFTER,
                          "unclassified_drain_after": flap.UNCLASSIFIED_DRAIN_AFTER,
                          "flap_window_runs": flap.FLAP_WINDOW_RUNS, "flap_returns": flap.FLAP_RETURNS,
                          "resume_passes_after_flap": flap.RESUME_PASSES_AFTER_FLAP, "codes": rows}, indent=2))
        return 0
    print(f"flapping: fail -> pass -> fail {flap.FLAP_RETURNS} times in {flap.FLAP_WINDOW_RUNS} runs drains at once; "
          f"a flapping code resumes after {flap.RESUME_PASSES_AFTER_FLAP} passes in a row; a code not listed drains "
          f"after {flap.UNCLASSIFIED_DRAIN_AFTER}")
    for row in rows:
        kind = "fatal" if row["fatal"] else "override" if row["overridden"] else "streak"
        print(f"{row['code']:<26} {row['drain_after']:>3}  {kind:<8} {row['why']}")
    return 0


def run(args: argparse.Namespace) -> int:
    overrides = flap.parse_overrides(args.drain_after)
    if args.show_policy:
        return show_policy(overrides, args.json)
    if not args.spec.is_file():
        raise RocmFleetError(f"--spec {args.spec}: no such file; the health mode judges the node against its declared "
                             "state (playbooks/validate.yml or roles/node_health writes it)")
    # the name becomes <state-dir>/<node>.json and <state-dir>/last/<node>.json: checked before anything is written
    node = names.check_node(args.node_name, "--node-name") if args.node_name is not None else \
        names.check_node(socket.gethostname().split(".")[0], "this machine's short host name (pass --node-name)")
    slurm_node = args.slurm_node or os.environ.get("SLURMD_NODENAME") or node
    if args.slurm:
        slurm.check_node(slurm_node)
    with state_lock(args.state_dir, args.timeout + LOCK_SLACK_S):
        return checked(args, node, slurm_node, overrides)


def run_checks(args: argparse.Namespace, node: str, slurm_node: str) -> tuple[dict[str, Any], int | None, float]:
    """The health checks into a fresh run directory that becomes `last` whole: (the node's results document,
    pytest's exit code or None when stopped at --timeout, seconds). A run directory never outlives its run."""
    run_dir = fresh_run_dir(args.state_dir)
    try:
        busy = args.slurm and args.context == "interval" and jobs_running(slurm_node)
        options = [f"--rf-spec={args.spec}", f"--rf-node={node}", f"--rf-health-state={args.state_dir}", "-q",
                   "-p", "no:cacheprovider"]
        options += ["--rf-health-jobs-running"] if busy else []
        options += ["--rf-health-accept"] if args.accept_changes else []
        started = time.perf_counter()
        try:
            proc = subprocess.run(checks_argv("local://", "health", run_dir, *options), capture_output=True,
                                  text=True, timeout=args.timeout, check=False, env=checks_env())
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        seconds = time.perf_counter() - started
        results = publish(run_dir, args.state_dir / LAST)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)      # gone already once published
    docs = load_run(results)
    if not docs:
        raise RocmFleetError(f"the health checks wrote no results (pytest exit {rc}); run `rocm-fleet health` by "
                             "hand to see why")
    return docs[0], rc, seconds


def checked(args: argparse.Namespace, node: str, slurm_node: str, overrides: dict[str, int]) -> int:
    """One health run with the state directory held: the checks, the flap policy, Slurm, the outputs."""
    before = HealthState(args.state_dir, node)      # before the checks save theirs into the same file
    unreadable = before.unreadable
    aside = before.set_aside() if unreadable else None
    history = flap.read_history(before.get("flap"))
    doc, rc, seconds = run_checks(args, node, slurm_node)
    bad = [c for c in doc["checks"] if c["status"] in FAILING]
    if rc is None:
        bad.append({"id": "health", "status": "timeout", "code": "RF-TIMEOUT",
                    "message": f"stopped after {args.timeout} s"})
    passed = not bad
    failures: dict[str, str] = {}
    for c in bad:
        key = flap.code_of(c)
        failures[key] = "; ".join(m for m in (failures.get(key), c.get("message") or "") if m)
    memory = HealthState(args.state_dir, node)      # after the checks saved theirs: same document
    state = slurm_state(slurm_node) if args.slurm else None
    # a drain whose codes the history cannot say (no history, or an unknown one) is read back from Slurm
    held = flap.held_from_reason((state.reason or "").removeprefix(slurm.REASON_PREFIX)) \
        if state is not None and state.drained_by_health and history.drain is None else None
    decision = flap.step(history.as_dict(held), failures, at=now(), overrides=overrides,
                         drained=state.drained if state is not None else None)
    memory.set("flap", decision.history)
    memory.save()
    if state is None:
        action, drained = None, False
    elif unreadable:                                # keep as is: neither resume nor drain nor re-word
        action, drained = None, state.drained_by_health
    else:
        action, drained = slurm_act(slurm_node, decision.wanted, decision.reason, state)
    if args.textfile:
        # node_exporter must never read half a file
        text = textfile(doc, ok=passed, duration_s=seconds, finished_at=time.time(), drained=drained,
                        codes=decision.codes, history_ok=unreadable is None and not history.problems,
                        held=None if state is None else state.needs_physical_action)
        write_atomically(args.textfile, text, mode=0o644)
    said = [f"health history unreadable ({unreadable}); "
            + (f"moved aside to {aside.name}" if aside else "left in place, not overwritten")
            + (": Slurm's drain kept as it is this run" if args.slurm else "")] if unreadable else []
    said += [f"health history: {p}" for p in history.problems]
    summary = {"schema_version": 1, "node": node, "passed": passed, "seconds": round(seconds, 2),
               "checks": len(doc["checks"]), "failed": [{"check": c["id"], "code": flap.code_of(c),
                                                         "message": c.get("message")} for c in bad],
               "history": {"readable": unreadable is None, "unreadable": unreadable,
                           "set_aside": aside.name if aside else None, "problems": list(history.problems)},
               "flap": {"wanted": decision.wanted, "reason": decision.reason, "drain": decision.drain,
                        "waiting": [c.waiting() for c in decision.waiting],
                        "flapping": [c.code for c in decision.flapping],
                        "codes": [{"code": c.code, "failing": c.failing, "streak": c.streak,
                                   "drain_after": c.drain_after, "fatal": c.fatal, "flapping": c.flapping,
                                   "passes": c.passes, "recent": c.recent, "first_seen": c.first_seen,
                                   "last_seen": c.last_seen, "drains": c.drains} for c in decision.codes]},
               "slurm": {"node": slurm_node, "action": action, "drained": drained} if args.slurm else None}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        verdict = "PASS" if passed else f"FAIL {'; '.join(sorted(failures))}"
        policy = [*(c.waiting() for c in decision.waiting)]
        policy += [f"flapping: {', '.join(c.code for c in decision.flapping)}"] if decision.flapping else []
        policy += [f"drain: {decision.reason}"] if decision.wanted == "drain" else []
        policy += [f"held drained: {'; '.join(decision.drain.values())}"] if decision.wanted == "keep" else []
        policy += [f"health history unreadable{', drain kept as is' if args.slurm else ''}"] if unreadable else []
        policy += [f"health history: {len(history.problems)} part(s) unknown"] if history.problems else []
        extra = "".join(f"; {p}" for p in policy) + (f"; slurm: {action}" if action else "")
        print(f"health {node}: {verdict} ({len(doc['checks'])} checks, {seconds:.1f} s){extra}")
        for c in bad:
            print(f"  {flap.code_of(c)} {c['id']}: {(c.get('message') or '')[:300]}", file=sys.stderr)
    for line in said:
        print(f"rocm-fleet health: {line}", file=sys.stderr)
    return 0 if passed else 1
