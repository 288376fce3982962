"""CLI subcommands: one module each, with `register(subparsers)` and `run(args) -> int | Outcome`.

Modules are discovered, so adding a subcommand never edits a shared file. The command line imports
only the module of the command it runs: `summaries()` reads every command's name and one-line help
from its source (the first `add_parser(NAME, help=...)` in `register`), so `rocm-fleet --help`
imports none of them and their dependencies (Ansible, jinja2, requests, the judge) stay unloaded.
"""

from __future__ import annotations

import ast
import importlib
import tokenize
from collections import namedtuple
from pathlib import Path
from types import ModuleType

_HERE = Path(__file__).resolve().parent


# name: the subcommand as typed; help: its line in `rocm-fleet --help`; module: validation.commands.<module>.
# A namedtuple, not a dataclass: `--help` should not pay for importing dataclasses (and inspect).
Summary = namedtuple("Summary", ["name", "help", "module"])


def _command_modules() -> list[str]:
    return sorted(p.stem for p in _HERE.glob("*.py") if not p.name.startswith("_"))


def _read(module: str) -> Summary | None:
    """The first add_parser(NAME, help=TEXT) call in the module's register(), read from its source
    (only that call is tokenized and parsed, to keep `--help` fast); None when the module has no
    register() or its name or help is not a plain string."""
    source = (_HERE / f"{module}.py").read_text()
    start = source.find("\ndef register(")
    call = source.find("add_parser(", start) if start >= 0 else -1
    if call < 0:
        return None
    lines = source[call:].splitlines(keepends=True)
    depth, end = 0, None
    for token in tokenize.generate_tokens(iter(lines).__next__):
        depth += {"(": 1, ")": -1}.get(token.string, 0) if token.type == tokenize.OP else 0
        if token.string == ")" and depth == 0:
            end = token.end
            break
    if end is None:
        return None
    node = ast.parse("".join(lines[:end[0] - 1]) + lines[end[0] - 1][:end[1]], mode="eval").body
    if not isinstance(node, ast.Call):
        return None
    helps = [k.value for k in node.keywords if k.arg == "help"]
    try:
        return Summary(ast.literal_eval(node.args[0]), ast.literal_eval(helps[0]), f"{__name__}.{module}")
    except (ValueError, IndexError, AttributeError):   # not plain strings: only importing can tell
        return None


def summaries() -> list[Summary]:
    """Every subcommand's name, help line and module, by name; imports only modules whose help is
    not a plain string in their source."""
    found = []
    for module in _command_modules():
        summary = _read(module)
        if summary is None:
            loaded = importlib.import_module(f"{__name__}.{module}")
            if not hasattr(loaded, "register"):
                continue
            summary = _summary_by_import(loaded)
        found.append(summary)
    return sorted(found, key=lambda s: s.name)


def _summary_by_import(module: ModuleType) -> Summary:
    import argparse

    sub = argparse.ArgumentParser().add_subparsers()
    module.register(sub)
    action = sub._choices_actions[0]
    return Summary(action.dest, action.help or "", module.__name__)


def modules() -> list[ModuleType]:
    """Every subcommand module, imported (tests and tools that need all of them)."""
    found = []
    for name in _command_modules():
        module = importlib.import_module(f"{__name__}.{name}")
        if hasattr(module, "register"):
            found.append(module)
    return found
