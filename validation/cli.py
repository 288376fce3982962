"""The `rocm-fleet` command line. Only `console_main` exits; `main` returns the exit code.

Exit codes, the same for every subcommand:
  0  every verdict is PASS (WARN allowed unless --strict)
  1  at least one FAIL or TIMEOUT
  2  no verdict possible: usage error, unreadable or unparseable input, unknown SKU,
     invalid targets, or an internal error
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import TYPE_CHECKING, Any

from validation import __version__
from validation.commands import summaries
from validation.errors import RocmFleetError

EXIT_PASS, EXIT_FAIL, EXIT_NO_VERDICT = 0, 1, 2


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:                      # not subscriptable at run time
    _SubParsers = argparse._SubParsersAction


class _Commands(_SubParsers):
    """Subcommands whose own --help begins with what they do: their line in the parent's --help, unless they
    give a description of their own."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        said = kwargs.get("help")
        if kwargs.get("description") is None and isinstance(said, str) and said:
            kwargs["description"] = said[0].upper() + said[1:].replace("%%", "%") + "."
        return super().add_parser(name, **kwargs)


class Parser(argparse.ArgumentParser):
    """argparse's parser whose subcommands (and theirs) say what they do in their --help (_Commands)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Commands)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: the command argv names is registered in full (its module imported);
    every other command only by name and help line, which is all `--help` shows of them."""
    parser = Parser(
        prog="rocm-fleet",
        description="Provision and validate AMD Instinct GPU nodes.",
        epilog="exit codes: 0 all pass (warn allowed unless --strict), 1 any fail or timeout, "
        "2 no verdict possible (bad input, unknown SKU, internal error)",
    )
    parser.add_argument("--version", action="version", version=f"rocm-fleet {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command_name", required=True, metavar="COMMAND")
    wanted = _command_in(sys.argv[1:] if argv is None else argv)
    for summary in summaries():
        if summary.name == wanted:
            importlib.import_module(summary.module).register(sub)
        else:
            sub.add_parser(summary.name, help=summary.help, add_help=False)
    return parser


def _command_in(argv: list[str]) -> str | None:
    """The subcommand argv names: its first word that is not an option (top-level options take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def emit_error(exc: BaseException, *, as_json: bool) -> None:
    print(f"rocm-fleet: error: {exc}", file=sys.stderr)
    if as_json:
        print(json.dumps({"schema_version": 1, "error": str(exc)}))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version exit 0, usage errors exit 2
        return int(exc.code or 0)
    import logging  # after parsing: `--help` and usage errors do without it

    log = logging.getLogger("rocm_fleet")
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    as_json = bool(getattr(args, "json", False))
    try:
        return int(args.run(args))
    except BrokenPipeError:  # `rocm-fleet ... --json | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_PASS
    except RocmFleetError as exc:
        if args.debug:
            log.exception("rocm-fleet error")
        emit_error(exc, as_json=as_json)
        return EXIT_NO_VERDICT
    except OSError as exc:
        emit_error(exc, as_json=as_json)
        return EXIT_NO_VERDICT
    except Exception as exc:  # a bug: Python's own exit 1 would read as FAIL
        log.exception("internal error; please report it with this traceback")
        emit_error(exc, as_json=as_json)
        return EXIT_NO_VERDICT


def console_main() -> None:
    sys.exit(main())
