"""`rocm-fleet judge --profile SKU FILE...`: verdicts for tool outputs saved by hand.

Each FILE is `TOOL:PATH` or a plain path whose tool is recognised from its content (the one
parser that accepts it). Exit 0 when every verdict passes, 1 on any FAIL/TIMEOUT/ERROR verdict,
2 when an input cannot be used (unreadable, not understood, unknown SKU).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from validation import baseline, extract, parsers
from validation.errors import ParseError, RocmFleetError
from validation.judge import aggregate
from validation.records import Status, to_jsonable
from validation.targets import load_targets
from validation.targets.model import TargetProfile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judge", help="judge saved tool outputs against a SKU's targets",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", required=True, metavar="SKU", help="target profile, e.g. mi300x (see `targets list`)")
    p.add_argument("--gpus", type=int, default=None, help="GPU count the outputs were taken with (default: SKU's)")
    p.add_argument("--partition", default=None, help="partition mode, e.g. CPX/NPS4")
    p.add_argument("--strict", action="store_true", help="WARN counts as failure")
    p.add_argument("--baseline", type=Path, default=None, metavar="FILE",
                   help="site baseline (rocm-fleet baseline create), applied where it is stricter or nothing is "
                   "published")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("files", nargs="+", metavar="FILE", help="TOOL:PATH or PATH; tools: " + ", ".join(extract.JUDGES))
    p.set_defaults(run=run)


def detect(path: Path, text: str) -> str:
    accepted = []
    for tool in extract.JUDGES:
        try:
            parsers.parse(tool, text)
        except (ParseError, RocmFleetError):
            continue
        accepted.append(tool)
    if len(accepted) == 1:
        return accepted[0]
    if {"rccl-tests", "nccl-tests"} == set(accepted):
        return "rccl-tests" if "rccl" in text.lower() else "nccl-tests"
    raise RocmFleetError(f"{path}: cannot tell which tool wrote it ({', '.join(accepted) or 'no parser accepts it'}); "
                         f"write it as TOOL:{path} with TOOL one of {', '.join(extract.JUDGES)}")


def _targets(args: argparse.Namespace, gpu_count: int | None) -> TargetProfile:
    profile = load_targets(args.profile, gpu_count=gpu_count, partition=args.partition)
    if args.baseline is None:
        return profile
    extra, notes = baseline.overrides(baseline.read(args.baseline), profile)
    for note in notes:
        print(f"rocm-fleet: baseline: {note}", file=sys.stderr)
    return load_targets(args.profile, gpu_count=gpu_count, partition=args.partition, overrides=extra)


def run(args: argparse.Namespace) -> int:
    default = _targets(args, args.gpus)
    results = []
    for spec in args.files:
        named = ":" in spec and spec.split(":", 1)[0] in extract.JUDGES
        tool, _, raw = spec.partition(":") if named else ("", "", spec)
        path = Path(raw)
        text = path.read_text(errors="replace")
        tool = tool or detect(path, text)
        record = parsers.parse(tool, text)
        profile = default
        ranks = getattr(record, "ranks", None)
        if args.gpus is None and ranks and ranks != default.gpu_count:
            # collective bandwidth targets hold for one GPU count (ROCm/rccl#1270): use the run's own
            profile = _targets(args, ranks)
        verdicts = extract.verdicts_for(tool, record, profile)
        if not verdicts:
            raise RocmFleetError(f"{path}: {tool} output holds no measurement that {profile.name} has a target for")
        results.append((str(path), tool, verdicts))
    every = [v for _, _, vs in results for v in vs]
    status = aggregate(every)
    if args.json:
        print(json.dumps({"schema_version": 1, "profile": default.name, "status": status.value,
                          "files": [{"file": f, "tool": t, "verdicts": to_jsonable(vs)} for f, t, vs in results]},
                         indent=2))
    else:
        for file, tool, verdicts in results:
            print(f"{file} ({tool}): {aggregate(verdicts).value.upper()}, {len(verdicts)} verdicts")
            for v in verdicts:
                if v.status is not Status.PASS:
                    print(f"  {v.status.value.upper():7} {v.code or '':22} {v.reason}")
        print(f"overall: {status.value.upper()} against {default.name}")
    bad = {Status.FAIL, Status.TIMEOUT, Status.ERROR} | ({Status.WARN} if args.strict else set())
    return 1 if any(v.status in bad for v in every) else 0
