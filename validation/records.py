"""Typed records shared by every layer.

Records are frozen, slotted and keyword-only; sequences are tuples. Units live in field names
(`gb_s` is decimal GB/s = 10^9 bytes/s, `mib` is 2^20 bytes). `None` means "the tool did not
report it", never zero.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass
from typing import Any


class Status(enum.StrEnum):
    """Outcome of one judgement. TIMEOUT is never folded into FAIL."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    TIMEOUT = "timeout"
    ERROR = "error"
    SKIP = "skip"


# Worst first: the status of a group is the worst of its members.
STATUS_ORDER = (Status.ERROR, Status.TIMEOUT, Status.FAIL, Status.WARN, Status.PASS, Status.SKIP)
# The statuses that fail a check, a node or a run (Status is a str enum: "fail" in FAILING holds).
FAILING = (Status.ERROR, Status.TIMEOUT, Status.FAIL)


def worst(statuses: list[Status] | tuple[Status, ...]) -> Status:
    """The most severe status of a group; PASS for an empty group is not allowed."""
    if not statuses:
        raise ValueError("worst() of no statuses: a group without verdicts has no status")
    return min(statuses, key=STATUS_ORDER.index)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkBandwidth:
    """One directed transfer measurement between two endpoints ("cpu0", "gpu3")."""

    src: str
    dst: str
    gb_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProcess:
    """One process holding a GPU, as a process view lists it (nvidia-smi, amd-smi process, rocm-smi
    --showpids). `gpu` is the tool's GPU index where it prints one; `bus_id` where it prints that."""

    pid: int
    name: str | None = None
    gpu: int | None = None
    bus_id: str | None = None
    vram_mib: float | None = None
    device: str | None = None          # the device file it holds open (/dev/kfd, /dev/dri/renderD128)
    gpu_uuid: str | None = None        # nvidia-smi --query-compute-apps rows keyed by the GPU's UUID


def to_jsonable(obj: Any) -> Any:
    """Turn records (dataclasses, enums, tuples) into plain JSON-compatible values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


_BUS = re.compile(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")


def normalize_bus_id(raw: str | None) -> str | None:
    """'00000000:04:00.0' / '0000:04:00.0' -> '0000:04:00.0' (lower case); None if unreadable."""
    m = _BUS.search(raw or "")
    if m is None:
        return None
    return f"{int(m.group(1), 16):04x}:{m.group(2).lower()}:{m.group(3).lower()}.{m.group(4)}"
