"""The wheels validate.yml copies to nodes: one wheelhouse per source digest, reproducible bytes."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from validation import wheelhouse

ROOT = Path(__file__).resolve().parents[3]


def small_project(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "validation" / "sub").mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "README.md").write_text("readme\n")
    (root / "validation" / "__init__.py").write_text("")
    (root / "validation" / "sub" / "__init__.py").write_text("")
    (root / "validation" / "sub" / "rules.yml").write_text("a: 1\n")
    return root


def test_the_digest_follows_the_sources_and_the_testinfra_pin_but_not_caches(tmp_path: Path) -> None:
    root = small_project(tmp_path)
    first = wheelhouse.digest(root, "pytest-testinfra==10.2.2")
    (root / "validation" / "__pycache__").mkdir()
    (root / "validation" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert wheelhouse.digest(root, "pytest-testinfra==10.2.2") == first
    assert wheelhouse.digest(root, "pytest-testinfra==10.3.0") != first
    (root / "validation" / "sub" / "rules.yml").write_text("a: 2\n")
    assert wheelhouse.digest(root, "pytest-testinfra==10.2.2") != first


def test_two_builds_of_one_source_are_the_same_bytes_and_hold_only_the_digested_files(tmp_path: Path) -> None:
    root = small_project(tmp_path)
    (root / "build" / "lib" / "validation").mkdir(parents=True)       # what setuptools leaves behind
    (root / "build" / "lib" / "validation" / "stale.py").write_text("gone = True\n")
    for out in ("one", "two"):
        wheelhouse.build(root, tmp_path / out, None)
    (one,), (two,) = (list((tmp_path / out).glob("rocm_fleet-*.whl")) for out in ("one", "two"))
    assert hashlib.sha256(one.read_bytes()).digest() == hashlib.sha256(two.read_bytes()).digest()
    import zipfile
    assert not [n for n in zipfile.ZipFile(one).namelist() if "stale" in n]


def test_an_unchanged_source_finds_its_wheelhouse_and_builds_nothing(tmp_path: Path, monkeypatch) -> None:
    root = small_project(tmp_path)
    built: list[Path] = []

    def fake_build(_root: Path, into: Path, _req: str | None) -> None:   # pip's work is the test above
        built.append(into)
        (into / "rocm_fleet-0.1.0-py3-none-any.whl").write_bytes(b"w")
        (into / "pytest_testinfra-10.2.2-py3-none-any.whl").write_bytes(b"t")

    monkeypatch.setattr(wheelhouse, "build", fake_build)
    path, fresh = wheelhouse.ensure(root, tmp_path / "houses", "pytest-testinfra==10.2.2")
    again, fresh_again = wheelhouse.ensure(root, tmp_path / "houses", "pytest-testinfra==10.2.2")
    assert (fresh, fresh_again, again, len(built)) == (True, False, path, 1)
    assert path.name == wheelhouse.digest(root, "pytest-testinfra==10.2.2")
    assert (path / "DIGEST").read_text() == path.name + "\n"       # what a node records as installed
    (root / "validation" / "__init__.py").write_text("# changed\n")
    changed, fresh = wheelhouse.ensure(root, tmp_path / "houses", "pytest-testinfra==10.2.2")
    assert fresh and changed != path and not list((tmp_path / "houses").glob(".building-*"))


def test_two_runs_at_once_build_one_wheelhouse_and_a_killed_build_is_swept(tmp_path: Path, monkeypatch) -> None:
    import threading
    import time
    root = small_project(tmp_path)
    houses = tmp_path / "houses"
    (houses / ".building-killed").mkdir(parents=True)            # what a killed run leaves
    built: list[Path] = []

    def slow_build(_root: Path, into: Path, _req: str | None) -> None:
        built.append(into)
        time.sleep(0.3)                                           # the other run arrives meanwhile
        (into / "rocm_fleet-0.1.0-py3-none-any.whl").write_bytes(b"w")
        (into / "pytest_testinfra-10.2.2-py3-none-any.whl").write_bytes(b"t")

    monkeypatch.setattr(wheelhouse, "build", slow_build)
    results: list[tuple[Path, bool]] = []
    runs = [threading.Thread(target=lambda: results.append(wheelhouse.ensure(root, houses, "pytest-testinfra==10.2.2")))
            for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert len(built) == 1 and sorted(fresh for _, fresh in results) == [False, True]
    assert results[0][0] == results[1][0] and wheelhouse.complete(results[0][0])
    assert not list(houses.glob(".building-*"))


def test_the_command_says_in_one_line_when_pip_fails(tmp_path: Path, capsys) -> None:
    root = small_project(tmp_path)
    (root / "pyproject.toml").write_text("[project\\nbroken")
    assert wheelhouse.main(["--root", str(root), "--dir", str(tmp_path / "houses")]) == 2
    assert "wheelhouse: pip wheel failed" in capsys.readouterr().err
