"""`rocm-fleet progress RESULTS_DIR`: one line per node of a run in progress (or finished).

Reads the `progress-<node>.json` files the checks plugin keeps current. Exit 0 while every node is
running cleanly or has passed, 1 when a node has a failed check, is stale or was interrupted, 2 when
the directory holds no progress file.

With `--node NODE --wait SECONDS` it prints that node's progress document (JSON, `{}` before the run
has written one; without the per-check times, `durations_s`, which stay in the file) as soon as the run
is no longer running, or after SECONDS: playbooks/validate.yml runs
it on the node to follow a run, which notices the end within a fraction of a second. With
`--collect JOB_FILE` (the Ansible async job running `rocm-fleet validate`) it waits for that job to
exit instead, and adds the job's exit status and stderr and whether the results document was written
(validation/results/collect.py).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from validation.errors import RocmFleetError
from validation.records import to_jsonable
from validation.results import collect, progress

# The follower's answer comes once per window and Ansible keeps every window's answer of every host
# (the loop's registered results): it leaves out each finished check's time (~80 bytes a check, ~17 KB
# for a quick tier), which only the next run reads, from the file.
FOLLOWER_LEAVES_OUT = frozenset({"durations_s"})


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("progress", help="show which check each node is running and how long is left",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", type=Path, metavar="RESULTS_DIR", help="results directory of a running or finished run")
    p.add_argument("--stale-after", type=float, default=300.0, metavar="SECONDS",
                   help="a running node whose file has not changed for this long beyond its running check's "
                   "expected time is stale (default 300)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--node", metavar="NODE", help="with --wait: the node whose progress document to print")
    p.add_argument("--wait", type=float, metavar="SECONDS",
                   help="print NODE's progress document once its run ends, or after SECONDS (exit 0)")
    p.add_argument("--collect", type=Path, metavar="JOB_FILE",
                   help="with --wait: wait for this Ansible async job (the run) to exit, and add its exit status, "
                   "stderr and whether the results document was written")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if (args.wait is None) != (args.node is None):
        raise RocmFleetError("--wait and --node go together: --node NODE --wait SECONDS")
    if args.wait is not None:
        if not 0 < args.wait <= 3600:
            raise RocmFleetError(f"--wait {args.wait:g}: give seconds between 0 and 3600")
        if args.collect is not None:
            answer = collect.collect(args.results, args.node, args.collect, args.wait)
        else:
            answer = progress.wait_until_done(progress.progress_path(args.results, args.node), args.wait)
        print(json.dumps({k: v for k, v in answer.items() if k not in FOLLOWER_LEAVES_OUT}))
        return 0
    if args.collect is not None:
        raise RocmFleetError("--collect goes with --node NODE --wait SECONDS")
    docs = progress.load_progress(args.results)
    if not docs:
        raise RocmFleetError(f"no progress-<node>.json in {args.results}; point at the --results directory of a "
                             "run started by this version of rocm-fleet")
    now = progress.utcnow()
    views = [progress.view(doc, now=now, stale_after_s=args.stale_after) for doc in docs]
    if args.json:
        print(json.dumps({"schema_version": 1, "nodes": to_jsonable(views)}, indent=2))
    else:
        width = max(len(v.node) for v in views)
        for v in views:
            print(progress.format_line(v, width=width))
    return 1 if any(v.verdict == "fail" for v in views) else 0
