"""A self-contained HTML report (jinja2, inline CSS, no external assets) with a per-node grid."""

from __future__ import annotations

from typing import Any

import jinja2

from validation.report.load import node_status

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("validation.report", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined)


def render_html(nodes: list[dict[str, Any]], *, title: str) -> str:
    check_ids = sorted({c["id"] for n in nodes for c in n["checks"]})
    grid = {n["host"]: {c["id"]: c for c in n["checks"]} for n in nodes}
    return _ENV.get_template("report.html.j2").render(
        title=title, nodes=nodes, check_ids=check_ids, grid=grid, node_status=node_status)
