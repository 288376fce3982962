"""Every command's and subcommand's --help says what it does under its usage (issue 44: `validate --help` had
no description): the line the parent's --help shows for it, unless it gives a description of its own."""

from __future__ import annotations

import pytest
from cli_tree import subcommands

from validation.cli import build_parser
from validation.commands import summaries


@pytest.mark.parametrize("command", [s.name for s in summaries()])
def test_the_help_of_every_command_and_its_subcommands_says_what_it_does(command: str) -> None:
    (whole,) = [sub for path, sub in subcommands(build_parser([command])) if path == (command,)]
    for path, parser in [((command,), whole), *subcommands(whole, (command,))]:
        text = parser.format_help()
        description = parser.description or ""
        assert len(description) > 10 and " ".join(description.split()) in " ".join(text.split()), (path, text[:400])
        assert "%%" not in description, path


def test_a_description_of_its_own_is_kept() -> None:
    (whole,) = [sub for path, sub in subcommands(build_parser(["judge"])) if path == ("judge",)]
    assert whole.description and not whole.description.startswith("Judge saved tool outputs against a SKU's targets.")
