"""Waiting in lab tests for something that happens on its own schedule (a timer, Slurm's health check)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, probe: Callable[[], Any], timeout_s: float = 120, every_s: float = 2) -> Any:
    """`probe()`'s first true answer, asked every `every_s` seconds; AssertionError naming `what` and the
    last answer after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}; last: {last!r}")
