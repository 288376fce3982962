"""The suite's wheels for the nodes, built once per source and byte for byte the same every time.

    python validation/wheelhouse.py --root CHECKOUT --dir WHEELHOUSE     (prints {"path": ..., "built": ...})

playbooks/validate.yml installs the suite on every node from wheels built on the controller. A
wheelhouse lives in `WHEELHOUSE/<digest>/`, where the digest covers every file the rocm-fleet wheel is
built from and the pytest-testinfra version this controller runs: an unchanged checkout finds its
wheels there and builds nothing, and the wheels are reproducible (SOURCE_DATE_EPOCH fixed, so the zip
timestamps do not move), so the copy to a node is unchanged and the node reinstalls nothing. Only the
standard library is imported: the playbook runs this file from the checkout it builds.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The wheel's own inputs: the package tree and the project files setuptools reads.
PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE")
SKIP_PARTS = {"__pycache__"}
SKIP_SUFFIXES = {".pyc", ".pyo"}
KEEP = 4                                   # wheelhouses kept beside the newest (older checkouts, rollbacks)
# 1980-01-01, the earliest time a zip entry can hold: the build's clock never reaches the bytes.
SOURCE_DATE_EPOCH = "315532800"


def testinfra_requirement() -> str:
    return f"pytest-testinfra=={importlib.metadata.version('pytest-testinfra')}"


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
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(into),
                        str(source), *([requirement] if requirement else [])], check=True, env=env)


def ensure(root: Path, base: Path, requirement: str | None = None) -> tuple[Path, bool]:
    """The wheelhouse for this source, and whether it had to be built now."""
    requirement = requirement or testinfra_requirement()
    target = base / digest(root, requirement)
    if target.is_dir() and any(target.glob("rocm_fleet-*.whl")) and any(target.glob("pytest_testinfra-*.whl")):
        return target, False
    base.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=base, prefix=".building-"))
    try:
        build(root, staging, requirement)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)             # whole or not at all: a killed build leaves no half wheelhouse
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    prune(base, keep=target)
    return target, True


def prune(base: Path, keep: Path) -> None:
    others = sorted((p for p in base.iterdir() if p.is_dir() and p != keep and not p.name.startswith(".")),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in others[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the checkout to build rocm-fleet from")
    parser.add_argument("--dir", type=Path, required=True, help="where wheelhouses are kept, one per digest")
    args = parser.parse_args(argv)
    path, built = ensure(args.root.resolve(), args.dir.resolve())
    print(json.dumps({"path": str(path), "built": built}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
