"""The node's health memory: one JSON document per node in the health mode's state directory
(`rocm-fleet health --state-dir`, default /var/lib/rocm-fleet/health), kept across reboots.

The health checks (validation/checks/test_health.py) keep what they compare with here (error counters,
kernel-log position, firmware); `rocm-fleet health` keeps the flap history here (validation/flap.py):
every code's fail streak and last results. It sits in the bottom layer so both can use it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any

STATE_VERSION = 1


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class HealthState:
    """The node's health memory: `previous` as the last run left it, `current` what this run saw.
    Saved once at the end of the run (atomically), so an interrupted run changes nothing."""

    def __init__(self, directory: Path, node: str) -> None:
        self.path = directory / f"{node}.json"
        self.previous: dict[str, Any] = {}
        if self.path.is_file():
            try:
                doc = json.loads(self.path.read_text())
            except (OSError, json.JSONDecodeError):
                doc = {}
            if isinstance(doc, dict) and doc.get("version") == STATE_VERSION:
                self.previous = doc
        self.current: dict[str, Any] = {"version": STATE_VERSION, **{k: v for k, v in self.previous.items()
                                                                      if k != "version"}}

    def get(self, key: str) -> Any:
        return self.previous.get(key)

    def set(self, key: str, value: Any) -> None:
        self.current[key] = value

    def save(self) -> None:
        self.current["updated_at"] = now()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump(self.current, handle, indent=2, sort_keys=True)
            handle.write("\n")
        Path(tmp).replace(self.path)
