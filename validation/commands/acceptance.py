"""`rocm-fleet acceptance RESULTS_DIR`: acceptance report per node and for the batch.

A node whose GPU or link is behind the batch of its SKU (RF-BATCH-GAP, validation/peers.py) is
rejected like any other failing node: hardware is accepted against its peers, not only against
published floors."""

from __future__ import annotations

import argparse
from pathlib import Path

from validation import fleet
from validation.commands import _node_lists
from validation.errors import RocmFleetError
from validation.report import load_run
from validation.report.acceptance import batch_markdown, node_markdown, verdict
from validation.report.load import with_missing


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("acceptance", help="write acceptance reports (per node and batch) from a results directory")
    _node_lists.add_results_dir(p, "directory of per-node JSON documents")
    p.add_argument("--out", type=Path, default=None, help="write the reports here (default RESULTS_DIR)")
    _node_lists.add(p, "--expect", help="nodes that were targeted: one without results is NOT RUN, and the batch fails")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    args.results = _node_lists.results_dir(args, ("expect",))
    nodes = fleet.with_batch_checks(with_missing(load_run(args.results), args.expect, []))
    if not nodes:
        raise RocmFleetError(f"no per-node results in {args.results}; run playbooks/acceptance.yml first")
    out = args.out or args.results
    out.mkdir(parents=True, exist_ok=True)
    for node in nodes:
        (out / f"acceptance-{node['host']}.md").write_text(node_markdown(node))
    (out / "acceptance.md").write_text(batch_markdown(nodes))
    for node in nodes:
        print(f"{node['host']:<24} {verdict(node)}")
    print(f"acceptance report: {out / 'acceptance.md'}")
    return 0 if all(verdict(n) == "ACCEPT" for n in nodes) else 1
