"""`rocm-fleet baseline create RESULTS_DIR... -o FILE` and `rocm-fleet baseline show FILE`.

A site baseline gives the numbers no vendor publishes (the portable probes, the model sweep) a
verdict on any SKU the site has accepted: per metric, a low quantile of its accepted nodes' values
with a margin (validation/baseline.py). Use it with `rocm-fleet validate --baseline FILE`,
`rocm-fleet judge --baseline FILE`, or in the inventory as `validation_baseline` (playbooks).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from validation import baseline
from validation.commands._options import deprecated
from validation.errors import RocmFleetError
from validation.report import load_run


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("baseline", help="make a site baseline from accepted nodes, or show one")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")
    create = verbs.add_parser("create", help="make a baseline file from results directories")
    create.add_argument("results", type=Path, nargs="+", metavar="RESULTS_DIR",
                        help="directories of per-node results (validate's --results, validate.yml's runs)")
    create.add_argument("-o", "--out", dest="output", type=Path, default=None, metavar="FILE",
                        help="baseline file to write (required)")
    deprecated(create, "--output", "--out", "output", type=Path)
    create.add_argument("--name", default=None, help="the baseline's name in every verdict (default: the file name)")
    create.add_argument("--quantile", type=float, default=baseline.DEFAULT_QUANTILE,
                        help="the low quantile each floor starts from (default 0.05, the 5th percentile)")
    create.add_argument("--margin-pct", type=float, default=baseline.DEFAULT_MARGIN * 100,
                        help="how far below that quantile still passes, in %% (default 5)")
    create.add_argument("--min-nodes", type=int, default=baseline.MIN_PEERS,
                        help="accepted nodes a metric needs to be baselined (default 4)")
    create.add_argument("--sku", default=None, help="take only nodes of this declared SKU (needed for a mixed batch)")
    create.add_argument("--gpu-checks-only", action="store_true",
                        help="accept nodes whose failing checks are all host configuration (not GPU) checks")
    create.add_argument("--json", action="store_true", help="print the baseline as JSON as well")
    create.set_defaults(run=run_create)
    show = verbs.add_parser("show", help="print a baseline file's floors and provenance")
    show.add_argument("file", type=Path, metavar="FILE")
    show.add_argument("--json", action="store_true", help="print one JSON document")
    show.set_defaults(run=run_show)


def run_create(args: argparse.Namespace) -> int:
    if args.output is None:
        raise RocmFleetError("baseline create: give the file to write with --out FILE (-o FILE)")
    docs = []
    for directory in args.results:
        if not directory.is_dir():
            raise RocmFleetError(f"{directory} is not a directory; give results directories (validate --results)")
        docs += load_run(directory)
    if not docs:
        raise RocmFleetError(f"no per-node results in {', '.join(map(str, args.results))}")
    hosts = [d["host"] for d in docs]
    twice = sorted({h for h in hosts if hosts.count(h) > 1})
    if twice:
        raise RocmFleetError(f"node(s) {', '.join(twice)} appear in more than one directory; give each node's "
                             "run once (a baseline counts nodes, and one node twice would count double)")
    doc = baseline.make_baseline(docs, quantile=args.quantile, margin=args.margin_pct / 100,
                                 min_nodes=args.min_nodes, sku=args.sku, gpu_checks_only=args.gpu_checks_only,
                                 name=args.name or args.output.stem)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# rocm-fleet site baseline, made by `rocm-fleet baseline create` from {len(docs)} results documents.\n"
              "# Use: rocm-fleet validate --baseline FILE, or validation_baseline in the inventory.\n")
    args.output.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=120))
    made = doc["made_from"]
    print(f"baseline {doc['name']}: {len(doc['metrics'])} metrics from {len(made['nodes'])} accepted {made['sku']} "
          f"nodes ({made['first']} .. {made['last']}); {len(doc['not_accepted'])} not accepted, "
          f"{len(doc['skipped'])} metrics skipped -> {args.output}")
    for host, why in sorted(doc["not_accepted"].items())[:10]:
        print(f"  not accepted: {host}: {why}")
    if args.json:
        print(json.dumps(doc, indent=2))
    return 0


def run_show(args: argparse.Namespace) -> int:
    doc = baseline.read(args.file)
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    made = doc.get("made_from") or {}
    print(f"{doc.get('name')}: {made.get('sku')} nodes {', '.join(made.get('nodes') or [])} "
          f"({made.get('first')} .. {made.get('last')}); rule {doc.get('rule')}")
    for metric, entry in doc["metrics"].items():
        margin = float(entry.get("tolerance", 0))
        lower = entry.get("direction") == "lower_is_better"
        line = entry["value"] * (1 + margin if lower else 1 - margin)
        print(f"  {metric:<44} {'ceiling' if lower else 'floor'} {line:.4g} {entry.get('unit', '')} "
              f"({'p95' if lower else 'p05'} {entry['value']:.4g}, margin {margin:.0%}; median {entry.get('median')}, "
              f"{entry.get('nodes')} nodes)")
    return 0
