"""validation/files.py: the one helper every kept document is written with (issue 42 item 5)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from validation.files import write_atomically


def test_a_write_replaces_the_file_whole_with_the_mode_asked_for(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "doc.json"
    write_atomically(target, "first\n")
    assert target.read_text() == "first\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    write_atomically(target, "second\n", mode=0o644, durable=True)
    assert target.read_text() == "second\n" and stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in target.parent.iterdir()] == ["doc.json"]


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    write_atomically(target, "old\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomically(target, "half \udcff done")      # a lone surrogate cannot be written
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["doc.json"]
