"""Markdown table cells: the one escaping every report and generated doc uses."""

from __future__ import annotations

from typing import Any


def cell(value: Any, *, empty: str = "") -> str:
    """`value` as one Markdown table cell: `|` escaped, newlines folded; None or "" becomes `empty`."""
    if value is None or value == "":
        return empty
    return str(value).replace("|", "\\|").replace("\n", " ")
