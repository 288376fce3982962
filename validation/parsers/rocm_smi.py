"""Parse `rocm-smi` output: the concise table (5.x legacy, 6.0-6.1 [Model : Revision], 6.2+ Node/IDs
layouts), --showtopo matrices and NUMA lines, --showproductname, -a sections, the process views
--showpids (KFD Processes) and --showpidgpus (GPUs Indexed by PID), and --json.

A host without the amdgpu driver prints "ERROR:root:Driver not initialized (amdgpu not found in
modules)": a valid record with driver_initialized=False and no GPUs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from validation.errors import ParseError
from validation.parsers._text import command_and_body, line_at
from validation.records import GpuProcess

TOOL = "rocm-smi"

_TITLE = re.compile(r"^=+ (?P<title>.+?) =+$")
_GPU_LINE = re.compile(r"^GPU\[(?P<index>\d+)\]\s*:\s?(?P<rest>.*)$")
_KEY_VALUE = re.compile(r"^(?P<key>[^:]+?):\s*(?P<value>.*)$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?")
_NO_DRIVER = re.compile(r"^ERROR:root:Driver not initialized")
# rsmi_ret_ok() prints '<function>, Not supported on the given system' for each call the driver refuses
# (ROCm 5.6 --showpids: rocm-smi/w6800-rocm-issue2595-showpids-unknown-5.6.0.txt)
_NOISE = (re.compile(r"^WARNING:"), re.compile(r"^cat: /sys/module/amdgpu/"),
          re.compile(r"^\w+, Not supported on the given system$"))
# Sections whose body is free text, not GPU[N] lines.
_FREE_SECTIONS = {"KFD Processes", "GPUs Indexed by PID", "Version of System Component"}
_NO_PIDS = "No KFD PIDs currently running"
# --showpids header; 'KFD process information' has a colon since ROCm 6.x, none in 5.6
_KFD_INFO = re.compile(r"^KFD process information:?$")
_KFD_HEADER = re.compile(r"^PID\s+PROCESS NAME\s+GPU\(s\)\s+VRAM USED\s+SDMA USED\s+CU OCCUPANCY$")
# VRAM USED is bytes: KFD's per-process vram_<gpuid> sysfs counter adds buffer sizes in bytes
# (linux drivers/gpu/drm/amd/amdkfd, kfd_process_device.vram_usage), which rsmi_process_info_t.vram_usage
# passes through; GPU(s) is a count of GPUs, not an index (rocm_smi.py showPids: len(gpu list)).
_KFD_ROW = re.compile(r"^(?P<pid>\d+)\s+(?P<name>.*?)\s+(?P<gpus>\d+|UNKNOWN)\s+(?P<vram>\d+|UNKNOWN)\s+"
                      r"(?P<sdma>\d+|UNKNOWN)\s+(?P<cu>\d+|UNKNOWN|N/A)$")
_PID_GPUS = re.compile(r"^PID (?P<pid>\d+) is using (?P<count>\d+) DRM device\(s\)(?P<colon>:?)$")
_MATRICES = {"Weight between two GPUs": "weight", "Hops between two GPUs": "hops",
             "Link Type between two GPUs": "link_type"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """What rocm-smi reports about one GPU in this view; None = not reported."""

    index: int
    name: str | None = None  # concise name line, or Card Series
    device_id: int | None = None  # DID / "Device ID" / "GPU ID"
    model_id: int | None = None  # concise [Model : ...] / "Card Model"
    revision: int | None = None
    node_id: int | None = None
    guid: int | None = None
    card_vendor: str | None = None
    card_sku: str | None = None
    gfx_version: str | None = None
    unique_id: str | None = None
    serial_number: str | None = None
    vbios_version: str | None = None
    pci_bus: str | None = None
    temperature_c: float | None = None  # concise Temp (the sensor named in temperature_sensor)
    temperature_sensor: str | None = None  # "Junction", "Edge", "DieEdge"
    temperature_junction_c: float | None = None
    temperature_memory_c: float | None = None
    temperature_edge_c: float | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    memory_partition: str | None = None
    compute_partition: str | None = None
    partition_id: int | None = None
    sclk_mhz: float | None = None
    mclk_mhz: float | None = None
    fan_pct: float | None = None
    perf_level: str | None = None
    vram_used_pct: float | None = None
    gpu_busy_pct: float | None = None
    vram_total_bytes: int | None = None
    vram_used_bytes: int | None = None
    numa_node: int | None = None
    numa_affinity: int | None = None
    pcie_replay_count: int | None = None
    memory_vendor: str | None = None
    firmware: dict[str, str] = field(default_factory=dict)  # "MEC" -> "138"


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyLink:
    """One ordered GPU pair from --showtopo (or the JSON `(Topology) ...` keys)."""

    src_gpu: int
    dst_gpu: int
    weight: int | None = None
    hops: int | None = None
    link_type: str | None = None  # XGMI, PCIE


@dataclass(frozen=True, slots=True, kw_only=True)
class RocmSmiRecord:
    """The parsed rocm-smi output."""

    view: str  # concise, showtopo, showproductname, all, json, no-driver
    layout: str | None  # concise layout: "5.x", "6.0-6.1", "6.2+"
    command_line: str | None
    driver_initialized: bool
    driver_version: str | None
    gpus: tuple[Gpu, ...]
    links: tuple[TopologyLink, ...]
    sections: tuple[str, ...]
    processes: tuple[GpuProcess, ...] = ()  # --showpids (gpu None: it prints a count) and --showpidgpus
    truncated: bool = False  # a text view without its closing 'End of ROCm SMI Log' line


def _number(raw: str | None) -> float | None:
    if raw is None:
        return None
    match = _NUMBER.match(raw.strip())
    return float(match.group(0)) if match else None


def _int_or_hex(raw: str | None) -> int | None:
    if raw is None:
        return None
    text = raw.strip()
    if re.fullmatch(r"0x[0-9a-fA-F]+", text):
        return int(text, 16)
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else None


def _none_if_na(raw: str | None) -> str | None:
    if raw is None:
        return None
    text = raw.strip()
    return None if text in ("", "N/A") else text


class _Gpus:
    """Mutable per-GPU attribute collector; built into frozen records at the end."""

    def __init__(self) -> None:
        self.attrs: dict[int, dict[str, Any]] = {}

    def set(self, index: int, **values: Any) -> None:
        gpu = self.attrs.setdefault(index, {"index": index, "firmware": {}})
        for key, value in values.items():
            if value is not None:
                gpu[key] = value

    def firmware(self, index: int, block: str, version: str) -> None:
        self.set(index)
        self.attrs[index]["firmware"][block] = version

    def build(self) -> tuple[Gpu, ...]:
        return tuple(Gpu(**self.attrs[k]) for k in sorted(self.attrs))


# One mapping for -a text and --json keys (lower-cased), old and new spellings.
_FIELD_MAP: dict[str, tuple[str, Any] | tuple[None, None]] = {
    "device id": ("device_id", _int_or_hex), "gpu id": ("device_id", _int_or_hex),
    "device rev": ("revision", _int_or_hex), "card series": ("name", _none_if_na),
    "card model": ("model_id", _int_or_hex), "card vendor": ("card_vendor", _none_if_na),
    "card sku": ("card_sku", _none_if_na), "subsystem id": (None, None),
    "node id": ("node_id", _int_or_hex), "guid": ("guid", _int_or_hex),
    "gfx version": ("gfx_version", _none_if_na), "unique id": ("unique_id", _none_if_na),
    "serial number": ("serial_number", _none_if_na), "vbios version": ("vbios_version", _none_if_na),
    "pci bus": ("pci_bus", _none_if_na),
    "temperature (sensor junction) (c)": ("temperature_junction_c", _number),
    "temperature (sensor memory) (c)": ("temperature_memory_c", _number),
    "temperature (sensor edge) (c)": ("temperature_edge_c", _number),
    "max graphics package power (w)": ("power_cap_w", _number),
    "average graphics package power (w)": ("power_w", _number),
    "current socket graphics package power (w)": ("power_w", _number),
    "gpu use (%)": ("gpu_busy_pct", _number), "gpu memory use (%)": ("vram_used_pct", _number),
    "vram total memory (b)": ("vram_total_bytes", _int_or_hex),
    "vram total used memory (b)": ("vram_used_bytes", _int_or_hex),
    "(topology) numa node": ("numa_node", _int_or_hex),
    "(topology) numa affinity": ("numa_affinity", _int_or_hex),
    "pcie replay count": ("pcie_replay_count", _int_or_hex),
    "gpu memory vendor": ("memory_vendor", _none_if_na),
    "performance level": ("perf_level", _none_if_na),
    "compute partition": ("compute_partition", _none_if_na),
    "memory partition": ("memory_partition", _none_if_na),
    # current clocks: -a/-c text 'sclk clock level: 1: (141Mhz)' (6.x) or '15 (1502Mhz)' (6.0); pre-6.1
    # --json 'sclk clock speed:': '(300Mhz)' and 'sclk clock level': '0 (300Mhz)'
    "sclk clock level": ("sclk_mhz", "_clock"), "sclk clock speed:": ("sclk_mhz", "_clock"),
    "mclk clock level": ("mclk_mhz", "_clock"), "mclk clock speed:": ("mclk_mhz", "_clock"),
}


def _apply_field(gpus: _Gpus, index: int, key: str, value: str, line_no: int | None = None,
                 line: str | None = None) -> None:
    lowered = key.strip().lower()
    if lowered.endswith(" firmware version"):
        gpus.firmware(index, key.strip()[: -len(" firmware version")], value.strip())
        return
    target = _FIELD_MAP.get(lowered)
    if not (target and target[0]):
        return
    if target[1] == "_clock":
        clock = re.search(r"\((\d+(?:\.\d+)?)\s*Mhz\)", value, re.IGNORECASE)
        if clock is None and _none_if_na(value) is not None:
            raise ParseError(TOOL, f"cannot read a clock from {key.strip()!r}: {value.strip()!r}", line_no=line_no,
                             line=line, expected="'<level>: (<n>Mhz)' or '(<n>Mhz)'")
        gpus.set(index, **{target[0]: float(clock.group(1)) if clock else None})
        return
    converted = target[1](value)
    if converted is None and target[1] is not _none_if_na and _none_if_na(value) is not None:
        raise ParseError(TOOL, f"cannot read {key.strip()!r} from {value.strip()!r}", line_no=line_no,
                         line=line, expected=f"a number or N/A for {key.strip()!r}")
    gpus.set(index, **{target[0]: converted})


def parse(text: str) -> RocmSmiRecord:
    """Parse one rocm-smi run (text views or --json)."""
    command_line, body = command_and_body(TOOL, text, expected="rocm-smi output")
    if body[0][1].lstrip().startswith("{"):
        return _parse_json(body, command_line)
    return _parse_text(body, command_line)


def _parse_text(body: list[tuple[int, str]], command_line: str | None) -> RocmSmiRecord:
    gpus = _Gpus()
    matrices: dict[str, dict[tuple[int, int], str]] = {}
    sections: list[str] = []
    section: str | None = None
    layout: str | None = None
    driver_version = None
    processes: list[GpuProcess] = []
    no_driver = ended = False
    i = 0
    while i < len(body):
        n, line = body[i]
        stripped = line.strip()
        i += 1
        if not stripped:
            continue
        if ended:
            raise ParseError(TOOL, "text after 'End of ROCm SMI Log'", line_no=n, line=line,
                             expected="nothing after the end of the log", hint="pass one run per file")
        if m := _TITLE.match(stripped):
            title = m.group("title").strip()
            if title == "End of ROCm SMI Log":
                ended = True
            elif title != "ROCm System Management Interface":
                section = title
                sections.append(title)
                if title == "Concise Info":
                    i, layout = _concise(body, i, gpus)
                elif title in _MATRICES:
                    i = _matrix(body, i, matrices.setdefault(_MATRICES[title], {}))
            continue
        if set(stripped) <= {"="} or set(stripped) <= {"-"}:
            continue
        if _NO_DRIVER.match(stripped):
            no_driver = True
            continue
        if any(p.match(stripped) for p in _NOISE):
            continue
        if section is None and _KFD_INFO.match(stripped):
            section = "KFD Processes"  # a paste that starts below the banners (ROCm 5.6 issue #2595)
            sections.append(section)
        if section is None:
            raise ParseError(TOOL, "unrecognised line before any section", line_no=n, line=line,
                             expected="'==== ROCm System Management Interface ====' or a section title",
                             hint="is this rocm-smi output?")
        if section == "KFD Processes":
            processes += _kfd_line(n, line, stripped)
            continue
        if section == "GPUs Indexed by PID":
            i, found = _pid_gpus(body, i, n, line, stripped)
            processes += found
            continue
        if section in _FREE_SECTIONS:
            m = _KEY_VALUE.match(stripped)
            if m and section == "Version of System Component" and m.group("key").lower() == "driver version":
                driver_version = m.group("value").strip()
            continue
        gm = _GPU_LINE.match(stripped)
        if gm is None:
            raise ParseError(TOOL, f"unrecognised line in section {section!r}", line_no=n, line=line,
                             expected="'GPU[N] : ...'")
        index, rest = int(gm.group("index")), gm.group("rest").strip()
        kv = _KEY_VALUE.match(rest)
        if kv is None:
            continue  # "Not supported", a frequency list entry, or an empty continuation
        key, value = kv.group("key").strip(), kv.group("value").strip()
        if re.search(re.escape(key) + r"\s*:", value, re.IGNORECASE):
            raise ParseError(TOOL, f"value of {key!r} contains another {key!r} field", line_no=n,
                             line=line, expected=f"one {key!r} value per line",
                             hint="two lines appear pasted together; re-capture the output")
        _apply_field(gpus, index, key, value, n, line)

    if not no_driver and not sections:
        raise ParseError(TOOL, "no rocm-smi section found",
                         expected="'==== <section> ====' titles or the driver-not-initialised error",
                         hint="is this rocm-smi output?")
    links = _links_from_matrices(matrices)
    view = _view(sections, no_driver)
    return RocmSmiRecord(view=view, layout=layout, command_line=command_line,
                         driver_initialized=not no_driver, driver_version=driver_version,
                         gpus=gpus.build(), links=tuple(links), sections=tuple(sections),
                         processes=tuple(processes), truncated=bool(sections) and not ended)


def _kfd_line(n: int, line: str, stripped: str) -> list[GpuProcess]:
    """One line of --showpids: the 'KFD process information' title, the column header, a process
    row, or 'No KFD PIDs currently running'."""
    if _KFD_INFO.match(stripped) or stripped == _NO_PIDS or _KFD_HEADER.match(stripped):
        return []
    m = _KFD_ROW.match(stripped)
    if m is None:
        raise ParseError(TOOL, "unrecognised KFD process row", line_no=n, line=line,
                         expected="'<PID> <PROCESS NAME> <GPU(s)> <VRAM USED> <SDMA USED> <CU OCCUPANCY>'")
    vram, name = m.group("vram"), m.group("name").strip()
    # 'UNKNOWN' where the name could not be read (rocm-smi/mi300x-x4-thamada-gls-rocm-smi-a.txt)
    return [GpuProcess(pid=int(m.group("pid")), name=None if name == "UNKNOWN" else _none_if_na(name), gpu=None,
                       vram_mib=None if vram == "UNKNOWN" else round(int(vram) / (1 << 20), 3))]


def _pid_gpus(body: list[tuple[int, str]], i: int, n: int, line: str,
              stripped: str) -> tuple[int, list[GpuProcess]]:
    """--showpidgpus: 'PID <pid> is using <k> DRM device(s)', followed by a line of the k device
    indices when k > 0 (rocm_smi.py printListLog wraps that list at the terminal width)."""
    if stripped == _NO_PIDS:
        return i, []
    m = _PID_GPUS.match(stripped)
    if m is None:
        raise ParseError(TOOL, "unrecognised line in 'GPUs Indexed by PID'", line_no=n, line=line,
                         expected="'PID <pid> is using <k> DRM device(s)'")
    pid, count = int(m.group("pid")), int(m.group("count"))
    if count == 0:
        return i, [GpuProcess(pid=pid, gpu=None)]
    indices: list[int] = []
    while len(indices) < count and i < len(body) and re.fullmatch(r"[\d ]+", body[i][1].strip() or "x"):
        indices += [int(t) for t in body[i][1].split()]
        i += 1
    if len(indices) != count:
        raise ParseError(TOOL, f"PID {pid} lists {len(indices)} device indices for {count}", line_no=n,
                         line=line, expected=f"{count} device indices on the next line")
    return i, [GpuProcess(pid=pid, gpu=index) for index in indices]


def _view(sections: list[str], no_driver: bool) -> str:
    if no_driver and not sections:
        return "no-driver"
    names = set(sections)
    if names == {"Concise Info"}:
        return "concise"
    if names == {"KFD Processes"}:
        return "showpids"
    if names == {"GPUs Indexed by PID"}:
        return "showpidgpus"
    if names and names <= set(_MATRICES) | {"Numa Nodes"}:
        return "showtopo"
    if names == {"Product Info"}:
        return "showproductname"
    return "all"


_ROW_62 = re.compile(r"^(?P<dev>\d+)\s+(?P<node>\d+|N/A)\s+(?P<did>0x[0-9a-fA-F]+|N/A),\s+"
                     r"(?P<guid>\d+|N/A)\s+(?P<rest>.+)$")
_ROW_60 = re.compile(r"^(?P<dev>\d+)\s+\[(?P<model>0x[0-9a-fA-F]+|N/A)\s*:\s*"
                     r"(?P<rev>0x[0-9a-fA-F]+|N/A)\]\s+(?P<rest>.+)$")
_ROW_5X = re.compile(r"^(?P<dev>\d+)\s+(?P<rest>.+)$")


def _concise(body: list[tuple[int, str]], i: int, gpus: _Gpus) -> tuple[int, str]:
    """Read the concise table that starts at body[i]; returns the next index and the layout."""
    if i >= len(body):
        raise ParseError(TOOL, "Concise Info without a header", expected="the column header line")
    n, header = body[i]
    words = header.split()
    if words[:2] == ["Device", "Node"]:
        layout, row_re, columns = "6.2+", _ROW_62, 10
    elif words[:2] == ["Device", "[Model"]:
        layout, row_re, columns = "6.0-6.1", _ROW_60, 10
    elif words[:2] == ["GPU", "Temp"]:
        layout, row_re, columns = "5.x", _ROW_5X, 9
    else:
        raise ParseError(TOOL, "unknown concise table header", line_no=n, line=header,
                         expected="'Device  Node  IDs ...', 'Device  [Model : Revision] ...' "
                                  "or 'GPU  Temp ...'")
    sensor_match = re.search(r"Temp \((\w+)\)", header)
    i += 1
    if layout != "5.x" and i < len(body) and not body[i][1].lstrip()[:1].isdecimal():
        sub = body[i][1]
        sensor_match = sensor_match or re.search(r"\((Junction|Edge|Memory|Hotspot)\)", sub)
        i += 1  # the second header line: (DID, GUID) ... or Name (20 chars) ...
    sensor = sensor_match.group(1) if sensor_match else None
    last: int | None = None
    while i < len(body):
        n, line = body[i]
        stripped = line.strip()
        if not stripped or set(stripped) <= {"="}:
            if stripped and last is None and i + 1 < len(body) and _row_starts(body[i + 1][1]):
                i += 1
                continue  # the rule between header and rows
            break
        if _TITLE.match(stripped):
            break
        m = row_re.match(stripped)
        if m is None:
            if layout == "6.0-6.1" and last is not None and line.startswith(" "):
                gpus.set(last, name=stripped)  # "Name (20 chars)" line under the row
                i += 1
                continue
            raise ParseError(TOOL, f"unrecognised {layout} concise row", line_no=n, line=line,
                             expected="a row starting with the device index")
        rest = re.sub(r",\s+", ",", m.group("rest")).split()
        if len(rest) != columns:
            raise ParseError(TOOL, f"concise row has {len(rest)} value columns, "
                             f"the {layout} layout has {columns}", line_no=n, line=line,
                             expected=f"{columns} values after the device ids")
        index = int(m.group("dev"))
        if layout == "5.x":
            temp, power, sclk, mclk, fan, perf, cap, vram, busy = rest
            partitions = None
        else:
            temp, power, partitions, sclk, mclk, fan, perf, cap, vram, busy = rest
        values: dict[str, Any] = {
            "temperature_c": _number(temp), "temperature_sensor": sensor, "power_w": _number(power),
            "sclk_mhz": _number(sclk), "mclk_mhz": _number(mclk), "fan_pct": _number(fan),
            "perf_level": _none_if_na(perf), "power_cap_w": _number(cap),
            "vram_used_pct": _number(vram), "gpu_busy_pct": _number(busy),
        }
        if partitions is not None:
            parts = partitions.split(",")
            values["memory_partition"] = _none_if_na(parts[0])
            values["compute_partition"] = _none_if_na(parts[1]) if len(parts) > 1 else None
            values["partition_id"] = _int_or_hex(parts[2]) if len(parts) > 2 else None
        if layout == "6.2+":
            values.update(node_id=_int_or_hex(m.group("node")), device_id=_int_or_hex(m.group("did")),
                          guid=_int_or_hex(m.group("guid")))
        elif layout == "6.0-6.1":
            values.update(model_id=_int_or_hex(m.group("model")), revision=_int_or_hex(m.group("rev")))
        gpus.set(index, **values)
        last = index
        i += 1
    if last is None:
        at, text = line_at(body, i)
        raise ParseError(TOOL, "concise table has no GPU rows", line_no=at, line=text,
                         expected="one row per GPU after the header")
    return i, layout


def _row_starts(line: str) -> bool:
    return bool(re.match(r"^\d+\s", line.strip()))


def _matrix(body: list[tuple[int, str]], i: int, cells: dict[tuple[int, int], str]) -> int:
    if i >= len(body):
        raise ParseError(TOOL, "topology matrix without a header", expected="'GPU0 GPU1 ...'")
    n, header = body[i]
    columns = header.split()
    if not columns or not all(re.fullmatch(r"GPU\d+", c) for c in columns):
        raise ParseError(TOOL, "topology matrix header is not 'GPU0 GPU1 ...'", line_no=n, line=header,
                         expected="'GPU0 GPU1 ...'")
    dst = [int(c[3:]) for c in columns]
    i += 1
    rows = 0
    while i < len(body):
        n, line = body[i]
        words = line.split()
        if not words or not re.fullmatch(r"GPU\d+", words[0]):
            break
        if len(words) != len(dst) + 1:
            raise ParseError(TOOL, f"topology row has {len(words) - 1} cells for {len(dst)} GPUs",
                             line_no=n, line=line, expected=f"{len(dst)} cells")
        src = int(words[0][3:])
        for d, cell in zip(dst, words[1:], strict=True):
            cells[(src, d)] = cell
        rows += 1
        i += 1
    if rows == 0:
        n, line = body[i] if i < len(body) else (n, header)
        raise ParseError(TOOL, "topology matrix without rows", line_no=n, line=line,
                         expected="rows 'GPUn  ...'")
    return i


def _links_from_matrices(matrices: dict[str, dict[tuple[int, int], str]]) -> list[TopologyLink]:
    pairs = sorted({p for cells in matrices.values() for p in cells if p[0] != p[1]})
    links = []
    for src, dst in pairs:
        weight = matrices.get("weight", {}).get((src, dst))
        hops = matrices.get("hops", {}).get((src, dst))
        kind = matrices.get("link_type", {}).get((src, dst))
        links.append(TopologyLink(src_gpu=src, dst_gpu=dst, weight=_int_or_hex(weight),
                                  hops=_int_or_hex(hops), link_type=_none_if_na(kind)))
    return links


_JSON_TOPO = re.compile(r"^\(Topology\) (Weight|Hops|Link type) between DRM devices (\d+) and (\d+)$")


def _parse_json(body: list[tuple[int, str]], command_line: str | None) -> RocmSmiRecord:
    try:
        doc = json.loads("\n".join(line for _, line in body))
    except json.JSONDecodeError as exc:
        n, line = body[min(exc.lineno - 1, len(body) - 1)]
        raise ParseError(TOOL, f"invalid JSON: {exc.msg}", line_no=n, line=line,
                         expected="one complete JSON document") from exc
    if not isinstance(doc, dict) or not any(re.fullmatch(r"card\d+", str(k)) for k in doc):
        raise ParseError(TOOL, "JSON without 'cardN' objects", line_no=body[0][0], line=body[0][1],
                         expected="{'card0': {...}, ..., 'system': {...}}")
    gpus = _Gpus()
    for key, fields in doc.items():
        card = re.fullmatch(r"card(\d+)", str(key))
        if card is None:
            continue
        if not isinstance(fields, dict):
            raise ParseError(TOOL, f"{key} is not an object", expected="an object of 'name': 'value'")
        index = int(card.group(1))
        gpus.set(index)
        for name, value in fields.items():
            _apply_field(gpus, index, str(name), str(value))
    system = doc.get("system", {})
    matrices: dict[str, dict[tuple[int, int], str]] = {}
    driver_version = None
    if isinstance(system, dict):
        driver_version = system.get("Driver version")
        for name, value in system.items():
            m = _JSON_TOPO.match(str(name))
            if m:
                kind = {"Weight": "weight", "Hops": "hops", "Link type": "link_type"}[m.group(1)]
                a, b = int(m.group(2)), int(m.group(3))
                matrices.setdefault(kind, {})[(a, b)] = str(value)
                matrices[kind][(b, a)] = str(value)
    return RocmSmiRecord(view="json", layout=None, command_line=command_line, driver_initialized=True,
                         driver_version=driver_version, gpus=gpus.build(),
                         links=tuple(_links_from_matrices(matrices)), sections=())
