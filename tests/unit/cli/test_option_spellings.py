"""One spelling per meaning across the commands (issue 44): `--timeout SECONDS` for a time limit, `--out` for where
a command writes, `--results` for a results directory. The older spellings (`--timeout-s`, `--push-timeout-s`,
`--log-dir`, `--output`) still parse into the same place and say on stderr which spelling replaces them."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from cli_tree import subcommands

from validation.cli import build_parser, main
from validation.commands import summaries

OLD = re.compile(r"--(.+-)?timeout-s|--log-dir|--output")


@pytest.mark.parametrize("command", [s.name for s in summaries()])
def test_no_command_shows_an_old_spelling(command: str) -> None:
    (whole,) = [sub for path, sub in subcommands(build_parser([command])) if path == (command,)]
    for path, parser in [((command,), whole), *subcommands(whole, (command,))]:
        shown = [o for a in parser._actions if a.help != argparse.SUPPRESS for o in a.option_strings]
        assert not [o for o in shown if OLD.fullmatch(o)], (path, shown)


def parse(*argv: str) -> argparse.Namespace:
    return build_parser(list(argv)).parse_args(list(argv))


@pytest.mark.parametrize(("argv", "dest", "value", "new"), [
    (("cluster", "run", "-i", "inv.yml", "--timeout-s", "10"), "timeout_s", 10.0, "--timeout"),
    (("cluster", "smoke", "-i", "inv.yml", "--timeout-s", "7"), "timeout_s", 7.0, "--timeout"),
    (("cluster", "pairwise", "-i", "inv.yml", "--out", "o", "--timeout-s", "9"), "timeout_s", 9.0, "--timeout"),
    (("converge", "-i", "inv.yml", "--log-dir", "logs"), "log_dir", Path("logs"), "--out"),
    (("report", "--push", "https://x.example/", "--push-timeout-s", "5", "r"), "push_timeout_s", 5.0, "--push-timeout"),
    (("baseline", "create", "r", "--output", "b.yml"), "output", Path("b.yml"), "--out"),
])
def test_an_old_spelling_still_works_and_names_the_new_one(argv: tuple[str, ...], dest: str, value: object, new: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    old = next(a for a in argv if OLD.fullmatch(a))
    assert getattr(parse(*argv), dest) == value
    assert capsys.readouterr().err.strip() == f"rocm-fleet: {old} is deprecated and will be removed; use {new}"
    current = tuple(new if a == old else a for a in argv)
    assert getattr(parse(*current), dest) == value and capsys.readouterr().err == ""


def test_baseline_create_without_a_file_is_refused_in_one_line(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baseline", "create", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--out FILE" in err
