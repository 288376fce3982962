"""A plain-text summary table: one line per node, then every non-passing check with its code."""

from __future__ import annotations

from typing import Any

from validation.report.load import node_status
from validation.report.scaling import render_scaling_text


def render_terminal(nodes: list[dict[str, Any]]) -> str:
    if not nodes:
        return "no results were written (did pytest start? see its output above)"
    lines = [f"{'node':<24} {'status':<8} {'pass':>5} {'fail':>5} {'skip':>5}  complete"]
    for node in nodes:
        counts = {s: sum(1 for c in node["checks"] if c["status"] == s) for s in ("pass", "fail", "skip")}
        counts["fail"] += sum(1 for c in node["checks"] if c["status"] in ("error", "timeout"))
        lines.append(f"{node['host']:<24} {node_status(node).upper():<8} {counts['pass']:>5} {counts['fail']:>5} "
                     f"{counts['skip']:>5}  {'yes' if node.get('complete') else 'NO (interrupted)'}")
    for node in nodes:
        for check in node["checks"]:
            if check["status"] in ("fail", "error", "timeout", "warn"):
                first = check["message"].splitlines()[0][:160] if check["message"] else ""
                code = check.get("code") or ""
                lines.append(f"  {node['host']}: {check['status'].upper()} {check['id']} {code} {first}")
    scaling = render_scaling_text(nodes)
    if scaling:
        lines += ["", scaling]
    return "\n".join(lines)
