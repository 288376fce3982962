"""Per-rail NIC checks where the tools are installed: RDMA port state and firmware with ibv_devinfo.

    ports = parse_ibv_devinfo(text)            # every (device, port) with state, link layer, MTU, fw
    judge_rails("node07", ports, ["mlx5_0:1"]) # each declared rail must be PORT_ACTIVE
    firmware_outliers({"node07": ports, ...})  # nodes whose NIC firmware differs from the fleet's
    pair = rail_pair_argv("mlx5_0:1", "node08", gid_index=3)   # ib_write_bw server/client argv + timeout
    judge_rail_bandwidth(rail_bandwidths({"node07": {"mlx5_0:1": parsed_ib_write_bw}, ...}))
    gid_index_outliers(...)                    # rails whose ib_write_bw GID index differs

The parser reads the structure ibv_devinfo prints (an `hca_id:` line per device, `port:` per port,
tab-indented `key: value` lines) and the keys it needs; the many capability lines of `-v` are
passed over (GID lines are kept, not judged: no recorded real `-v` output with GIDs to build on).

ib_write_bw per rail: one verdict per (node, rail) from the BW average at the largest message size.
A target applies only where a public source publishes one (AMD acceptance, 400G NIC:
>= 390 Gb/s unidirectional, >= 770 Gb/s bidirectional; RAIL_BW_SOURCE); otherwise the rail is recorded only. In both
cases a rail more than `peer_gap` (10 %) below the median of its peers is FAIL, naming node and
rail: its peers are the node's other rails, and the same rail on the other nodes.
GID consistency uses the `GID index` ib_write_bw prints for RoCE. The RoCE version at the declared
index is read from sysfs by rail_gids.py; the pairs themselves are launched by rail_runs.py.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from validation import runner
from validation.codes import CODES
from validation.errors import ParseError
from validation.judge import Verdict, judge_target
from validation.multinode.model import HOST_RE, ClusterSpec
from validation.multinode.remote import ssh_argv
from validation.parsers import ib_write_bw
from validation.parsers.ib_write_bw import IbWriteBwResult
from validation.records import Status
from validation.runner import RawRun
from validation.targets.model import EQUAL, HIGHER_IS_BETTER, Target

TOOL = "ibv_devinfo"
NOT_INSTALLED_RC = 127   # a command not found (sh, coreutils timeout)
PROBE_TIMEOUT_S = 60
PORT_STATE = Target(
    metric="rdma_port_state", value="PORT_ACTIVE", unit="state", direction=EQUAL,
    source="AMD GPU operator Cluster Validation Framework phase 3 NIC health (rdma link, ibv_devinfo), "
           "https://github.com/ROCm/gpu-operator/blob/6df13c17/example/gpu-validation-cluster/README.md")

_KEY = re.compile(r"^\s*(?P<key>[A-Za-z_]+|GID\[\s*\d+\]):\s*(?P<value>.*?)\s*$")
_NUMBER_IN_PARENS = re.compile(r"^(?P<word>\S+)(?:\s+\(\d+\))?$")
_DEVICE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")   # an RDMA device name (mlx5_0, rdma0, bnxt_re1)


@dataclass(frozen=True, slots=True, kw_only=True)
class RdmaPort:
    device: str
    port: int
    state: str                 # PORT_ACTIVE, PORT_DOWN, PORT_INIT, ...
    link_layer: str | None     # InfiniBand, Ethernet (RoCE)
    active_mtu: int | None
    fw_ver: str | None
    gids: tuple[str, ...]      # from -v only

    @property
    def rail(self) -> str:
        return f"{self.device}:{self.port}"


def parse_ibv_devinfo(text: str) -> tuple[RdmaPort, ...]:
    """ibv_devinfo [-v] stdout -> ports; "No IB devices found" -> (); anything else raises ParseError."""
    ports: list[RdmaPort] = []
    device: str | None = None
    fw: str | None = None
    current: dict | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            ports.append(RdmaPort(device=current["device"], port=current["port"], state=current.get("state", ""),
                                  link_layer=current.get("link_layer"), active_mtu=current.get("active_mtu"),
                                  fw_ver=current["fw"], gids=tuple(current.get("gids", ()))))
            current = None

    seen_any = False
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if device is None and line.strip().startswith(("#", "$")):
            continue   # the prompt line of a saved session
        if line.strip() == "No IB devices found":
            return ()
        m = _KEY.match(line)
        if not m:
            if device is None:
                raise ParseError(TOOL, "line not understood before the first device", line_no=line_no, line=line,
                                 expected="'hca_id:\\t<device>' or 'No IB devices found'")
            continue   # capability flags of -v
        key, value = m["key"], m["value"]
        if key == "hca_id":
            close()
            device, fw, seen_any = value, None, True
        elif device is None:
            raise ParseError(TOOL, f"{key!r} before the first device", line_no=line_no, line=line,
                             expected="'hca_id:\\t<device>' first")
        elif key == "fw_ver":
            fw = value
        elif key == "port":
            close()
            if not value.isdigit():
                raise ParseError(TOOL, f"port number {value!r} is not a number", line_no=line_no, line=line,
                                 expected="port:\\t<N>")
            current = {"device": device, "port": int(value), "fw": fw}
        elif current is not None and key == "state":
            state = _NUMBER_IN_PARENS.match(value)
            current["state"] = state["word"] if state else value
        elif current is not None and key == "link_layer":
            current["link_layer"] = value
        elif current is not None and key == "active_mtu":
            word = value.split()[0] if value else ""
            current["active_mtu"] = int(word) if word.isdigit() else None
        elif current is not None and key.startswith("GID["):
            current.setdefault("gids", []).append(value)
    close()
    if not seen_any:
        raise ParseError(TOOL, "no device found", expected="'hca_id:' blocks or 'No IB devices found'")
    return tuple(ports)


def judge_rails(node: str, ports: Sequence[RdmaPort], rails: Sequence[str]) -> list[Verdict]:
    """One verdict per declared rail ("mlx5_0:1"); with no rails declared, every port is recorded only."""
    by_rail = {p.rail: p for p in ports}
    if not rails:
        record = Target(metric=PORT_STATE.metric, value=None, unit="state", record_only=True,
                        source="no rails declared (--rails); ports listed, not judged")
        return [judge_target(record, f"{node} {p.rail}", p.state) for p in ports]
    verdicts = []
    for rail in rails:
        subject = f"{node} {rail}"
        if rail in by_rail:
            verdicts.append(judge_target(PORT_STATE, subject, by_rail[rail].state))
            continue
        why = "the node has no RDMA device" if not ports else f"ibv_devinfo lists {', '.join(sorted(by_rail))}"
        verdicts.append(Verdict(status=Status.FAIL, subject=subject, metric=PORT_STATE.metric, measured="absent",
                                unit=PORT_STATE.unit, target=PORT_STATE,
                                reason=f"{subject}: declared rail not present ({why})",
                                code="RF-NET-RAIL-DOWN", hint=CODES["RF-NET-RAIL-DOWN"]))
    return verdicts


# What rdma-core prints when the kernel has no RDMA device (or no RDMA support at all): newer
# ibv_devinfo "No IB devices found"; with no /sys/class/infiniband, ibv_get_device_list fails and
# ibv_devinfo exits 255 with "Failed to get IB devices list: Function not implemented" (rdma-core 44,
# seen on this project's CI machine).
_NO_DEVICES = ("No IB devices found", "Failed to get IB devices list")


def no_devices(raw: RawRun) -> bool:
    """Did ibv_devinfo say the node has no RDMA device (rather than fail for another reason)?"""
    return any(marker in raw.stdout + raw.stderr for marker in _NO_DEVICES)


def declared_rails(option: str, env: Mapping[str, str]) -> list[str]:
    """Rails from --rails, else from the inventory's NCCL_IB_HCA ("=mlx5_0:1,mlx5_1:1" or "rdma0,rdma1").

    NCCL_IB_HCA entries are name prefixes unless the list starts with '='; they are taken here as the
    exact devices the cluster uses. An exclusion list ('^...') names no rails, so it needs --rails.
    """
    text = option or env.get("NCCL_IB_HCA", "")
    if text.startswith("^"):
        raise ValueError(f"NCCL_IB_HCA={text!r} is an exclusion list; declare the rails with --rails")
    rails = [r.strip() for r in text.removeprefix("=").split(",") if r.strip()]
    for rail in rails:
        split_rail(rail)
    return [":".join(map(str, split_rail(r))) for r in rails]


def declared_gid_index(option: int | None, env: Mapping[str, str]) -> int | None:
    """GID index from --gid-index, else from the inventory's NCCL_IB_GID_INDEX, else None."""
    if option is not None:
        return option
    value = env.get("NCCL_IB_GID_INDEX", "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise ValueError(f"NCCL_IB_GID_INDEX={value!r} is not a GID index number")
    return int(value)


def firmware_outliers(by_node: Mapping[str, Sequence[RdmaPort]]) -> dict[str, str]:
    """node -> why its NIC firmware differs from the most common version in the fleet."""
    fws = {node: {p.device: p.fw_ver for p in ports if p.fw_ver} for node, ports in by_node.items()}
    counts = Counter(v for devices in fws.values() for v in devices.values())
    if not counts:
        return {}
    common = counts.most_common(1)[0][0]
    out = {}
    for node, devices in sorted(fws.items()):
        odd = [f"{dev} {fw}" for dev, fw in sorted(devices.items()) if fw != common]
        if odd:
            out[node] = f"NIC firmware {', '.join(odd)} differs from the fleet's {common}"
    return out


PROBE_ARGV = ["sh", "-c", f"command -v ibv_devinfo >/dev/null 2>&1 || exit {NOT_INSTALLED_RC}; exec ibv_devinfo"]


def probe(spec: ClusterSpec, node: str, *, run: Callable[..., RawRun] = runner.run) -> RawRun:
    """ibv_devinfo on `node` over SSH; rc NOT_INSTALLED_RC when the tool is not installed there."""
    return run(ssh_argv(spec.node(node).connection, PROBE_ARGV), timeout_s=PROBE_TIMEOUT_S)


# ---- ib_write_bw per rail ---------------------------------------------------------------------

RAIL_BW_METRIC = "ib_write_bw_avg_gb_s"
PEER_GAP = 0.10
RAIL_BW_SOURCE = ("AMD acceptance, RDMA per 400G NIC: ib_write_bw >= 390 Gb/s unidir, >= 770 Gb/s bidir, "
                  "https://github.com/ROCm/system-acceptance-docs/blob/23e73127/docs/network/rdma-benchmarking.md")
_RAIL_BW_TARGETS_GB_S = {(400, False): 390.0, (400, True): 770.0}
PAIR_START_S = 2         # the server must be listening before the client connects
PAIR_MARGIN_S = 30       # connection setup and the tool's own teardown, on top of the run time
DEFAULT_TCP_PORT = 18515  # perftest's default


@dataclass(frozen=True, slots=True, kw_only=True)
class RailPair:
    """One ib_write_bw server/client pair for one rail; run the server first, both within `timeout_s`."""

    rail: str
    server_argv: tuple[str, ...]
    client_argv: tuple[str, ...]
    timeout_s: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RailBandwidth:
    node: str
    rail: str
    size_bytes: int
    bw_average_gb_s: float
    bidirectional: bool
    gid_index: int | None
    link_type: str | None


def split_rail(rail: str) -> tuple[str, int]:
    """Rail "mlx5_0:1" -> ("mlx5_0", 1); a bare device means port 1. The device becomes a word of the
    ib_write_bw command line, so it must be a device name (no leading '-', no spaces)."""
    device, _, port = rail.partition(":")
    if not _DEVICE.fullmatch(device) or (port and not port.isdigit()):
        raise ValueError(f"rail {rail!r} is not DEVICE[:PORT] (e.g. mlx5_0:1)")
    return device, int(port) if port else 1


def rail_pair_argv(rail: str, server_host: str, *, gid_index: int | None = None, size_bytes: int = 1048576,
                   duration_s: int = 10, qps: int = 1, tcp_port: int = DEFAULT_TCP_PORT,
                   bidirectional: bool = False, binary: str = "ib_write_bw") -> RailPair:
    """Server and client argv for one rail: `-d DEV -i PORT [-x GID] --report_gbits -F -s SIZE -D S -q N -p TCP`.

    The client adds the server's address last. `gid_index` is needed on RoCE and left out on IB.
    """
    device, port = split_rail(rail)
    if size_bytes < 1 or duration_s < 1 or qps < 1 or not 0 < tcp_port < 65536 or not HOST_RE.fullmatch(server_host):
        raise ValueError(f"need size_bytes, duration_s, qps >= 1, a TCP port and a server host name or address; "
                         f"got {size_bytes}, {duration_s}, {qps}, {tcp_port}, {server_host!r}")
    common = (binary, "-d", device, "-i", str(port), *(("-x", str(gid_index)) if gid_index is not None else ()),
              "--report_gbits", "-F", "-s", str(size_bytes), "-D", str(duration_s), "-q", str(qps),
              "-p", str(tcp_port), *(("-b",) if bidirectional else ()))
    return RailPair(rail=rail, server_argv=common, client_argv=(*common, server_host),
                    timeout_s=PAIR_START_S + duration_s + PAIR_MARGIN_S)


def rail_bandwidths(by_node: Mapping[str, Mapping[str, IbWriteBwResult]]) -> list[RailBandwidth]:
    """node -> rail -> parsed ib_write_bw output, flattened to the largest message size's BW average."""
    out = []
    for node, by_rail in by_node.items():
        for rail, result in by_rail.items():
            row = result.largest
            out.append(RailBandwidth(node=node, rail=rail, size_bytes=row.size_bytes,
                                     bw_average_gb_s=row.bw_average_gb_s, bidirectional=result.bidirectional,
                                     gid_index=result.gid_index, link_type=result.link_type))
    return out


def rail_bw_target(*, nic_gbps: int | None, bidirectional: bool) -> Target:
    """The published target for this NIC speed and direction, or a record-only target where none exists."""
    value = _RAIL_BW_TARGETS_GB_S.get((nic_gbps, bidirectional)) if nic_gbps is not None else None
    if value is None:
        why = "NIC speed not declared" if nic_gbps is None else f"no published target for {nic_gbps}G NICs"
        return Target(metric=RAIL_BW_METRIC, value=None, unit="Gb/s", record_only=True,
                      source=f"{why}; line rate x efficiency is not a target")
    return Target(metric=RAIL_BW_METRIC, value=value, unit="Gb/s", direction=HIGHER_IS_BETTER,
                  source=RAIL_BW_SOURCE)


def judge_rail_bandwidth(measured: Sequence[RailBandwidth], *, nic_gbps: int | None = None,
                         peer_gap: float = PEER_GAP) -> list[Verdict]:
    """One verdict per (node, rail): the target where one exists, and FAIL when the rail is more than
    `peer_gap` below the median of its peers on the same node or of the same rail on other nodes."""
    if not 0 < peer_gap < 1:
        raise ValueError(f"peer_gap is a fraction between 0 and 1, got {peer_gap}")
    verdicts = []
    for m in measured:
        subject = f"{m.node} {m.rail}"
        verdict = judge_target(rail_bw_target(nic_gbps=nic_gbps, bidirectional=m.bidirectional), subject,
                               m.bw_average_gb_s)
        slow = []
        for where, peers in (
                (f"its peer rails on {m.node}", [p for p in measured if p.node == m.node and p.rail != m.rail]),
                (f"{m.rail} on the other nodes", [p for p in measured if p.rail == m.rail and p.node != m.node])):
            same_kind = [p.bw_average_gb_s for p in peers if p.bidirectional == m.bidirectional]
            if same_kind:
                median = statistics.median(same_kind)
                if m.bw_average_gb_s < median * (1 - peer_gap):
                    slow.append(f"{(1 - m.bw_average_gb_s / median) * 100:.1f} % below the median "
                                f"{median:g} Gb/s of {where}")
        if slow:
            verdict = Verdict(status=Status.FAIL, subject=subject, metric=RAIL_BW_METRIC,
                              measured=m.bw_average_gb_s, unit="Gb/s", target=verdict.target,
                              reason=f"{subject} {RAIL_BW_METRIC} {m.bw_average_gb_s:g} Gb/s at {m.size_bytes} B is "
                                     f"{'; '.join(slow)} (limit {peer_gap * 100:g} %)",
                              code="RF-NET-LOW", hint=CODES["RF-NET-LOW"])
        verdicts.append(verdict)
    return verdicts


def gid_index_outliers(measured: Sequence[RailBandwidth], *, declared: int | None = None) -> dict[str, str]:
    """node -> which of its rails used another GID index than the declared one (or, undeclared, than the
    most common one). Only rails whose output printed a GID index (RoCE) take part."""
    used = [m for m in measured if m.gid_index is not None]
    if not used:
        return {}
    expected = declared if declared is not None else Counter(m.gid_index for m in used).most_common(1)[0][0]
    what = "the declared" if declared is not None else "the fleet's common"
    out: dict[str, list[str]] = {}
    for m in used:
        if m.gid_index != expected:
            out.setdefault(m.node, []).append(f"{m.rail} GID index {m.gid_index}")
    return {node: f"{', '.join(odd)} differs from {what} GID index {expected}" for node, odd in sorted(out.items())}


def read_rail_outputs(directory: Path, nodes: Sequence[str]) -> dict[str, dict[str, IbWriteBwResult]]:
    """Saved ib_write_bw outputs laid out as DIRECTORY/<node>/<rail>.txt ("mlx5_0:1.txt"); nodes without a
    directory are left out. An unreadable output raises ParseError naming the file."""
    out: dict[str, dict[str, IbWriteBwResult]] = {}
    for node in nodes:
        files = sorted((directory / node).glob("*.txt"))
        for path in files:
            try:
                out.setdefault(node, {})[path.stem] = ib_write_bw.parse(path.read_text())
            except ParseError as exc:
                raise ParseError(ib_write_bw.TOOL, f"{path}: {exc}") from exc
    return out
