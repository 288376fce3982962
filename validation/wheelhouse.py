"""The suite's wheels for the nodes, built once per source and byte for byte the same every time.

    python validation/wheelhouse.py --root CHECKOUT --dir WHEELHOUSE     (prints {"path": ..., "built": ...})
    rocm_fleet.fleet.wheelhouse: {root: CHECKOUT, dir: WHEELHOUSE}      (the playbooks: plugins/action/wheelhouse.py)

playbooks/validate.yml installs the suite on every node from wheels built on the controller. A
wheelhouse lives in `WHEELHOUSE/<digest>/`, where the digest covers every file the rocm-fleet wheel is
built from and the pytest-testinfra version this controller runs: an unchanged checkout finds its
wheels there and builds nothing, and the wheels are reproducible (SOURCE_DATE_EPOCH fixed, so the zip
timestamps do not move), so the copy to a node is unchanged. Each wheelhouse holds its digest in
DIGEST: a node records the digest it installed, and skips the whole install while it matches. Only the
standard library is imported: the playbooks' action plugin imports this file from the checkout it builds.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

# The wheel's own inputs: the package tree and the project files setuptools reads.
PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE")
SKIP_PARTS = {"__pycache__"}
SKIP_SUFFIXES = {".pyc", ".pyo"}
DIGEST_FILE = "DIGEST"                     # the wheelhouse's name, inside it: nodes record what they installed
KEEP = 4                                   # wheelhouses kept beside the newest (older checkouts, rollbacks)
# 1980-01-01, the earliest time a zip entry can hold: the build's clock never reaches the bytes.
SOURCE_DATE_EPOCH = "315532800"
PIP_LINES = 3                              # pip's last lines kept in the error: the cause, not its traceback


class WheelhouseError(Exception):
    """Said in one line, exit 2."""


def testinfra_requirement() -> str:
    try:
        return f"pytest-testinfra=={importlib.metadata.version('pytest-testinfra')}"
    except importlib.metadata.PackageNotFoundError:
        raise WheelhouseError(f"pytest-testinfra is not installed for {sys.executable}; the nodes get the version the "
                              "controller runs (pip install pytest-testinfra, or run .ci/setup)") from None


def source_files(root: Path) -> list[Path]:
    found = [root / name for name in PROJECT_FILES if (root / name).is_file()]
    for path in sorted((root / "validation").rglob("*")):
        if path.is_file() and not SKIP_PARTS.intersection(path.parts) and path.suffix not in SKIP_SUFFIXES:
            found.append(path)
    return found


def digest(root: Path, requirement: str) -> str:
    h = hashlib.sha256(requirement.encode() + b"\0")
    for path in source_files(root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:20]


def build(root: Path, into: Path, requirement: str | None) -> None:
    """Build from a copy of exactly the digested files: a stale build/ or egg-info in the checkout
    (setuptools reuses build/lib) can never put a file into the wheel that the digest did not cover."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory(prefix="rocm-fleet-src-") as tmp:
        source = Path(tmp) / "rocm-fleet"
        for path in source_files(root):
            copy = source / path.relative_to(root)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
        # pip's output is kept for the error: the playbooks build inside Ansible's own process, where
        # anything written to the terminal would break into the task output (plugins/action/wheelhouse.py)
        proc = subprocess.run([sys.executable, "-P", "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir",
                               str(into),
                               str(source), *([requirement] if requirement else [])],
                              capture_output=True, text=True, errors="replace", check=False, env=env)
        if proc.returncode != 0:
            said = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
            raise WheelhouseError(f"pip wheel failed (exit {proc.returncode}) building {root} and {requirement}: "
                                  + " | ".join(said[-PIP_LINES:]))


def ensure(root: Path, base: Path, requirement: str | None = None) -> tuple[Path, bool]:
    """The wheelhouse for this source, and whether it had to be built now."""
    requirement = requirement or testinfra_requirement()
    return build_once(base, digest(root, requirement), lambda staging: build(root, staging, requirement), complete)


def build_once(base: Path, name: str, make: Callable[[Path], None],
               is_complete: Callable[[Path], bool]) -> tuple[Path, bool]:
    """`base/name`, made by `make(staging)` unless it is already complete, and whether it was made now.
    Two runs from one checkout take turns (a lock file): the second finds what the first built, and a
    complete directory is never removed while a run may be copying from it. Its name goes into DIGEST."""
    target = base / name
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    base.chmod(0o700)                      # what it holds is for this user (and the nodes) only
    with (base / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_complete(target):
            os.utime(target)               # in use: pruning keeps the most recently used
            return target, False
        for stale in base.glob(".building-*"):     # a build killed before it finished
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(dir=base, prefix=".building-"))
        try:
            make(staging)
            (staging / DIGEST_FILE).write_text(target.name + "\n")
            shutil.rmtree(target, ignore_errors=True)      # incomplete, or it would have been returned above
            staging.rename(target)         # whole or not at all
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        prune(base, keep=target)
    return target, True


def complete(target: Path) -> bool:
    return ((target / DIGEST_FILE).is_file() and any(target.glob("rocm_fleet-*.whl"))
            and any(target.glob("pytest_testinfra-*.whl")))


def prune(base: Path, keep: Path) -> None:
    """Keep the KEEP most recently used wheelhouses beside `keep`."""
    others = sorted((p for p in base.iterdir() if p.is_dir() and p != keep and not p.name.startswith(".")),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in others[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the checkout to build rocm-fleet from")
    parser.add_argument("--dir", type=Path, required=True, help="where wheelhouses are kept, one per digest")
    args = parser.parse_args(argv)
    try:
        path, built = ensure(args.root.resolve(), args.dir.resolve())
    except WheelhouseError as exc:
        print(f"wheelhouse: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"path": str(path), "built": built}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
