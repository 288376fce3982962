"""Whole-file writes that a reader, a crash or a reboot never sees half done: the text goes to a file beside the
target and is renamed over it (rename is atomic within one file system). One helper for every document the
suite keeps (results, progress, health state, the remediation record, the active-check state, textfiles)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, text: str, *, mode: int | None = None, durable: bool = False) -> None:
    """Replace `path` with `text` in one step. `mode`: the file's permissions (default 0600, mkstemp's: a
    document may name nodes and their faults); `durable`: flushed to the disk before the rename, for a record a
    reboot right after must find whole. The parent directory is made when missing; a write that fails or is
    interrupted leaves the old file as it was and no temporary file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except BaseException:           # Ctrl-C in the middle of a write: the last whole document stays
        Path(tmp).unlink(missing_ok=True)
        raise
