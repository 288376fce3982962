"""How the host tuning, GPU access and environment drift checks say what differs.

The checks call `check(condition, code, message)`; the message says what was expected and
what was found, the code's hint (validation/codes.py) says how to put it right.
"""

from __future__ import annotations

from validation.checks.outcome import expect


def check(condition: object, code: str, message: str) -> None:
    """Fail the current check with `code` and its hint when `condition` is false."""
    __tracebackhide__ = True
    expect(condition, code, message)


def differences(expected: dict[str, str], found: dict[str, str]) -> list[str]:
    """'NAME: expected '1', found '0'' lines for every key that differs, is missing or is extra."""
    out = []
    for key in sorted(set(expected) | set(found)):
        if key not in found:
            out.append(f"{key}: expected {expected[key]!r}, found nothing")
        elif key not in expected:
            out.append(f"{key}: not declared, found {found[key]!r}")
        elif expected[key] != found[key]:
            out.append(f"{key}: expected {expected[key]!r}, found {found[key]!r}")
    return out
