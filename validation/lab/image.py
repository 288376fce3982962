"""The lab's base image: a debootstrap'ed Debian root imported into podman, built once per recipe.

The recipe (suite, package list, mirror URI, post-build steps version) is hashed; the image is
tagged `rocm-fleet-lab:<hash>` and its rootfs tarball is kept in the cache dir, so a lost podman
store is refilled from the tarball without running debootstrap again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from validation.errors import LabError
from validation.lab import _proc
from validation.lab.paths import cache_dir, locked
from validation.lab.podman import image_exists, podman

log = logging.getLogger(__name__)

IMAGE_REPO = "localhost/rocm-fleet-lab"  # podman names imported images under localhost/
DEFAULT_SUITE = "trixie"
# What a lab host needs to be an Ansible target: python3 (+ python3-apt for the apt module),
# sshd, systemd as PID 1 with dbus (systemctl, hostnamectl), sudo, TLS roots, gpgv/gnupg to check
# signatures and key fingerprints, kmod (lsmod/modinfo, as on any real node).
DEFAULT_PACKAGES = (
    "python3", "python3-apt", "openssh-server", "iproute2", "sudo", "systemd-sysv", "dbus",
    "ca-certificates", "gpgv", "gnupg", "kmod",
)
# Bump when the post-debootstrap steps in _finish_rootfs change; it is part of the hash.
RECIPE_REVISION = 1
DEBOOTSTRAP_TIMEOUT_S = 1800
SOURCES_FILES = (Path("/etc/apt/sources.list"),)
SOURCES_DIR = Path("/etc/apt/sources.list.d")


@dataclass(frozen=True, slots=True, kw_only=True)
class Recipe:
    suite: str = DEFAULT_SUITE
    packages: tuple[str, ...] = DEFAULT_PACKAGES
    mirror: str = field(default="")

    def digest(self) -> str:
        doc = {"suite": self.suite, "packages": sorted(set(self.packages)),
               "mirror": self.mirror.rstrip("/"), "variant": "minbase", "revision": RECIPE_REVISION}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]

    @property
    def tag(self) -> str:
        return f"{IMAGE_REPO}:{self.digest()}"


def debian_mirror_from_sources(texts: dict[str, str]) -> str | None:
    """The first Debian archive URI in apt sources (deb822 `URIs:` or one-line `deb URI suite`).

    texts maps a file name to its content; *.sources files are deb822, others one-line.
    Security archives (`debian-security`) are skipped: debootstrap needs the main archive.
    """
    found: list[str] = []
    for name in sorted(texts):
        text = texts[name]
        if name.endswith(".sources"):
            found += [uri for m in re.finditer(r"(?im)^URIs:\s*(.+)$", text) for uri in m.group(1).split()]
        else:
            for line in text.splitlines():
                m = re.match(r"\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+", line)
                if m:
                    found.append(m.group(1))
    for uri in found:
        if uri.startswith(("http://", "https://")) and "security" not in uri:
            return uri.rstrip("/")
    return None


def host_mirror() -> str:
    """The Debian mirror this machine's apt uses; debootstrap and the lab mirror build use it too."""
    texts: dict[str, str] = {}
    files = [p for p in SOURCES_FILES if p.is_file()]
    if SOURCES_DIR.is_dir():
        files += sorted(SOURCES_DIR.glob("*.sources")) + sorted(SOURCES_DIR.glob("*.list"))
    for path in files:
        texts[str(path)] = path.read_text(errors="replace")
    uri = debian_mirror_from_sources(texts)
    if uri is None:
        raise LabError("no Debian archive URI found in /etc/apt/sources.list(.d); "
                       "pass one with `rocm-fleet lab up --debian-mirror URI` (or Recipe(mirror=...))")
    return uri


def default_recipe() -> Recipe:
    return Recipe(mirror=host_mirror())


def tarball_path(recipe: Recipe) -> Path:
    return cache_dir() / f"rootfs-{recipe.suite}-{recipe.digest()}.tar"


def ensure_image(recipe: Recipe) -> str:
    """Return the image tag for recipe, building it (debootstrap + import) only when missing."""
    with locked(cache_dir() / "image.lock"):
        if image_exists(recipe.tag):
            log.info("lab image %s is cached", recipe.tag)
            return recipe.tag
        tar = tarball_path(recipe)
        if not tar.exists():
            _build_tarball(recipe, tar)
        _import(recipe, tar)
        return recipe.tag


def _build_tarball(recipe: Recipe, tar: Path) -> None:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=cache_dir()))
    log_file = cache_dir() / f"debootstrap-{recipe.digest()}.log"
    root = work / "root"
    try:
        log.info("building lab rootfs with debootstrap (%s from %s); log: %s",
                 recipe.suite, recipe.mirror, log_file)
        argv = ["debootstrap", "--variant=minbase", f"--include={','.join(recipe.packages)}",
                recipe.suite, str(root), recipe.mirror]
        proc = _proc.run(argv, timeout_s=DEBOOTSTRAP_TIMEOUT_S, check=False, what="debootstrap")
        log_file.write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            inner = root / "debootstrap" / "debootstrap.log"
            detail = inner.read_text(errors="replace") if inner.exists() else proc.stdout + proc.stderr
            raise LabError(f"debootstrap {recipe.suite} from {recipe.mirror} failed (rc {proc.returncode}); "
                           f"last lines: {_proc.tail(detail, 10)}; full log: {log_file}")
        _finish_rootfs(root, recipe)
        partial = tar.with_suffix(".tar.partial")
        _proc.run(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-cf", str(partial), "."],
                  timeout_s=600, what="tar rootfs")
        partial.replace(tar)
        log.info("lab rootfs %s built in %.0f s (%.0f MB)", tar.name, time.monotonic() - started,
                 tar.stat().st_size / 1e6)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _finish_rootfs(root: Path, recipe: Recipe) -> None:
    """Make the root a template: no host identity baked in, no cached .debs."""
    for key in (root / "etc" / "ssh").glob("ssh_host_*"):
        key.unlink()  # each lab host gets its own host key, copied in before it starts
    (root / "etc" / "machine-id").write_text("")  # systemd makes one per container at boot
    dbus_id = root / "var" / "lib" / "dbus" / "machine-id"
    if dbus_id.is_symlink() or dbus_id.exists():
        dbus_id.unlink()
    for deb in (root / "var" / "cache" / "apt" / "archives").glob("*.deb"):
        deb.unlink()
    (root / "etc" / "rocm-fleet-lab-recipe").write_text(
        f"suite={recipe.suite}\nmirror={recipe.mirror}\npackages={','.join(recipe.packages)}\n"
        f"digest={recipe.digest()}\n")


def _import(recipe: Recipe, tar: Path) -> None:
    log.info("importing %s into podman as %s", tar.name, recipe.tag)
    podman(["import", "--change", 'CMD ["/sbin/init"]', "--change", "STOPSIGNAL SIGRTMIN+3",
            "--change", f"LABEL rocm-fleet.lab.recipe={recipe.digest()}", str(tar), recipe.tag],
           timeout_s=900, what="podman import")
    if not image_exists(recipe.tag):
        raise LabError(f"podman import of {tar} did not produce image {recipe.tag}")
