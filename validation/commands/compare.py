"""`rocm-fleet compare RUN_A RUN_B`: per-metric deltas by node, regressions flagged.

A node whose run did not finish (`complete: false`, or a stand-in for a node that delivered nothing)
in either run cannot show that nothing regressed: it is listed as incomplete and the exit code is 1,
like a regression.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from validation import fleet
from validation.errors import RocmFleetError
from validation.records import to_jsonable
from validation.report import load_run
from validation.report.fleet_text import compare_table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare two results directories metric by metric (before/after)")
    p.add_argument("before", type=Path, metavar="RUN_A")
    p.add_argument("after", type=Path, metavar="RUN_B")
    p.add_argument("--tolerance-pct", type=float, default=5.0,
                   help="a change worse than this %% is a regression (default 5)")
    p.add_argument("--node", metavar="NODE", default=None,
                   help="compare this node only (an upgrade gate compares each node with its own baseline)")
    p.add_argument("--require-measurements", action="store_true",
                   help="no verdict (exit 2) when the runs have no measurement to compare (an upgrade gate whose "
                   "tier measured nothing would otherwise pass)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    before, after = load_run(args.before), load_run(args.after)
    if args.node:
        before = [n for n in before if n["host"] == args.node]
        after = [n for n in after if n["host"] == args.node]
    if not before or not after:
        which = f" for {args.node}" if args.node else ""
        raise RocmFleetError(f"need per-node results{which} in both {args.before} and {args.after}")
    deltas = fleet.compare(before, after, tolerance=args.tolerance_pct / 100)
    if args.require_measurements and not deltas:
        which = f" of {args.node}" if args.node else ""
        raise RocmFleetError(f"no measurements{which} in {args.before} or {args.after}, so there is nothing to "
                             "compare; validate with a tier that measures (quick: GEMM, HBM, host-GPU and P2P "
                             "bandwidth, RCCL)")
    regressions = [d for d in deltas if d.regression]
    incomplete = incomplete_runs(before, after)
    if args.json:
        print(json.dumps({"schema_version": 1, "regressions": len(regressions), "incomplete": incomplete,
                          "deltas": to_jsonable(deltas)}, indent=2))
    else:
        print(compare_table(deltas))
        for entry in incomplete:
            print(f"INCOMPLETE {entry['node']} ({entry['run']} run): {entry['why']}")
        print(f"{len(regressions)} regression(s) beyond {args.tolerance_pct:g}% over {len(deltas)} measurements"
              + (f"; {len(incomplete)} incomplete run(s)" if incomplete else ""))
    return 1 if regressions or incomplete else 0


def incomplete_runs(before: list[dict], after: list[dict]) -> list[dict[str, str]]:
    """The node runs of either side that did not finish: their numbers cannot show 'no regression'."""
    out = []
    for run, docs in (("before", before), ("after", after)):
        for doc in docs:
            if doc.get("complete") is False or doc.get("missing"):
                why = ("no results document" if doc.get("missing") else
                       "complete: false (the session was interrupted; measurements may be missing)")
                out.append({"node": str(doc["host"]), "run": run, "why": why})
    return out
