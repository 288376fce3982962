"""One JSON document per node run, rewritten atomically after every result.

An interrupted run therefore always leaves a valid document: `finished_at` is null and
`complete` is false until the session ends normally.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from validation import validity
from validation.files import write_atomically

SCHEMA_VERSION = 1


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class NodeResults:
    """Accumulates check results for one host and keeps its JSON file current."""

    def __init__(self, directory: Path, host: str, *, tier: str, argv: list[str]) -> None:
        self.path = directory / f"{host}.json"
        self.doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "host": host,
            "tier": tier,
            "started_at": now(),
            "finished_at": None,
            "complete": False,
            "command": argv,
            "provenance": {},
            "checks": [],
            "measurements": [],
        }
        directory.mkdir(parents=True, exist_ok=True)
        self.write()

    def add_check(self, entry: dict[str, Any]) -> None:
        self.doc["checks"].append(entry)
        self.write()

    def add_measurement(self, entry: dict[str, Any]) -> None:
        self.doc["measurements"].append(entry)
        self.write()

    def finish(self, *, complete: bool = True, valid_for_hours: float | None = None) -> None:
        """The session ended: normally (complete), or interrupted (Ctrl-C, SIGTERM), when what is here is
        a part of the run and says so. A complete run vouches for the node until `valid_until`
        (validation/validity.py: its tier's validity, or `valid_for_hours`)."""
        finished = dt.datetime.now(dt.UTC).replace(microsecond=0)
        self.doc["finished_at"] = finished.isoformat(timespec="seconds")
        self.doc["complete"] = complete
        self.doc["valid_until"] = (validity.valid_until(self.doc.get("tier"), finished, valid_for_hours)
                                   if complete else None)
        self.write()

    def write(self) -> None:
        write_atomically(self.path, json.dumps(self.doc, indent=2, default=str) + "\n")
