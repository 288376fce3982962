"""Run an external command for the lab: always a timeout, never a shell, errors as LabError."""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from validation.errors import LabError

log = logging.getLogger(__name__)

# What to install when a tool is missing (Debian package names).
INSTALL_HINTS = {
    "podman": "apt-get install podman runc",
    "runc": "apt-get install podman runc",
    "debootstrap": "apt-get install debootstrap",
    "apt-ftparchive": "apt-get install apt-utils",
    "gpg": "apt-get install gnupg",
    "gpgconf": "apt-get install gnupg",
    "ssh": "apt-get install openssh-client",
    "ssh-keygen": "apt-get install openssh-client",
    "tar": "apt-get install tar",
}


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    timeout_s: float,
    check: bool = True,
    input_bytes: bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    what: str = "",
) -> subprocess.CompletedProcess[str]:
    """Run argv with a timeout; raise LabError on a missing tool, a timeout or (with check) rc != 0."""
    args = [os.fspath(a) for a in argv]
    label = what or args[0]
    log.debug("run %s", " ".join(args))
    try:
        proc = subprocess.run(
            args,
            timeout=timeout_s,
            check=False,
            capture_output=True,
            input=input_bytes,
            env=None if env is None else dict(env),
            cwd=cwd,
        )
    except FileNotFoundError as exc:
        tool = Path(args[0]).name
        hint = INSTALL_HINTS.get(tool, f"install {tool}")
        raise LabError(f"{label}: {tool} is not installed; run `{hint}`") from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{label}: `{' '.join(args[:6])}` did not finish within {timeout_s:.0f} s; "
                       f"last output: {tail(exc.stderr or exc.stdout or b'')}") from exc
    out = subprocess.CompletedProcess(args, proc.returncode,
                                      proc.stdout.decode(errors="replace"),
                                      proc.stderr.decode(errors="replace"))
    if check and out.returncode != 0:
        raise LabError(f"{label}: `{' '.join(args[:6])}` exited {out.returncode}: "
                       f"{tail(out.stderr or out.stdout)}")
    return out


def tail(text: str | bytes, lines: int = 8) -> str:
    """The last few non-empty lines of an output, joined for a one-line message."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"
