"""The node's topology as its workloads see it (smoke tier): every GPU pair linked as the SKU
expects, every GPU (and declared NIC) on the right NUMA node.

Links come from `rocm-smi --showtopo` (or `amd-smi topology` where rocm-smi is absent) on AMD
nodes and `nvidia-smi topo -m` on NVIDIA nodes; the expected shape is the SKU's topology_* targets.
GPU NUMA nodes come from the same output (rocm-smi's Numa Node lines, nvidia-smi's NUMA Affinity),
else from /sys/bus/pci/devices/<bdf>/numa_node; the CPU topology from `lscpu`. The judging is
validation/topology.py; this module only reads the node.

Spec variables: validation_gpu_count, validation_gpu_vendor, and optionally
validation_gpu_numa_nodes (gpu index -> NUMA node, as a mapping or a list in index order) and
validation_nic_numa_nodes (interface name -> NUMA node).
"""

from __future__ import annotations

from typing import Any

import pytest

from validation import parsers, topology
from validation.checks import discovery
from validation.checks.outcome import CheckFailure, expect
from validation.checks.tools import run_tool, skip_unless_driver_loaded
from validation.errors import ParseError
from validation.judge import Verdict
from validation.records import FAILING
from validation.spec import gpu_vendor

pytestmark = [pytest.mark.smoke]

TIMEOUT_S = 60


@pytest.fixture(scope="module")
def gpu_node(host: Any, spec: dict) -> tuple[str, int]:
    count = spec.get("validation_gpu_count")
    if count is None:
        pytest.skip("spec declares no validation_gpu_count")
    vendor = gpu_vendor(spec)
    skip_unless_driver_loaded(host, vendor)
    return vendor, int(count)


def read_topology(host: Any, vendor: str) -> topology.Topology:
    """Run the vendor's topology view and turn it into a Topology."""
    if vendor == "nvidia":
        return topology.from_nvidia_topo(_run(host, "nvidia-smi-topo", "nvidia-smi topo -m"))
    if host.exists("rocm-smi"):
        return topology.from_rocm_smi(_run(host, "rocm-smi", "rocm-smi --showtopo"))
    if host.exists("amd-smi"):
        return topology.from_amd_smi(_run(host, "amd-smi", "amd-smi topology"))
    pytest.skip("neither rocm-smi nor amd-smi is installed; add them to rocm_packages")
    raise AssertionError("unreachable")  # pytest.skip raises


def _run(host: Any, tool: str, command: str) -> Any:
    out = run_tool(host, command, timeout_s=TIMEOUT_S)
    expect(out.rc == 0, "RF-TOOL-FAILED", f"{command} exited {out.rc}: {out.stderr.strip()[:300]}")
    try:
        return parsers.parse(tool, out.stdout)
    except ParseError as exc:
        raise CheckFailure("RF-TOOL-FAILED", f"{command} output not understood: {exc}") from exc


def cpu_numa_nodes(host: Any) -> tuple[int, ...]:
    """The NUMA nodes with CPUs, from lscpu; () when lscpu is missing or unreadable."""
    out = host.run(f"timeout {TIMEOUT_S} lscpu")
    if out.rc != 0:
        return ()
    try:
        return parsers.parse("lscpu", out.stdout).cpu_numa_nodes
    except ParseError:
        return ()


def sysfs_gpu_numa(host: Any, vendor: str) -> dict[int, int | None]:
    """GPU index -> /sys/bus/pci/devices/<bdf>/numa_node, GPUs numbered in PCI address order."""
    wanted = "0x1002" if vendor == "amd" else "0x10de"
    bdfs = sorted(bdf for bdf, vendor_id, _ in discovery.pci_gpus(host) if vendor_id == wanted)
    return {i: topology.sysfs_numa_node(_read(host, f"/sys/bus/pci/devices/{bdf}/numa_node"))
            for i, bdf in enumerate(bdfs)}


def nic_numa(host: Any) -> dict[str, int | None]:
    """Interface -> NUMA node for every network interface backed by a PCI device."""
    net = host.file("/sys/class/net")
    names = net.listdir() if net.is_directory else []
    found: dict[str, int | None] = {}
    for name in sorted(names):
        path = f"/sys/class/net/{name}/device/numa_node"
        if host.file(path).exists:
            found[name] = topology.sysfs_numa_node(_read(host, path))
    return found


def _read(host: Any, path: str) -> str | None:
    try:
        return host.file(path).content_string
    except Exception:  # an unreadable sysfs file is "not reported", never a crash
        return None


def declared_gpu_numa(spec: dict) -> dict[int, int] | None:
    raw = spec.get("validation_gpu_numa_nodes")
    if not raw:
        return None
    items = raw.items() if isinstance(raw, dict) else enumerate(raw)
    return {int(k): int(v) for k, v in items}


def record_and_fail(verdicts: list[Verdict], record: Any, *, source: str) -> None:
    for v in verdicts:
        extra = {"measured_text": v.measured} if isinstance(v.measured, str) else {}
        record(v.metric, v.subject, v.measured if isinstance(v.measured, (int, float)) else None, v.unit,
               status=v.status.value, reason=v.reason, code=v.code, command=source, **extra)
    bad = [v for v in verdicts if v.status in FAILING]
    if bad:
        raise CheckFailure(bad[0].code or "RF-NOT-REPORTED", "; ".join(v.reason for v in bad[:8])
                           + (f"; and {len(bad) - 8} more" if len(bad) > 8 else ""), bad[0].hint)


@pytest.mark.gpu
def test_every_gpu_pair_is_linked_as_the_sku_expects(host: Any, gpu_node: tuple[str, int], targets: Any,
                                                      record: Any) -> None:
    """Every GPU pair is linked over the fabric and hop count the SKU expects."""
    vendor, count = gpu_node
    topo = read_topology(host, vendor)
    if count == 1 and not topo.links:
        pytest.skip("spec declares one GPU: there are no GPU pairs to check")
    verdicts = topology.judge_links(topo, targets, gpu_count=count)
    expect(verdicts, "RF-NOT-REPORTED", f"{topo.source} lists no GPU pairs; spec declares {count} GPUs")
    record_and_fail(verdicts, record, source=topo.source)


@pytest.mark.gpu
def test_every_gpu_is_on_its_declared_or_balanced_numa_node(host: Any, gpu_node: tuple[str, int], spec: dict,
                                                            record: Any) -> None:
    """Every GPU sits on its declared NUMA node, or the GPUs are balanced across the NUMA nodes."""
    vendor, count = gpu_node
    topo = read_topology(host, vendor)
    gpu_numa, origin = topo.gpu_numa, topo.source
    if not gpu_numa:
        gpu_numa, origin = sysfs_gpu_numa(host, vendor), "/sys/bus/pci/devices/*/numa_node"
    expect(len(gpu_numa) == count, "RF-GPU-MISSING",
           f"{origin} gives the NUMA node of {len(gpu_numa)} GPUs, spec declares {count}")
    verdicts = topology.judge_gpu_numa(gpu_numa, declared=declared_gpu_numa(spec), cpu_nodes=cpu_numa_nodes(host),
                                       origin=origin)
    record_and_fail(verdicts, record, source=origin)


def test_every_declared_nic_is_on_its_numa_node(host: Any, spec: dict, record: Any) -> None:
    """Every declared NIC sits on its declared NUMA node."""
    declared = {str(k): int(v) for k, v in (spec.get("validation_nic_numa_nodes") or {}).items()}
    nics = nic_numa(host)
    verdicts = topology.judge_nic_numa(nics, declared=declared, cpu_nodes=cpu_numa_nodes(host))
    if not declared:
        record_and_fail(verdicts, record, source="/sys/class/net/*/device/numa_node")
        pytest.skip(f"spec declares no validation_nic_numa_nodes; recorded {len(nics)} NICs' NUMA nodes")
    record_and_fail(verdicts, record, source="/sys/class/net/*/device/numa_node")
