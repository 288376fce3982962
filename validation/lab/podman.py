"""podman as it works on these machines: runc, cgroupfs, no default ulimits (lab/NOTES.md)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from validation.errors import LabError
from validation.lab import _proc
from validation.lab.paths import cache_dir

LABEL = "rocm-fleet.lab"  # every container the lab creates carries LABEL=<lab name>
OWNER_LABEL = f"{LABEL}.checkout"  # ... and OWNER_LABEL=<the checkout that started it>
PORT_LABEL = f"{LABEL}.port"  # ... and PORT_LABEL=<its SSH port on 127.0.0.1>
CONTAINERS_CONF = '[containers]\ndefault_ulimits = []\n'


def _env() -> dict[str, str]:
    conf = cache_dir() / "containers.conf"
    if not conf.exists() or conf.read_text() != CONTAINERS_CONF:
        conf.write_text(CONTAINERS_CONF)
    return {**os.environ, "CONTAINERS_CONF": str(conf)}


def podman(args: Sequence[str | os.PathLike[str]], *, timeout_s: float = 60, check: bool = True,
           input_bytes: bytes | None = None, what: str = "") -> subprocess.CompletedProcess[str]:
    argv = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", *args]
    return _proc.run(argv, timeout_s=timeout_s, check=check, input_bytes=input_bytes, env=_env(),
                     what=what or f"podman {args[0]}")


def image_exists(ref: str) -> bool:
    return podman(["image", "exists", ref], check=False, timeout_s=30).returncode == 0


def containers(lab: str | None = None) -> list[str]:
    """Names of containers (any state) carrying the lab label; lab=None: every lab's."""
    label = f"label={LABEL}" if lab is None else f"label={LABEL}={lab}"
    out = podman(["ps", "-a", "--filter", label, "--format", "{{.Names}}"], timeout_s=30)
    return sorted(line.strip() for line in out.stdout.splitlines() if line.strip())


def lab_labels(lab: str | None = None) -> dict[str, dict[str, str]]:
    """Container name -> its {owner, port} labels ('' when absent), for one lab or (None) every lab."""
    label = f"label={LABEL}" if lab is None else f"label={LABEL}={lab}"
    fmt = "{{.Names}}\t{{index .Labels \"" + OWNER_LABEL + "\"}}\t{{index .Labels \"" + PORT_LABEL + "\"}}"
    out = podman(["ps", "-a", "--filter", label, "--format", fmt], timeout_s=30)
    found = {}
    for line in out.stdout.splitlines():
        name, owner, port = ([*line.split("\t"), "", ""])[:3]
        if name.strip():
            found[name.strip()] = {"owner": _value(owner), "port": _value(port)}
    return found


def labs_of(owner: str) -> list[str]:
    """The names of the labs with a container (running or not) that the checkout `owner` started, sorted."""
    fmt = "{{index .Labels \"" + LABEL + "\"}}\t{{index .Labels \"" + OWNER_LABEL + "\"}}"
    out = podman(["ps", "-a", "--filter", f"label={LABEL}", "--format", fmt], timeout_s=30)
    return sorted({lab for lab, own in (([*line.split("\t"), ""])[:2] for line in out.stdout.splitlines())
                   if _value(lab) and _value(own) == owner})


def _value(text: str) -> str:
    text = text.strip()
    return "" if text == "<no value>" else text


def label_of(name: str) -> str | None:
    """The lab label of an existing container, None when it has none or does not exist."""
    out = podman(["container", "inspect", "--format", "{{index .Config.Labels \"" + LABEL + "\"}}", name],
                 check=False, timeout_s=30)
    if out.returncode != 0:
        return None
    value = out.stdout.strip()
    return value if value and value != "<no value>" else None


def remove(names: Sequence[str], *, timeout_s: float = 120) -> None:
    if names:
        # --time 0: lab hosts are disposable; no graceful systemd shutdown to wait for
        podman(["rm", "--force", "--time", "0", *names], timeout_s=timeout_s, what="podman rm")


def require_podman() -> None:
    """Fail early, with the install command, when podman or runc is missing."""
    for tool in ("podman", "runc"):
        _proc.run([tool, "--version"], timeout_s=30, what=f"{tool} check")
    if not Path("/sys/fs/cgroup").exists():
        raise LabError("no /sys/fs/cgroup on this machine; lab hosts need cgroups to run systemd")
