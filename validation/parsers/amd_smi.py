"""Parse `amd-smi` output: list/static/metric/firmware/process (text tree), topology and xgmi
tables, monitor (with its `-q` / `--process` PROCESS INFO table), the 7.x boxed default view (with
its Processes box), and `--json` (bare list, 6.1+ value/unit objects, and the 7.x `gpu_data`
wrapper).

The sub-command is detected from the content; a leading `$ amd-smi ...` line is only kept as
`command_line`. amd-smi's "MB" is 2^20 bytes (196592 MB on a 192 GiB MI300X), hence `_mib`; its
process memory units are binary too (see `_PROCESS_MEMORY_MIB`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from validation.errors import ParseError
from validation.parsers import _indent_tree
from validation.parsers._text import command_and_body, line_at
from validation.records import GpuProcess

TOOL = "amd-smi"

_BDF = r"(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_TREE_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_][A-Za-z0-9_ ./()-]*?):(?: (?P<value>.*))?$")
_TOP = re.compile(r"^(GPU|CPU|CORE): (\d+)$")
_TABLE_TITLE = re.compile(r"^([A-Z][A-Z ]*) TABLE:$")
TRUNCATION_MARKERS = ("[output truncated]", "...", "[...]")   # how pasted amd-smi views mark a cut
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?")
_UNITS = {"W", "°C", "C", "%", "MHz", "MB", "GB", "KB", "TB", "mV", "J", "GT/s", "Gb/s", "Mb/s", "B", "ns", "us",
          "ms"}
# A shell's job-control notice ("[1] 1689147") pasted above the output when the workload was
# started in the background of the same terminal (amd-smi/mi300a-x4-rocm-issue4411-process-none-6.3.1.txt).
_JOB_NOTICE = re.compile(r"^\[\d+\]\+?\s+\d+$")
# Printed under the 7.x default view when process names could not be read (ROCm 7.2:
# amd-smi/mi300x-vf-msp-docs-default-view-trailer-7.2.4.txt).
_BOX_TRAILERS = ("Process Name may require elevated permissions.",)
# amd-smi prints process memory through amdsmi_helpers.convert_bytes_to_readable, which divides by
# 1024 at each step while naming the steps KB/MB/GB (github.com/ROCm/amdsmi
# amdsmi_cli/amdsmi_helpers.py). One run printed both ways confirms it: vram_mem 56000 B in
# `process --json` is "54.7 KB" in the default view (56000/1024 = 54.69) and 21008920000 B is
# "19.6 GB" (/1024^3 = 19.57; /10^9 would read 21.0) (amd-smi/r9700-x2-rocm-issue5706-*-7.2.0.txt).
# So "KB" = KiB, "MB" = MiB, "GB" = GiB; JSON {value, unit: "B"} is bytes.
_PROCESS_MEMORY_MIB = {"B": 1 / (1 << 20), "KB": 1 / (1 << 10), "MB": 1.0, "GB": float(1 << 10),
                       "TB": float(1 << 20)}
_NO_PROCESS = ("No running processes detected", "N/A")


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """What one amd-smi view reports about one GPU; None = not in this view."""

    index: int
    bdf: str | None = None
    uuid: str | None = None
    market_name: str | None = None
    device_id: int | None = None  # 0x74a1 for MI300X
    oam_id: int | None = None
    vram_type: str | None = None
    vram_total_mib: int | None = None
    vram_used_mib: int | None = None
    firmware: dict[str, str] = field(default_factory=dict)  # FW_ID -> FW_VERSION
    power_w: float | None = None  # socket power
    power_cap_w: float | None = None
    temperature_hotspot_c: float | None = None
    temperature_edge_c: float | None = None
    temperature_memory_c: float | None = None
    gfx_util_pct: float | None = None
    mem_util_pct: float | None = None
    gfx_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    ecc_correctable: int | None = None
    ecc_uncorrectable: int | None = None
    ecc_deferred: int | None = None
    # metric XGMI_ERR as printed: an amdsmi_xgmi_status_t name (NO_ERRORS, ERROR, MULTIPLE_ERRORS)
    # or "N/A"; amd-smi reports a status here, not a count
    xgmi_error_status: str | None = None
    # metric ECC_BLOCKS XGMI_WAFL: the RAS counters MI300-series GPUs keep for their xGMI links, whose
    # XGMI_ERR reads N/A there (sysfs xgmi_error returns EINVAL on gfx942/gfx950, ROCm/rocm-systems#11468)
    xgmi_wafl_correctable: int | None = None
    xgmi_wafl_uncorrectable: int | None = None
    # the counters above that the view printed as N/A: reported as unavailable, unlike one the view lacks
    not_available: tuple[str, ...] = ()
    compute_partition: str | None = None  # PARTITION COMPUTE_PARTITION (6.x) or ACCELERATOR_PARTITION (6.4+)
    memory_partition: str | None = None
    # static --partition PARTITION_ID: 0 on a GPU's primary partition, which alone prints the modes
    partition_id: int | None = None
    pcie_width_max: int | None = None
    pcie_speed_max_gt_s: float | None = None
    gfx_target: str | None = None  # ASIC TARGET_GRAPHICS_VERSION (7.x), "gfx942"
    asic_serial: str | None = None
    product_serial: str | None = None  # BOARD PRODUCT_SERIAL
    # metric --pcie link error counters as printed (replay_count, replay_roll_over_count, l0_to_recovery_count,
    # nak_sent_count, nak_received_count, lc_perf_other_end_recovery); a counter printed N/A is left out
    pcie_errors: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyLink:
    """One ordered GPU pair from `amd-smi topology` (SELF pairs are left out)."""

    src_bdf: str
    dst_bdf: str
    src_gpu: int | None = None
    dst_gpu: int | None = None
    link_type: str | None = None  # XGMI, PCIE
    hops: int | None = None
    weight: int | None = None
    accessible: bool | None = None
    numa_bandwidth: str | None = None  # "50000-50000" (min-max, as printed)


@dataclass(frozen=True, slots=True, kw_only=True)
class XgmiLink:
    """One ordered GPU pair from `amd-smi xgmi`'s LINK METRIC TABLE."""

    src_gpu: int
    src_bdf: str
    dst_bdf: str
    link_type: str | None
    bit_rate_gbit_s: float | None
    max_bandwidth_gbit_s: float | None
    read_kb: int | None  # accumulated since driver load, as printed in KB
    write_kb: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AmdSmiRecord:
    """The parsed amd-smi output of one command."""

    command: str  # list, static, metric, firmware, topology, xgmi, monitor, default
    output_format: str  # text, json
    command_line: str | None
    tool_version: str | None
    rocm_version: str | None
    driver_version: str | None
    gpus: tuple[Gpu, ...]
    links: tuple[TopologyLink, ...]
    xgmi: tuple[XgmiLink, ...]
    cpu_count: int
    truncated: bool
    processes: tuple[GpuProcess, ...] = ()  # process, monitor -q/--process, default view, process --json

    @property
    def partition_primaries(self) -> tuple[Gpu, ...]:
        """The GPUs that print partition modes: each physical GPU's primary partition (`static --partition`'s
        PARTITION_ID 0, or a view without partition ids); the secondaries print N/A."""
        return tuple(g for g in self.gpus
                     if g.partition_id in (0, None) and (g.compute_partition or g.memory_partition))


def parse(text: str) -> AmdSmiRecord:
    """Parse any supported amd-smi view; raises ParseError on anything else."""
    command_line, body = command_and_body(
        TOOL, text, expected="amd-smi output",
        skip=lambda line: line.lstrip().startswith("WARNING:") or bool(_JOB_NOTICE.match(line.strip())))
    first = body[0][1].strip()
    if first.startswith(("[", "{")):
        return _parse_json(body, command_line)
    if first.startswith("+---"):
        return _parse_box(body, command_line)
    if _TABLE_TITLE.match(first):
        return _parse_tables(body, command_line)
    if first.startswith("GPU ") and not _TOP.match(first):
        return _parse_monitor(body, command_line)
    if _TOP.match(first):
        return _parse_tree(body, command_line)
    n, line = body[0]
    raise ParseError(TOOL, "unrecognised amd-smi output", line_no=n, line=line,
                     expected="'GPU: N', a '... TABLE:' title, a monitor header, a boxed view or JSON",
                     hint="is this amd-smi output?")


# --- helpers ---------------------------------------------------------------------------------

def _number(raw: Any, n: int | None = None, line: str | None = None, what: str = "value") -> float | None:
    """A number from '234 W', '42 °C', 100, {'value': 10, 'unit': 'W'}; None for N/A."""
    if isinstance(raw, dict):
        raw = raw.get("value")
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    text = str(raw).strip()
    if text.startswith("N/A") or text == "":
        return None
    match = _NUMBER.match(text)
    if match is None:
        raise ParseError(TOOL, f"cannot read {what} from {text!r}", line_no=n, line=line,
                         expected=f"a number (with unit) or N/A for {what}")
    return float(match.group(0))


def _int(raw: Any, n: int | None = None, line: str | None = None, what: str = "value") -> int | None:
    value = _number(raw, n, line, what)
    return None if value is None else int(value)


def _hex(raw: str | None) -> int | None:
    if raw is None or not re.fullmatch(r"0x[0-9a-fA-F]+", raw.strip()):
        return None
    return int(raw, 16)


def _process_mib(raw: Any, n: int | None = None, line: str | None = None,
                 what: str = "process memory") -> float | None:
    """MiB from '2.8 GB', '54.7 KB', '0.0 B', {'value': 56000, 'unit': 'B'} or a bare byte count;
    None for N/A. Units as `_PROCESS_MEMORY_MIB` says."""
    unit = "B"
    if isinstance(raw, dict):
        unit = str(raw.get("unit") or "B")
        raw = raw.get("value")
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        value = float(raw)
    else:
        text = str(raw).strip()
        if text.startswith("N/A") or not text:
            return None
        m = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*([KMGT]?B)", text)
        if m is None:
            raise ParseError(TOOL, f"cannot read {what} from {text!r}", line_no=n, line=line,
                             expected=f"a size such as '2.8 GB' or N/A for {what}")
        value, unit = float(m.group(1)), m.group(2)
    factor = _PROCESS_MEMORY_MIB.get(unit)
    if factor is None:
        raise ParseError(TOOL, f"unknown unit {unit!r} for {what}", line_no=n, line=line,
                         expected="B, KB, MB, GB or TB")
    return round(value * factor, 3)


def _pid(raw: Any, n: int | None, line: str | None) -> int:
    text = str(raw.get("value") if isinstance(raw, dict) else raw).strip()
    if not text.isdecimal():
        raise ParseError(TOOL, f"process id {text!r} is not a number", line_no=n, line=line,
                         expected="a decimal PID")
    return int(text)


# The counters judged as errors, by their place in `amd-smi metric` (text keys; JSON uses them lower-cased
# except the block name): a counter printed as N/A, or under a section printed as N/A, is named in
# Gpu.not_available
# amd-smi metric --pcie: the link error counters (text key, JSON key -> pcie_errors name). amd-smi 6.1 names
# the roll-over counter REPLAY_ROLL_OVER_COUNT / replay_roll_over_count in both views; the other-end recovery
# counter is LC_PERF_OTHER_END_RECOVERY (6.3+).
PCIE_ERROR_KEYS = ("REPLAY_COUNT", "REPLAY_ROLL_OVER_COUNT", "L0_TO_RECOVERY_COUNT", "NAK_SENT_COUNT",
                   "NAK_RECEIVED_COUNT", "LC_PERF_OTHER_END_RECOVERY")


def _pcie_errors(values: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for key in PCIE_ERROR_KEYS:
        raw = values.get(key, values.get(key.lower()))
        if raw is None or _is_na(raw):
            continue
        number = _int(raw, what=f"PCIE/{key}")
        if number is not None:
            out[key.lower()] = number
    return out


_COUNTER_PATHS = {
    "ecc_correctable": ("ECC", "TOTAL_CORRECTABLE_COUNT"),
    "ecc_uncorrectable": ("ECC", "TOTAL_UNCORRECTABLE_COUNT"),
    "xgmi_error_status": ("XGMI_ERR",),
    "xgmi_wafl_correctable": ("ECC_BLOCKS", "XGMI_WAFL", "CORRECTABLE_COUNT"),
    "xgmi_wafl_uncorrectable": ("ECC_BLOCKS", "XGMI_WAFL", "UNCORRECTABLE_COUNT"),
}


def _is_na(value: Any) -> bool:
    return isinstance(value, str) and value.strip().startswith("N/A")


def _printed_na(root: _indent_tree.Node, path: tuple[str, ...]) -> bool:
    node: _indent_tree.Node | None = root
    for key in path:
        node = node.child(key) if node is not None else None
        if node is None:
            return False
        if not node.children and _is_na(node.value):
            return True
    return False


def _json_na(entry: dict[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = entry
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
        if _is_na(node):
            return True
    return False


def _text_or_none(raw: Any) -> str | None:
    if isinstance(raw, dict):
        raw = raw.get("value")
    if raw is None:
        return None
    text = str(raw).strip()
    return None if text in ("", "N/A") else text


# --- text tree: list / static / metric / firmware -------------------------------------------

def _parse_tree(body: list[tuple[int, str]], command_line: str | None) -> AmdSmiRecord:
    entries: list[tuple[int, str, int, str, str | None]] = []
    truncated = False
    for n, line in body:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped in TRUNCATION_MARKERS:
            truncated = True
            continue
        m = _TREE_LINE.match(line)
        if m is None:
            # amd-smi wraps long list values ("[0 %, ..." continues on the next line)
            if entries and (entries[-1][4] or "").startswith("[") and "]" not in (entries[-1][4] or ""):
                ln, full, ind, key, value = entries[-1]
                entries[-1] = (ln, full, ind, key, f"{value} {stripped}")
                continue
            raise ParseError(TOOL, "unrecognised line in a 'GPU: N' view", line_no=n, line=line,
                             expected="'KEY: value' or 'KEY:' indented under 'GPU: N'")
        value = m.group("value")
        entries.append((n, line, len(m.group("indent")), m.group("key").strip(),
                        value.strip() if value is not None else None))
    roots = _indent_tree.build(entries)
    gpus: list[Gpu] = []
    processes: list[GpuProcess] = []
    cpu_count = 0
    sections: set[str] = set()
    for root in roots:
        top = _TOP.match(f"{root.key}: {root.value}")
        if top is None or root.indent != 0:
            raise ParseError(TOOL, "top-level entry is not 'GPU: N', 'CPU: N' or 'CORE: N'",
                             line_no=root.line_no, line=root.line, expected="'GPU: N'")
        if top.group(1) != "GPU":
            cpu_count += top.group(1) == "CPU"
            continue
        sections.update(c.key for c in root.children)
        gpus.append(_gpu_from_tree(int(top.group(2)), root))
        processes += _processes_from_tree(int(top.group(2)), root)
    if not gpus and not cpu_count:
        raise ParseError(TOOL, "no 'GPU: N' entries found", expected="at least one 'GPU: N' block")
    gpu_roots = [r for r in roots if r.key == "GPU"]
    if len(gpu_roots) > 1 and _paths(gpu_roots[-1]) < _paths(gpu_roots[0]):
        truncated = True  # the text stops inside the last GPU: it lacks lines every earlier GPU has
    return AmdSmiRecord(command=_command_from_sections(sections), output_format="text",
                        command_line=command_line, tool_version=None, rocm_version=None,
                        driver_version=None, gpus=tuple(gpus), links=(), xgmi=(),
                        cpu_count=cpu_count, truncated=truncated, processes=tuple(processes))


def _paths(node: _indent_tree.Node, prefix: str = "") -> set[str]:
    """Every key path below a node ('ASIC/MARKET_NAME'); process blocks (one per process) excluded."""
    out: set[str] = set()
    for child in node.children:
        if child.key == "PROCESS_INFO":
            continue
        path = f"{prefix}{child.key}"
        out.add(path)
        out |= _paths(child, path + "/")
    return out


def _processes_from_tree(index: int, root: _indent_tree.Node) -> list[GpuProcess]:
    """`amd-smi process` (6.2+): one 'PROCESS_INFO:' block per process under 'GPU: N' (the CLI stores
    them as process_info_0, _1, ... and prints the key without its index), or
    'PROCESS_INFO: No running processes detected'."""
    out: list[GpuProcess] = []
    for node in root.children:
        if node.key != "PROCESS_INFO":
            continue
        if node.value is not None:
            if node.value in _NO_PROCESS and not node.children:
                continue
            raise ParseError(TOOL, f"unexpected PROCESS_INFO value {node.value!r}", line_no=node.line_no,
                             line=node.line, expected="'No running processes detected' or NAME/PID lines")
        pid_node = node.child("PID")
        if pid_node is None:
            raise ParseError(TOOL, "PROCESS_INFO without a PID", line_no=node.line_no, line=node.line,
                             expected="'PID: <n>' under PROCESS_INFO")
        vram = node.child("MEMORY_USAGE")
        vram_node = vram.child("VRAM_MEM") if vram is not None else None
        out.append(GpuProcess(
            pid=_pid(pid_node.value, pid_node.line_no, pid_node.line),
            name=_text_or_none(node.get("NAME")), gpu=index,
            vram_mib=(None if vram_node is None
                      else _process_mib(vram_node.value, vram_node.line_no, vram_node.line, "VRAM_MEM"))))
    return out


def _command_from_sections(sections: set[str]) -> str:
    if "PROCESS_INFO" in sections:
        return "process"
    if "FW_LIST" in sections:
        return "firmware"
    if sections & {"ASIC", "BUS", "VBIOS", "BOARD", "VRAM", "LIMIT", "DRIVER", "PARTITION"}:
        return "static"
    if sections & {"USAGE", "POWER", "CLOCK", "TEMPERATURE", "ECC", "ECC_BLOCKS", "PCIE", "MEM_USAGE",
                   "XGMI_ERR", "ENERGY", "THROTTLE"}:
        return "metric"
    if sections <= {"BDF", "UUID", "KFD_ID", "NODE_ID", "PARTITION_ID"}:
        return "list"
    return "unknown"


def _gpu_from_tree(index: int, root: _indent_tree.Node) -> Gpu:
    def num(*path: str) -> float | None:
        node: _indent_tree.Node | None = root
        for key in path:
            node = node.child(key) if node is not None else None
        if node is None:
            return None
        return _number(node.value, node.line_no, node.line, "/".join(path))

    def integer(*path: str) -> int | None:
        value = num(*path)
        return None if value is None else int(value)

    firmware: dict[str, str] = {}
    fw_list = root.child("FW_LIST")
    if fw_list is not None:
        for entry in fw_list.children:
            fw_id, version = entry.get("FW_ID"), entry.get("FW_VERSION")
            if fw_id is None or version is None:
                raise ParseError(TOOL, "firmware entry without FW_ID/FW_VERSION", line_no=entry.line_no,
                                 line=entry.line, expected="FW_ID and FW_VERSION under each 'FW N:'")
            firmware[fw_id] = version
    speed = root.get("BUS", "MAX_PCIE_SPEED")
    return Gpu(
        index=index,
        bdf=_text_or_none(root.get("BDF") or root.get("BUS", "BDF")),
        uuid=_text_or_none(root.get("UUID")),
        market_name=_text_or_none(root.get("ASIC", "MARKET_NAME")),
        device_id=_hex(root.get("ASIC", "DEVICE_ID")),
        oam_id=integer("ASIC", "OAM_ID"),
        vram_type=_text_or_none(root.get("VRAM", "TYPE")),
        vram_total_mib=(integer("VRAM", "SIZE") if root.get("VRAM", "SIZE")
                        else integer("MEM_USAGE", "TOTAL_VRAM")),
        vram_used_mib=integer("MEM_USAGE", "USED_VRAM"),
        firmware=firmware,
        power_w=num("POWER", "SOCKET_POWER"),
        power_cap_w=num("LIMIT", "SOCKET_POWER") if root.get("LIMIT", "SOCKET_POWER") else None,
        temperature_hotspot_c=num("TEMPERATURE", "HOTSPOT"),
        temperature_edge_c=num("TEMPERATURE", "EDGE"),
        temperature_memory_c=num("TEMPERATURE", "MEM"),
        gfx_util_pct=num("USAGE", "GFX_ACTIVITY"),
        mem_util_pct=num("USAGE", "UMC_ACTIVITY"),
        gfx_clock_mhz=num("CLOCK", "GFX_0", "CLK"),
        mem_clock_mhz=num("CLOCK", "MEM_0", "CLK"),
        ecc_correctable=integer("ECC", "TOTAL_CORRECTABLE_COUNT"),
        ecc_uncorrectable=integer("ECC", "TOTAL_UNCORRECTABLE_COUNT"),
        ecc_deferred=integer("ECC", "TOTAL_DEFERRED_COUNT"),
        xgmi_error_status=_text_or_none(root.get("XGMI_ERR")),
        xgmi_wafl_correctable=integer("ECC_BLOCKS", "XGMI_WAFL", "CORRECTABLE_COUNT"),
        xgmi_wafl_uncorrectable=integer("ECC_BLOCKS", "XGMI_WAFL", "UNCORRECTABLE_COUNT"),
        not_available=tuple(name for name, path in _COUNTER_PATHS.items() if _printed_na(root, path)),
        compute_partition=_text_or_none(root.get("PARTITION", "COMPUTE_PARTITION")
                                        or root.get("PARTITION", "ACCELERATOR_PARTITION")),
        memory_partition=_text_or_none(root.get("PARTITION", "MEMORY_PARTITION")),
        partition_id=integer("PARTITION", "PARTITION_ID"),
        pcie_width_max=integer("BUS", "MAX_PCIE_WIDTH"),
        pcie_speed_max_gt_s=_number(speed) if speed else None,
        gfx_target=_text_or_none(root.get("ASIC", "TARGET_GRAPHICS_VERSION")),
        asic_serial=_text_or_none(root.get("ASIC", "ASIC_SERIAL")),
        product_serial=_text_or_none(root.get("BOARD", "PRODUCT_SERIAL")),
        pcie_errors=_pcie_errors({k: root.get("PCIE", k) for k in PCIE_ERROR_KEYS}),
    )


# --- topology / xgmi tables ------------------------------------------------------------------

def _parse_tables(body: list[tuple[int, str]], command_line: str | None) -> AmdSmiRecord:
    tables: dict[str, _Matrix] = {}
    xgmi: list[XgmiLink] = []
    truncated = False
    i = 0
    while i < len(body):
        n, line = body[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        if stripped in TRUNCATION_MARKERS:
            truncated = True
            i += 1
            continue
        title = _TABLE_TITLE.match(stripped)
        if title is None:
            raise ParseError(TOOL, "unrecognised line between tables", line_no=n, line=line,
                             expected="a '<NAME> TABLE:' title")
        name = title.group(1)
        if name == "LINK METRIC":
            i, metric_rows = _xgmi_table(body, i + 1)
            xgmi.extend(metric_rows)
            continue
        i, header, rows = _bdf_matrix(body, i + 1, name)
        tables[name] = (header, rows)
    if not tables and not xgmi:
        raise ParseError(TOOL, "table title without a table", expected="a table after its title")
    links, gpus = _links_from_tables(tables)
    if xgmi and not gpus:
        seen: dict[int, str] = {}
        for link in xgmi:
            seen.setdefault(link.src_gpu, link.src_bdf)
        gpus = [Gpu(index=k, bdf=v) for k, v in sorted(seen.items())]
    return AmdSmiRecord(command="xgmi" if xgmi and not tables else "topology", output_format="text",
                        command_line=command_line, tool_version=None, rocm_version=None,
                        driver_version=None, gpus=tuple(gpus), links=tuple(links), xgmi=tuple(xgmi),
                        cpu_count=0, truncated=truncated)


_Matrix = tuple[list[str], dict[str, list[str]]]  # header BDFs, row BDF -> cells


_CELL = {"ACCESS": r"ENABLED|DISABLED|N/A", "WEIGHT": r"[0-9]+|N/A", "HOPS": r"[0-9]+|N/A",
         "LINK TYPE": r"[A-Z][A-Z0-9_]*|N/A", "NUMA BW": r"[0-9]+-[0-9]+|N/A"}


def _bdf_matrix(body: list[tuple[int, str]], i: int,
                name: str) -> tuple[int, list[str], dict[str, list[str]]]:
    if i >= len(body):
        raise ParseError(TOOL, f"{name} TABLE has no header", expected="a header row of BDFs")
    n, line = body[i]
    header = line.split()
    if not header or not all(re.fullmatch(_BDF, h) for h in header):
        raise ParseError(TOOL, f"{name} TABLE header is not a row of BDFs", line_no=n, line=line,
                         expected="BDFs such as 0000:05:00.0")
    rows: dict[str, list[str]] = {}
    i += 1
    while i < len(body):
        n, line = body[i]
        cells = line.split()
        if not cells or not re.fullmatch(_BDF, cells[0]):
            break
        if len(cells) != len(header) + 1:
            raise ParseError(TOOL, f"{name} TABLE row has {len(cells) - 1} cells for {len(header)} columns",
                             line_no=n, line=line, expected=f"{len(header)} cells after the BDF")
        cell_re = _CELL.get(name, r"\S+")
        for cell in cells[1:]:
            if not re.fullmatch(cell_re, cell):
                raise ParseError(TOOL, f"unexpected {name} TABLE cell {cell!r}", line_no=n, line=line,
                                 expected=f"cells matching {cell_re}")
        rows[cells[0]] = cells[1:]
        i += 1
    if not rows:
        at, text = line_at(body, i)
        raise ParseError(TOOL, f"{name} TABLE has no rows", line_no=at, line=text,
                         expected="rows starting with a BDF")
    return i, header, rows


def _links_from_tables(tables: dict[str, _Matrix]) -> tuple[list[TopologyLink], list[Gpu]]:
    if not tables:
        return [], []
    order: list[str] = next(iter(tables.values()))[0]
    index = {bdf: k for k, bdf in enumerate(order)}  # amd-smi prints GPUs in index order
    links: list[TopologyLink] = []
    for src in order:
        for j, dst in enumerate(order):
            if src == dst:
                continue
            cell = {name: rows[src][j] for name, (header, rows) in tables.items()
                    if src in rows and header == order}
            weight, hops = cell.get("WEIGHT"), cell.get("HOPS")
            access = cell.get("ACCESS")
            links.append(TopologyLink(
                src_bdf=src, dst_bdf=dst, src_gpu=index[src], dst_gpu=index[dst],
                link_type=cell.get("LINK TYPE"),
                hops=int(hops) if hops and hops.isdecimal() else None,
                weight=int(weight) if weight and weight.isdecimal() else None,
                accessible=None if access is None else access == "ENABLED",
                numa_bandwidth=_text_or_none(cell.get("NUMA BW")),
            ))
    return links, [Gpu(index=k, bdf=bdf) for k, bdf in enumerate(order)]


_XGMI_GPU = re.compile(rf"^GPU(\d+)\s+({_BDF})\s+(\S+ \S+|N/A)\s+(\S+ \S+|N/A)\s+(\S+)$")


def _xgmi_table(body: list[tuple[int, str]], i: int) -> tuple[int, list[XgmiLink]]:
    if i >= len(body):
        raise ParseError(TOOL, "LINK METRIC TABLE has no header", expected="'bdf bit_rate ...' header")
    n, line = body[i]
    cols = line.split()
    if cols[:4] != ["bdf", "bit_rate", "max_bandwidth", "link_type"]:
        raise ParseError(TOOL, "unexpected LINK METRIC TABLE header", line_no=n, line=line,
                         expected="'bdf bit_rate max_bandwidth link_type <BDFs>'")
    dsts = cols[4:]
    links: list[XgmiLink] = []
    i += 1
    while i < len(body):
        n, line = body[i]
        m = _XGMI_GPU.match(line.strip())
        if m is None:
            break
        values: dict[str, list[int | None]] = {}
        i += 1
        while i < len(body) and body[i][1].strip().split()[:1] in (["Read"], ["Write"]):
            rn, rline = body[i]
            kind, *rest = rline.split()
            cells = _merge_units(rest)
            if len(cells) != len(dsts):
                raise ParseError(TOOL, f"{kind} row has {len(cells)} cells for {len(dsts)} GPUs",
                                 line_no=rn, line=rline, expected=f"{len(dsts)} 'N KB' or N/A cells")
            values[kind] = [_int(c, rn, rline, f"{kind} KB") for c in cells]
            i += 1
        for j, dst in enumerate(dsts):
            if "Read" not in values and "Write" not in values:
                break
            if dst.lower().endswith(m.group(2).lower()) or m.group(2).lower().endswith(dst.lower()):
                continue  # self
            links.append(XgmiLink(
                src_gpu=int(m.group(1)), src_bdf=m.group(2), dst_bdf=dst, link_type=m.group(5),
                bit_rate_gbit_s=_number(m.group(3), n, line, "bit_rate"),
                max_bandwidth_gbit_s=_number(m.group(4), n, line, "max_bandwidth"),
                read_kb=values["Read"][j] if "Read" in values else None,
                write_kb=values["Write"][j] if "Write" in values else None,
            ))
    if not links:
        at, text = line_at(body, i)
        raise ParseError(TOOL, "LINK METRIC TABLE without GPU rows", line_no=at, line=text,
                         expected="'GPU0   <bdf>  32 Gb/s  512 Gb/s  XGMI' and its Read/Write rows")
    return i, links


def _merge_units(tokens: list[str]) -> list[str]:
    """Join '1259', 'KB' into '1259 KB' so each table cell is one item."""
    cells: list[str] = []
    for tok in tokens:
        # 'N/A Mb/s' is one cell too (6.2 monitor -q PCIE_BW)
        if tok in _UNITS and cells and (_NUMBER.match(cells[-1]) or cells[-1] == "N/A") and " " not in cells[-1]:
            cells[-1] = f"{cells[-1]} {tok}"
        else:
            cells.append(tok)
    return cells


# --- monitor ---------------------------------------------------------------------------------

_MONITOR_FIELDS = {
    "POWER": "power_w", "GPU_TEMP": "temperature_hotspot_c", "MEM_TEMP": "temperature_memory_c",
    "GFX_UTIL": "gfx_util_pct", "GFX_CLOCK": "gfx_clock_mhz", "MEM_UTIL": "mem_util_pct",
    "MEM_CLOCK": "mem_clock_mhz", "VRAM_USED": "vram_used_mib", "VRAM_TOTAL": "vram_total_mib",
    "SINGLE_ECC": "ecc_correctable", "DOUBLE_ECC": "ecc_uncorrectable",
    # 7.x short names
    "PWR_CAP": "power_cap_w", "GPU_T": "temperature_hotspot_c", "MEM_T": "temperature_memory_c",
    "GFX_CLK": "gfx_clock_mhz", "GFX%": "gfx_util_pct", "MEM%": "mem_util_pct",
}
_INT_FIELDS = {"vram_used_mib", "vram_total_mib", "ecc_correctable", "ecc_uncorrectable"}


def _parse_monitor(body: list[tuple[int, str]], command_line: str | None) -> AmdSmiRecord:
    n, header_line = body[0]
    header = header_line.split()
    if not all(re.fullmatch(r"[A-Z][A-Z0-9_%]*", h) for h in header):
        raise ParseError(TOOL, "unrecognised monitor header", line_no=n, line=header_line,
                         expected="upper-case column names such as 'GPU  POWER  GPU_TEMP'")
    gpus: list[Gpu] = []
    processes: list[GpuProcess] = []
    for at, (n, line) in enumerate(body[1:], start=1):
        if not line.strip():
            continue
        if line.split() == header:
            continue  # `monitor -w` repeats the header
        if line.strip() == "PROCESS INFO:":  # `monitor -q` (6.2) / `monitor --process` (6.4)
            processes = _monitor_processes(body[at + 1:])
            break
        cells = _merge_units(line.split())
        if len(cells) != len(header) or not cells[0].isdecimal():
            raise ParseError(TOOL, f"monitor row has {len(cells)} cells for {len(header)} columns",
                             line_no=n, line=line,
                             expected="one value (with unit) per column, GPU index first")
        values: dict[str, Any] = {"index": int(cells[0])}
        for name, cell in zip(header[1:], cells[1:], strict=True):
            if name == "VRAM_USAGE":  # 6.4+: '3.0/191.7 GB' (GiB, as every amd-smi size)
                values.update(_vram_usage(cell, n, line))
                continue
            attr = _MONITOR_FIELDS.get(name)
            if attr is None:
                continue
            value = _number(cell, n, line, name)
            values[attr] = int(value) if (value is not None and attr in _INT_FIELDS) else value
        gpus.append(Gpu(**values))
    if not gpus:
        raise ParseError(TOOL, "monitor header without rows", line_no=n, line=header_line,
                         expected="one row per GPU")
    return AmdSmiRecord(command="monitor", output_format="text", command_line=command_line,
                        tool_version=None, rocm_version=None, driver_version=None, gpus=tuple(gpus),
                        links=(), xgmi=(), cpu_count=0, truncated=False, processes=tuple(processes))


def _vram_usage(cell: str, n: int, line: str) -> dict[str, int | None]:
    m = re.fullmatch(r"(N/A|\d+(?:\.\d+)?)/(N/A|\d+(?:\.\d+)?) (MB|GB)", cell)
    if m is None:
        raise ParseError(TOOL, f"cannot read VRAM_USAGE from {cell!r}", line_no=n, line=line,
                         expected="'<used>/<total> GB'")
    factor = _PROCESS_MEMORY_MIB[m.group(3)]
    used, total = (None if v == "N/A" else round(float(v) * factor) for v in (m.group(1), m.group(2)))
    return {"vram_used_mib": used, "vram_total_mib": total}


_MONITOR_PROCESS_COLUMNS = ("GPU", "NAME", "PID")


def _monitor_processes(rows: list[tuple[int, str]]) -> list[GpuProcess]:
    """The PROCESS INFO table: 'GPU NAME PID GTT_MEM CPU_MEM VRAM_MEM MEM_USAGE GFX ENC', one row per
    process; a name may hold spaces, so the value cells are counted from the right."""
    rows = [(n, line) for n, line in rows if line.strip()]
    if not rows:
        raise ParseError(TOOL, "PROCESS INFO without its table", expected="'GPU  NAME  PID ...' header")
    n, header_line = rows[0]
    header = header_line.split()
    if tuple(header[:3]) != _MONITOR_PROCESS_COLUMNS or "VRAM_MEM" not in header:
        raise ParseError(TOOL, "unrecognised PROCESS INFO header", line_no=n, line=header_line,
                         expected="'GPU  NAME  PID  GTT_MEM  CPU_MEM  VRAM_MEM ...'")
    after = header[3:]
    out: list[GpuProcess] = []
    for n, line in rows[1:]:
        if line.strip() in _NO_PROCESS:
            continue
        cells = _merge_units(line.split())
        if len(cells) < len(after) + 3 or not cells[0].isdecimal():
            raise ParseError(TOOL, f"process row has {len(cells)} cells for {len(header)} columns",
                             line_no=n, line=line, expected="GPU, NAME, PID and one value per column")
        values = dict(zip(after, cells[-len(after):], strict=True))
        pid_at = len(cells) - len(after) - 1
        out.append(GpuProcess(pid=_pid(cells[pid_at], n, line),
                              name=_text_or_none(" ".join(cells[1:pid_at])), gpu=int(cells[0]),
                              vram_mib=_process_mib(values["VRAM_MEM"], n, line, "VRAM_MEM")))
    return out


# --- 7.x boxed default view ------------------------------------------------------------------

_BOX_TITLE = re.compile(r"AMD-SMI (?P<tool>\S+)\s+amdgpu version: (?P<driver>\S+)\s+"
                        r"ROCm version: (?P<rocm>\S+)")
# 27.x header: one field per line ('AMD-SMI   27.0.0+...', 'amdgpu Version:  7.1.0.0', 'ROCm Version: ...')
_BOX_HEADER_FIELD = re.compile(r"^(?P<key>AMD-SMI|amdgpu Version:|ROCm Version:|VBIOS Version:|FW PLDM:|"
                               r"Platform:)\s+(?P<value>\S.*?)\s*$")
_BOX_ROW1_LEFT = re.compile(rf"^\s*(?P<bdf>{_BDF})\s+(?P<name>.+?)\s*$")
_BOX_ROW1_RIGHT = re.compile(r"^\s*(?P<mem>N/A|\d+ %)\s+(?P<temp>N/A|-?\d+ °C)\s+(?P<uec>N/A|\d+)\s+"
                             r"(?P<power>N/A|(?:N/A|\d+)/(?:N/A|\d+) W)\s*$")
_BOX_ROW2_LEFT = re.compile(r"^\s*(?P<gpu>\d+)\s+(?P<hip>\d+|N/A)\s+(?P<oam>\d+|N/A)\s+(?P<part>\S+)\s*$")
# the fan cell is '40.0 %', 'N/A', or a bare number ('38.82', ROCm 7.2 on an R9700)
_BOX_ROW2_RIGHT = re.compile(r"^\s*(?P<gfx>N/A|\d+ %)\s+(?P<fan>N/A|[\d.]+(?: %)?)\s+"
                             r"(?P<mem>N/A|\d+/\d+ MB)\s*$")
_BOX_PROCESS_COLUMNS = re.compile(r"GTT_MEM|VRAM_MEM|MEM_USAGE|CU %|SDMA")


def _parse_box(body: list[tuple[int, str]], command_line: str | None) -> AmdSmiRecord:
    tool = rocm = driver = None
    gpus: list[Gpu] = []
    processes: list[GpuProcess] = []
    process_columns: list[str] | None = None
    pending: tuple[int, str, re.Match[str], re.Match[str]] | None = None
    in_processes = closed = False
    for n, line in body:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("+") and set(stripped) <= {"+", "-"}:
            closed = True
            continue
        if stripped in _BOX_TRAILERS and closed:
            continue
        if not (stripped.startswith("|") and stripped.endswith("|")):
            raise ParseError(TOOL, "line outside the boxed view", line_no=n, line=line,
                             expected="a '|...|' row or a '+---+' border",
                             hint=f"known trailer lines: {', '.join(_BOX_TRAILERS)}")
        closed = False
        inner = stripped[1:-1]
        if set(inner) <= {"-", "=", "+", "|"}:
            continue
        if m := _BOX_TITLE.search(inner):
            tool, driver, rocm = m.group("tool"), m.group("driver"), m.group("rocm")
            continue
        if m := _BOX_HEADER_FIELD.match(inner.strip()):
            key, value = m.group("key"), m.group("value")
            if key == "AMD-SMI":
                tool = value
            elif key == "amdgpu Version:":
                driver = value
            elif key == "ROCm Version:":
                rocm = value
            continue
        if inner.strip().startswith(("VBIOS version:", "Platform:", "BDF ", "GPU  HIP-ID")):
            continue
        if inner.strip() == "Processes:":
            in_processes = True
            continue
        if in_processes:
            if process_columns is None:
                if not inner.split()[:2] == ["GPU", "PID"]:
                    raise ParseError(TOOL, "Processes box without its header", line_no=n, line=line,
                                     expected="'GPU  PID  Process Name  GTT_MEM  VRAM_MEM ...'")
                process_columns = _BOX_PROCESS_COLUMNS.findall(inner)
                continue
            if inner.strip() == "No running processes found":
                continue
            processes.append(_box_process(inner, process_columns, n, line))
            continue
        if "|" not in inner:
            raise ParseError(TOOL, "unrecognised boxed-view row", line_no=n, line=line,
                             expected="'left half | right half'")
        left, right = inner.split("|", 1)
        if pending is None:
            m1, m2 = _BOX_ROW1_LEFT.match(left), _BOX_ROW1_RIGHT.match(right)
            if m1 is None or m2 is None:
                raise ParseError(TOOL, "unrecognised GPU row", line_no=n, line=line,
                                 expected="'| <BDF> <name> | <mem%> <temp> <UEC> <power>/<cap> W |'")
            pending = (n, line, m1, m2)
            continue
        m3, m4 = _BOX_ROW2_LEFT.match(left), _BOX_ROW2_RIGHT.match(right)
        if m3 is None or m4 is None:
            raise ParseError(TOOL, "unrecognised second GPU row", line_no=n, line=line,
                             expected="'| <GPU> <HIP-ID> <OAM-ID> <partition> | "
                                      "<gfx%> <fan> <used>/<total> MB |'")
        _, _, m1, m2 = pending
        pending = None
        power, _, cap = m2.group("power").removesuffix(" W").partition("/")
        used, _, total = m4.group("mem").removesuffix(" MB").partition("/")
        partition = m3.group("part")
        compute, _, memory = ("", "", "") if partition == "N/A" else partition.partition("/")
        gpus.append(Gpu(
            index=int(m3.group("gpu")), bdf=m1.group("bdf"), market_name=m1.group("name"),
            oam_id=int(m3.group("oam")) if m3.group("oam").isdecimal() else None,
            power_w=_number(power), power_cap_w=_number(cap) if cap else None,
            temperature_hotspot_c=_number(m2.group("temp")),
            mem_util_pct=_number(m2.group("mem")), gfx_util_pct=_number(m4.group("gfx")),
            ecc_uncorrectable=_int(m2.group("uec")),
            vram_used_mib=_int(used) if total else None, vram_total_mib=_int(total) if total else None,
            compute_partition=_text_or_none(compute) if memory else None,
            memory_partition=_text_or_none(memory) if memory else None,
        ))
    if tool is None:
        raise ParseError(TOOL, "boxed view without its 'AMD-SMI <version>' title",
                         expected="'| AMD-SMI x.y amdgpu version: ... ROCm version: ... |'")
    # every box ends with a '+---+' border: a view that stops on a row (or between a GPU's two rows)
    # was cut short
    truncated = pending is not None or not closed
    return AmdSmiRecord(command="default", output_format="text", command_line=command_line,
                        tool_version=tool, rocm_version=_text_or_none(rocm), driver_version=driver,
                        gpus=tuple(gpus), links=(), xgmi=(), cpu_count=0, truncated=truncated,
                        processes=tuple(processes))


def _box_process(inner: str, columns: list[str], n: int, line: str) -> GpuProcess:
    """'   0     213952  python3.12   7.9 MB   19.6 GB   20.1 GB  N/A' under the Processes header;
    the name may hold spaces, so the value cells are counted from the right."""
    cells = _merge_units(inner.split())
    if len(cells) < len(columns) + 3 or not (cells[0].isdecimal() and cells[1].isdecimal()):
        raise ParseError(TOOL, "unrecognised process row", line_no=n, line=line,
                         expected=f"'<GPU> <PID> <name> {' '.join(f'<{c}>' for c in columns)}'")
    values = dict(zip(columns, cells[len(cells) - len(columns):], strict=True))
    vram = values.get("VRAM_MEM")
    return GpuProcess(pid=int(cells[1]), name=_text_or_none(" ".join(cells[2:len(cells) - len(columns)])),
                      gpu=int(cells[0]), vram_mib=None if vram is None else _process_mib(vram, n, line, "VRAM_MEM"))


# --- JSON ------------------------------------------------------------------------------------

def _parse_json(body: list[tuple[int, str]], command_line: str | None) -> AmdSmiRecord:
    text = "\n".join(line for _, line in body)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        n, line = body[min(exc.lineno - 1, len(body) - 1)]
        if exc.pos >= len(text.rstrip()) - 1:  # ran out of text inside the document
            raise ParseError(TOOL, f"JSON ends before the document does ({exc.msg})", line_no=n, line=line,
                             expected="one complete JSON document",
                             hint="the output was cut (head -n, a full disk, a killed command); save it whole") from exc
        raise ParseError(TOOL, f"invalid JSON: {exc.msg}", line_no=n, line=line,
                         expected="one complete JSON document") from exc
    if isinstance(doc, dict) and "gpu_data" in doc:
        entries = doc["gpu_data"]  # 7.x wrapper
    elif isinstance(doc, list):
        entries = doc
    else:
        found = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
        raise ParseError(TOOL, f"JSON top level is not a GPU list (keys: {found})",
                         line_no=body[0][0], line=body[0][1],
                         expected="a list of {'gpu': N, ...} or {'gpu_data': [...]}",
                         hint="filtered output (e.g. jq '.[0].vram') loses the GPU identity; "
                              "save amd-smi's own --json output")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "gpu" in e for e in entries):
        raise ParseError(TOOL, "JSON GPU entries lack a 'gpu' index", line_no=body[0][0], line=body[0][1],
                         expected="objects with a 'gpu' key")
    gpus: list[Gpu] = []
    links: list[TopologyLink] = []
    processes: list[GpuProcess] = []
    keys: set[str] = set()
    for entry in entries:
        keys.update(entry)
        index = int(entry["gpu"])
        gpus.append(_gpu_from_json(index, entry))
        links.extend(_links_from_json(index, entry))
        processes.extend(_processes_from_json(index, entry, body[0]))
    if not gpus:
        raise ParseError(TOOL, "JSON has no GPU entries", expected="at least one GPU")
    if "process_list" in keys:
        command = "process"
    elif "links" in keys or "link_type" in keys:
        command = "topology"
    else:
        command = _command_from_sections({k.upper() for k in keys if k not in ("gpu", "bdf", "uuid")} or {"BDF"})
    return AmdSmiRecord(command=command, output_format="json", command_line=command_line,
                        tool_version=None, rocm_version=None, driver_version=None, gpus=tuple(gpus),
                        links=tuple(links), xgmi=(), cpu_count=0, truncated=False, processes=tuple(processes))


def _processes_from_json(index: int, entry: dict[str, Any], first: tuple[int, str]) -> list[GpuProcess]:
    """`amd-smi process --json`: {'gpu': N, 'process_list': [{'process_info': {...}}, ...]}, where an
    idle GPU has the single entry {'process_info': 'No running processes detected'}."""
    listed = entry.get("process_list")
    if listed is None:
        return []
    if not isinstance(listed, list):
        raise ParseError(TOOL, f"GPU {index} process_list is not a list", line_no=first[0], line=first[1],
                         expected="'process_list': [{'process_info': {...}}, ...]")
    out: list[GpuProcess] = []
    for item in listed:
        info = item.get("process_info") if isinstance(item, dict) else None
        if isinstance(info, str) and info in _NO_PROCESS:
            continue
        if not isinstance(info, dict) or "pid" not in info:
            raise ParseError(TOOL, f"GPU {index} process entry {item!r:.80} has no process_info with a pid",
                             line_no=first[0], line=first[1],
                             expected="{'process_info': {'name': ..., 'pid': ..., ...}}")
        vram = _get(info, "memory_usage", "vram_mem")
        out.append(GpuProcess(pid=_pid(info["pid"], first[0], first[1]), name=_text_or_none(info.get("name")),
                              gpu=index, vram_mib=None if vram is None else _process_mib(vram, what="vram_mem")))
    return out


def _get(entry: dict[str, Any], *path: str) -> Any:
    node: Any = entry
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _gpu_from_json(index: int, entry: dict[str, Any]) -> Gpu:
    firmware: dict[str, str] = {}
    fw_list = _get(entry, "fw_list")
    if isinstance(fw_list, list):
        for item in fw_list:
            if isinstance(item, dict) and "fw_id" in item:
                firmware[str(item["fw_id"])] = str(item.get("fw_version"))
    total = _get(entry, "vram", "size")
    if total is None:
        total = _get(entry, "mem_usage", "total_vram")
    # static --json: 6.x "limit": {"power": ...} or 7.x {"socket_power": {value, unit}, "max_power": ...}
    cap = _get(entry, "limit", "socket_power")
    if cap is None:
        cap = _get(entry, "limit", "power")
    return Gpu(
        index=index,
        bdf=_text_or_none(entry.get("bdf") or _get(entry, "bus", "bdf")),
        uuid=_text_or_none(entry.get("uuid")),
        market_name=_text_or_none(_get(entry, "asic", "market_name")),
        device_id=_hex(_text_or_none(_get(entry, "asic", "device_id"))),
        oam_id=_int(_get(entry, "asic", "oam_id")),
        vram_type=_text_or_none(_get(entry, "vram", "type")),
        vram_total_mib=_int(total),
        vram_used_mib=_int(_get(entry, "mem_usage", "used_vram")),
        firmware=firmware,
        power_w=_number(_get(entry, "power", "socket_power")),
        power_cap_w=_number(cap),
        temperature_hotspot_c=_number(_get(entry, "temperature", "hotspot")),
        temperature_edge_c=_number(_get(entry, "temperature", "edge")),
        temperature_memory_c=_number(_get(entry, "temperature", "mem")),
        gfx_util_pct=_number(_get(entry, "usage", "gfx_activity")),
        mem_util_pct=_number(_get(entry, "usage", "umc_activity")),
        ecc_correctable=_int(_get(entry, "ecc", "total_correctable_count")),
        ecc_uncorrectable=_int(_get(entry, "ecc", "total_uncorrectable_count")),
        ecc_deferred=_int(_get(entry, "ecc", "total_deferred_count")),
        xgmi_error_status=_text_or_none(entry.get("xgmi_err")),
        xgmi_wafl_correctable=_int(_get(entry, "ecc_blocks", "XGMI_WAFL", "correctable_count")),
        xgmi_wafl_uncorrectable=_int(_get(entry, "ecc_blocks", "XGMI_WAFL", "uncorrectable_count")),
        not_available=tuple(name for name, path in _COUNTER_PATHS.items()
                            if _json_na(entry, tuple(k.lower() if k != "XGMI_WAFL" else k for k in path))),
        compute_partition=_text_or_none(_get(entry, "partition", "compute_partition")),
        memory_partition=_text_or_none(_get(entry, "partition", "memory_partition")),
        pcie_width_max=_int(_get(entry, "bus", "max_pcie_width")),
        pcie_speed_max_gt_s=_number(_get(entry, "bus", "max_pcie_speed")),
        gfx_target=_text_or_none(_get(entry, "asic", "target_graphics_version")),
        asic_serial=_text_or_none(_get(entry, "asic", "asic_serial")),
        product_serial=_text_or_none(_get(entry, "board", "product_serial")),
        pcie_errors=_pcie_errors(pcie if isinstance(pcie := entry.get("pcie"), dict) else {}),
    )


def _links_from_json(index: int, entry: dict[str, Any]) -> list[TopologyLink]:
    links: list[TopologyLink] = []
    src_bdf = str(entry.get("bdf", ""))
    if isinstance(entry.get("links"), list):  # 6.1.1+ schema
        for link in entry["links"]:
            if not isinstance(link, dict) or link.get("link_type") == "SELF":
                continue
            hops = link.get("num_hops")
            weight = link.get("weight")
            links.append(TopologyLink(
                src_bdf=src_bdf, dst_bdf=str(link.get("bdf")), src_gpu=index,
                dst_gpu=link.get("gpu") if isinstance(link.get("gpu"), int) else None,
                link_type=_text_or_none(link.get("link_type")),
                hops=hops if isinstance(hops, int) else None,
                weight=weight if isinstance(weight, int) else None,
                accessible=None if "link_status" not in link else link["link_status"] == "ENABLED",
                numa_bandwidth=_text_or_none(link.get("bandwidth")),
            ))
    elif isinstance(entry.get("link_type"), dict):  # pre-6.1.1 schema: dicts keyed "gpu_N"
        for peer, kind in entry["link_type"].items():
            if kind == "SELF" or not re.fullmatch(r"gpu_\d+", str(peer)):
                continue
            hops = _get(entry, "hops", peer)
            weight = _get(entry, "weight", peer)
            access = _get(entry, "link_accessibility", peer)
            links.append(TopologyLink(
                src_bdf=src_bdf, dst_bdf="", src_gpu=index, dst_gpu=int(str(peer)[4:]),
                link_type=str(kind), hops=hops if isinstance(hops, int) else None,
                weight=weight if isinstance(weight, int) else None,
                accessible=None if access is None else access == "ENABLED",
                numa_bandwidth=_text_or_none(_get(entry, "numa_bandwidth", peer)),
            ))
    return links
