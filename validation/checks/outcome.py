"""How a check says why it failed: a stable code, the observation, and what to do.

Checks call `expect(condition, code, message)`; the plugin copies the code and hint of the
raised CheckFailure into the node's results, the JUnit XML and the HTML report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from validation.codes import CODES
from validation.stability import UNSTABLE, Figure, describe

T = TypeVar("T")


class CheckFailure(AssertionError):
    """An assertion with a stable code and remediation hint."""

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        self.code = code
        self.message = message
        self.hint = CODES.get(code, "") if hint is None else hint
        super().__init__(f"[{code}] {message}" + (f" | hint: {self.hint}" if self.hint else ""))


def expect(condition: object, code: str, message: str, hint: str | None = None) -> None:
    """Fail the current check with `code` when `condition` is false."""
    __tracebackhide__ = True
    if not condition:
        raise CheckFailure(code, message, hint)


def require(value: T | None, code: str, message: str, hint: str | None = None) -> T:
    """`value`, or fail the current check with `code` when it is None."""
    __tracebackhide__ = True
    if value is None:
        raise CheckFailure(code, message, hint)
    return value


def fail_on_verdicts(verdicts: Iterable[Any], *, shown: int = 8) -> None:
    """Fail the current check with every failing verdict (FAIL, TIMEOUT, ERROR) among `verdicts`,
    under the first one's code and hint; None entries (nothing judged) are passed over."""
    __tracebackhide__ = True
    from validation.records import FAILING

    bad = [v for v in verdicts if v is not None and v.status in FAILING]
    if bad:
        more = f"; and {len(bad) - shown} more" if len(bad) > shown else ""
        raise CheckFailure(bad[0].code or "RF-NOT-REPORTED", "; ".join(v.reason for v in bad[:shown]) + more,
                           bad[0].hint or None)


def expect_stable(unstable: Sequence[Figure]) -> None:
    """Fail the current check with RF-PROBE-UNSTABLE when any figure stayed unstable after its
    second measurement (validation/stability.py), naming each one's GPU, metric and samples."""
    __tracebackhide__ = True
    if unstable:
        raise CheckFailure(UNSTABLE, describe(unstable))
