"""A self-contained HTML report (jinja2, inline CSS, no external assets) with a per-node grid."""

from __future__ import annotations

from typing import Any

import jinja2

from validation.report.load import node_status
from validation.report.scaling import row_aggregate, scaling_tables

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


def render_html(nodes: list[dict[str, Any]], *, title: str) -> str:
    check_ids = sorted({c["id"] for n in nodes for c in n["checks"]})
    grid = {n["host"]: {c["id"]: c for c in n["checks"]} for n in nodes}
    return _ENV.get_template("report.html.j2").render(
        title=title, nodes=nodes, check_ids=check_ids, grid=grid, node_status=node_status,
        heatmaps=heatmaps, measurement_tables=measurement_tables, scaling_tables=scaling_tables,
        row_aggregate=row_aggregate)
