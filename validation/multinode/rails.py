"""Per-rail NIC checks where the tools are installed: RDMA port state and firmware with ibv_devinfo.

    ports = parse_ibv_devinfo(text)            # every (device, port) with state, link layer, MTU, fw
    judge_rails("node07", ports, ["mlx5_0:1"]) # each declared rail must be PORT_ACTIVE
    firmware_outliers({"node07": ports, ...})  # nodes whose NIC firmware differs from the fleet's

The parser reads the structure ibv_devinfo prints (an `hca_id:` line per device, `port:` per port,
tab-indented `key: value` lines) and the keys it needs; the many capability lines of `-v` are
passed over. ib_write_bw per rail is not here yet: no recorded real output to build it on.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from validation.errors import ParseError
from validation.judge import Verdict, judge_target
from validation.multinode.model import ClusterSpec
from validation.multinode.remote import ssh_argv
from validation.probes import runner
from validation.probes.runner import RawRun
from validation.targets.model import EQUAL, Target

TOOL = "ibv_devinfo"
NOT_INSTALLED_RC = 127
PROBE_TIMEOUT_S = 60
PORT_STATE = Target(
    metric="rdma_port_state", value="PORT_ACTIVE", unit="state", direction=EQUAL,
    source="AMD GPU operator Cluster Validation Framework phase 3 NIC health (rdma link, ibv_devinfo) "
           "(validation.md §1.8)")

_KEY = re.compile(r"^\s*(?P<key>[A-Za-z_]+|GID\[\s*\d+\]):\s*(?P<value>.*?)\s*$")
_NUMBER_IN_PARENS = re.compile(r"^(?P<word>\S+)(?:\s+\(\d+\))?$")


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
            current["state"] = _NUMBER_IN_PARENS.match(value)["word"] if _NUMBER_IN_PARENS.match(value) else value
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
    return [judge_target(PORT_STATE, f"{node} {rail}", by_rail[rail].state if rail in by_rail else None)
            for rail in rails]


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
