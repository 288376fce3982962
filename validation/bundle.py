"""A node's support bundle: what a vendor asks for with a return (RMA) and what a person needs to decide
what to do, in one tar.gz with a manifest.

`build` runs each command with a timeout (output kept even when it times out, a missing tool recorded
as absent with the reason) and copies each file or directory it is given, then writes `manifest.json`
(per file: its command or source, rc, sha256, size, time) and packs everything into one archive created
0600. Files are read with O_NOFOLLOW and directories walked without following links: a symlink is
recorded as skipped, never followed out of its tree. Every name in the archive is checked (NAME) and the
node's name is checked as validation/names.py checks node names, so no entry can leave the bundle's
directory when it is unpacked.

validation/commands/support_bundle.py says what a bundle holds on a node (DEFAULT_ITEMS there).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from validation.errors import RocmFleetError
from validation.names import check_node

SCHEMA_VERSION = 1
# An entry name: one path component (letters, digits, '.', '_', '-', ':', '+', '@'), not starting with '.'/'-'.
_NAME = r"[A-Za-z0-9_+@:][A-Za-z0-9_.+@:-]{0,199}"
MAX_FILE_BYTES = 64 * 1024 * 1024      # a file or a command's output beyond this is cut (and said so)
MAX_DIR_FILES = 500
DEFAULT_KEEP = 5                       # bundles kept in a node's bundle directory (`prune`)
MAX_KEEP = 1000
# an archive `build` names: rocm-fleet-bundle-<node>-<UTC stamp>.tar.gz
_ARCHIVE = re.compile(r"rocm-fleet-bundle-[A-Za-z0-9_][A-Za-z0-9_.:-]*-(?P<stamp>[0-9]{8}T[0-9]{6}Z)\.tar\.gz")


def check_name(name: str, what: str) -> str:
    """`name` when it is a relative path of NAME components (at most 4), else a RocmFleetError."""
    parts = name.split("/")
    if not 1 <= len(parts) <= 4 or not all(re.fullmatch(_NAME, p) for p in parts):
        raise RocmFleetError(f"{what} {name!r} is not a safe name in a bundle (components of letters, digits, "
                             "'.', '_', '+', '@', ':', '-', not starting with '.' or '-'); rename it")
    return name


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    name: str                 # the entry's name in the bundle
    argv: tuple[str, ...]
    timeout_s: float = 30


@dataclass(frozen=True, slots=True, kw_only=True)
class Copy:
    name: str                 # the entry's name (a directory: the prefix of its files' names)
    path: Path
    pattern: str = "*"        # for a directory: which of its files (not recursive)


Item = Command | Copy


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _entry(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "status": "ok", "rc": None, "sha256": None, "size": 0, "time": _now(), **fields}


def _write(stage: Path, name: str, data: bytes) -> dict[str, Any]:
    target = stage / name
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def run_command(stage: Path, item: Command, which: Callable[[str], str | None] = shutil.which) -> dict[str, Any]:
    check_name(item.name, "command output")
    if which(item.argv[0]) is None:
        return _entry(item.name, command=list(item.argv), status="absent",
                      reason=f"{item.argv[0]} is not installed (not on PATH)")
    started = time.monotonic()
    try:
        proc = subprocess.run(list(item.argv), capture_output=True, timeout=item.timeout_s, check=False,
                              stdin=subprocess.DEVNULL)
        out, err, rc, status, reason = proc.stdout, proc.stderr, proc.returncode, "ok", ""
        if rc != 0:
            status, reason = "failed", err.decode(errors="replace").strip()[-500:]
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, bytes) else b""
        err = exc.stderr if isinstance(exc.stderr, bytes) else b""
        rc, status, reason = None, "timeout", f"stopped after {item.timeout_s:g} s; the output so far is kept"
    except OSError as exc:
        return _entry(item.name, command=list(item.argv), status="absent", reason=f"{item.argv[0]}: {exc.strerror}")
    if len(out) > MAX_FILE_BYTES:
        out, reason = out[:MAX_FILE_BYTES], (reason + f"; cut at {MAX_FILE_BYTES} bytes").lstrip("; ")
    entry = _entry(item.name, command=list(item.argv), rc=rc, status=status, reason=reason,
                   seconds=round(time.monotonic() - started, 2), **_write(stage, item.name, out))
    if err.strip():
        entry["stderr"] = err.decode(errors="replace").strip()[-500:]
    return entry


def _read_file(path: Path) -> bytes:
    """A regular file's bytes (up to MAX_FILE_BYTES), opened without following a link."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise RocmFleetError(f"{path} is not a regular file")
        return handle.read(MAX_FILE_BYTES)


def copy_file(stage: Path, name: str, path: Path) -> dict[str, Any]:
    check_name(name, "file")
    try:
        if path.is_symlink():
            return _entry(name, source=str(path), status="skipped", reason="a symbolic link: not followed")
        data = _read_file(path)
    except FileNotFoundError:
        return _entry(name, source=str(path), status="absent", reason="no such file")
    except (OSError, RocmFleetError) as exc:
        return _entry(name, source=str(path), status="failed", reason=str(exc))
    return _entry(name, source=str(path), **_write(stage, name, data))


def copy_dir(stage: Path, item: Copy) -> list[dict[str, Any]]:
    """Each regular file directly in the directory that matches the pattern; links and odd names skipped."""
    check_name(item.name, "directory")
    if item.path.is_symlink() or not item.path.is_dir():
        why = "a symbolic link: not followed" if item.path.is_symlink() else "no such directory"
        return [_entry(item.name + "/", source=str(item.path), status="absent" if "no such" in why else "skipped",
                       reason=why)]
    found = []
    for child in sorted(item.path.glob(item.pattern))[:MAX_DIR_FILES]:
        if child.is_dir() and not child.is_symlink():
            continue
        if not re.fullmatch(_NAME, child.name):
            found.append(_entry(f"{item.name}/(unsafe name)", source=str(child), status="skipped",
                                reason=f"file name {child.name!r} is not a safe name in a bundle"))
            continue
        found.append(copy_file(stage, f"{item.name}/{child.name}", child))
    return found or [_entry(item.name + "/", source=str(item.path), status="absent",
                            reason=f"no file matches {item.pattern}")]


def build(out_dir: Path, node: str, items: Sequence[Item], *, summary: dict[str, Any] | None = None,
          which: Callable[[str], str | None] = shutil.which) -> Path:
    """Collect `items` for `node` into `out_dir/rocm-fleet-bundle-<node>-<UTC stamp>.tar.gz` (0600); its path."""
    check_node(node, "the node's name")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    top = f"rocm-fleet-bundle-{node}-{stamp}"
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    archive = out_dir / f"{top}.tar.gz"
    with tempfile.TemporaryDirectory(prefix=".bundle-", dir=out_dir) as tmp:
        stage = Path(tmp)
        entries: list[dict[str, Any]] = []
        seen: set[str] = set()
        for item in items:
            if item.name in seen:
                raise RocmFleetError(f"two bundle items are named {item.name!r}")
            seen.add(item.name)
            if isinstance(item, Command):
                entries.append(run_command(stage, item, which))
            elif item.path.is_dir() and not item.path.is_symlink():
                entries.extend(copy_dir(stage, item))
            else:
                entries.append(copy_file(stage, item.name, item.path))
        manifest = {"schema_version": SCHEMA_VERSION, "node": node, "created": _now(), "summary": summary or {},
                    "files": entries}
        _write(stage, "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
        fd = os.open(archive, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            for name in dict.fromkeys(["manifest.json"] + [e["name"] for e in entries]):
                path = stage / name
                if not path.is_file():
                    continue
                info = tarfile.TarInfo(f"{top}/{name}")
                data = path.read_bytes()
                info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
                tar.addfile(info, io.BytesIO(data))
    return archive


def check_keep(keep: int) -> int:
    if not 1 <= keep <= MAX_KEEP:
        raise RocmFleetError(f"--keep is {keep}; give how many bundles stay in the directory, 1 to {MAX_KEEP} "
                             "(the one just written counts)")
    return keep


def prune(out_dir: Path, keep: int, *, newest: Path) -> list[Path]:
    """Keep `newest` (the archive just written) and the newest `keep - 1` other bundles of `out_dir`, by the UTC
    stamp in their names; remove the rest and return them, newest first. Only regular files named as `build`
    names its archives are counted or removed, whatever node they name: never a link, a directory or another
    file."""
    check_keep(keep)
    found = []
    for child in out_dir.iterdir():
        m = _ARCHIVE.fullmatch(child.name)
        if m and child != newest and stat.S_ISREG(child.lstat().st_mode):
            found.append((m.group("stamp"), child.name, child))
    found.sort(reverse=True)
    removed = [path for _, _, path in found[keep - 1:]]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed
