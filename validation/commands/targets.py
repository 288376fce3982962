"""`rocm-fleet targets list` and `rocm-fleet targets show SKU [--gpus N] [--partition P] [--json]`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from validation.records import to_jsonable
from validation.targets.loader import list_skus, load_targets
from validation.targets.model import Target, TargetProfile

SCHEMA_VERSION = 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("targets", help="list SKU target profiles or show one",
                       description="Per-SKU targets from validation/targets/data/*.yaml, "
                       "each with its source.")
    tsub = p.add_subparsers(dest="targets_command", required=True, metavar="ACTION")

    lp = tsub.add_parser("list", help="list the known SKUs (bases and variants)")
    lp.add_argument("--json", action="store_true", help="print one JSON document")
    lp.set_defaults(run=run_list)

    sp = tsub.add_parser("show", help="show one SKU's targets",
                         description="Show the targets of SKU for a GPU count and partition mode; "
                         "exit 2 if the SKU or partition is unknown.")
    sp.add_argument("sku", metavar="SKU", help="a name from `rocm-fleet targets list`, e.g. mi300x")
    sp.add_argument("--gpus", type=int, default=None, metavar="N",
                    help="declared GPU count (picks count-dependent targets such as RCCL bus bandwidth)")
    sp.add_argument("--partition", default=None, metavar="P", help="partition mode, e.g. CPX/NPS4")
    sp.add_argument("--json", action="store_true", help="print one JSON document")
    sp.set_defaults(run=run_show)


def run_list(args: argparse.Namespace) -> int:
    entries = list_skus()
    if args.json:
        doc = {"schema_version": SCHEMA_VERSION, "skus": to_jsonable(list(entries))}
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    rows = [("SKU", "VENDOR", "PCI IDS", "GPUS", "PARTITIONS", "DESCRIPTION")]
    for e in entries:
        rows.append((e.name, e.vendor, ",".join(e.pci_device_ids),
                     "-" if e.gpu_count is None else str(e.gpu_count),
                     ",".join(e.partitions) or "-", e.description))
    print(_table(rows))
    return 0


def run_show(args: argparse.Namespace) -> int:
    profile = load_targets(args.sku, gpu_count=args.gpus, partition=args.partition)
    if args.json:
        print(json.dumps(profile_document(profile), indent=2, ensure_ascii=False))
        return 0
    name = profile.name if profile.variant is None else f"{profile.name} (variant of {profile.sku})"
    print(f"{name}: {profile.description}")
    print(f"gpu_count {profile.gpu_count if profile.gpu_count is not None else '-'}, "
          f"partition {profile.partition or '-'}, file {profile.source_file}")
    rows = [("METRIC", "RULE", "UNIT", "TARGET", "SOURCE")]
    for metric in sorted(profile.targets):
        t = profile.targets[metric]
        rows.append((metric, _rule(t), t.unit, _fmt(t.value), t.source + (f" [{t.note}]" if t.note else "")))
    print(_table(rows))
    return 0


def profile_document(profile: TargetProfile) -> dict[str, Any]:
    """The JSON form of a profile: schema_version first, thresholds spelled out."""
    targets = {}
    for metric in sorted(profile.targets):
        t = profile.targets[metric]
        targets[metric] = {**to_jsonable(t), "threshold": t.threshold, "warn_line": t.warn_line}
    return {
        "schema_version": SCHEMA_VERSION,
        "sku": profile.sku,
        "variant": profile.variant,
        "name": profile.name,
        "vendor": profile.vendor,
        "description": profile.description,
        "pci_device_ids": list(profile.pci_device_ids),
        "gpu_count": profile.gpu_count,
        "partition": profile.partition,
        "source_file": profile.source_file,
        "overridden": list(profile.overridden),
        "targets": targets,
    }


def _rule(t: Target) -> str:
    if t.record_only or t.threshold is None:
        return "record only"
    if t.direction == "equal":
        return f"== {_fmt(t.threshold)}"
    sign = ">=" if t.direction == "higher_is_better" else "<="
    rule = f"{sign} {_fmt(t.threshold)}"
    if t.warn_line is not None:
        rule += f" (warn {_fmt(t.warn_line)})"
    return rule


def _fmt(value: float | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, (str, int)):
        return str(value)
    text = f"{value:.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _table(rows: Sequence[tuple[str, ...]]) -> str:
    """Plain aligned columns; the last column is left unpadded so long sources wrap naturally."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)
