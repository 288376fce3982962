"""Hostfiles and node lists for a set of inventory hosts. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence

from validation.multinode.model import ClusterError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _check(nodes: Sequence[str]) -> list[str]:
    names = list(nodes)
    if not names:
        raise ClusterError("no nodes: a hostfile needs at least one node")
    bad = [n for n in names if not _NAME.fullmatch(n)]
    if bad:
        raise ClusterError(f"node names {bad} cannot go into a hostfile; use host names "
                           "(letters, digits, '.', '_', '-')")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ClusterError(f"node(s) {', '.join(dupes)} listed twice")
    return names


def openmpi_hostfile(nodes: Sequence[str], slots: int) -> str:
    """OpenMPI hostfile: one `name slots=N` line per node, in the order given."""
    if slots < 1:
        raise ClusterError(f"slots per node must be >= 1, not {slots}")
    return "".join(f"{name} slots={slots}\n" for name in _check(nodes))


def slurm_nodelist(nodes: Sequence[str]) -> str:
    """Slurm node list for --nodelist / -w: names joined by commas, in the order given."""
    return ",".join(_check(nodes))
