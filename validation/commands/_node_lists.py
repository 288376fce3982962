"""Options that take a list of node names (`--expect n1 n2`), and the results directory they must not swallow.

argparse gives `--expect n1 n2 DIR` all three words, then says RESULTS_DIR is missing. Here RESULTS_DIR is
optional to argparse, each list option notes that it was the last one given, and `results_dir` takes the
directory back from the end of that list: a results directory is a directory on disk, and never a node's
name (a name with a `/` is refused as one; a bare name that is also a directory here is read as the
directory, where the required RESULTS_DIR is missing otherwise). Without such a word, the one line says
where to put RESULTS_DIR.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from validation.errors import RocmFleetError

_LAST = "_node_list_last"


class NodeList(argparse._ExtendAction):
    """`action="extend"` that remembers it was the list option given last."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        super().__call__(parser, namespace, values, option_string)
        setattr(namespace, _LAST, self.dest)


def add(parser: argparse.ArgumentParser, *flags: str, help: str) -> None:
    parser.add_argument(*flags, metavar="NODE", nargs="*", action=NodeList, default=[], help=help)


def add_results_dir(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("results", type=Path, metavar="RESULTS_DIR", nargs="?", default=None,
                        help=f"{help} (before or after the node lists)")


def results_dir(args: argparse.Namespace, lists: Sequence[str]) -> Path:
    """RESULTS_DIR as given, or taken back from the end of the list option given last."""
    if args.results is not None:
        return Path(args.results)
    last: str | None = getattr(args, _LAST, None)
    values = getattr(args, last) if last is not None and last in lists else None
    if values and Path(values[-1]).is_dir():
        return Path(values.pop())
    flag = f"--{last.replace('_', '-')}" if last else "a node list"
    said = f"; {flag} took {values[-1]!r} as a node's name" if values else ""
    raise RocmFleetError(f"RESULTS_DIR is missing{said}: give the results directory first, or end the node list "
                         "with `--` before it")
