"""Parsers: raw tool output -> typed record.

Every module in this package that defines `TOOL` (the CLI name, e.g. "rocm-smi") and
`parse(text: str) -> record` is registered automatically, so adding a parser never edits a
shared file. Parsers are pure: no I/O, no clock, no environment.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from validation.errors import RocmFleetError

ParseFn = Callable[[str], Any]


def registry() -> dict[str, ParseFn]:
    """Map every tool name to its parse function."""
    found: dict[str, ParseFn] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        tool = getattr(module, "TOOL", None)
        if tool is None:
            continue
        if tool in found:
            raise RuntimeError(f"two parser modules claim tool {tool!r}")
        found[tool] = module.parse
    return found


def tools() -> list[str]:
    """Sorted tool names accepted by `rocm-fleet parse`."""
    return sorted(registry())


def parse(tool: str, text: str) -> Any:
    """Parse `text` as the output of `tool`; raises ParseError or RocmFleetError."""
    parsers = registry()
    if tool not in parsers:
        raise RocmFleetError(f"unknown tool {tool!r}; known tools: {', '.join(sorted(parsers))}")
    return parsers[tool](text)
