"""Partition-mode names: "CPX/NPS4" = compute partition / memory partition.

Tools print the pair in different orders and separators (rocm-smi: "NPS1, SPX"; RVS directories:
"NPS4/CPX"), so every spelling is folded to one canonical "COMPUTE/MEMORY" form.
"""

from __future__ import annotations

import re

from validation.errors import TargetError

COMPUTE_MODES = ("SPX", "DPX", "TPX", "QPX", "CPX")
MEMORY_MODES = ("NPS1", "NPS2", "NPS4", "NPS8")

_SPLIT = re.compile(r"[\s/,;:+_-]+")


def split_partition(text: str) -> tuple[str | None, str | None]:
    """("CPX", "NPS4") from any spelling; either part may be absent. Unknown tokens raise."""
    compute: str | None = None
    memory: str | None = None
    for token in (t for t in _SPLIT.split(text.strip().upper()) if t):
        if token in COMPUTE_MODES and compute is None:
            compute = token
        elif token in MEMORY_MODES and memory is None:
            memory = token
        else:
            raise TargetError(
                f"partition {text!r}: cannot read {token!r}; expected one compute mode of "
                f"{'/'.join(COMPUTE_MODES)} and one memory mode of {'/'.join(MEMORY_MODES)}, "
                "e.g. 'CPX/NPS4'")
    if compute is None and memory is None:
        raise TargetError(f"partition {text!r} is empty; write it as COMPUTE/MEMORY, e.g. 'SPX/NPS1'")
    return compute, memory


def normalize_partition(text: str) -> str:
    """Canonical "COMPUTE/MEMORY"; both parts are required."""
    compute, memory = split_partition(text)
    if compute is None or memory is None:
        raise TargetError(f"partition {text!r} names only one of compute and memory mode; "
                          "write both, e.g. 'CPX/NPS4'")
    return f"{compute}/{memory}"


def matching_modes(modes: tuple[str, ...] | list[str], text: str) -> list[str]:
    """The canonical modes that fit `text`; a missing half ("CPX") matches any value of it."""
    compute, memory = split_partition(text)
    return [m for m in modes
            if (compute is None or m.split("/")[0] == compute)
            and (memory is None or m.split("/")[1] == memory)]
