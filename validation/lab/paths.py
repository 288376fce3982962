"""Where the lab keeps things: a shared cache (image tarballs, .debs) and a state dir per lab."""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
LAB_PREFIX = "rflab"  # the default lab name is this prefix and the checkout's key


def checkout_key(root: Path = REPO_ROOT) -> str:
    """Six hex digits of the checkout's path: labs started from two clones never share a name."""
    return hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:6]


def default_lab_name(prefix: str = LAB_PREFIX, root: Path = REPO_ROOT) -> str:
    """'rflab-1a2b3c': the prefix and this checkout's key (a valid host name prefix)."""
    return f"{prefix}-{checkout_key(root)}"


def cache_dir() -> Path:
    """$ROCM_FLEET_CACHE, else ~/.cache/rocm-fleet/lab (created)."""
    env = os.environ.get("ROCM_FLEET_CACHE")
    path = Path(env) if env else Path.home() / ".cache" / "rocm-fleet" / "lab"
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_state_dir(name: str) -> Path:
    return REPO_ROOT / ".lab" / name


def default_inventory_path() -> Path:
    return REPO_ROOT / "inventories" / "lab" / "hosts.yml"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on path while the body runs (one image/mirror build at a time)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
