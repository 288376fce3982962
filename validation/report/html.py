"""A self-contained HTML report (jinja2, inline CSS, no external assets) with a per-node grid."""

from __future__ import annotations

from typing import Any

import jinja2

from validation.report.load import node_status

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("validation.report", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined)


def _shade(value: float, low: float, high: float) -> str:
    """Red (lowest) to green (highest) for a heatmap cell."""
    fraction = 1.0 if high <= low else (value - low) / (high - low)
    return f"hsl({round(120 * fraction)}, 65%, 78%)"


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
        ends = sorted({e for pair in cells for e in pair}, key=lambda e: (e.rstrip("0123456789"),
                                                                           int(e[len(e.rstrip("0123456789")):] or 0)))
        values = [c["value"] for c in cells.values()]
        low, high = min(values), max(values)
        rows = [[(cells.get((src, dst)), _shade(cells[(src, dst)]["value"], low, high) if (src, dst) in cells else "")
                 for dst in ends] for src in ends]
        maps.append({"metric": metric, "unit": next(iter(cells.values())).get("unit", ""), "ends": ends, "rows": rows})
    return maps


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
        heatmaps=heatmaps, measurement_tables=measurement_tables)
