"""Options that mean the same in every command, spelled the same (issue 44): `--timeout SECONDS` for a time
limit, `--out` for where a command writes (a directory; `baseline create` writes one file), `--results` for a
results directory that `validate` writes and other commands read. An older spelling keeps working for a
while and says on stderr which one replaces it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


class _Deprecated(argparse.Action):
    """An older spelling of an option: stores into the same place, and says once which spelling replaces it."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"rocm-fleet: {option_string} is deprecated and will be removed; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def deprecated(parser: argparse.ArgumentParser, old: str, new: str, dest: str, **kwargs: Any) -> None:
    """Accept `old` as a hidden, deprecated spelling of `new` (whose value lands in `dest`)."""
    parser.add_argument(old, dest=dest, action=_Deprecated, new=new, help=argparse.SUPPRESS, **kwargs)
