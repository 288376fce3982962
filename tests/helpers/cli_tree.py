"""Every subcommand of a `rocm-fleet` parser, walked the way argparse keeps them."""

from __future__ import annotations

import argparse


def subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...],
                                                                                            argparse.ArgumentParser]]:
    """(path of names, parser) of every subcommand under `parser`, depth first."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += [((*path, name), sub), *subcommands(sub, (*path, name))]
    return found
