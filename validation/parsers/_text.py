"""Small text helpers every parser uses: ANSI stripping, numbered lines, number parsing."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator

from validation.errors import ParseError

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\r")


def clean(text: str) -> str:
    """Remove ANSI colour/cursor sequences and carriage returns; normalise tabs to spaces."""
    return _ANSI.sub("", text).replace("\t", "    ")


def printable(text: str) -> str:
    """`text` from a saved file made safe to print on one terminal line: clean() first, then every
    control or format character that is left (a lone ESC, an OSC ended by ESC \\, C1 controls such as
    0x9b, BEL, backspace, newlines and line separators, bidirectional overrides) shown as its escape
    (`\\x1b`, `\\u202e`)."""
    out = []
    for ch in clean(text):
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


_BLOCK = 1 << 20


def numbered(text: str) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, cleaned line) pairs: the lines str.splitlines() gives, one block of
    about 1 MiB at a time, so a log of millions of lines is never a list of millions of strings. Blocks
    end just after a '\n', where splitting cannot change what splitlines() would do."""
    cleaned = clean(text)
    line_no, start, size = 0, 0, len(cleaned)
    while start < size:
        end = cleaned.find("\n", start + _BLOCK)
        end = size if end < 0 else end + 1
        for line in cleaned[start:end].splitlines():
            line_no += 1
            yield line_no, line
        start = end


def line_at(body: list[tuple[int, str]], i: int) -> tuple[int | None, str | None]:
    """(line number, line) of body[i], or (None, None) past the end (for an error at end of input)."""
    return body[i] if i < len(body) else (None, None)


def command_and_body(tool: str, text: str, *, expected: str,
                     skip: Callable[[str], bool] | None = None) -> tuple[str | None, list[tuple[int, str]]]:
    """Split a saved output into its optional `$ command` first line and the numbered body lines
    (leading blank lines dropped, lines for which `skip` is true left out). Refuses an empty body."""
    require_text(tool, text)
    command_line: str | None = None
    body: list[tuple[int, str]] = []
    for n, raw in numbered(text):
        line = raw.rstrip()
        if not body and not line.strip():
            continue
        if not body and command_line is None and line.startswith("$ "):
            command_line = line[2:].strip()
            continue
        if skip is not None and skip(line):
            continue
        body.append((n, line))
    if not body:
        raise ParseError(tool, "no output after the command line", expected=expected)
    return command_line, body


def require_text(tool: str, text: str) -> None:
    """Refuse empty or whitespace-only input with a clear message."""
    if not text or not text.strip():
        raise ParseError(tool, "empty input", hint="pass the tool's full output, not an empty file")


def to_float(tool: str, raw: str, line_no: int, line: str, what: str) -> float:
    """Parse a float or raise ParseError naming the line."""
    try:
        return float(raw.replace(",", ""))
    except ValueError as exc:
        raise ParseError(tool, f"cannot read {what} from {raw!r}", line_no=line_no, line=line,
                         expected=f"a number for {what}") from exc


def to_int(tool: str, raw: str, line_no: int, line: str, what: str) -> int:
    """Parse an int (decimal or 0x hex) or raise ParseError naming the line."""
    try:
        return int(raw.replace(",", ""), 0)
    except ValueError as exc:
        raise ParseError(tool, f"cannot read {what} from {raw!r}", line_no=line_no, line=line,
                         expected=f"an integer for {what}") from exc
