"""The names that come from an inventory or a node and end up as words of a command line or as a file
name: host names, addresses, user names and node names. Each is checked whole (`fullmatch`: `$` would let
a trailing newline through) before it is used. A value that starts with '-' would be read as an option,
one with a space, a quote or a newline would split a command line or end an ssh_config line, and one
with '/' or '..' would leave the directory it is written into."""

from __future__ import annotations

import re

from validation.errors import RocmFleetError

HOST_RE = re.compile(r"[A-Za-z0-9_:\[][A-Za-z0-9_.:%\[\]-]*")   # name, IPv4, IPv6 (zone index)
USER_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\$?")          # POSIX-ish account name
NODE_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}")       # an inventory name: one file name, no '/'
REFUSED = ("a leading '-', spaces, newlines, quotes and '/' are refused because the value becomes a word of a "
           "command line or a file name")


class UnsafeName(RocmFleetError):
    """A name that is not safe to use; said in one line, exit 2."""


def matches(value: object, pattern: re.Pattern[str]) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def check(value: object, pattern: re.Pattern[str], what: str, hint: str,
          error: type[RocmFleetError] = UnsafeName) -> str:
    """value, when the whole of it matches pattern; else `error` naming `what` (where it came from)."""
    if not matches(value, pattern):
        raise error(f"{what} is {value!r}, which is not {hint}; {REFUSED}")
    assert isinstance(value, str)
    return value


def check_host(value: object, what: str) -> str:
    return check(value, HOST_RE, what, "a host name or address")


def check_user(value: object, what: str) -> str:
    return check(value, USER_RE, what, "a user name")


def check_node(value: object, what: str) -> str:
    """An inventory host name or a node name that becomes `<results>/<name>.json`."""
    if matches(value, NODE_RE):
        assert isinstance(value, str)
        return value
    raise UnsafeName(f"{what} is {value!r}, which is not a node name (letters, digits, '.', '_', ':', '-'; "
                     f"not starting with '-' or '.'); {REFUSED}")
