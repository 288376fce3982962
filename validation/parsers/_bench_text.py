"""Bits the benchmark parsers share: saved command lines, elision markers, a strict number reader."""

from __future__ import annotations

import math
import re

from validation.errors import ParseError

# A shell transcript's command line, as saved fixtures and `tee`d logs carry it.
COMMAND = re.compile(r"^\$ (?P<cmd>\S.*)$")

# Markers that people put where they cut output: "<snip>", "[...]", "...", ". . .", "[output truncated]".
ELISION = re.compile(r"^\s*(?:<snip>.*|<SNIP>.*|\[\.\.\.\]|\.\.\.|…|\. \. \.|\[output truncated\])\s*$",
                     re.IGNORECASE)


def is_elision(line: str) -> bool:
    """True for a line that only says "output was cut here"."""
    return bool(ELISION.match(line))


def number(tool: str, raw: str, line_no: int, line: str, what: str) -> float:
    """A finite float; refuses nan/inf, which no benchmark prints as a measurement."""
    try:
        value = float(raw)
    except ValueError as exc:
        raise ParseError(tool, f"cannot read {what} from {raw!r}", line_no=line_no, line=line,
                         expected=f"a number for {what}") from exc
    if not math.isfinite(value):
        raise ParseError(tool, f"{what} is not a finite number: {raw!r}", line_no=line_no, line=line,
                         expected=f"a finite number for {what}")
    return value


def integer(tool: str, raw: str, line_no: int, line: str, what: str) -> int:
    """A decimal integer (leading zeros allowed, unlike int(x, 0))."""
    if not re.fullmatch(r"[+-]?\d+", raw):
        raise ParseError(tool, f"cannot read {what} from {raw!r}", line_no=line_no, line=line,
                         expected=f"an integer for {what}")
    return int(raw)
