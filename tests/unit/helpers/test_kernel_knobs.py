"""The lab's kernel-settings lock (tests/helpers/kernel_knobs.py), on a lock directory of the test's own:
a writer that waits stops new readers, so it waits only for the readers already in."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import kernel_knobs
import pytest


@pytest.fixture(autouse=True)
def own_lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_knobs, "cache_dir", lambda: tmp_path)


def _reader(seconds: float, log: str) -> None:
    with kernel_knobs.shared():
        with Path(log).open("a") as out:
            out.write(f"reader{seconds} in\n")
        time.sleep(seconds)


def _writer(log: str) -> None:
    # a lab file's test that changes the knobs
    with kernel_knobs.shared(), kernel_knobs.exclusive(), Path(log).open("a") as out:
        out.write("writer in\n")


def test_a_waiting_writer_goes_before_a_reader_that_came_after_it(tmp_path: Path) -> None:
    log = str(tmp_path / "order")
    fork = multiprocessing.get_context("fork")
    first = fork.Process(target=_reader, args=(1.0, log))
    first.start()
    time.sleep(0.3)
    writer = fork.Process(target=_writer, args=(log,))
    writer.start()
    time.sleep(0.3)
    late = fork.Process(target=_reader, args=(0.1, log))
    late.start()
    for process in (first, writer, late):
        process.join(10)
        assert process.exitcode == 0
    assert Path(log).read_text().splitlines() == ["reader1.0 in", "writer in", "reader0.1 in"]


def test_shared_nests_and_exclusive_takes_the_shared_hold_back(tmp_path: Path) -> None:
    with kernel_knobs.shared(), kernel_knobs.shared():
        with kernel_knobs.exclusive():
            pass
        assert kernel_knobs._held.fd is not None
    assert kernel_knobs._held.fd is None
