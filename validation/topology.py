"""Judge a node's topology: every GPU pair's link (type, hops, weight) against the SKU's expected
shape, and the NUMA node of every GPU and NIC against the declared or detected CPU topology.

Pure: parsed records, a target profile and plain mappings in, Verdicts out (no I/O).

- Links come from `rocm-smi --showtopo` / `--json`, `amd-smi topology` or `nvidia-smi topo -m`,
  turned into one `Topology` whose `reported` set says which link fields that view can give
  (nvidia-smi reports no hops or weight, so those are not asked of it).
- The expected shape is three target metrics per SKU (validation/targets/data/<sku>.yaml):
  `topology_link_type` (equal, "XGMI" / "NV18"), `topology_hops` (equal) and `topology_weight`
  (record-only unless a source gives a number). A wrong pair fails naming it:
  "gpu2 -> gpu5: PCIE, expected XGMI (<source>)".
- NUMA: with a declared mapping (gpu index -> node) each GPU must sit on its declared node;
  without one, GPUs must be spread evenly over the NUMA nodes that have CPUs (from lscpu). When
  they are not, the GPU that breaks the pattern is named: GPUs are numbered in PCI order, so each
  consecutive block of n/k GPUs should share one node, and a GPU off its block's majority node is
  the culprit.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from validation.codes import CODES
from validation.judge import Verdict, judge_target
from validation.records import Status
from validation.targets.model import TargetProfile

# link field -> target metric
LINK_METRICS: dict[str, str] = {"link_type": "topology_link_type", "hops": "topology_hops",
                                "weight": "topology_weight"}
_LINK_CODES = {"link_type": "RF-TOPO-LINK-TYPE", "hops": "RF-TOPO-HOPS", "weight": "RF-TOPO-WEIGHT"}


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuLink:
    """One ordered GPU pair; None = this view did not report the field for the pair."""

    src_gpu: int
    dst_gpu: int
    link_type: str | None = None  # XGMI, PCIE, NV18, SYS, ...
    hops: int | None = None
    weight: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Topology:
    """The links and GPU NUMA nodes one tool run reports."""

    source: str  # "rocm-smi --showtopo"
    links: tuple[GpuLink, ...]
    reported: frozenset[str]  # link fields this view can give
    gpu_numa: dict[int, int | None]  # gpu index -> NUMA node; None = reported as -1 / N/A


def from_rocm_smi(record: Any) -> Topology:
    links = tuple(GpuLink(src_gpu=link.src_gpu, dst_gpu=link.dst_gpu, link_type=_upper(link.link_type),
                          hops=link.hops, weight=link.weight) for link in record.links)
    numa = {g.index: _node(g.numa_node) for g in record.gpus if g.numa_node is not None}
    return Topology(source="rocm-smi --showtopo" if record.view != "json" else "rocm-smi --json",
                    links=links, reported=frozenset(LINK_METRICS), gpu_numa=numa)


def from_amd_smi(record: Any) -> Topology:
    links = tuple(GpuLink(src_gpu=link.src_gpu, dst_gpu=link.dst_gpu, link_type=_upper(link.link_type),
                          hops=link.hops, weight=link.weight)
                  for link in record.links if link.src_gpu is not None and link.dst_gpu is not None)
    return Topology(source="amd-smi topology", links=links, reported=frozenset(LINK_METRICS), gpu_numa={})


def from_nvidia_topo(record: Any) -> Topology:
    gpus = {d.name: d.index for d in record.devices if d.kind == "gpu"}
    links = tuple(GpuLink(src_gpu=gpus[link.src], dst_gpu=gpus[link.dst], link_type=link.connection)
                  for link in record.links if link.src in gpus and link.dst in gpus)
    numa = {d.index: d.numa_affinity for d in record.devices if d.kind == "gpu"}
    return Topology(source="nvidia-smi topo -m", links=links, reported=frozenset({"link_type"}), gpu_numa=numa)


def judge_links(topology: Topology, profile: TargetProfile, *, gpu_count: int | None = None) -> list[Verdict]:
    """One verdict per ordered GPU pair and reported link field. With `gpu_count`, every pair of
    gpu0..gpu(N-1) that the topology lacks fails (RF-TOPO-MISSING), so a missing GPU cannot pass."""
    by_pair = {(link.src_gpu, link.dst_gpu): link for link in topology.links if link.src_gpu != link.dst_gpu}
    gpus = sorted({i for pair in by_pair for i in pair} | set(range(gpu_count or 0)))
    pairs = [(a, b) for a in gpus for b in gpus if a != b]
    verdicts: list[Verdict] = []
    for a, b in pairs:
        if (a, b) not in by_pair:
            verdicts.append(_verdict(Status.FAIL, f"gpu{a} -> gpu{b}", "topology_link_type", None, "",
                                     "RF-TOPO-MISSING", f"gpu{a} -> gpu{b}: pair not in {topology.source} "
                                     f"(spec declares {gpu_count} GPUs)"))
    for field, metric in LINK_METRICS.items():
        if field not in topology.reported or not by_pair:
            continue
        target = profile.get(metric)
        if target is None:
            verdicts.append(_verdict(Status.ERROR, "node", metric, None, "", "RF-NO-TARGET",
                                     f"node {metric}: no target in profile {profile.name}"))
            continue
        if all(getattr(link, field) is None for link in by_pair.values()):
            verdicts.append(_verdict(Status.ERROR, f"node ({topology.source})", metric, None, target.unit,
                                     "RF-NOT-REPORTED", f"{topology.source} reports no {field.replace('_', ' ')} "
                                     "for any GPU pair (truncated output or an older tool?)", target=target))
            continue
        for (a, b), link in by_pair.items():
            subject = f"gpu{a} -> gpu{b}"
            verdict = judge_target(target, subject, getattr(link, field))
            if verdict.status in (Status.FAIL, Status.WARN):
                measured = verdict.measured
                shown = f"{measured} hops" if field == "hops" else f"{measured}"
                reason = f"{subject}: {shown}, expected {target.threshold} ({target.source})"
                code = _LINK_CODES[field]
                verdict = dataclasses.replace(verdict, code=code, hint=CODES.get(code, ""), reason=reason)
            verdicts.append(verdict)
    return verdicts


def judge_gpu_numa(
    gpu_numa: Mapping[int, int | None],
    *,
    declared: Mapping[int, int] | None = None,
    cpu_nodes: Sequence[int] | None = None,
    origin: str = "",
) -> list[Verdict]:
    """One verdict per GPU: on its declared NUMA node, or (undeclared) spread evenly over the
    NUMA nodes that have CPUs. `origin` names where the GPU nodes were read ("rocm-smi", sysfs)."""
    return _judge_numa({f"gpu{i}": node for i, node in sorted(gpu_numa.items())},
                       {f"gpu{i}": node for i, node in (declared or {}).items()}, cpu_nodes,
                       kind="gpu", origin=origin)


def judge_nic_numa(
    nic_numa: Mapping[str, int | None],
    *,
    declared: Mapping[str, int] | None = None,
    cpu_nodes: Sequence[int] | None = None,
    origin: str = "sysfs",
) -> list[Verdict]:
    """One verdict per NIC against its declared NUMA node. Undeclared NICs are recorded (SKIP):
    front-end and back-end NICs have no common placement rule."""
    verdicts: list[Verdict] = []
    for name, node in sorted(nic_numa.items()):
        if declared and name in declared:
            verdicts.extend(_judge_numa({name: node}, {name: declared[name]}, cpu_nodes, kind="nic", origin=origin))
        else:
            verdicts.append(_verdict(Status.SKIP, name, "nic_numa_node", node, "node", "",
                                     f"record only: {name} NUMA node {_shown(node)}; no declared node "
                                     "(validation_nic_numa_nodes)"))
    for name in sorted(set(declared or {}) - set(nic_numa)):
        verdicts.append(_verdict(Status.FAIL, name, "nic_numa_node", None, "node", "RF-NUMA-NIC",
                                 f"{name}: declared on NUMA node {declared[name]} but not found"  # type: ignore[index]
                                 f"{f' in {origin}' if origin else ''}"))
    return verdicts


def sysfs_numa_node(text: str | None) -> int | None:
    """The value of /sys/bus/pci/devices/<bdf>/numa_node (or /sys/class/net/<if>/device/numa_node):
    None for -1 (firmware gave no proximity) or an unreadable file."""
    if text is None or not text.strip().lstrip("-").isdecimal():
        return None
    return _node(int(text.strip()))


# ---------------------------------------------------------------------------------------------


_NUMA_CODES = {"gpu": "RF-NUMA-GPU", "nic": "RF-NUMA-NIC"}


def _judge_numa(measured: Mapping[str, int | None], declared: Mapping[str, int], cpu_nodes: Sequence[int] | None,
                *, kind: str, origin: str) -> list[Verdict]:
    metric, code = f"{kind}_numa_node", _NUMA_CODES[kind]
    nodes = sorted(set(cpu_nodes or ()))
    where = f" ({origin})" if origin else ""
    verdicts: dict[str, Verdict] = {}
    if declared:
        for name, node in measured.items():
            if name not in declared:
                verdicts[name] = _verdict(Status.SKIP, name, metric, node, "node", "",
                                          f"record only: {name} NUMA node {_shown(node)}{where}; not declared")
            elif node == declared[name]:
                verdicts[name] = _verdict(Status.PASS, name, metric, node, "node", "",
                                          f"{name}: NUMA node {node}, as declared")
            else:
                verdicts[name] = _verdict(Status.FAIL, name, metric, node, "node", code,
                                          f"{name}: NUMA node {_shown(node)}{where}, expected {declared[name]} "
                                          f"(declared in validation_{kind}_numa_nodes)")
        for name in sorted(set(declared) - set(measured)):
            verdicts[name] = _verdict(Status.FAIL, name, metric, None, "node", code,
                                      f"{name}: declared on NUMA node {declared[name]} but not reported{where}")
        return [verdicts[k] for k in sorted(verdicts, key=_natural)]
    if len(nodes) <= 1:
        for name, node in measured.items():
            verdicts[name] = _verdict(Status.PASS, name, metric, node, "node", "",
                                      f"{name}: NUMA node {_shown(node)}; the host has "
                                      f"{'one NUMA node' if nodes else 'no NUMA information'}, every GPU is local")
        return list(verdicts.values())
    unknown = [name for name, node in measured.items() if node is None]
    placed = {name: node for name, node in measured.items() if node is not None}
    names = sorted(placed, key=_natural)
    lo, hi = len(names) // len(nodes), -(-len(names) // len(nodes))
    count = Counter(placed.values())
    layout = ", ".join(f"node {n}: {count.get(n, 0)}" for n in nodes)
    rule = (f"GPUs spread evenly over CPU NUMA nodes {', '.join(map(str, nodes))} "
            f"({lo if lo == hi else f'{lo}-{hi}'} each); found {layout}")
    off = [n for n in count if n not in nodes]
    balanced = not off and all(lo <= count.get(n, 0) <= hi for n in nodes)
    culprits: dict[str, int | None] = {}
    if not balanced:
        culprits = _off_block(names, placed, len(nodes))
        if not culprits:
            crowded = {n for n in count if n not in nodes or count[n] > hi}
            culprits = {name: None for name in names if placed[name] in crowded}
    for name in unknown:
        verdicts[name] = _verdict(Status.FAIL, name, metric, None, "node", code,
                                  f"{name}: no NUMA node reported{where} (-1) on a host with NUMA nodes "
                                  f"{', '.join(map(str, nodes))}; check the BIOS/ACPI proximity (SRAT/_PXM)")
    for name in names:
        node = placed[name]
        if name in culprits:
            expected = culprits[name]
            want = f"expected {expected}" if expected is not None else "expected a node with fewer GPUs"
            verdicts[name] = _verdict(Status.FAIL, name, metric, node, "node", code,
                                      f"{name}: NUMA node {node}{where}, {want}: {rule}; declare "
                                      f"validation_{kind}_numa_nodes if this layout is intended")
        else:
            verdicts[name] = _verdict(Status.PASS, name, metric, node, "node", "", f"{name}: NUMA node {node}; {rule}")
    return [verdicts[k] for k in sorted(verdicts, key=_natural)]


def _off_block(names: list[str], placed: Mapping[str, int], groups: int) -> dict[str, int | None]:
    """GPUs off their block's majority node, when n GPUs split into `groups` equal blocks."""
    if len(names) % groups:
        return {}
    size = len(names) // groups
    culprits: dict[str, int | None] = {}
    majorities = []
    for start in range(0, len(names), size):
        block = names[start:start + size]
        (node, votes), *rest = Counter(placed[n] for n in block).most_common()
        if rest and rest[0][1] == votes:
            return {}  # no clear majority: cannot tell which GPU moved
        majorities.append(node)
        culprits.update({n: node for n in block if placed[n] != node})
    return culprits if len(set(majorities)) == len(majorities) else {}


def _verdict(status: Status, subject: str, metric: str, measured: float | str | None, unit: str, code: str,
             reason: str, *, target: Any = None) -> Verdict:
    return Verdict(status=status, subject=subject, metric=metric, measured=measured, unit=unit, target=target,
                   reason=reason, code=code, hint=CODES.get(code, "") if code else "")


def _natural(name: str) -> tuple[str, int]:
    stem = name.rstrip("0123456789")
    digits = name[len(stem):]
    return (stem, int(digits) if digits else -1)


def _node(value: int | None) -> int | None:
    return None if value is None or value < 0 else value


def _shown(node: int | None) -> str:
    return "unknown (-1)" if node is None else str(node)


def _upper(text: str | None) -> str | None:
    return None if text is None else text.strip().upper()
