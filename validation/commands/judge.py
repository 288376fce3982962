"""`rocm-fleet judge [--profile SKU] FILE...`: verdicts for tool outputs saved by hand.

Without --profile the profile is the one the outputs' GPUs show (PCI device id, market name, gfx target,
partition mode); outputs that fit several (a GPU family, a possible VF, a partitioned GPU whose memory mode
is not shown, mixed GPUs) are refused with the candidates (exit 2).

Each FILE is `TOOL:PATH` or a plain path whose tool is recognised from its content (the one
parser that accepts it; files over 8 MiB must name their tool). Every input is read with a size limit
(--max-input-mb, default 64 MiB). An output that does not prove what a verdict says is never a PASS:
another GPU than the profile's is RF-SKU-MISMATCH, a cut-short output RF-INCOMPLETE-OUTPUT, and a target
whose range or configuration the run did not cover is recorded with the reason. An amd-smi / rocm-smi /
nvidia-smi view that lists processes or shows load is WARN RF-GPU-BUSY per busy GPU (pid, name, memory,
utilization), and every performance output judged with it says it was taken beside a busy view.
Exit 0 when every verdict passes (WARN too, unless --strict), 1 on any FAIL/TIMEOUT/ERROR verdict, 2 when
an input cannot be used (unreadable, too large, not understood, unknown SKU).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from validation import baseline, extract, inputs, parsers, saved_activity, sku_choice
from validation.errors import ParseError, RocmFleetError
from validation.judge import Verdict, aggregate
from validation.parsers._text import printable
from validation.records import Status, to_jsonable
from validation.targets import load_targets
from validation.targets.model import TargetProfile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judge", help="judge saved tool outputs against a SKU's targets",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", default=None, metavar="SKU",
                   help="target profile, e.g. mi300x (see `targets list`); default: the one the outputs' GPUs show "
                   "(device id, name, gfx target), refused with the candidates when they fit several")
    p.add_argument("--gpus", type=int, default=None, help="GPU count the outputs were taken with (default: SKU's)")
    p.add_argument("--partition", default=None, help="partition mode, e.g. CPX/NPS4")
    p.add_argument("--strict", action="store_true", help="WARN counts as failure")
    p.add_argument("--baseline", type=Path, default=None, metavar="FILE",
                   help="site baseline (rocm-fleet baseline create), applied where it is stricter or nothing is "
                   "published")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="one line per SKIP verdict (default: one line per reason, with the subjects it covers)")
    p.add_argument("--max-input-mb", type=float, default=None, metavar="MB",
                   help=f"refuse an input larger than this (default ${inputs.ENV_VARIABLE} or "
                   f"{inputs.DEFAULT_MAX_INPUT_MB})")
    p.add_argument("files", nargs="+", metavar="FILE", help="TOOL:PATH or PATH; tools: " + ", ".join(extract.JUDGES))
    p.set_defaults(run=run)


# Recognising the tool parses the text with every parser; past this size the file must name its tool.
DETECT_LIMIT = 8 << 20


def split_spec(spec: str) -> tuple[str, Path]:
    """("rccl-tests", path) from "rccl-tests:PATH"; ("", path) for a plain path. A prefix that names
    a parser without a judge, or that looks like a tool name in front of a missing file, is refused
    with the list of tools instead of a misleading 'no such file'."""
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in extract.JUDGES:
        return prefix, Path(rest)
    if sep and prefix in parsers.tools():
        raise RocmFleetError(f"{spec}: {prefix} outputs are parsed (rocm-fleet parse {prefix} FILE) but not judged; "
                             f"judged tools: {', '.join(extract.JUDGES)}")
    if sep and rest and not Path(spec).exists() and re.fullmatch(r"[A-Za-z][\w.-]*", prefix):
        raise RocmFleetError(f"{spec}: unknown tool {prefix!r} (and no file of that name); write TOOL:PATH with TOOL "
                             f"one of {', '.join(extract.JUDGES)}")
    return "", Path(spec)


def detect(path: Path, text: str) -> str:
    if len(text) > DETECT_LIMIT:
        raise RocmFleetError(f"{path}: {len(text) / (1 << 20):.0f} MiB is too large to recognise by trying every "
                             f"parser; write it as TOOL:{path} with TOOL one of {', '.join(extract.JUDGES)}")
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


def _skip_reason(v: Verdict) -> str:
    """What a SKIP says apart from its subject and value: "record only: gpu0 -> gpu1 w 15 u; WHY" -> WHY."""
    prefix = f"record only: {v.subject} {v.metric} "
    if v.reason.startswith(prefix) and "; " in v.reason:
        return "record only: " + v.reason.split("; ", 1)[1]
    return v.reason.replace(v.subject, "<subject>") if v.subject else v.reason


def _values(skips: list[Verdict]) -> str:
    """" = 15 weight", " = 14.84..15.9 GB/s" (the range of numbers), " = a, b" (other values)."""
    measured = [v.measured for v in skips if v.measured is not None]
    if not measured:
        return ""
    numbers = [m for m in measured if isinstance(m, (int, float)) and not isinstance(m, bool)]
    if len(numbers) == len(measured) and min(numbers) != max(numbers):
        shown = f"{min(numbers):g}..{max(numbers):g}"
    else:
        distinct = sorted({str(m) for m in measured})
        shown = ", ".join(distinct[:3]) + (f" … ({len(distinct)} values)" if len(distinct) > 3 else "")
    return f" = {shown} {skips[0].unit}".rstrip()


def verdict_lines(verdicts: list[Verdict], *, every_skip: bool = False) -> list[str]:
    """Every verdict that is not a PASS on its own line, except SKIPs, which are one line per reason
    (with the metric, how many subjects and the values they had) unless `every_skip`."""
    hidden = {Status.PASS} if every_skip else {Status.PASS, Status.SKIP}
    # a reason may quote a saved file (process names, device names): printed, it must not drive the terminal
    lines = [f"  {v.status.value.upper():7} {v.code or '':22} {printable(v.reason)}" for v in verdicts
             if v.status not in hidden]
    if every_skip:
        return lines
    groups: dict[tuple[str, str], list[Verdict]] = {}
    for v in verdicts:
        if v.status is Status.SKIP:
            groups.setdefault((v.metric, _skip_reason(v)), []).append(v)
    for (metric, reason), skips in groups.items():
        subjects = [v.subject for v in skips]
        where = subjects[0] if len(subjects) == 1 else f"{len(subjects)} subjects ({subjects[0]} … {subjects[-1]})"
        lines.append(f"  {'SKIP':7} {'':22} {printable(f'{metric} on {where}{_values(skips)}: {reason}')}")
    return lines


def _subjects(subjects: list[str]) -> str:
    return ", ".join(subjects) if len(subjects) <= 4 else f"{subjects[0]} .. {subjects[-1]} ({len(subjects)} GPUs)"


def beside_busy_notes(results: list[tuple[str, str, list[Verdict]]]) -> dict[str, list[str]]:
    """file -> one note per saved view of the same call that shows busy GPUs, for every performance
    output: its numbers may have been measured while someone else's work ran (docs/judging.md)."""
    views = [(file, saved_activity.busy(verdicts)) for file, tool, verdicts in results
             if tool in saved_activity.VIEW_TOOLS]
    notes = [f"taken beside a busy view: {view} shows {_subjects(busy)} busy with someone else's work; if it was "
             "captured while these numbers were measured, they describe that work too, not the hardware: re-run on "
             "idle GPUs before blaming them" for view, busy in views if busy]
    return {file: notes for file, tool, _ in results if notes and tool in extract.PERFORMANCE_TOOLS}


def _choose_profile(args: argparse.Namespace, parsed: list[tuple[Path, str, object]]) -> None:
    """--profile (and --partition) from what the outputs show, when the user gave no profile."""
    if args.profile is not None:
        return
    choice = sku_choice.choose([(str(path), tool, record) for path, tool, record in parsed], partition=args.partition)
    args.profile, args.partition = choice.profile, choice.partition
    mode = f" --partition {choice.partition}" if choice.partition else ""
    print(f"rocm-fleet: judging with --profile {choice.profile}{mode}, chosen from the outputs: {choice.evidence}",
          file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    limit = inputs.limit_bytes(args.max_input_mb)
    parsed: list[tuple[Path, str, object]] = []
    for spec in args.files:
        tool, path = split_spec(spec)
        text = inputs.read_text(path, limit)
        tool = tool or detect(path, text)
        parsed.append((path, tool, parsers.parse(tool, text)))
    _choose_profile(args, parsed)
    default = _targets(args, args.gpus)
    results = []
    for path, tool, record in parsed:
        profile = default
        ranks = getattr(record, "ranks", None)
        if args.gpus is None and ranks and ranks != default.gpu_count:
            # collective bandwidth targets hold for one GPU count (ROCm/rccl#1270): use the run's own
            profile = _targets(args, ranks)
        verdicts = extract.saved_verdicts(tool, record, profile)
        if not verdicts:
            raise RocmFleetError(f"{path}: {tool} output holds no measurement that {profile.name} has a target for")
        results.append((str(path), tool, verdicts))
    every = [v for _, _, vs in results for v in vs]
    status = aggregate(every)
    notes = beside_busy_notes(results)
    if args.json:
        print(json.dumps({"schema_version": 1, "profile": default.name, "status": status.value,
                          "files": [{"file": f, "tool": t, "verdicts": to_jsonable(vs),
                                     **({"notes": notes[f]} if f in notes else {})} for f, t, vs in results]},
                         indent=2))
    else:
        for file, tool, verdicts in results:
            print(f"{file} ({tool}): {aggregate(verdicts).value.upper()}, {len(verdicts)} verdicts")
            for note in notes.get(file, []):
                print(f"  {'NOTE':7} {'':22} {printable(note)}")
            for line in verdict_lines(verdicts, every_skip=args.verbose):
                print(line)
        print(f"overall: {status.value.upper()} against {default.name}")
    bad = {Status.FAIL, Status.TIMEOUT, Status.ERROR} | ({Status.WARN} if args.strict else set())
    return 1 if any(v.status in bad for v in every) else 0
