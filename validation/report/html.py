"""A self-contained HTML report (jinja2, inline CSS, no scripts, no external assets).

It opens with a summary (node verdicts, failures grouped by code with the nodes they hit, lab-host
failures apart), then what each node ran on, one row per check named by what it proves, the
per-GPU grids and link heatmaps where something was measured, and every failure in full."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jinja2

from validation import judged
from validation.report import summary
from validation.report.load import node_status
from validation.report.scaling import row_aggregate, scaling_tables
from validation.results import catalog

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("validation.report", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined)


def _shade(value: float, low: float, high: float) -> str:
    """Heatmap colour by the cell's share of the best cell: green at the best, red at half of it or
    less, so a few per cent of normal spread stays green and a weak link stands out."""
    share = 1.0 if high <= 0 else max(0.0, min(1.0, (value / high - 0.5) / 0.5))
    return f"hsl({round(120 * share)}, 65%, 78%)"


def heatmaps(node: dict[str, Any]) -> list[dict[str, Any]]:
    """One GPU x GPU (or CPU x GPU) matrix per link metric ("gpu5 -> gpu2" subjects)."""
    by_metric: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for m in node.get("measurements", []):
        subject = str(m.get("subject", ""))
        if " -> " in subject and isinstance(m.get("value"), (int, float)):
            src, dst = (part.strip() for part in subject.split(" -> ", 1))
            by_metric.setdefault(m["metric"], {})[(src, dst)] = m
    maps = []
    for metric, cells in sorted(by_metric.items()):
        sources = sorted({src for src, _ in cells}, key=_endpoint_order)
        targets = sorted({dst for _, dst in cells}, key=_endpoint_order)
        if set(sources) == set(targets):          # a GPU x GPU matrix: same order on both axes
            sources = targets = sorted(set(sources), key=_endpoint_order)
        values = [c["value"] for c in cells.values()]
        low, high = min(values), max(values)
        rows = [[(cells.get((src, dst)), _shade(cells[(src, dst)]["value"], low, high) if (src, dst) in cells else "")
                 for dst in targets] for src in sources]
        maps.append({"metric": metric, "unit": next(iter(cells.values())).get("unit", ""), "sources": sources,
                     "ends": targets, "rows": rows})
    return maps


def _endpoint_order(name: str) -> tuple[str, int]:
    stem = name.rstrip("0123456789")
    return stem, int(name[len(stem):] or 0)


def measurement_tables(node: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-GPU grid: one row per metric, one column per subject (links go to the heatmaps)."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for m in node.get("measurements", []):
        subject = str(m.get("subject", "node"))
        if " -> " not in subject:
            rows.setdefault(m["metric"], {})[subject] = m
    subjects = sorted({s for cells in rows.values() for s in cells})
    return [{"subjects": subjects, "rows": sorted(rows.items())}] if rows else []


WIDE = 24  # above this many nodes the check table shows counts and failing nodes, not a column per node
DETAIL_NODES = 64  # above this many nodes the page leaves out per-node measurement tables and heatmaps


def check_rows(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per check whatever the host (the host's own parameter taken out of the id), named by
    what it proves; rows keep the order the checks ran in, file by file."""
    rows: dict[str, dict[str, Any]] = {}
    for node in nodes:
        for check in node["checks"]:
            key = catalog.check_key(check["id"], node["host"])
            row = rows.get(key)
            if row is None:           # described once per row, not once per node
                row = rows[key] = {"key": key, "title": catalog.describe(key), "params": catalog.parameters(key),
                                   "cells": {}, "order": len(rows)}
            row["cells"][node["host"]] = check
    files: dict[str, int] = {}
    for row in rows.values():
        files.setdefault(row["key"].split("::")[0], row["order"])
        row["tally"] = tally(row["cells"].values())
        row["failing"] = [host for host, check in row["cells"].items() if check["status"] in summary.FAILING]
    return sorted(rows.values(), key=lambda r: (files[r["key"].split("::")[0]], r["order"]))


def tally(checks: Iterable[dict[str, Any]]) -> dict[str, int]:
    """How many checks passed, failed (fail, error, timeout) and were skipped."""
    statuses = [c["status"] for c in checks]
    return {"pass": statuses.count("pass"), "failing": sum(map(statuses.count, summary.FAILING)),
            "skip": statuses.count("skip")}


def failures(nodes: list[dict[str, Any]]) -> tuple[list[tuple[str, dict]], list[tuple[str, list[dict]]]]:
    """(host, check) for every FAIL/ERROR/TIMEOUT/WARN that needs reading, and per host the device
    failures a lab host is expected to show (kept apart, folded)."""
    real, lab = [], []
    for node in nodes:
        shown = [c for c in node["checks"] if c["status"] in (*summary.FAILING, "warn")]
        real += [(node["host"], c) for c in shown if not summary.expected_on_lab_host(node, c)]
        expected = [c for c in shown if summary.expected_on_lab_host(node, c)]
        if expected:
            lab.append((node["host"], expected))
    return real, lab


# A check's fields that node_schema.json does not require: absent reads as none in the page's template, whose
# undefined names are errors (a schema-valid check with no message crashed the whole report).
_OPTIONAL_CHECK_FIELDS = {"name": None, "tier": None, "code": None, "message": None, "hint": None,
                          "duration_s": None}


def render_html(nodes: list[dict[str, Any]], *, title: str) -> str:
    nodes = [{**node, "checks": [{**_OPTIONAL_CHECK_FIELDS, **check} for check in node["checks"]]} for node in nodes]
    real_failures, lab_failures = failures(nodes)
    return _ENV.get_template("report.html.j2").render(
        title=title, nodes=nodes, node_status=node_status, overview=summary.overview(nodes),
        groups=summary.failure_groups(nodes), provenance=summary.provenance, rows=check_rows(nodes),
        wide=len(nodes) > WIDE, detail=len(nodes) <= DETAIL_NODES, describe=catalog.describe,
        check_key=catalog.check_key,
        expected=summary.expected_on_lab_host, lab_only=summary.only_lab_failures,
        heatmaps=heatmaps, measurement_tables=measurement_tables, scaling_tables=scaling_tables,
        row_aggregate=row_aggregate, failing=summary.FAILING, real_failures=real_failures,
        lab_failures=lab_failures, tally=tally, judged_of=judged.of, judged_line=judged.line)
