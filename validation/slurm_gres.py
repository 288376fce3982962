"""What Slurm is told about a node's GPUs: gres.conf and the node's `Gres=gpu:N` in slurm.conf, from the
declared GPU count as the partition mode makes it (validation/spec.py:with_partition_counts). The rules
roles/slurm_gres writes through its filters, and the parser its proof reads `scontrol show node` with.

Slurm's own words (https://slurm.schedmd.com/gres.conf.html, https://slurm.schedmd.com/gres.html):
AutoDetect=rsmi "Automatically detect AMD GPUs. Requires the ROCm System Management Interface (ROCm SMI)
Library" (Debian's slurm-wlm-rsmi-plugin); "the Gres= line in slurm.conf is still required in order to tell
slurmctld how many GRES to expect"; Slurm's rsmi plugin names each AMD GPU by its render node,
`/dev/dri/renderD<minor>`, which is what the explicit lines list. Each partition of a partitioned MI300X
has its own render node (since ROCm 6.4.1, https://rocm.docs.amd.com/projects/amdsmi/en/latest/conceptual/partition.html).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from validation.errors import RocmFleetError

MANAGED = "# Managed by rocm-fleet (roles/slurm_gres). Local changes are overwritten on the next run."
_RENDER = re.compile(r"^/dev/dri/renderD(?P<minor>\d+)$")
_TYPE = re.compile(r"^[A-Za-z0-9_.-]{0,32}$")
_NODE_LINE = re.compile(r"^(?P<indent>\s*)NodeName=(?P<names>\S+)(?P<rest>.*)$", re.I)
_GRES = re.compile(r"\s+Gres=\S+", re.I)
_GRES_TYPES = re.compile(r"^\s*GresTypes=(?P<types>[^\s#]*)\s*(?:#.*)?$", re.I | re.M)
_SHOW_GRES = re.compile(r"(?:^|\s)Gres=(?P<gres>\S+)")
_GPU = re.compile(r"(?:^|,)gpu(?::[A-Za-z0-9_.-]+)?:(?P<count>\d+)(?=\(|,|$)")


def gres_value(count: int, gres_type: str = "") -> str:
    """`gpu:8`, or `gpu:mi300x:64` with a type."""
    if not _TYPE.fullmatch(gres_type):
        raise RocmFleetError(f"slurm_gres_type {gres_type!r}: letters, digits, '.', '_', '-' (at most 32)")
    return f"gpu:{gres_type}:{count}" if gres_type else f"gpu:{count}"


def render_nodes(paths: Iterable[str]) -> list[str]:
    """The node's render nodes in minor order (renderD128 before renderD1000); anything else is dropped."""
    found = [(int(m.group("minor")), p) for p in paths if (m := _RENDER.fullmatch(str(p)))]
    return [p for _, p in sorted(found)]


def gres_conf(files: list[str], detect: str, gres_type: str = "") -> str:
    """gres.conf for one node: `AutoDetect=rsmi` alone, or `AutoDetect=off` and one line per render node."""
    typed = f" Type={gres_type}" if gres_type else ""
    if detect == "rsmi":
        return f"{MANAGED}\nAutoDetect=rsmi\n"
    if detect != "files":
        raise RocmFleetError(f"slurm_gres_detect {detect!r}: files or rsmi")
    return MANAGED + "\nAutoDetect=off\n" + "".join(f"Name=gpu{typed} File={f}\n" for f in files)


def slurm_conf_with_gres(text: str, gres: Mapping[str, str]) -> str:
    """slurm.conf with `Gres=` set on the NodeName line of every node in `gres` (node -> `gpu:N`) and `gpu`
    in GresTypes. A node defined on a line with others (`NodeName=n[1-4]`) is refused: one line would
    give them all one count. Slurm reads a line up to its first '#' ("any text following a '#' ... is
    treated as a comment", slurm.conf(5)): Gres= goes before a comment, and a comment is left as it is."""
    lines, seen = text.splitlines(), set()
    for i, whole in enumerate(lines):
        line, hash_, comment = whole.partition("#")
        m = _NODE_LINE.match(line)
        if not m:
            continue
        names = m.group("names")
        if names not in gres:
            covered = [n for n in gres if n in names.split(",") or ("[" in names and n.startswith(names.split("[")[0]))]
            if covered:
                raise RocmFleetError(f"slurm.conf defines {', '.join(covered)} on one line with other nodes "
                                     f"({names}): give each GPU node its own NodeName line, or set "
                                     "slurm_gres_manage_slurm_conf: false and write Gres= yourself")
            continue
        rest = _GRES.sub("", m.group("rest"))
        if hash_:                     # the comment keeps its place after the settings and the space before it
            code, space = rest.rstrip(), rest[len(rest.rstrip()):] or " "
            lines[i] = f"{m.group('indent')}NodeName={names}{code} Gres={gres[names]}{space}{hash_}{comment}"
        else:
            lines[i] = f"{m.group('indent')}NodeName={names}{rest} Gres={gres[names]}"
        seen.add(names)
    missing = sorted(set(gres) - seen)
    if missing:
        raise RocmFleetError(f"slurm.conf has no NodeName line for {', '.join(missing)}")
    out = "\n".join(lines) + "\n"
    types = _GRES_TYPES.search(out)
    if types is None:
        return f"GresTypes=gpu\n{out}"
    have = [t for t in types.group("types").split(",") if t]
    if "gpu" in have:
        return out
    return out[:types.start("types")] + ",".join([*have, "gpu"]) + out[types.end("types"):]


def shown_gres(text: str) -> str | None:
    """The `Gres=` of `scontrol show node` ("gpu:8", "gpu:mi300x:64(S:0)"), None where it is (null)."""
    m = _SHOW_GRES.search(text)
    return None if m is None or m.group("gres") == "(null)" else m.group("gres")


def gpu_count(gres: str | None) -> int:
    """The GPUs a `Gres=` value offers ("gpu:8(S:0-1)", "gpu:m60:8", "gpu:h100:6,mps:h100:600"): the counts of
    every gpu entry added up; 0 for (null) or none."""
    return sum(int(m.group("count")) for m in _GPU.finditer(gres or ""))
