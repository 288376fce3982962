"""Run independent report writers side by side in forked processes.

A fleet report of 10,000 nodes writes four files from the same judged documents: the HTML page
and the JUnit file take about as long as the Prometheus and Markdown files together. A forked
child reads the parent's documents as they were at the fork, without copying or pickling them, and
writes its file; the parent writes the others meanwhile. A writer that fails in a child fails the
report with the child's traceback, as it would have failed it in the parent.
"""

from __future__ import annotations

import multiprocessing
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any


class WriterFailedError(RuntimeError):
    """A writer raised in its forked process (an internal error: the traceback is the child's)."""


def run_all(writers: Sequence[Callable[[], None]], *, jobs: int) -> None:
    """Run every writer; with jobs > 1 (and fork available) the first jobs - 1 writers run in forked
    children while this process runs the rest. Returns when all have finished."""
    if jobs <= 1 or len(writers) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for write in writers:
            write()
        return
    context = multiprocessing.get_context("fork")
    forked, here = writers[:jobs - 1], writers[jobs - 1:]
    sys.stdout.flush()           # a child must not write out what this process has buffered
    sys.stderr.flush()
    children = []
    for write in forked:
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=_child, args=(write, send), daemon=True)
        child.start()
        send.close()
        children.append((child, receive))
    try:
        for write in here:
            write()
    finally:
        failures = []
        for child, receive in children:
            try:
                failure = receive.recv()
            except EOFError:
                failure = f"the writer's process ended without a word (exit code {child.exitcode})"
            child.join()
            if failure is not None:
                failures.append(failure)
    if failures:
        raise WriterFailedError("a report writer failed in its forked process:\n" + "\n".join(failures))


def _child(write: Callable[[], None], send: Any) -> None:
    try:
        write()
    except BaseException:
        send.send(traceback.format_exc())
        raise SystemExit(1) from None
    send.send(None)
