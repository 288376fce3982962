"""One kernel for every lab: THP and NUMA balancing are the machine's, shared by every lab host of every lab
(docs/lab.md). Lab test files run side by side (docs/testing.md), and so may another checkout's; a test that
changes those knobs on purpose (planted drift, a restore) must not meet a converge that writes them back, a
validation that judges them, or a lab whose health mode reads them in the background. So every lab test file
holds the knobs `shared` while it runs (tests/integration/conftest.py), and a file that writes them holds
them `exclusive`: a reader-writer lock over two files in the lab's cache directory (flock, machine-wide,
across checkouts too), with the writer first in line (a waiting writer stops new readers, so readers that
keep coming cannot keep it waiting for ever).

A process takes the shared lock once however often it nests, because a nested request could otherwise
wait behind a writer that waits for this very process.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from validation.lab.paths import cache_dir

_held = threading.local()


def _files() -> tuple[Path, Path]:
    return cache_dir() / "kernel-knobs.lock", cache_dir() / "kernel-knobs.turn.lock"


@contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)                      # closing releases the lock


@contextmanager
def shared() -> Iterator[None]:
    """Hold the knobs as a reader (nothing may change them meanwhile)."""
    depth = getattr(_held, "depth", 0)
    if depth:
        _held.depth = depth + 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    main, turn = _files()
    fd = os.open(main, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        with _flock(turn, fcntl.LOCK_EX):          # behind any writer already waiting
            fcntl.flock(fd, fcntl.LOCK_SH)
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0
    finally:
        os.close(fd)


@contextmanager
def exclusive() -> Iterator[None]:
    """Hold the knobs alone, to change them (waits for the readers in flight; new ones wait behind)."""
    if getattr(_held, "depth", 0):
        raise RuntimeError("kernel_knobs.exclusive() inside shared(): this process would wait for itself")
    main, turn = _files()
    with _flock(turn, fcntl.LOCK_EX), _flock(main, fcntl.LOCK_EX):
        yield
