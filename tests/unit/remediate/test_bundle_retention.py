"""Support bundles do not pile up on a node (issue 39 item 12): after writing its archive, `rocm-fleet
support-bundle` keeps the newest --keep bundles of its --out directory (default 5) and removes the older
ones; nothing but a bundle archive of its own naming is ever removed, and never through a link."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from validation import bundle
from validation.cli import main
from validation.commands import support_bundle


def old_bundle(directory: Path, node: str, stamp: str) -> Path:
    path = directory / f"rocm-fleet-bundle-{node}-{stamp}.tar.gz"
    path.write_bytes(b"old bundle")
    return path


@pytest.fixture
def one_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's own items replaced by one quick command: this is about what stays in --out."""
    monkeypatch.setattr(support_bundle, "items", lambda args, cper: [
        bundle.Command(name="versions/python.txt", argv=(sys.executable, "-c", "print('hello')"))])


def test_the_command_keeps_the_newest_bundles_and_removes_the_older_ones(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], one_item: None) -> None:
    out = tmp_path / "bundles"
    out.mkdir()
    oldest = old_bundle(out, "n1", "20250101T000000Z")
    older = old_bundle(out, "n1", "20250601T000000Z")
    renamed = old_bundle(out, "n1-old-name", "20251101T000000Z")   # the node's earlier name: its bundles count too
    assert main(["support-bundle", "--out", str(out), "--node-name", "n1", "--keep", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    archive = Path(doc["archive"])
    assert sorted(p.name for p in out.iterdir()) == sorted([renamed.name, archive.name])
    assert doc["removed"] == [str(older), str(oldest)]


def test_by_default_five_bundles_stay(tmp_path: Path, capsys: pytest.CaptureFixture[str], one_item: None) -> None:
    out = tmp_path / "bundles"
    out.mkdir()
    for month in range(1, 8):
        old_bundle(out, "n1", f"2025{month:02d}01T000000Z")
    assert main(["support-bundle", "--out", str(out), "--node-name", "n1", "--json"]) == 0
    kept = sorted(p.name for p in out.iterdir())
    assert len(kept) == 5 and kept[0] == "rocm-fleet-bundle-n1-20250401T000000Z.tar.gz", kept


def test_only_regular_bundle_archives_are_removed_never_a_link_or_another_file(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "bundles", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    target = old_bundle(elsewhere, "n1", "20240101T000000Z")
    (out / "rocm-fleet-bundle-n1-20240101T000000Z.tar.gz").symlink_to(target)
    (out / "notes.txt").write_text("the operator's notes")
    (out / "rocm-fleet-bundle-n1-latest.tar.gz").write_text("not one of ours: no stamp")
    new = old_bundle(out, "n1", "20260101T000000Z")
    older = old_bundle(out, "n1", "20250101T000000Z")
    assert bundle.prune(out, 1, newest=new) == [older]
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "rocm-fleet-bundle-n1-20240101T000000Z.tar.gz",
                                                     "rocm-fleet-bundle-n1-20260101T000000Z.tar.gz",
                                                     "rocm-fleet-bundle-n1-latest.tar.gz"]
    assert target.read_bytes() == b"old bundle"


def test_the_bundle_just_written_stays_even_when_an_older_one_carries_a_later_stamp(tmp_path: Path) -> None:
    """A clock that was ahead once (an NTP step): the archive just written is kept whatever its stamp."""
    future = old_bundle(tmp_path, "n1", "20991231T235959Z")
    new = old_bundle(tmp_path, "n1", "20260101T000000Z")
    assert bundle.prune(tmp_path, 1, newest=new) == [future]
    assert [p.name for p in tmp_path.iterdir()] == [new.name]


@pytest.mark.parametrize("keep", ["0", "-1", "1001"])
def test_a_keep_that_would_remove_every_bundle_is_refused_in_one_line_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], keep: str) -> None:
    assert main(["support-bundle", "--out", str(tmp_path / "out"), "--node-name", "n1", "--keep", keep]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--keep" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()
