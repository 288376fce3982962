"""The lab as one object: `Lab(...).up()` builds what is missing and starts hosts + mirror;
`down()` removes exactly what carries this lab's label. Also a context manager."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType

from validation.errors import LabError
from validation.lab import _proc, hosts, inventory, mirror, paths
from validation.lab.image import Recipe, default_recipe, ensure_image
from validation.lab.inventory import HostPlan, MirrorFacts
from validation.lab.paths import REPO_ROOT, default_inventory_path, default_lab_name, default_state_dir
from validation.lab.podman import containers, lab_labels, podman, remove, require_podman
from validation.lab.serve import DEFAULT_LIFETIME_S

log = logging.getLogger(__name__)

DEFAULT_HOSTS = 2
DEFAULT_PORT_BASE = 2220  # where the search for free SSH ports starts when no --port-base is given


@dataclass(frozen=True, slots=True, kw_only=True)
class LabHost:
    name: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LabInfo:
    name: str
    hosts: tuple[LabHost, ...]
    inventory: Path
    key: Path                 # private key; root's authorized key on every host
    known_hosts: Path         # one line per host, from host keys made by the lab
    image: str
    state_dir: Path
    mirror: mirror.MirrorInfo | None
    timings_s: tuple[tuple[str, float], ...]  # (step, seconds) of the up() that made this


class Lab:
    """A named set of lab hosts (and optionally the package mirror) on 127.0.0.1."""

    def __init__(self, name: str | None = None, hosts: int = DEFAULT_HOSTS, *, mirror: bool = True,
                 port_base: int | None = None, state_dir: Path | None = None,
                 inventory_path: Path | None = None, mirror_port: int | None = None,
                 mirror_lifetime_s: float = DEFAULT_LIFETIME_S, recipe: Recipe | None = None,
                 version_sets: Sequence[mirror.VersionSet] = mirror.DEFAULT_SETS,
                 checkout: Path = REPO_ROOT) -> None:
        """name: default rflab-<checkout key>; port_base: None picks free ports (host i: base + i);
        mirror_port: None or 0 picks a free port; checkout: whose lab this is (labels every host)."""
        self.name = inventory.check_name(name or default_lab_name(root=checkout))
        self.host_count = hosts
        self.with_mirror = mirror
        self.port_base = port_base
        self.owner = str(checkout.resolve())
        self.state_dir = state_dir or default_state_dir(self.name)
        self.inventory_path = inventory_path or default_inventory_path()
        self.mirror_port = mirror_port
        self.mirror_lifetime_s = mirror_lifetime_s
        self.recipe = recipe
        self.version_sets = tuple(version_sets)
        self.info: LabInfo | None = None

    # ------------------------------------------------------------ lifecycle
    def up(self) -> LabInfo:
        """Start the lab (replacing a previous run of the same name from this checkout) and return
        what it made. A lab of the same name that another checkout started is refused, never replaced."""
        require_podman()
        self._refuse_foreign_inventory()
        self._refuse_foreign_lab()
        if containers(self.name) or mirror.server_pid(self.state_dir):
            log.info("lab %s is already up; replacing it", self.name)
            self.down()
        if self.port_base is not None:   # an explicit base: refuse busy ports before building anything
            inventory.plan_hosts(self.name, self.host_count, self.port_base, hosts.port_is_free)
        timings: list[tuple[str, float]] = []
        clock = time.monotonic()

        def lap(step: str) -> None:
            nonlocal clock
            now = time.monotonic()
            timings.append((step, round(now - clock, 1)))
            clock = now

        recipe = self.recipe or default_recipe()
        image = ensure_image(recipe)
        lap("image")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        key = hosts.ensure_client_key(self.state_dir)
        known_hosts = self.state_dir / "known_hosts"
        try:
            # One lab at a time between choosing ports and holding them with labelled containers, so
            # two labs started at once (two checkouts, two CI jobs) never pick the same ports.
            with paths.locked(paths.cache_dir() / "ports.lock"):
                plan = self._plan()
                lines = [hosts.create(self.name, h, image=image, state_dir=self.state_dir, client_key=key,
                                      owner=self.owner) for h in plan]
            known_hosts.write_text("\n".join(lines) + "\n")
            lap("hosts_started")
            mirror_info = self._start_mirror(image, recipe) if self.with_mirror else None  # while hosts boot
            lap("mirror")
            for h in plan:
                hosts.wait_ready(h.name, h.port)
                self._check_ssh(h, key, known_hosts)
            lap("hosts_ready")
            facts = None if mirror_info is None else MirrorFacts(
                url=mirror_info.url, key_url=mirror_info.key_url,
                key_fingerprints=mirror_info.key_fingerprints, allow_http=mirror_info.allow_http)
            inventory.write(self.inventory_path, self.name,
                            inventory.render(self.name, plan, key_path=key, known_hosts=known_hosts,
                                             mirror=facts))
        except BaseException:
            log.warning("lab %s failed to come up; removing what it started", self.name)
            try:
                self.down()
            except Exception:  # keep the original error; this one is only logged
                log.exception("removing lab %s after the failed start also failed", self.name)
            raise
        self.info = LabInfo(name=self.name, hosts=tuple(LabHost(name=h.name, port=h.port) for h in plan),
                            inventory=self.inventory_path, key=key, known_hosts=known_hosts, image=image,
                            state_dir=self.state_dir, mirror=mirror_info, timings_s=tuple(timings))
        (self.state_dir / "lab.json").write_text(json.dumps(_jsonable(asdict(self.info)), indent=2) + "\n")
        return self.info

    def down(self) -> list[str]:
        """Remove this lab's containers (by label, then by name), stop its mirror, drop its inventory.

        Idempotent; the cached image, the .deb cache and the SSH key stay. Returns what it removed.
        """
        labels = lab_labels(self.name)
        names = sorted(n for n, lab in labels.items() if lab["owner"] in (self.owner, ""))
        foreign = sorted(set(labels) - set(names))
        if foreign:
            log.warning("lab %s: leaving %s alone: started from another checkout (%s)", self.name,
                        ", ".join(foreign), labels[foreign[0]]["owner"])
        remove(names)
        mirror.stop_server(self.state_dir)
        if inventory.owner(self.inventory_path) == self.name:
            self.inventory_path.unlink()
        for leftover in ("lab.json", "known_hosts"):
            (self.state_dir / leftover).unlink(missing_ok=True)
        shutil.rmtree(self.state_dir / "mirror", ignore_errors=True)  # hard links into the .deb cache
        shutil.rmtree(self.state_dir / "gnupg", ignore_errors=True)   # the per-run signing key
        self.info = None
        if names:
            log.info("lab %s: removed %s", self.name, ", ".join(names))
        return names

    def status(self) -> dict:
        out = podman(["ps", "-a", "--filter", f"label=rocm-fleet.lab={self.name}",
                      "--format", "{{.Names}}\t{{.State}}"], timeout_s=30)
        states = dict(line.split("\t", 1) for line in out.stdout.splitlines() if "\t" in line)
        pid = mirror.server_pid(self.state_dir)
        port_file = self.state_dir / "mirror.port"
        return {
            "name": self.name,
            "hosts": dict(sorted(states.items())),
            "mirror_url": f"http://127.0.0.1:{port_file.read_text().strip()}" if pid and port_file.exists()
            else None,
            "mirror_pid": pid,
            "inventory": str(self.inventory_path) if inventory.owner(self.inventory_path) == self.name
            else None,
        }

    def __enter__(self) -> Lab:
        self.up()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.down()

    # ------------------------------------------------------------ host helpers
    def run(self, host: str, argv: Sequence[str], *,
            timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
        """Run argv inside host with `podman exec`; any exit code is returned, not raised."""
        return hosts.exec_in(self._host(host).name, argv, timeout_s=timeout_s)

    def ssh(self, host: str, argv: Sequence[str], *,
            timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        """Run argv on host over SSH (127.0.0.1, lab key, strict host key checking)."""
        h, info = self._host(host), self._require_info()
        return _proc.run(hosts.ssh_argv(h.port, info.key, info.known_hosts, argv), timeout_s=timeout_s,
                         check=False, what=f"ssh {h.name}")

    def restart(self, host: str) -> None:
        """Reboot the host the container way (systemd stops, the container starts again); wait for sshd."""
        h = self._host(host)
        podman(["restart", "--time", "20", h.name], timeout_s=120)
        hosts.wait_ready(h.name, h.port)

    def stop(self, host: str) -> None:
        podman(["stop", "--time", "20", self._host(host).name], timeout_s=120)

    def start(self, host: str) -> None:
        h = self._host(host)
        podman(["start", h.name], timeout_s=120)
        hosts.wait_ready(h.name, h.port)

    # ------------------------------------------------------------ internals
    def _require_info(self) -> LabInfo:
        if self.info is None:
            raise LabError(f"lab {self.name} is not up in this process; call up() first")
        return self.info

    def _host(self, host: str) -> LabHost:
        info = self._require_info()
        for h in info.hosts:
            if host in (h.name, str(h.port)):
                return h
        raise LabError(f"{host!r} is not a host of lab {self.name}; hosts: "
                       f"{', '.join(h.name for h in info.hosts)}")

    def _plan(self) -> tuple[HostPlan, ...]:
        """Host names and SSH ports: the given base, or the first free one from DEFAULT_PORT_BASE. A port
        is free when nothing listens on it and no other lab's host (even a stopped one) claims it."""
        claimed = {int(lab["port"]) for lab in lab_labels().values() if lab["port"].isdigit()}

        def free(port: int) -> bool:
            return port not in claimed and hosts.port_is_free(port)

        base = self.port_base
        if base is None:
            base = inventory.choose_port_base(self.host_count, free, start=DEFAULT_PORT_BASE)
        return inventory.plan_hosts(self.name, self.host_count, base, free)

    def _refuse_foreign_lab(self) -> None:
        """A lab of this name that another checkout (or an older rocm-fleet) started is left alone."""
        labels = lab_labels(self.name)
        foreign = {n: lab["owner"] for n, lab in labels.items() if lab["owner"] != self.owner}
        if not foreign:
            return
        owner = foreign[min(foreign)]
        whose = (f"from another checkout ({owner})" if owner
                 else "by an rocm-fleet that did not record its checkout")
        raise LabError(f"lab {self.name} is up, started {whose}: {', '.join(sorted(foreign))}; it is left alone. "
                       f"Choose another --name, or bring it down from its checkout (`rocm-fleet lab down --name "
                       f"{self.name}`{'' if owner else ', which removes it from here too'})")

    def _refuse_foreign_inventory(self) -> None:
        other = inventory.owner(self.inventory_path)
        if other and other != self.name and containers(other):
            raise LabError(f"{self.inventory_path} belongs to lab {other!r}, which is up; bring it down "
                           f"(`rocm-fleet lab down --name {other}`) or give this lab another inventory path")

    def _start_mirror(self, image: str, recipe: Recipe) -> mirror.MirrorInfo:
        sets = []
        for vset in self.version_sets:
            debs = mirror.ensure_debs(vset, image=image, debian_mirror=recipe.mirror)
            if debs.installable:
                sets.append(debs)
            elif vset.required:
                raise LabError(f"the {vset.suite} ROCm set does not install on a {mirror.CODENAME} host: "
                               f"{debs.note}; see {debs.directory / 'install-check.log'} "
                               f"(delete {debs.directory} to build the set again)")
            else:
                log.warning("skipping the %s ROCm set (%s): it does not install on %s: %s", vset.suite,
                            debs.rocm_version, mirror.CODENAME, debs.note)
        root = self.state_dir / "mirror" / "www"
        fingerprint = mirror.publish(sets, root, self.state_dir / "gnupg", lab=self.name)
        # No fixed default port: the server binds a free one itself, so two labs never race for it.
        pid, port = mirror.start_server(root, self.state_dir, port=self.mirror_port or 0,
                                        lifetime_s=self.mirror_lifetime_s)
        url = f"http://127.0.0.1:{port}"
        return mirror.MirrorInfo(url=url, key_url=f"{url}/rocm/rocm.gpg.key", key_fingerprints=(fingerprint,),
                                 versions=tuple(d.rocm_version for d in sets), root=root, port=port, pid=pid)

    def _check_ssh(self, h: HostPlan, key: Path, known_hosts: Path) -> None:
        out = _proc.run(hosts.ssh_argv(h.port, key, known_hosts, ["true"]), timeout_s=60, check=False,
                        what=f"ssh {h.name}")
        if out.returncode != 0:
            raise LabError(f"lab host {h.name} answers on 127.0.0.1:{h.port} but SSH with the lab key and "
                           f"strict host key checking failed: {_proc.tail(out.stderr)}")


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
