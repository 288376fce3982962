"""`rocm-fleet report RESULTS_DIR`: fleet summary with outliers (terminal, Markdown, HTML, JUnit, Prometheus).

The documents are read once, on every CPU lent (validation/report/gather.py): their numbers are
kept as columns and their Prometheus lines in a file, not their measurement entries. 10,000 nodes:
docs/measurements/fleet-aggregation.md."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from validation import fleet
from validation.commands import _node_lists, _push
from validation.errors import RocmFleetError
from validation.report import fleet_text, forked, machine, render_html, render_terminal
from validation.report.gather import MAX_JOBS, gather
from validation.report.load import with_missing
from validation.report.markdown import printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="aggregate a results directory over the fleet")
    _node_lists.add_results_dir(p, "directory of per-node JSON documents")
    p.add_argument("--outlier-pct", type=float, default=None,
                   help="smallest gap below the batch median that fails a GPU or link, in %% (default per metric "
                   "family: 5 for throughput, 10 for latency; the peers' scatter and the probe's spread can widen it)")
    p.add_argument("--out", type=Path, default=None, help="write report files here (default RESULTS_DIR)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document instead of the table: every node's verdict, failures with their "
                        "codes and GPUs or links, judged counts, completeness and validity "
                        "(validation/report/fleet_schema.json)")
    _node_lists.add(p, "--expect", help="nodes that were targeted: one without a results document is reported as a "
                                        "failure")
    _node_lists.add(p, "--unreachable", help="nodes known to have become unreachable during the run (reported as such)")
    p.add_argument("--reason", metavar="NODE=TEXT", action="append", default=[], type=_reason,
                   help="what the run saw of a node that delivered no document (the step that failed and its "
                        "message), added to its failure; repeat per node")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="processes that read the documents (default: the CPUs this process may use, at most "
                        f"{MAX_JOBS}; 1 = read them here, one after another)")
    _push.add_arguments(p)
    p.set_defaults(run=run)


def _reason(text: str) -> tuple[str, str]:
    node, sep, why = text.partition("=")
    if not (sep and node.strip() and why.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not NODE=TEXT")
    return node.strip(), why.strip()


def run(args: argparse.Namespace) -> int:
    args.results = _node_lists.results_dir(args, ("expect", "unreachable"))
    with gather(args.results, jobs=args.jobs) as read:
        nodes = with_missing(read.nodes, args.expect, args.unreachable, dict(args.reason))
        if not nodes:
            raise RocmFleetError(f"no per-node results in {args.results}; point at a directory written by "
                                 "`rocm-fleet validate` or playbooks/validate.yml")
        floor = None if args.outlier_pct is None else args.outlier_pct / 100
        verdicts = read.batch.judge(floor=floor, order=[n["host"] for n in nodes])
        summaries = fleet.summarize(nodes, verdicts=verdicts, batch=read.batch)
        nodes = fleet.with_batch_checks(nodes, verdicts=verdicts)
        out = args.out or args.results
        out.mkdir(parents=True, exist_ok=True)
        title = f"rocm-fleet fleet report ({len(nodes)} nodes)"
        forked.run_all([      # the HTML page first: it takes longest, and goes to a forked process where there are CPUs
            lambda: (out / "fleet.html").write_text(render_html(nodes, title=title)),
            lambda: read.spool.write(out / "fleet.prom", nodes),
            lambda: (out / "fleet-junit.xml").write_text(fleet_text.junit(nodes)),
            lambda: (out / "fleet.md").write_text(fleet_text.markdown(nodes, summaries)),
        ], jobs=read.jobs)
    doc = machine.fleet_document(nodes, summaries, run_id=args.results.resolve().name)
    failed = doc["failed"]
    pushed = _push.maybe_push(args, doc)
    if args.json:
        print(json.dumps({**doc, **({"push": pushed} if pushed else {})}, indent=2))
    else:
        print(render_terminal(nodes))
        for s in summaries:
            if s.outliers:
                names = ", ".join(f"{m.node}/{m.subject} {fleet_text.behind(s, gap)}" for m, gap in s.outliers[:5])
                more = f" and {len(s.outliers) - 5} more" if len(s.outliers) > 5 else ""
                print(printable(f"behind the {s.sku} batch median on {s.metric}: {names}{more}"))
        print(f"fleet report: {out / 'fleet.md'} {out / 'fleet.html'} {out / 'fleet-junit.xml'} {out / 'fleet.prom'}")
        if pushed and "error" not in pushed:
            print(f"pushed the summary to {pushed['url']}: HTTP {pushed['status_code']}")
    return _push.exit_code(pushed, 1 if failed else 0)

