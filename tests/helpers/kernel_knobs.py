"""One kernel for every lab: THP and NUMA balancing are the machine's, shared by every lab host of every lab
(docs/lab.md). Lab test files run side by side (docs/testing.md), and so may another checkout's; a test that
changes those knobs on purpose (planted drift, a restore) must not meet a converge that writes them back, a
validation that judges them, or a lab whose health mode reads them in the background. So every lab test
file holds the knobs `shared` while it runs (tests/integration/conftest.py), and a test that writes them
holds them `exclusive` for its own duration: a reader-writer lock on a file in the lab's cache directory
(flock, machine-wide, across checkouts too).

Writers go first: a waiting writer stops new files from starting (they queue at a turnstile, a second lock
file the writer holds while it waits), so it waits only for the files already running to end, not for every
file left in the run (seen with readers first on two workers: test_health.py's THP test idled its worker
until the last other file had run). A writer in a file that holds the shared lock itself gives it up while
it waits and takes it back after (flock would otherwise make the process wait for itself).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from validation.lab.paths import cache_dir

_held = threading.local()          # depth: nested shared() calls; fd: the descriptor holding LOCK_SH
KNOBS = (Path("/sys/kernel/mm/transparent_hugepage/enabled"), Path("/sys/kernel/mm/transparent_hugepage/defrag"),
         Path("/proc/sys/kernel/numa_balancing"))


def read() -> dict[Path, str]:
    """The knobs' current values ('[madvise]' of 'always [madvise] never'), of those this kernel has."""
    found = {}
    for path in KNOBS:
        if path.exists():
            text = path.read_text().strip()
            found[path] = text[text.index("[") + 1:text.index("]")] if "[" in text else text
    return found


def write(values: dict[Path, str]) -> None:
    """Put the knobs back to `values` (what read() gave)."""
    for path, value in values.items():
        path.write_text(value + "\n")


def _path(name: str = "kernel-knobs.lock") -> Path:
    return cache_dir() / name


TURNSTILE = "kernel-knobs.turnstile"


def _lock(mode: int, name: str = "kernel-knobs.lock") -> int:
    fd = os.open(_path(name), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_lock() -> int:
    """LOCK_SH on the knobs, taken after passing the turnstile (a waiting writer holds it)."""
    gate = _lock(fcntl.LOCK_SH, TURNSTILE)
    try:
        return _lock(fcntl.LOCK_SH)
    finally:
        os.close(gate)


@contextmanager
def shared() -> Iterator[None]:
    """Hold the knobs as a reader (nothing may change them meanwhile); nested calls take the lock once."""
    depth = getattr(_held, "depth", 0)
    if not depth:
        _held.fd = _read_lock()
    _held.depth = depth + 1
    try:
        yield
    finally:
        _held.depth -= 1
        if not _held.depth:
            os.close(_held.fd)             # closing releases the lock
            _held.fd = None


@contextmanager
def exclusive() -> Iterator[None]:
    """Hold the knobs alone, to change them: waits until no one else holds them."""
    reading = getattr(_held, "depth", 0) > 0
    if reading:
        os.close(_held.fd)                 # give up this process's shared hold while it waits and writes
    try:
        gate = _lock(fcntl.LOCK_EX, TURNSTILE)     # new readers wait from now on
        try:
            fd = _lock(fcntl.LOCK_EX)              # the readers already in end their files
        finally:
            os.close(gate)
        try:
            yield
        finally:
            os.close(fd)
    finally:
        if reading:
            _held.fd = _read_lock()
