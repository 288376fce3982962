"""One JSON document per node run, rewritten atomically after every result.

An interrupted run therefore always leaves a valid document: `finished_at` is null and
`complete` is false until the session ends normally.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any

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

    def finish(self) -> None:
        self.doc["finished_at"] = now()
        self.doc["complete"] = True
        self.write()

    def write(self) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump(self.doc, handle, indent=2, default=str)
            handle.write("\n")
        Path(tmp).replace(self.path)
