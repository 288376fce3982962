"""Lab hosts: systemd + sshd containers on the machine's network, sshd on 127.0.0.1:<port> only.

Each host gets its own ed25519 host key, generated here before it starts, so the known_hosts
file is written from keys we made (no trust-on-first-use) and SSH runs with strict checking.
"""

from __future__ import annotations

import io
import logging
import socket
import subprocess
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path

from validation.errors import LabError
from validation.lab import _proc
from validation.lab.inventory import HostPlan
from validation.lab.podman import LABEL, OWNER_LABEL, PORT_LABEL, lab_labels, label_of, podman

log = logging.getLogger(__name__)

BOOT_TIMEOUT_S = 180
SSHD_DROPIN = "/etc/ssh/sshd_config.d/10-rocm-fleet-lab.conf"
# Says "this node is a lab host" to the suite (recorded as provenance lab_host): its device checks
# are expected to fail, because no lab host has a GPU.
LAB_MARKER = "/etc/rocm-fleet-lab"


def ensure_client_key(state_dir: Path) -> Path:
    """The lab's SSH client key (ed25519, no passphrase), made once per state dir."""
    key = state_dir / "id_ed25519"
    if not key.exists():
        state_dir.mkdir(parents=True, exist_ok=True)
        _proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"rocm-fleet-lab@{state_dir.name}",
                   "-f", str(key)], timeout_s=30)
    return key


def _host_key(state_dir: Path, host: str) -> Path:
    key = state_dir / "hostkeys" / host / "ssh_host_ed25519_key"
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        _proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"root@{host}", "-f", str(key)],
                  timeout_s=30)
    return key


def known_hosts_line(port: int, pubkey_text: str) -> str:
    kind, blob = pubkey_text.split()[:2]
    return f"[127.0.0.1]:{port} {kind} {blob}"


def sshd_dropin(port: int) -> str:
    return (f"# rocm-fleet lab: sshd on loopback only\nPort {port}\nListenAddress 127.0.0.1\n"
            "HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\n")


def create(lab: str, plan: HostPlan, *, image: str, state_dir: Path, client_key: Path, owner: str) -> str:
    """Create and start one host of `owner`'s lab (a checkout path); return its known_hosts line.
    Does not wait for boot."""
    existing = label_of(plan.name)
    if existing is not None or podman(["container", "exists", plan.name], check=False,
                                      timeout_s=30).returncode == 0:
        if existing != lab:
            raise LabError(f"a container named {plan.name} exists and is not part of lab {lab!r} "
                           f"(label {LABEL}={existing}); remove it yourself or choose another --name")
        other = lab_labels(lab).get(plan.name, {}).get("owner", "")
        if other not in ("", owner):
            raise LabError(f"{plan.name} belongs to lab {lab!r} of another checkout ({other}); it is left alone. "
                           "Choose another --name")
        podman(["rm", "--force", "--time", "0", plan.name], timeout_s=120)
    host_key = _host_key(state_dir, plan.name)
    # --restart=always: a reboot inside the host (systemd exits) starts the container again.
    podman(["create", "--privileged", "--systemd=always", "--network=host", "--restart=always",
            "--name", plan.name, "--hostname", plan.name,
            "--label", f"{LABEL}={lab}", "--label", f"{PORT_LABEL}={plan.port}", "--label", f"{OWNER_LABEL}={owner}",
            image],
           timeout_s=120)
    files = {
        SSHD_DROPIN: (sshd_dropin(plan.port).encode(), 0o644),
        "/etc/ssh/ssh_host_ed25519_key": (host_key.read_bytes(), 0o600),
        "/etc/ssh/ssh_host_ed25519_key.pub": (host_key.with_suffix(".pub").read_bytes(), 0o644),
        "/root/.ssh/authorized_keys": (client_key.with_suffix(".pub").read_bytes(), 0o600),
        LAB_MARKER: (f"{lab}\n".encode(), 0o644),
    }
    podman(["cp", "-", f"{plan.name}:/"], input_bytes=_tar(files, dirs={"/root/.ssh": 0o700}), timeout_s=60,
           what="podman cp (sshd drop-in, host key, authorized_keys)")
    podman(["start", plan.name], timeout_s=120)
    return known_hosts_line(plan.port, host_key.with_suffix(".pub").read_text())


def _tar(files: dict[str, tuple[bytes, int]], *, dirs: dict[str, int]) -> bytes:
    """A tar of root-owned files (path -> (content, mode)) and dirs, for one `podman cp -`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, mode in dirs.items():
            info = tarfile.TarInfo(path.lstrip("/"))
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, int(time.time())
            tar.addfile(info)
        for path, (data, mode) in files.items():
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def wait_ready(name: str, port: int, *, timeout_s: float = BOOT_TIMEOUT_S) -> str:
    """Wait until systemd says running|degraded and sshd answers on 127.0.0.1:port; return the state."""
    deadline = time.monotonic() + timeout_s
    state = "unknown"
    while time.monotonic() < deadline:
        out = podman(["exec", name, "systemctl", "is-system-running"], check=False, timeout_s=30)
        state = out.stdout.strip() or out.stderr.strip()
        if state in ("running", "degraded") and _sshd_banner(port):
            return state
        if state == "offline" or "is not running" in state:
            break
        time.sleep(1)
    detail = podman(["logs", "--tail", "15", name], check=False, timeout_s=30)
    raise LabError(f"lab host {name} not ready after {timeout_s:.0f} s (systemd: {state!r}, "
                   f"sshd on 127.0.0.1:{port}: {'up' if _sshd_banner(port) else 'not answering'}); "
                   f"container log: {_proc.tail(detail.stdout + detail.stderr, 6)}")


def _sshd_banner(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            return sock.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ssh_argv(port: int, key: Path, known_hosts: Path, argv: Sequence[str]) -> list[str]:
    """argv for `ssh` to a lab host with the lab key and strict host key checking."""
    return ["ssh", "-i", str(key), "-p", str(port), "-o", f"UserKnownHostsFile={known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", "ConnectTimeout=10", "root@127.0.0.1", "--", *argv]


def exec_in(name: str, argv: Sequence[str], *, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    """Run argv inside a lab host (podman exec); the result is returned whatever the exit code."""
    return podman(["exec", name, *argv], check=False, timeout_s=timeout_s, what=f"exec on {name}")
