"""`rocm-fleet active-checks`: active checks on idle nodes, a few at a time, on a schedule.

Runs where Slurm's client tools are (the controller or a login node; roles/active_checks runs it from a
systemd timer). It reads the partition's nodes (sinfo) and the active-check jobs already pending or
running (squeue, job name rocm-fleet-active, of this process's uid only: another user's job of that name is
not one of ours), chooses the idle nodes that are due (validation/active.py:
only IDLE nodes, at most ceil(P % of the partition) checks at once counting those already queued, the
node checked longest ago first) and submits one exclusive, low-priority, short job per chosen node. The
job runs `rocm-fleet validate --hosts local:// --tier quick` on its node and keeps the results there
(--node-results, default /var/lib/rocm-fleet/active/latest/<node>.json: the last verdict, with its
valid_until). What yields to user jobs and what does not: docs/active-checks.md.

Exit 0 when the plan was made and every chosen node's job was submitted (also when none was due),
2 when no plan was possible (bad input, Slurm not answering) or a submission failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from validation import active
from validation.errors import RocmFleetError
from validation.files import write_atomically

DEFAULT_STATE = Path("/var/lib/rocm-fleet/active-checks")
STATE_FILE = "submitted.json"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("active-checks", help="submit quick-tier checks to idle Slurm nodes, at most P %% at once",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partition", required=True, help="the Slurm partition whose idle nodes are checked")
    p.add_argument("--max-percent", type=_number, required=True, metavar="P",
                   help="at most ceil(P %% of the partition's nodes) active checks at once, counting those pending "
                   "or running (0 < P <= 100)")
    p.add_argument("--recheck-after", type=_number, default=24.0, metavar="HOURS",
                   help="a node checked less than this ago is not due (default 24; 0: every idle node is due)")
    p.add_argument("--tier", choices=("smoke", "quick"), default="quick", help="the tier the job runs (default quick)")
    p.add_argument("--time-limit", type=int, default=60, metavar="MIN",
                   help="the job's time limit in minutes (sbatch --time; default 60): a user job that arrives "
                   "while a check runs waits at most this long")
    p.add_argument("--pending-limit", type=int, default=60, metavar="MIN",
                   help="Slurm removes a check that has not started this many minutes after submission "
                   "(sbatch --deadline; default 60)")
    p.add_argument("--nice", type=int, default=active.DEFAULT_NICE,
                   help=f"sbatch --nice (default {active.DEFAULT_NICE}; higher is lower priority)")
    p.add_argument("--qos", default=None,
                   help="a preemptible QOS the site set up for these jobs (docs/active-checks.md)")
    p.add_argument("--node-prefix", default=active.DEFAULT_PREFIX,
                   help=f"the suite's install on the nodes (default {active.DEFAULT_PREFIX})")
    p.add_argument("--node-spec", default=active.DEFAULT_SPEC,
                   help=f"the node's declared state, on the node (default {active.DEFAULT_SPEC})")
    p.add_argument("--node-results", default=active.DEFAULT_RESULTS,
                   help=f"where the job keeps its results on the node (default {active.DEFAULT_RESULTS})")
    p.add_argument("--state-dir", type=Path, default=DEFAULT_STATE,
                   help=f"when each node was last sent a check, here (default {DEFAULT_STATE})")
    p.add_argument("--dry-run", action="store_true", help="print the plan; submit nothing, record nothing")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=run)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _slurm(argv: list[str], *, stdin: str | None = None, timeout_s: float = 60) -> str:
    try:
        out = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        raise RocmFleetError(f"{argv[0]} is not on PATH; run active-checks where Slurm's client tools are (the "
                             "controller or a login node)") from None
    except subprocess.TimeoutExpired:
        raise RocmFleetError(f"{argv[0]} did not answer in {timeout_s:.0f} s; is slurmctld up?") from None
    if out.returncode != 0:
        raise RocmFleetError(f"{' '.join(argv[:2])} failed (rc {out.returncode}): "
                             f"{' '.join(out.stderr.split())[:300] or 'no message'}")
    return out.stdout


def load_state(state_dir: Path) -> dict[str, dict[str, Any]]:
    path = state_dir / STATE_FILE
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text())
        nodes = doc["nodes"]
        assert isinstance(nodes, dict)
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        raise RocmFleetError(f"{path} is not the active-checks record (JSON with 'nodes'); move it away and the "
                             "next run starts a new one") from None
    return nodes


def last_checked(state: dict[str, dict[str, Any]]) -> dict[str, dt.datetime | None]:
    out: dict[str, dt.datetime | None] = {}
    for node, entry in state.items():
        try:
            when = dt.datetime.fromisoformat(str(entry["submitted_at"]))
        except (KeyError, TypeError, ValueError):
            out[node] = None
            continue
        out[node] = when if when.tzinfo else when.replace(tzinfo=dt.UTC)   # a hand-edited time without zone: UTC
    return out


def save_state(state_dir: Path, nodes: dict[str, dict[str, Any]]) -> None:
    write_atomically(state_dir / STATE_FILE,
                     json.dumps({"schema_version": 1, "nodes": dict(sorted(nodes.items()))}, indent=2) + "\n")


def run(args: argparse.Namespace) -> int:
    job = active.JobSpec(partition=active.check_partition(args.partition), tier=args.tier,
                         time_limit_min=args.time_limit, pending_limit_min=args.pending_limit, nice=args.nice,
                         qos=args.qos, prefix=args.node_prefix, spec=args.node_spec,
                         results=args.node_results).checked()
    active.check_percent(args.max_percent)
    if not 0 <= args.recheck_after <= 24 * 366:
        raise active.ActiveChecksError(f"--recheck-after {args.recheck_after:g}: give 0 to {24 * 366} hours")
    nodes = active.parse_nodes(_slurm(active.nodes_argv(job.partition)), job.partition)
    if not nodes:
        raise RocmFleetError(f"partition {job.partition} has no nodes, or Slurm does not know it (sinfo "
                             f"--partition={job.partition} lists none); check --partition")
    jobs = active.parse_jobs(_slurm(active.jobs_argv(job.partition, os.getuid())))   # ours only: sbatch submits as us
    state = load_state(args.state_dir)
    now = dt.datetime.now(dt.UTC)
    chosen_plan = active.plan(job.partition, nodes, jobs, args.max_percent, last_checked=last_checked(state), now=now,
                              recheck_after=dt.timedelta(hours=args.recheck_after))
    submitted: list[dict[str, str]] = []
    failed: list[dict[str, str]] = []
    if not args.dry_run:
        script = active.script_text(job)
        for node in chosen_plan.chosen:
            try:
                job_id = active.parse_job_id(_slurm(active.sbatch_argv(job, node), stdin=script))
            except RocmFleetError as exc:
                failed.append({"node": node, "error": str(exc)})
                continue
            submitted.append({"node": node, "job": job_id})
            state[node] = {"submitted_at": now.isoformat(timespec="seconds"), "job": job_id}
        if submitted:
            save_state(args.state_dir, state)
    summary = {"schema_version": 1, "partition": job.partition, "max_percent": chosen_plan.max_percent,
               "nodes": chosen_plan.size, "limit": chosen_plan.limit, "dry_run": bool(args.dry_run),
               "active": [{"job": j.job_id, "state": j.state, "node": j.node} for j in chosen_plan.active],
               "chosen": list(chosen_plan.chosen), "submitted": submitted, "failed": failed,
               "skipped": [{"node": n, "why": why} for n, why in chosen_plan.skipped]}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        verb = "would submit" if args.dry_run else "submitted"
        done = ([f"{s['node']} (job {s['job']})" for s in submitted] if not args.dry_run
                else list(chosen_plan.chosen))
        print(f"active checks in {job.partition}: {len(chosen_plan.active)} pending or running, limit "
              f"{chosen_plan.limit} of {chosen_plan.size} nodes ({chosen_plan.max_percent:g} %); {verb} "
              f"{', '.join(done) or 'none'}")
        for node, why in chosen_plan.skipped:
            print(f"  {node}: {why}", file=sys.stderr)
    for f in failed:
        print(f"rocm-fleet: error: sbatch for {f['node']}: {f['error']}", file=sys.stderr)
    return 2 if failed else 0
