"""The lab's apt mirror: real Debian ROCm packages laid out like repo.radeon.com, signed per run.

    <root>/rocm/rocm.gpg.key                                     armored public key (AMD's path)
    <root>/rocm/apt/<rocm_version>/pool/main/*.deb
    <root>/rocm/apt/<rocm_version>/dists/<codename>/{Release,InRelease,Release.gpg}
    <root>/rocm/apt/<rocm_version>/dists/<codename>/main/binary-amd64/Packages(.gz)

The .debs are resolved and downloaded by apt inside a throwaway container of the lab image (so
the set is exactly what a lab host lacks), checked to install from nothing but themselves, and
cached by (suite, package list, image, Debian mirror). Signing and layout happen on every
`lab up` with a key generated for that run.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from validation.errors import LabError
from validation.lab import _proc
from validation.lab.paths import REPO_ROOT, cache_dir, locked
from validation.lab.podman import LABEL, podman
from validation.lab.serve import DEFAULT_LIFETIME_S

log = logging.getLogger(__name__)

CODENAME = "trixie"  # every set is published for trixie hosts, whatever suite it came from
ORIGIN = "rocm-fleet-lab"
DOWNLOAD_TIMEOUT_S = 1800
VERIFY_TIMEOUT_S = 1200
BUILD_LABEL = "mirror-build"  # the lab label value of the throwaway download/check containers


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionSet:
    suite: str                  # archive suite the packages come from
    packages: tuple[str, ...]   # what to resolve with apt; dependencies come along
    rocm_version: str           # rocminfo's upstream version; checked against the download
    required: bool              # False: skipped (with a log line) when it does not install on trixie

    def digest(self, image: str, debian_mirror: str) -> str:
        doc = {"suite": self.suite, "packages": sorted(self.packages), "image": image,
               "mirror": debian_mirror.rstrip("/"), "revision": 1}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]


# trixie: rocminfo/rocm-smi 6.1.2, hipcc/libamdhip64 5.7.1. hipcc compiles only with
# libamdhip64-dev, which it depends on. sid (upgrade target): rocminfo 7.2.4, rocm-smi 6.4.1;
# sid's hipcc 7.0.2 needs clang-21 and gcc-16's libstdc++6, so it cannot go on a trixie host.
# openmpi-bin + python3-mpi4py (OpenMPI 5.0.7, mpi4py 4.0.3) are for the multi-node launch test
# (roles/mpi_launcher, tests/integration/test_multinode.py); their recommends add nothing, and
# trixie's libopenmpi40 links libamdhip64-5, which the set has anyway. ibverbs-utils + perftest
# are the per-rail RDMA tools (ibv_devinfo, ib_write_bw) mpi_launcher installs by default.
# slurmctld, slurmd, slurm-client and munge (Slurm 24.11) make the lab's small Slurm cluster for
# the srun launch test (tests/integration/test_slurm.py). The distribution packages site.yml installs
# on a Debian host (node_tuning's cpupower) and those a node needs to converge itself (roles/self_converge:
# python3-venv and ansible-core's dependencies) let a host whose only package source is this mirror be
# converged and take a pull bundle, as an air-gapped site's would; the Slurm test starts such a node's
# converge from a Slurm job. Read from the roles, so the set follows them.
def _role_var(role: str, file: str, name: str) -> tuple[str, ...]:
    return tuple(yaml.safe_load((REPO_ROOT / "roles" / role / file).read_text())[name])


SITE_PACKAGES = (*_role_var("node_tuning", "vars/Debian.yml", "__node_tuning_cpupower_packages"),
                 *_role_var("self_converge", "defaults/main.yml", "self_converge_system_packages"))
TRIXIE_SET = VersionSet(suite="trixie", packages=("rocminfo", "rocm-smi", "hipcc", "libamdhip64-5",
                                                  "libamdhip64-dev", "openmpi-bin", "python3-mpi4py",
                                                  "ibverbs-utils", "perftest", "slurmctld", "slurmd",
                                                  "slurm-client", "munge", *SITE_PACKAGES),
                        rocm_version="6.1.2", required=True)
SID_SET = VersionSet(suite="sid", packages=("rocminfo", "rocm-smi"), rocm_version="7.2.4", required=False)
DEFAULT_SETS = (TRIXIE_SET, SID_SET)


@dataclass(frozen=True, slots=True, kw_only=True)
class DebSet:
    """A downloaded, install-checked set of .debs in the cache."""
    directory: Path
    suite: str
    rocm_version: str
    versions: tuple[tuple[str, str], ...]   # (package, version) for every .deb, sorted
    installable: bool
    note: str                               # why it is not installable, or what was checked

    @property
    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.directory.glob("*.deb"))


@dataclass(frozen=True, slots=True, kw_only=True)
class MirrorInfo:
    url: str
    key_url: str
    key_fingerprints: tuple[str, ...]
    versions: tuple[str, ...]        # rocm/apt/<version>/ directories published
    root: Path
    port: int
    pid: int

    @property
    def fingerprint(self) -> str:
        """The signing key's fingerprint (the lab signs with one key per run)."""
        return self.key_fingerprints[0]

    @property
    def allow_http(self) -> bool:
        """Whether roles may take this mirror's plain http URLs (rocm_repo_allow_http): only while it is
        served on 127.0.0.1, where lab hosts reach it without leaving the machine (serve.py binds there)."""
        return urlsplit(self.url).scheme == "http" and urlsplit(self.url).hostname == "127.0.0.1"


# ---------------------------------------------------------------- download + check
def ensure_debs(vset: VersionSet, *, image: str, debian_mirror: str) -> DebSet:
    """The cached .deb set for vset, downloading and install-checking it when missing."""
    target = cache_dir() / f"debs-{vset.suite}-{vset.digest(image, debian_mirror)}"
    manifest = target / "manifest.json"
    with locked(cache_dir() / "debs.lock"):
        if not manifest.exists():
            started = time.monotonic()
            work = target.with_name(target.name + ".partial")
            shutil.rmtree(work, ignore_errors=True)
            (work / "partial").mkdir(parents=True)
            _download(vset, work, image=image, debian_mirror=debian_mirror)
            shutil.rmtree(work / "partial", ignore_errors=True)
            doc = _describe(vset, work)
            ok, note = _check_installs(vset, work, image=image)
            doc.update(installable=ok, note=note, seconds=round(time.monotonic() - started, 1))
            (work / "manifest.json").write_text(json.dumps(doc, indent=2) + "\n")
            shutil.rmtree(target, ignore_errors=True)
            work.replace(target)
            log.info("%s set: %d .debs, %.0f MB, rocminfo %s, installs on %s: %s (%.0f s)", vset.suite,
                     len(doc["versions"]), sum(p.stat().st_size for p in target.glob("*.deb")) / 1e6,
                     doc["rocm_version"], CODENAME, ok, time.monotonic() - started)
    doc = json.loads(manifest.read_text())
    return DebSet(directory=target, suite=vset.suite, rocm_version=doc["rocm_version"],
                  versions=tuple((k, v) for k, v in sorted(doc["versions"].items())),
                  installable=bool(doc["installable"]), note=doc["note"])


def _download(vset: VersionSet, out: Path, *, image: str, debian_mirror: str) -> None:
    if vset.suite == CODENAME:
        update = "apt-get -q update"
        wanted = " ".join(vset.packages)
    else:
        # The machine's mirror is a dated snapshot, so sid's Release reads as expired. This option
        # is for building the lab mirror only; no role may ever use it.
        update = (f"echo 'deb {debian_mirror} {vset.suite} main' > /etc/apt/sources.list.d/{vset.suite}.list"
                  " && apt-get -q -o Acquire::Check-Valid-Until=false update")
        wanted = f"-t {CODENAME} " + " ".join(f"{p}/{vset.suite}" for p in vset.packages)
    script = (f"set -e; {update}; apt-cache policy {' '.join(vset.packages)} > /out/policy.txt; "
              f"apt-get -y -q install --download-only -o Dir::Cache::archives=/out/ {wanted}")
    log.info("downloading the %s ROCm set with apt in a throwaway container", vset.suite)
    proc = _throwaway(f"rocm-fleet-mirror-dl-{vset.suite}", ["--network=host", "-v", f"{out}:/out"],
                      image, script, timeout_s=DOWNLOAD_TIMEOUT_S, what="apt download")
    (out / "download.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not any(out.glob("*.deb")):
        raise LabError(f"downloading the {vset.suite} ROCm packages ({' '.join(vset.packages)}) failed "
                       f"(rc {proc.returncode}): {_proc.tail(proc.stdout + proc.stderr, 10)}")


def deb_fields(deb: Path) -> tuple[str, str]:
    out = _proc.run(["dpkg-deb", "--show", "--showformat=${Package}\t${Version}", str(deb)], timeout_s=60)
    name, version = out.stdout.split("\t")
    return name, version.strip()


def upstream_version(debian_version: str) -> str:
    """'6.1.2-2' -> '6.1.2'; '1:2.0+dfsg-3' -> '2.0' (no epoch, no revision, no repack suffix)."""
    v = debian_version.split(":", 1)[-1]
    v = v.rsplit("-", 1)[0] if "-" in v else v
    return re.split(r"[+~]", v, maxsplit=1)[0]


def _describe(vset: VersionSet, work: Path) -> dict:
    versions = dict(deb_fields(deb) for deb in sorted(work.glob("*.deb")))
    if "rocminfo" not in versions:
        raise LabError(f"the {vset.suite} download has no rocminfo .deb; see {work / 'download.log'}")
    found = upstream_version(versions["rocminfo"])
    if found != vset.rocm_version:
        raise LabError(f"{vset.suite}'s rocminfo is {versions['rocminfo']} (upstream {found}), the lab "
                       f"expects {vset.rocm_version}; update VersionSet.rocm_version in {__file__}")
    return {"suite": vset.suite, "packages": list(vset.packages), "rocm_version": found,
            "versions": versions}


def _check_installs(vset: VersionSet, work: Path, *, image: str) -> tuple[bool, str]:
    """Install the whole set on a fresh trixie container with no apt sources at all."""
    probe = "rocminfo 2>&1 | head -n 3; hipcc --version 2>&1 | head -n 2" if "hipcc" in vset.packages \
        else "rocminfo 2>&1 | head -n 3; rocm-smi --version 2>&1 | head -n 2"
    script = ("set -e; rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*; "
              "apt-get -y -q install /debs/*.deb; " + probe)
    proc = _throwaway(f"rocm-fleet-mirror-check-{vset.suite}", ["--network=none", "-v", f"{work}:/debs:ro"],
                      image, script, timeout_s=VERIFY_TIMEOUT_S, what="install check")
    (work / "install-check.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        return False, f"apt-get install of the set failed: {_proc.tail(proc.stdout + proc.stderr, 6)}"
    return True, _proc.tail(proc.stdout, 5)


def _throwaway(name: str, options: list[str], image: str, script: str, *, timeout_s: float,
               what: str) -> subprocess.CompletedProcess[str]:
    """`podman run --rm` a bash script; the container is removed by name also after a timeout."""
    podman(["rm", "--force", "--ignore", name], timeout_s=60)
    try:
        return podman(["run", "--rm", "--name", name, "--label", f"{LABEL}={BUILD_LABEL}",
                       "-e", "DEBIAN_FRONTEND=noninteractive", *options, image, "bash", "-c", script],
                      timeout_s=timeout_s, check=False, what=what)
    finally:
        podman(["rm", "--force", "--ignore", name], timeout_s=60, check=False)


# ---------------------------------------------------------------- publish + sign
def publish(sets: list[DebSet], root: Path, gnupg: Path, *, lab: str) -> str:
    """Lay out and sign every set under root; return the signing key's fingerprint."""
    shutil.rmtree(root, ignore_errors=True)
    fingerprint = _new_key(gnupg, lab)
    try:
        for debs in sets:
            base = root / "rocm" / "apt" / debs.rocm_version
            pool = base / "pool" / "main"
            pool.mkdir(parents=True)
            for deb in sorted(debs.directory.glob("*.deb")):
                _link(deb, pool / deb.name)
            binary = base / "dists" / CODENAME / "main" / "binary-amd64"
            binary.mkdir(parents=True)
            cached = debs.directory / "Packages.pool-main"  # the index depends on the .debs only
            if not cached.exists():
                index = _proc.run(["apt-ftparchive", "packages", "pool/main"], cwd=base, timeout_s=300).stdout
                cached.with_suffix(".tmp").write_text(index)
                cached.with_suffix(".tmp").replace(cached)
            packages = cached.read_text()
            (binary / "Packages").write_text(packages)
            (binary / "Packages.gz").write_bytes(gzip.compress(packages.encode(), compresslevel=9, mtime=0))
            dist = base / "dists" / CODENAME
            release = _proc.run(["apt-ftparchive",
                                 "-o", f"APT::FTPArchive::Release::Origin={ORIGIN}",
                                 "-o", f"APT::FTPArchive::Release::Label={ORIGIN}",
                                 "-o", f"APT::FTPArchive::Release::Suite={CODENAME}",
                                 "-o", f"APT::FTPArchive::Release::Codename={CODENAME}",
                                 "-o", f"APT::FTPArchive::Release::Version={debs.rocm_version}",
                                 "-o", "APT::FTPArchive::Release::Architectures=amd64",
                                 "-o", "APT::FTPArchive::Release::Components=main",
                                 "-o", "APT::FTPArchive::Release::Description="
                                       f"rocm-fleet lab: Debian {debs.suite} ROCm {debs.rocm_version}",
                                 "release", "."], cwd=dist, timeout_s=120).stdout
            (dist / "Release").write_text(release)
            _gpg(gnupg, ["--clearsign", "--output", str(dist / "InRelease"), str(dist / "Release")])
            _gpg(gnupg, ["--detach-sign", "--armor", "--output", str(dist / "Release.gpg"),
                         str(dist / "Release")])
        key = _gpg(gnupg, ["--armor", "--export", fingerprint]).stdout
        (root / "rocm" / "rocm.gpg.key").write_text(key)
    finally:
        _proc.run(["gpgconf", "--homedir", str(gnupg), "--kill", "all"], timeout_s=30, check=False)
    return fingerprint


def _link(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:  # another filesystem
        shutil.copy2(src, dest)


def _gpg(gnupg: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return _proc.run(["gpg", "--homedir", str(gnupg), "--batch", "--yes", "--pinentry-mode", "loopback",
                      "--passphrase", "", "--personal-digest-preferences", "SHA512",
                      "--digest-algo", "SHA512", *args], timeout_s=120, what="gpg")


def _new_key(gnupg: Path, lab: str) -> str:
    """A fresh RSA 3072 signing key in a throwaway GNUPGHOME; returns its fingerprint."""
    if gnupg.exists():
        _proc.run(["gpgconf", "--homedir", str(gnupg), "--kill", "all"], timeout_s=30, check=False)
        shutil.rmtree(gnupg)
    gnupg.mkdir(parents=True, mode=0o700)
    _gpg(gnupg, ["--quick-generate-key", f"rocm-fleet lab mirror ({lab}) <lab-mirror@rocm-fleet.invalid>",
                 "rsa3072", "sign", "never"])
    return fingerprints(_gpg(gnupg, ["--with-colons", "--list-secret-keys"]).stdout)[0]


def fingerprints(colons: str) -> tuple[str, ...]:
    """Primary key fingerprints from `gpg --with-colons` output (40 hex, upper case)."""
    found: list[str] = []
    expect = False
    for line in colons.splitlines():
        fields = line.split(":")
        if fields[0] in ("pub", "sec"):
            expect = True
        elif fields[0] == "fpr" and expect:
            found.append(fields[9].upper())
            expect = False
    if not found:
        raise LabError("gpg listed no key fingerprint")
    return tuple(found)


# ---------------------------------------------------------------- serve
def start_server(root: Path, state_dir: Path, *, port: int = 0,
                 lifetime_s: float = DEFAULT_LIFETIME_S, timeout_s: float = 30) -> tuple[int, int]:
    """Start the HTTP server in the background; return (pid, port) once it answers."""
    stop_server(state_dir)
    port_file = state_dir / "mirror.port"
    port_file.unlink(missing_ok=True)
    log_path = state_dir / "mirror.log"
    argv = [sys.executable, "-m", "validation.lab.serve", "--root", str(root), "--port", str(port),
            "--port-file", str(port_file), "--lifetime-s", str(lifetime_s)]
    # posix_spawn, not Popen: the server outlives this process (`lab up` returns), so no Popen
    # object should be left to complain; its own session keeps it out of our signals.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                                     os.environ.get("PYTHONPATH")]))}
    pid = os.posix_spawn(sys.executable, argv, env,
                         file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                       (os.POSIX_SPAWN_OPEN, 1, str(log_path),
                                        os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
                                       (os.POSIX_SPAWN_DUP2, 1, 2)],
                         setsid=True)
    (state_dir / "mirror.pid").write_text(f"{pid}\n")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            raise LabError(f"the lab mirror server exited at once (status {status}): "
                           f"{_proc.tail(log_path.read_text(errors='replace'), 6)}")
        if port_file.exists():
            return pid, int(port_file.read_text())
        time.sleep(0.2)
    stop_server(state_dir)
    raise LabError(f"the lab mirror server did not start listening within {timeout_s:.0f} s; see {log_path}")


def _is_our_server(pid: int, state_dir: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"validation.lab.serve" in cmdline and any(str(state_dir).encode() in a for a in cmdline)


def stop_server(state_dir: Path, *, timeout_s: float = 10) -> bool:
    """Stop the server named by the pid file, if it is still ours; True when one was stopped."""
    pid_file = state_dir / "mirror.pid"
    try:
        pid = int(pid_file.read_text())
    except (OSError, ValueError):
        return False
    stopped = False
    if _is_our_server(pid, state_dir):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _is_our_server(pid, state_dir) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)
        if _is_our_server(pid, state_dir):
            os.kill(pid, signal.SIGKILL)
        _reap(pid)
        stopped = True
    pid_file.unlink(missing_ok=True)
    (state_dir / "mirror.port").unlink(missing_ok=True)
    return stopped


def server_pid(state_dir: Path) -> int | None:
    try:
        pid = int((state_dir / "mirror.pid").read_text())
    except (OSError, ValueError):
        return None
    return pid if _is_our_server(pid, state_dir) else None


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
