"""Where the lab keeps things: a shared cache (image tarballs, .debs) and a state dir per lab."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_LAB_NAME = "rflab"


def cache_dir() -> Path:
    """$ROCM_FLEET_CACHE, else ~/.cache/rocm-fleet/lab (created)."""
    env = os.environ.get("ROCM_FLEET_CACHE")
    path = Path(env) if env else Path.home() / ".cache" / "rocm-fleet" / "lab"
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_mirror_port() -> int | None:
    """$ROCM_FLEET_LAB_MIRROR_PORT for a lab that names no mirror port (0: any free port, so that
    labs of several sessions on one machine never meet on 8765); None when unset."""
    env = os.environ.get("ROCM_FLEET_LAB_MIRROR_PORT", "").strip()
    return int(env) if env else None


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
