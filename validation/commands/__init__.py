"""CLI subcommands: one module each, with `register(subparsers)` and `run(args) -> int | Outcome`.

Modules are discovered, so adding a subcommand never edits a shared file.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "register"):
            found.append(module)
    return found
