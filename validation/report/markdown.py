"""Markdown table cells and terminal text: the one escaping every report and generated doc uses."""

from __future__ import annotations

import html
import re
from typing import Any

# C0 controls but tab and newline, DEL and C1 controls: a terminal escape sequence starts with one of them
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def cell(value: Any, *, empty: str = "") -> str:
    """`value` as one Markdown table cell: `|` escaped, newlines folded; None or "" becomes `empty`."""
    if value is None or value == "":
        return empty
    return str(value).replace("|", "\\|").replace("\n", " ")


def node_cell(value: Any, *, empty: str = "") -> str:
    """A cell holding what a node or its document said: also its HTML (a Markdown viewer renders raw HTML,
    `<script>` included) and its control characters made visible."""
    if value is None or value == "":
        return empty
    return cell(printable(html.escape(str(value), quote=False)))


def printable(text: str) -> str:
    """`text` with control characters shown as \\xNN, so a node's string cannot move a terminal's cursor,
    retitle it or hide a line (tabs and newlines kept)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
