"""ROCm Validation Suite (`rvs -c conf`) result lines: gst, iet, gm, gpup, mem, pbqt, pebb, peqt.

RVS prints `pass: TRUE` for its bandwidth modules (pbqt, pebb, babel) whatever it measured, so those
passes are kept with `trustworthy=False` and the measured numbers are what a judge must use.
GPUs are named as RVS names them: the 5-digit KFD gpu_id ("28851") and, on bandwidth lines, the KFD
node number ("GPU:: 2 - 28851 - 0000:05:00.0").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._bench_text import COMMAND, is_elision, number
from validation.parsers._text import numbered, require_text
from validation.records import LinkBandwidth

TOOL = "rvs"

UNTRUSTED_PASS_MODULES = frozenset({"pbqt", "pebb", "babel"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """An `Action name :X` line and the module named on the following `Module name :` line."""

    name: str
    module: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GstSample:
    """`GFLOPS N`, with `Target GFLOPS: T met: TRUE|FALSE` on the final line of a GPU's run."""

    action: str
    gpu_id: int
    gflops: float
    target_gflops: float | None
    met: bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuEvent:
    """A free-text event for one GPU, such as "Start of GPU ramp up"."""

    action: str
    gpu_id: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PowerSample:
    """iet `Power(W) 127.000000`."""

    action: str
    gpu_id: int
    power_w: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Pass:
    """A `pass: TRUE|FALSE` line (per GPU or per action).

    `trustworthy` is False for the bandwidth modules (their pass is hard-coded) and for passes whose
    module is unknown because the log lacks the action's `Module name` line.
    """

    action: str
    module: str | None
    gpu_id: int | None
    passed: bool
    trustworthy: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Violations:
    """gm `gm 28851 temp violations 0`."""

    action: str
    gpu_id: int
    metric: str
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProperty:
    """gpup `gpup 28851 simd_count 1216` (`io_link` is None) or `gpup 28851 0 weight 20` (io_link 0)."""

    action: str
    gpu_id: int
    io_link: int | None
    name: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemBandwidth:
    """mem `Test 11: elapsedtime = X bandwidth = YGB/s`; RVS prints no unit for elapsedtime."""

    action: str
    test: int
    elapsedtime_as_printed: float
    gb_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RvsGpu:
    """`GPU:: 2 - 28851 - 0000:05:00.0`: KFD node, gpu_id, PCI address."""

    node: int
    gpu_id: int
    bdf: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerBandwidth:
    """pbqt `p2p-bandwidth[ 1/56] [GPU:: a] [GPU:: b] bidirectional: false 48.962 GBps duration: 1.46 secs`."""

    action: str
    index: int
    total: int
    src: RvsGpu
    dst: RvsGpu
    bidirectional: bool
    gb_s: float
    duration_s: float | None

    @property
    def link(self) -> LinkBandwidth:
        """The measurement as a directed link named by KFD node ("node2" -> "node3")."""
        return LinkBandwidth(src=f"node{self.src.node}", dst=f"node{self.dst.node}", gb_s=self.gb_s)


@dataclass(frozen=True, slots=True, kw_only=True)
class PcieBandwidth:
    """pebb `pcie-bandwidth [ 1/16] [CPU:: 0] [GPU:: ...] h2d::false d2h::true 56.298 GBps`."""

    action: str
    index: int
    total: int
    cpu: int
    gpu: RvsGpu
    h2d: bool
    d2h: bool
    gb_s: float
    duration_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Distance:
    """pbqt `p2p [GPU::a] [GPU::b] peers:true distance:15 xGMI:15` or pebb `[CPU:: 0] [GPU:: ...] distance:20 PCIe:20`.

    `src_cpu` is set for pebb (CPU to GPU) lines, `src_gpu` for pbqt (GPU to GPU) lines.
    """

    action: str
    src_cpu: int | None
    src_gpu: RvsGpu | None
    dst: RvsGpu
    peers: bool | None
    distance: int
    link_type: str
    link_distance: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PeqtResult:
    """peqt `[pcie_act_1] peqt true`."""

    action: str
    passed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RvsResult:
    """Every understood [RESULT] line of one RVS run, grouped by kind.

    `gpu_ids` lists every KFD gpu_id seen, in order of first appearance. `truncated` is True when the
    text carries elision markers ("..."), as documentation excerpts do.
    """

    command: str | None
    actions: tuple[Action, ...]
    gpu_ids: tuple[int, ...]
    gst: tuple[GstSample, ...]
    events: tuple[GpuEvent, ...]
    power: tuple[PowerSample, ...]
    passes: tuple[Pass, ...]
    violations: tuple[Violations, ...]
    properties: tuple[GpuProperty, ...]
    mem: tuple[MemBandwidth, ...]
    peer_bandwidth: tuple[PeerBandwidth, ...]
    pcie_bandwidth: tuple[PcieBandwidth, ...]
    distances: tuple[Distance, ...]
    peqt: tuple[PeqtResult, ...]
    truncated: bool


_LINE = re.compile(r"^\[(?P<level>RESULT|INFO|ERROR|DEBUG|TRACE|WARN)\s*\]\s*\[\s*(?P<ts>[\d.]+)\s*\]"
                   r"\s*(?P<rest>.*?)\s*$")
_ACTION = re.compile(r"^Action name\s*:\s*(?P<name>\S+)$")
_MODULE = re.compile(r"^Module name\s*:\s*(?P<name>\S+)$")
_TAG = re.compile(r"^\[(?P<action>[^\]]+)\]\s+(?P<body>.*)$")
_GPU_TAG = re.compile(r"^\[GPU::\s*(?P<id>\d+)\]\s+(?P<body>.*)$")
_GPU = r"\[GPU::\s*(?P<{p}node>\d+)\s*-\s*(?P<{p}id>\d+)\s*-\s*(?P<{p}bdf>[0-9a-fA-F:.]+)\]"
_GFLOPS = re.compile(r"^GFLOPS (?P<g>[\d.]+)(?: Target GFLOPS: (?P<t>[\d.]+) met: (?P<met>TRUE|FALSE))?$")
_POWER = re.compile(r"^Power\(W\) (?P<w>[\d.]+)$")
_PASS = re.compile(r"^pass: (?P<v>TRUE|FALSE|true|false)$")
_RAMP = re.compile(r"^(?:Start|End) of GPU ramp up$")
_GM = re.compile(r"^gm (?P<id>\d+) (?P<metric>\w+) violations (?P<n>\d+)$")
_GPUP_LINK = re.compile(r"^gpup (?P<id>\d+) (?P<link>\d+) (?P<name>\w+) (?P<value>\S+)$")
_GPUP = re.compile(r"^gpup (?P<id>\d+) (?P<name>[A-Za-z_]\w*) (?P<value>\S+)$")
_MEM = re.compile(r"^mem Test (?P<test>\d+): elapsedtime = (?P<t>[\d.]+) bandwidth = (?P<bw>[\d.]+)\s*GB/s$")
_TAIL = r"(?P<gbs>[\d.]+) GBps(?: duration: (?P<dur>[\d.]+) secs)?(?P<elided> \.\.\.)?"
_P2P_BW = re.compile(r"^p2p-bandwidth\s*\[\s*(?P<i>\d+)/\s*(?P<n>\d+)\]\s+" + _GPU.format(p="s") + r"\s+"
                     + _GPU.format(p="d") + r"\s+bidirectional: (?P<bi>true|false)\s+" + _TAIL + "$")
_PCIE_BW = re.compile(r"^pcie-bandwidth\s*\[\s*(?P<i>\d+)/\s*(?P<n>\d+)\]\s+\[CPU::\s*(?P<cpu>\d+)\]\s+"
                      + _GPU.format(p="d") + r"\s+h2d::(?P<h2d>true|false)\s+d2h::(?P<d2h>true|false)\s+" + _TAIL + "$")
_P2P_DIST = re.compile(r"^p2p\s+" + _GPU.format(p="s") + r"\s+" + _GPU.format(p="d")
                       + r"\s+peers:(?P<peers>true|false)\s+distance:(?P<dist>\d+)\s+(?P<type>\w+):(?P<ld>\d+)$")
_PCIE_DIST = re.compile(r"^pcie-bandwidth\s+\[CPU::\s*(?P<cpu>\d+)\]\s+" + _GPU.format(p="d")
                        + r"\s+distance:(?P<dist>\d+)\s+(?P<type>\w+):(?P<ld>\d+)$")
_PEQT = re.compile(r"^peqt (?P<v>true|false)$")


def _trustworthy(module: str | None) -> bool:
    """A pass from an unknown module (no 'Module name' line was seen) is not trusted either."""
    return module is not None and module not in UNTRUSTED_PASS_MODULES


def _duration(m: re.Match[str], line_no: int, raw: str) -> float | None:
    return number(TOOL, m["dur"], line_no, raw, "duration (secs)") if m["dur"] else None


def _gpu(m: re.Match[str], p: str) -> RvsGpu:
    return RvsGpu(node=int(m[f"{p}node"]), gpu_id=int(m[f"{p}id"]), bdf=m[f"{p}bdf"])


class _Acc:
    """Lists being filled while the lines are read."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.modules: dict[str, str] = {}
        self.gpu_ids: dict[int, None] = {}
        self.gst: list[GstSample] = []
        self.events: list[GpuEvent] = []
        self.power: list[PowerSample] = []
        self.passes: list[Pass] = []
        self.violations: list[Violations] = []
        self.properties: list[GpuProperty] = []
        self.mem: list[MemBandwidth] = []
        self.peer_bw: list[PeerBandwidth] = []
        self.pcie_bw: list[PcieBandwidth] = []
        self.distances: list[Distance] = []
        self.peqt: list[PeqtResult] = []
        self.truncated = False

    def seen(self, *ids: int) -> None:
        for gpu_id in ids:
            self.gpu_ids.setdefault(gpu_id, None)


def parse(text: str) -> RvsResult:
    """Parse an RVS log (stdout or `-l` file), whole or grep-filtered."""
    require_text(TOOL, text)
    acc = _Acc()
    command = None
    for line_no, raw in numbered(text):
        line = raw.strip()
        if not line:
            continue
        if is_elision(line):
            acc.truncated = True
            continue
        if m := COMMAND.match(line):
            command = m["cmd"]
            continue
        m = _LINE.match(line)
        if m is None:
            raise ParseError(TOOL, "line not understood", line_no=line_no, line=raw,
                             expected="'[RESULT] [timestamp] ...' (or another RVS log level)")
        if m["level"] != "RESULT":
            continue
        _result(acc, m["rest"], line_no, raw)
    found = (acc.actions or acc.gst or acc.power or acc.passes or acc.violations or acc.properties or acc.mem
             or acc.peer_bw or acc.pcie_bw or acc.distances or acc.peqt)
    if not found:
        raise ParseError(TOOL, "no [RESULT] lines found", expected="RVS [RESULT] lines",
                         hint="run rvs with a module config (-c) and pass its stdout or -l log")
    return RvsResult(command=command, actions=tuple(acc.actions), gpu_ids=tuple(acc.gpu_ids), gst=tuple(acc.gst),
                     events=tuple(acc.events), power=tuple(acc.power), passes=tuple(acc.passes),
                     violations=tuple(acc.violations), properties=tuple(acc.properties), mem=tuple(acc.mem),
                     peer_bandwidth=tuple(acc.peer_bw), pcie_bandwidth=tuple(acc.pcie_bw),
                     distances=tuple(acc.distances), peqt=tuple(acc.peqt), truncated=acc.truncated)


def _result(acc: _Acc, rest: str, line_no: int, raw: str) -> None:
    if m := _ACTION.match(rest):
        acc.actions.append(Action(name=m["name"], module=None))
        return
    if m := _MODULE.match(rest):
        if not acc.actions or acc.actions[-1].module is not None:
            raise ParseError(TOOL, "'Module name' without an 'Action name' before it", line_no=line_no, line=raw,
                             expected="'Action name :X' first")
        last = acc.actions.pop()
        acc.actions.append(Action(name=last.name, module=m["name"]))
        acc.modules[last.name] = m["name"]
        return
    tag = _TAG.match(rest)
    if tag is None:
        raise ParseError(TOOL, "result line without an [action] tag", line_no=line_no, line=raw,
                         expected="'[action] ...'")
    action, body = tag["action"], tag["body"]
    module = acc.modules.get(action)
    if g := _GPU_TAG.match(body):
        gpu_id, gbody = int(g["id"]), g["body"]
        acc.seen(gpu_id)
        if m := _GFLOPS.match(gbody):
            target = number(TOOL, m["t"], line_no, raw, "target GFLOPS") if m["t"] else None
            acc.gst.append(GstSample(action=action, gpu_id=gpu_id, gflops=number(TOOL, m["g"], line_no, raw, "GFLOPS"),
                                     target_gflops=target, met=None if m["met"] is None else m["met"] == "TRUE"))
        elif m := _POWER.match(gbody):
            power = number(TOOL, m["w"], line_no, raw, "Power(W)")
            acc.power.append(PowerSample(action=action, gpu_id=gpu_id, power_w=power))
        elif m := _PASS.match(gbody):
            acc.passes.append(Pass(action=action, module=module, gpu_id=gpu_id, passed=m["v"].upper() == "TRUE",
                                   trustworthy=_trustworthy(module)))
        elif _RAMP.match(gbody):
            acc.events.append(GpuEvent(action=action, gpu_id=gpu_id, text=gbody))
        else:
            raise ParseError(TOOL, "GPU result not understood", line_no=line_no, line=raw,
                             expected="'GFLOPS N [Target GFLOPS: T met: TRUE]', 'Power(W) N', 'pass: TRUE|FALSE' "
                             "or a ramp-up event")
    elif m := _GM.match(body):
        acc.seen(int(m["id"]))
        acc.violations.append(Violations(action=action, gpu_id=int(m["id"]), metric=m["metric"], count=int(m["n"])))
    elif m := _GPUP_LINK.match(body):
        acc.seen(int(m["id"]))
        acc.properties.append(GpuProperty(action=action, gpu_id=int(m["id"]), io_link=int(m["link"]),
                                          name=m["name"], value=m["value"]))
    elif m := _GPUP.match(body):
        acc.seen(int(m["id"]))
        acc.properties.append(GpuProperty(action=action, gpu_id=int(m["id"]), io_link=None, name=m["name"],
                                          value=m["value"]))
    elif m := _MEM.match(body):
        acc.mem.append(MemBandwidth(action=action, test=int(m["test"]),
                                    elapsedtime_as_printed=number(TOOL, m["t"], line_no, raw, "elapsedtime"),
                                    gb_s=number(TOOL, m["bw"], line_no, raw, "bandwidth")))
    elif m := _P2P_BW.match(body):
        src, dst = _gpu(m, "s"), _gpu(m, "d")
        acc.seen(src.gpu_id, dst.gpu_id)
        acc.truncated |= bool(m["elided"])
        acc.peer_bw.append(PeerBandwidth(action=action, index=int(m["i"]), total=int(m["n"]), src=src, dst=dst,
                                         bidirectional=m["bi"] == "true",
                                         gb_s=number(TOOL, m["gbs"], line_no, raw, "GBps"),
                                         duration_s=_duration(m, line_no, raw)))
    elif m := _PCIE_BW.match(body):
        gpu = _gpu(m, "d")
        acc.seen(gpu.gpu_id)
        acc.truncated |= bool(m["elided"])
        acc.pcie_bw.append(PcieBandwidth(action=action, index=int(m["i"]), total=int(m["n"]), cpu=int(m["cpu"]),
                                         gpu=gpu, h2d=m["h2d"] == "true", d2h=m["d2h"] == "true",
                                         gb_s=number(TOOL, m["gbs"], line_no, raw, "GBps"),
                                         duration_s=_duration(m, line_no, raw)))
    elif m := _P2P_DIST.match(body):
        src, dst = _gpu(m, "s"), _gpu(m, "d")
        acc.seen(src.gpu_id, dst.gpu_id)
        acc.distances.append(Distance(action=action, src_cpu=None, src_gpu=src, dst=dst,
                                      peers=m["peers"] == "true", distance=int(m["dist"]), link_type=m["type"],
                                      link_distance=int(m["ld"])))
    elif m := _PCIE_DIST.match(body):
        dst = _gpu(m, "d")
        acc.seen(dst.gpu_id)
        acc.distances.append(Distance(action=action, src_cpu=int(m["cpu"]), src_gpu=None, dst=dst, peers=None,
                                      distance=int(m["dist"]), link_type=m["type"], link_distance=int(m["ld"])))
    elif m := _PEQT.match(body):
        acc.peqt.append(PeqtResult(action=action, passed=m["v"] == "true"))
    elif m := _PASS.match(body):
        acc.passes.append(Pass(action=action, module=module, gpu_id=None, passed=m["v"].upper() == "TRUE",
                               trustworthy=_trustworthy(module)))
    else:
        raise ParseError(TOOL, "result line not understood", line_no=line_no, line=raw,
                         expected="a gst/iet/gm/gpup/mem/pbqt/pebb/peqt result line")


def argv(binary: str = "rvs", *, config: str, log_file: str | None = None, debug_level: int | None = None) -> list[str]:
    """Command line for one RVS config (`rvs -c gst_single.conf [-l log] [-d N]`)."""
    if not config.endswith(".conf"):
        raise ValueError(f"RVS config {config!r} should be a .conf file")
    out = [binary, "-c", config]
    if log_file is not None:
        out += ["-l", log_file]
    if debug_level is not None:
        if not 0 <= debug_level <= 5:
            raise ValueError(f"debug_level must be 0..5, got {debug_level}")
        out += ["-d", str(debug_level)]
    return out
