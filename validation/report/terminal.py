"""A plain-text summary table: one line per node, then every non-passing check with its code.

Long messages wrap at word boundaries under their check (never cut mid-word, at most four lines);
the width is the terminal's, or 100 columns when the output is not a terminal.
"""

from __future__ import annotations

import shutil
import textwrap
from typing import Any

from validation import judged
from validation.report.load import node_status
from validation.report.markdown import printable
from validation.report.scaling import render_scaling_text
from validation.report.summary import expected_on_lab_host
from validation.results import catalog

DEFAULT_WIDTH = 100
MAX_LINES = 4  # of one failure's message; longer ones end at a word with a pointer to the JSON


def width() -> int:
    return max(60, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def render_terminal(nodes: list[dict[str, Any]], *, columns: int | None = None) -> str:
    if not nodes:
        return "no results were written (did pytest start? see its output above)"
    columns = columns or width()
    lines = [f"{'node':<24} {'status':<8} {'pass':>5} {'fail':>5} {'skip':>5}  complete"]
    for node in nodes:
        counts = {s: sum(1 for c in node["checks"] if c["status"] == s) for s in ("pass", "fail", "skip")}
        counts["fail"] += sum(1 for c in node["checks"] if c["status"] in ("error", "timeout"))
        lines.append(f"{node['host']:<24} {node_status(node).upper():<8} {counts['pass']:>5} {counts['fail']:>5} "
                     f"{counts['skip']:>5}  {'yes' if node.get('complete') else 'NO (interrupted)'}")
    numbers = [(node, judged.of(node)) for node in nodes if not node.get("missing")]
    if any(summary.get("numbers") for _, summary in numbers):
        lines += ["", "performance numbers judged (a site baseline judges what no target does: rocm-fleet baseline "
                  "create):"]
        lines += [f"  {node['host']}: {judged.line(summary)}" for node, summary in numbers if summary.get("numbers")]
    for node in nodes:
        for check in node["checks"]:
            if check["status"] in ("fail", "error", "timeout", "warn"):
                lines += failure_lines(node, check, columns)
    scaling = render_scaling_text(nodes)
    if scaling:
        lines += ["", scaling]
    return printable("\n".join(lines))


def failure_lines(node: dict[str, Any], check: dict[str, Any], columns: int) -> list[str]:
    """'  node: FAIL <check id> <code>' and its first message line wrapped beneath it, indented."""
    key = catalog.check_key(check["id"], node["host"])
    lab = " (expected on a lab host)" if expected_on_lab_host(node, check) else ""
    head = f"  {node['host']}: {check['status'].upper()} {key} {check.get('code') or ''}{lab}".rstrip()
    first = check["message"].splitlines()[0] if check.get("message") else ""
    body = textwrap.wrap(first, width=columns - 6, break_long_words=False, break_on_hyphens=False,
                         max_lines=MAX_LINES, placeholder=" [...] (the whole message is in the node's JSON)")
    return [head, *(f"      {line}" for line in body)]
