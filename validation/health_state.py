"""The node's health memory: one JSON document per node in the health mode's state directory
(`rocm-fleet health --state-dir`, default /var/lib/rocm-fleet/health), kept across reboots.

The health checks (validation/checks/test_health.py) keep what they compare with here (error counters,
kernel-log position, firmware); `rocm-fleet health` keeps the flap history here (validation/flap.py):
every code's fail streak and last results. It sits in the bottom layer so both can use it.

A file that cannot be read whole (cut short, not text, not a JSON object, another version, no permission)
is never overwritten: it is moved aside as `<node>.json.unreadable-<UTC time>`, kept for a person, and the
memory starts over. Whoever reads it says so (`unreadable`); `rocm-fleet health` then keeps the node's
drain as it is for that run (docs/health.md).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from validation.files import write_atomically

STATE_VERSION = 1
UNREADABLE = ".unreadable-"
"""Infix of the name an unreadable state file is moved to: `<node>.json.unreadable-<UTC time>`."""


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _read(path: Path) -> tuple[dict[str, Any], str | None]:
    """(the document, None), ({}, None) when there is no file, or ({}, why it cannot be read)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"{type(exc).__name__}: {exc}"
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return {}, f"not JSON ({exc})"
    if not isinstance(doc, dict):
        return {}, f"a JSON {type(doc).__name__}, not an object"
    if doc.get("version") != STATE_VERSION:
        return {}, f"version {doc.get('version')!r}, this suite reads version {STATE_VERSION}"
    return doc, None


class HealthState:
    """The node's health memory: `previous` as the last run left it, `current` what this run saw.
    Saved once at the end of the run (atomically), so an interrupted run changes nothing."""

    def __init__(self, directory: Path, node: str) -> None:
        self.path = directory / f"{node}.json"
        self.previous, self.unreadable = _read(self.path)
        self.set_aside_as: Path | None = None
        self.current: dict[str, Any] = {"version": STATE_VERSION, **{k: v for k, v in self.previous.items()
                                                                      if k != "version"}}

    def get(self, key: str) -> Any:
        return self.previous.get(key)

    def set(self, key: str, value: Any) -> None:
        self.current[key] = value

    def set_aside(self) -> Path | None:
        """Move an unreadable file out of the way, kept for a person: where it went, or None when it could not
        be moved (then it stays where it is, and save() writes nothing over it)."""
        if self.unreadable is not None and self.set_aside_as is None:
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
            aside = self.path.with_name(f"{self.path.name}{UNREADABLE}{stamp}")
            try:
                self.path.rename(aside)
            except OSError:
                return None
            self.set_aside_as = aside
        return self.set_aside_as

    def save(self) -> None:
        if self.unreadable is not None and self.set_aside() is None and os.path.lexists(self.path):
            return                      # never write over a file that could not be read
        self.current["updated_at"] = now()
        write_atomically(self.path, json.dumps(self.current, indent=2, sort_keys=True) + "\n")
