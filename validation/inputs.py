"""Read a saved tool output (or results document) with a size limit, so no input can take unbounded
time or memory: a regular file over the limit is refused before it is read, anything else (a pipe,
stdin, /dev/zero) is read in chunks and refused as soon as it passes the limit.

The limit is `--max-input-mb` where a command offers it, else the environment variable
ROCM_FLEET_MAX_INPUT_MB, else DEFAULT_MAX_INPUT_MB. Real outputs are kilobytes to a few megabytes
(the largest fixture is rocm-smi -a at about 40 KB; an NCCL_DEBUG=INFO rccl-tests log of a long
sweep is a few MB), so 64 MiB leaves room without letting a runaway log through.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from validation.errors import RocmFleetError

DEFAULT_MAX_INPUT_MB = 64
ENV_VARIABLE = "ROCM_FLEET_MAX_INPUT_MB"
_CHUNK = 1 << 20


class InputTooLargeError(RocmFleetError):
    """An input is larger than the configured limit."""


def limit_bytes(max_input_mb: float | None = None) -> int:
    """The limit in bytes: the option, else the environment variable, else the default."""
    if max_input_mb is None:
        raw = os.environ.get(ENV_VARIABLE)
        if raw:
            try:
                max_input_mb = float(raw)
            except ValueError:
                raise RocmFleetError(f"{ENV_VARIABLE}={raw!r} is not a number of MiB; "
                                     f"set it to e.g. {DEFAULT_MAX_INPUT_MB}") from None
        else:
            max_input_mb = DEFAULT_MAX_INPUT_MB
    if not max_input_mb > 0:
        raise RocmFleetError(f"the input limit must be a positive number of MiB, got {max_input_mb}")
    return int(max_input_mb * (1 << 20))


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def _too_large(name: str, size: str, limit: int) -> InputTooLargeError:
    return InputTooLargeError(
        f"{name}: {size}, more than the input limit of {round(limit / (1 << 20), 3):g} MiB; a single tool output "
        f"is far smaller, so this is probably several runs or a runaway log: split it, or raise the limit with "
        f"--max-input-mb or {ENV_VARIABLE}")


def read_bytes(path: Path | str, limit: int) -> bytes:
    """The bytes of `path` ('-' = stdin), refusing anything over `limit` bytes."""
    name = str(path)
    if name == "-":
        return _read_capped(sys.stdin.buffer, name, limit)
    target = Path(name)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise RocmFleetError(f"{name}: no such file; check the path") from None
    except OSError as exc:
        raise RocmFleetError(f"{name}: cannot read it ({exc.strerror or exc})") from exc
    if stat.S_ISDIR(info.st_mode):
        raise RocmFleetError(f"{name} is a directory; pass a saved tool output file")
    if stat.S_ISREG(info.st_mode) and info.st_size > limit:
        raise _too_large(name, _size(info.st_size), limit)
    try:
        with target.open("rb") as handle:
            return _read_capped(handle, name, limit)
    except OSError as exc:
        raise RocmFleetError(f"{name}: cannot read it ({exc.strerror or exc})") from exc


def read_text(path: Path | str, limit: int) -> str:
    """`read_bytes` decoded as UTF-8; undecodable bytes become U+FFFD, so the parser names the line."""
    return read_bytes(path, limit).decode("utf-8", errors="replace")


def _read_capped(handle: object, name: str, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = handle.read(min(_CHUNK, limit + 1 - total))  # type: ignore[attr-defined]
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise _too_large(name, "it does not end within the limit", limit)
