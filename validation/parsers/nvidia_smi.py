"""Parse `nvidia-smi` output for mixed fleets: `-q`/`-a` (NVSMI LOG), the default table,
`--query-gpu=... --format=csv` with or without `noheader`/`nounits`, and the compute-process list
`--query-compute-apps=... --format=csv`.

A CSV without a header row needs the command line (`$ nvidia-smi --query-gpu=...`) as its first
line to name the columns; without it the parser refuses rather than guess. The processes that the
table, the -q log and --query-compute-apps list land in `processes` (the idle pre-flight reads them).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from validation.errors import ParseError
from validation.parsers import _indent_tree
from validation.parsers._text import command_and_body
from validation.records import GpuProcess

TOOL = "nvidia-smi"

_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?")
_Q_LINE = re.compile(r"^(?P<indent> *)(?P<key>\S.*?)\s+:(?:\s(?P<value>.*))?$")
_Q_HEADER = re.compile(r"^(?P<indent> *)(?P<key>\S.*?)\s*$")
_Q_GPU = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$")
_MARKERS = ("[...]", "...")


@dataclass(frozen=True, slots=True, kw_only=True)
class NvidiaGpu:
    """One GPU as nvidia-smi reports it; None = not in this view."""

    index: int  # position in the output (the -q log has no index; see minor_number)
    minor_number: int | None = None  # /dev/nvidiaN
    name: str | None = None
    bus_id: str | None = None  # "00000000:03:00.0"
    uuid: str | None = None
    serial: str | None = None
    vbios_version: str | None = None
    persistence_mode: str | None = None
    performance_state: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    temperature_c: float | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    utilization_gpu_pct: float | None = None
    pcie_gen_max: int | None = None
    pcie_gen_current: int | None = None
    pcie_width_max: int | None = None
    pcie_width_current: int | None = None
    ecc_mode: str | None = None
    ecc_uncorrectable_volatile: int | None = None  # DRAM uncorrectable (or double-bit total)
    ecc_uncorrectable_aggregate: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapping_failure: bool | None = None
    pci_device_id: int | None = None  # 0x2330 from "Device Id : 0x233010DE" (device << 16 | vendor 0x10de)
    # counters the view printed as N/A (ECC off or not supported): unavailable, unlike one the view lacks
    not_available: tuple[str, ...] = ()
    fields: dict[str, str] = field(default_factory=dict)  # CSV columns as printed


@dataclass(frozen=True, slots=True, kw_only=True)
class NvidiaSmiRecord:
    """The parsed nvidia-smi output."""

    view: str  # query, table, csv, apps (--query-compute-apps)
    command_line: str | None
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None  # "Attached GPUs" (query view)
    gpus: tuple[NvidiaGpu, ...]
    truncated: bool
    processes: tuple[GpuProcess, ...] = ()  # table, query (with PIDS) and apps views


def _number(raw: str | None) -> float | None:
    if raw is None:
        return None
    match = _NUMBER.match(raw.strip())
    return float(match.group(0)) if match else None


def _int(raw: str | None) -> int | None:
    value = _number(raw)
    return None if value is None else int(value)


def _pci_device(raw: str | None) -> int | None:
    """0x2330 from nvidia-smi's 32-bit 'Device Id' / pci.device_id 0x233010DE (vendor in the low half)."""
    text = (_na(raw) or "").strip()
    if not re.fullmatch(r"0x[0-9A-Fa-f]{8}", text):
        return None
    return int(text, 16) >> 16


def _na(raw: str | None) -> str | None:
    if raw is None:
        return None
    text = raw.strip()
    # '[Not Found]': a process name nvidia-smi cannot resolve (another PID namespace, a container)
    return None if text in ("", "N/A", "[N/A]", "[Not Supported]", "[Not Found]") else text


def _csv_columns(line: str) -> list[str]:
    """Column names of a CSV header row, units dropped: 'used_gpu_memory [MiB]' -> 'used_gpu_memory'."""
    return [re.sub(r"\s*\[.*\]$", "", c.strip()) for c in line.split(",")]


def parse(text: str) -> NvidiaSmiRecord:
    """Parse one nvidia-smi run in any supported view."""
    # "WARNING: infoROM is corrupted at gpu ..." can stand above the log
    command_line, body = command_and_body(TOOL, text, expected="nvidia-smi output",
                                          skip=lambda line: line.startswith("WARNING: "))
    first = body[0][1].strip()
    if first.startswith("=") and "NVSMI LOG" in first:
        return _parse_query(body, command_line)
    if first.startswith("+---") or re.match(r"^\w{3} \w{3} +\d+ [\d:]+ \d{4}$", first):
        return _parse_table(body, command_line)
    if "--query-compute-apps" in (command_line or "") or "pid" in _csv_columns(first):
        return _parse_apps_csv(body, command_line)
    if "," in first or (command_line and "--format=csv" in command_line):
        return _parse_csv(body, command_line)
    n, line = body[0]
    raise ParseError(TOOL, "unrecognised nvidia-smi output", line_no=n, line=line,
                     expected="'==NVSMI LOG==', the boxed table, or CSV from --query-gpu",
                     hint="is this nvidia-smi output?")


# --- -q / -a ---------------------------------------------------------------------------------

def _parse_query(body: list[tuple[int, str]], command_line: str | None) -> NvidiaSmiRecord:
    entries: list[tuple[int, str, int, str, str | None]] = []
    for n, line in body[1:]:
        if not line.strip():
            continue
        m = _Q_LINE.match(line)
        if m is not None:
            value = (m.group("value") or "").strip()
        else:
            m = _Q_HEADER.match(line)
            value = None
            if m is None or not (_Q_GPU.match(m.group("key")) or m.group("key") in _MARKERS
                                 or re.fullmatch(r"[A-Za-z0-9 .()/_-]+", m.group("key"))):
                raise ParseError(TOOL, "unrecognised line in the NVSMI log", line_no=n, line=line,
                                 expected="'Key : value' or a section name")
        entries.append((n, line, len(m.group("indent")), m.group("key"), value))
    roots = _indent_tree.build(entries)
    header = {r.key: r.value for r in roots if r.indent == 0 and r.value is not None}
    gpus: list[NvidiaGpu] = []
    processes: list[GpuProcess] = []
    for root in roots:
        gm = _Q_GPU.match(root.key)
        if root.indent != 0 or gm is None:
            if root.indent == 0 and root.value is None and root.key not in _MARKERS:
                raise ParseError(TOOL, f"unexpected top-level line {root.key!r}", line_no=root.line_no,
                                 line=root.line, expected="'GPU <bus id>' or a 'Key : value' header")
            continue
        gpu = _gpu_from_query(len(gpus), gm.group("bus"), root)
        gpus.append(gpu)
        processes += _processes_from_query(gpu, root.child("Processes"))
    attached = _int(header.get("Attached GPUs"))
    if "Driver Version" not in header and not gpus:
        raise ParseError(TOOL, "NVSMI log without a driver version or GPU blocks",
                         expected="'Driver Version : ...' and 'GPU <bus id>' blocks")
    # every GPU block of a full -q log (and of -d ...PIDS) has a 'Processes' section, printed after the
    # memory, clock and power ones (drivers 535-580 in the fixtures): a block without it was cut. A section
    # view (-d POWER, ...) saved without its command line is told by its blocks: a full log opens each one
    # with 'Product Name', a section view never prints it; a GPU line with nothing under it was cut either way
    display = re.search(r"(?:-d|--display)[= ]?(\S+)", command_line or "")
    blocks = [root for root in roots if _Q_GPU.match(root.key)]
    full_log = display is None and any(root.child("Product Name") is not None for root in blocks)
    wants_processes = full_log or (display is not None and "PIDS" in display.group(1).upper())
    cut = any(not root.children or (wants_processes and root.child("Processes") is None) for root in blocks)
    return NvidiaSmiRecord(view="query", command_line=command_line,
                           driver_version=_na(header.get("Driver Version")),
                           cuda_version=_na(header.get("CUDA Version")), attached_gpus=attached,
                           gpus=tuple(gpus), truncated=(attached is not None and attached != len(gpus)) or cut,
                           processes=tuple(processes))


def _processes_from_query(gpu: NvidiaGpu, section: _indent_tree.Node | None) -> list[GpuProcess]:
    """'Processes : None', or one 'Process ID : N' entry per process with Name / Used GPU Memory
    under it (drivers 4xx put them beside it at the same depth: both are read)."""
    if section is None or section.value not in (None, ""):
        return []
    out: list[GpuProcess] = []
    for node in section.children:
        if node.key != "Process ID":
            continue
        pid = _int(node.value)
        if pid is None:
            raise ParseError(TOOL, f"process id {node.value!r} is not a number", line_no=node.line_no,
                             line=node.line, expected="'Process ID : <pid>'")
        siblings = section.children[section.children.index(node) + 1:]
        nearby = {n.key: n.value for n in siblings[:4] if n.key in ("Name", "Used GPU Memory", "Type")}
        fields = {**nearby, **{n.key: n.value for n in node.children}}
        out.append(GpuProcess(pid=pid, name=_na(fields.get("Name")), gpu=gpu.minor_number, bus_id=gpu.bus_id,
                              vram_mib=_number(_na(fields.get("Used GPU Memory")))))
    return out


def _gpu_from_query(index: int, bus: str, root: _indent_tree.Node) -> NvidiaGpu:
    def get(*path: str) -> str | None:
        return _na(root.get(*path))

    power_limit = get("GPU Power Readings", "Current Power Limit") or get("Power Readings", "Power Limit")
    # drivers before 565 print one 'Power Draw'; 565+ (580 in the fixtures) print 'Average Power Draw' (what
    # --query-gpu power.draw reports) and 'Instantaneous Power Draw' instead
    power_draw = next((value for section in ("GPU Power Readings", "Power Readings")
                       for key in ("Power Draw", "Average Power Draw", "Instantaneous Power Draw")
                       if (value := get(section, key)) is not None), None)
    volatile = get("ECC Errors", "Volatile", "DRAM Uncorrectable") or get(
        "ECC Errors", "Volatile", "Double Bit", "Total")
    aggregate = get("ECC Errors", "Aggregate", "DRAM Uncorrectable") or get(
        "ECC Errors", "Aggregate", "Double Bit", "Total")
    failure = get("Remapped Rows", "Remapping Failure Occurred")
    raw_volatile = root.get("ECC Errors", "Volatile", "DRAM Uncorrectable") or root.get(
        "ECC Errors", "Volatile", "Double Bit", "Total") or root.get("ECC Errors", "Volatile")
    return NvidiaGpu(
        index=index, minor_number=_int(get("Minor Number")),
        name=get("Product Name"), bus_id=get("PCI", "Bus Id") or bus, uuid=get("GPU UUID"),
        serial=get("Serial Number"), vbios_version=get("VBIOS Version"),
        persistence_mode=get("Persistence Mode"), performance_state=get("Performance State"),
        memory_total_mib=_int(get("FB Memory Usage", "Total")),
        memory_used_mib=_int(get("FB Memory Usage", "Used")),
        temperature_c=_number(get("Temperature", "GPU Current Temp")),
        power_draw_w=_number(power_draw), power_limit_w=_number(power_limit),
        utilization_gpu_pct=_number(get("Utilization", "Gpu") or get("Utilization", "GPU")),  # 580: "GPU"
        pcie_gen_max=_int(get("PCI", "GPU Link Info", "PCIe Generation", "Max")),
        pcie_gen_current=_int(get("PCI", "GPU Link Info", "PCIe Generation", "Current")),
        pcie_width_max=_int(get("PCI", "GPU Link Info", "Link Width", "Max")),
        pcie_width_current=_int(get("PCI", "GPU Link Info", "Link Width", "Current")),
        ecc_mode=get("ECC Mode", "Current"),
        ecc_uncorrectable_volatile=_int(volatile), ecc_uncorrectable_aggregate=_int(aggregate),
        remapped_rows_uncorrectable=_int(get("Remapped Rows", "Uncorrectable Error")),
        remapping_failure=None if failure is None else failure == "Yes",
        pci_device_id=_pci_device(get("PCI", "Device Id")),
        not_available=("ecc_uncorrectable_volatile",) if volatile is None and raw_volatile is not None else (),
    )


# --- default table ---------------------------------------------------------------------------

_T_TITLE = re.compile(r"NVIDIA-SMI (?P<smi>\S+)\s+Driver Version: (?P<driver>\S+)\s+"
                      r"CUDA Version: (?P<cuda>\S+)")
_T_ROW1 = re.compile(r"^\|\s*(?P<idx>\d+)\s+(?P<name>.+?)\s+(?P<persist>On|Off)\s*\|"
                     r"\s*(?P<bus>[0-9A-Fa-f:.]+)\s+(?P<disp>\S+)\s*\|\s*(?P<ecc>\S+)\s*\|$")
# "|    0   N/A  N/A      487      C   python3      1002MiB |" (GI/CI columns since driver 450)
_T_PROCESS = re.compile(r"^\|\s*(?P<gpu>\d+)\s+(?:(?:N/A|\d+)\s+(?:N/A|\d+)\s+)?(?P<pid>\d+)\s+"
                        r"(?P<type>C\+G|M\+C|C|G|M)\s+(?P<name>.+?)\s+(?P<mem>N/A|\d+MiB)\s*\|$")
_T_ROW2 = re.compile(r"^\|\s*(?P<fan>N/A|\d+%)\s+(?P<temp>N/A|\d+C)\s+(?P<perf>P\d+|N/A)\s+"
                     r"(?P<draw>N/A|\d+W)\s*/\s*(?P<cap>N/A|\d+W)\s*\|\s*(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB\s*\|"
                     r"\s*(?P<util>N/A|\d+%)\s+(?P<mode>.+?)\s*\|$")


def _parse_table(body: list[tuple[int, str]], command_line: str | None) -> NvidiaSmiRecord:
    driver = cuda = None
    gpus: list[NvidiaGpu] = []
    processes: list[GpuProcess] = []
    pending: re.Match[str] | None = None
    in_processes = in_mig = False
    for n, line in body:
        stripped = line.strip()
        if not stripped or (stripped[0] in "+|" and set(stripped) <= {"+", "-", "=", "|"}):
            continue
        if re.match(r"^\w{3} \w{3} +\d+ [\d:]+ \d{4}$", stripped):
            continue  # the timestamp line above the table
        if not (stripped.startswith("|") and stripped.endswith("|")):
            raise ParseError(TOOL, "line outside the table", line_no=n, line=line,
                             expected="'|...|' rows and '+---+' borders")
        inner = stripped[1:-1]
        if set(inner.replace(" ", "")) <= {"=", "|", "+", "-"}:
            continue
        if m := _T_TITLE.search(inner):
            driver, cuda = m.group("driver"), m.group("cuda")
            continue
        if "Processes:" in inner:
            in_processes, in_mig = True, False
            continue
        if "MIG devices:" in inner:  # MIG mode: a box of GPU-instance rows between GPUs and Processes
            in_mig = True
            continue
        if in_mig:
            continue
        if in_processes:
            if (m := _T_PROCESS.match(stripped)) is not None:
                processes.append(GpuProcess(pid=int(m.group("pid")), name=m.group("name"), gpu=int(m.group("gpu")),
                                            vram_mib=_number(_na(m.group("mem")))))
            elif "No running processes found" not in inner and not re.search(r"\bPID\b|ID\s+ID|Usage", inner):
                raise ParseError(TOOL, "unrecognised process row", line_no=n, line=line,
                                 expected="'| <gpu> [<gi> <ci>] <pid> <type> <name> <memory>MiB |'")
            continue
        if any(label in inner for label in ("Persistence-M", "Memory-Usage", "MIG M.")):
            continue  # column headings
        if pending is None:
            m1 = _T_ROW1.match(stripped)
            if m1 is not None:
                pending = m1
                continue
            if gpus and not inner.split("|")[0].strip():
                continue  # the third (MIG mode) row of the previous GPU
            raise ParseError(TOOL, "unrecognised GPU row", line_no=n, line=line,
                             expected="'| <idx> <name> <On|Off> | <bus id> <disp> | <ecc> |'")
        m2 = _T_ROW2.match(stripped)
        if m2 is None:
            raise ParseError(TOOL, "unrecognised second GPU row", line_no=n, line=line,
                             expected="'| <fan> <temp>C <perf> <draw>W / <cap>W | "
                                      "<used>MiB / <total>MiB | <util>% <mode> |'")
        m1, pending = pending, None
        gpus.append(NvidiaGpu(
            index=int(m1.group("idx")), name=m1.group("name"), bus_id=m1.group("bus"),
            persistence_mode=m1.group("persist"), performance_state=_na(m2.group("perf")),
            temperature_c=_number(m2.group("temp")), power_draw_w=_number(m2.group("draw")),
            power_limit_w=_number(m2.group("cap")), memory_used_mib=int(m2.group("used")),
            memory_total_mib=int(m2.group("total")), utilization_gpu_pct=_number(m2.group("util")),
            ecc_uncorrectable_volatile=_int(m1.group("ecc")),
            # 'N/A' (no ECC) or 'Off' (ECC disabled) stand where the count would; MIG mode prints 'On' and
            # keeps the counts per instance: not in this view
            not_available=("ecc_uncorrectable_volatile",) if m1.group("ecc") in ("N/A", "Off") else (),
        ))
    if driver is None:
        raise ParseError(TOOL, "table without its 'NVIDIA-SMI ... Driver Version ...' title",
                         expected="the title row of the nvidia-smi table")
    # the table and its Processes box end with a '+---+' border: a view that stops on a row was cut
    last = next((line.strip() for _, line in reversed(body) if line.strip()), "")
    closed = last.startswith("+") and set(last) <= {"+", "-", "="}
    return NvidiaSmiRecord(view="table", command_line=command_line, driver_version=driver, cuda_version=cuda,
                           attached_gpus=None, gpus=tuple(gpus), truncated=pending is not None or not closed,
                           processes=tuple(processes))


# --- --query-gpu CSV -------------------------------------------------------------------------

_CSV_FIELDS = {
    "index": "index", "name": "name", "gpu_name": "name", "pci.bus_id": "bus_id", "gpu_bus_id": "bus_id",
    "uuid": "uuid", "gpu_uuid": "uuid", "serial": "serial", "vbios_version": "vbios_version",
    "persistence_mode": "persistence_mode", "pstate": "performance_state",
    "memory.total": "memory_total_mib", "memory.used": "memory_used_mib",
    "temperature.gpu": "temperature_c", "power.draw": "power_draw_w", "power.limit": "power_limit_w",
    "utilization.gpu": "utilization_gpu_pct", "pcie.link.gen.max": "pcie_gen_max",
    "pcie.link.gen.current": "pcie_gen_current", "pcie.link.width.max": "pcie_width_max",
    "pcie.link.width.current": "pcie_width_current", "ecc.mode.current": "ecc_mode",
}
_CSV_INT = {"index", "memory_total_mib", "memory_used_mib", "pcie_gen_max", "pcie_gen_current",
            "pcie_width_max", "pcie_width_current"}
_CSV_FLOAT = {"temperature_c", "power_draw_w", "power_limit_w", "utilization_gpu_pct"}


def _parse_csv(body: list[tuple[int, str]], command_line: str | None) -> NvidiaSmiRecord:
    query = re.search(r"--query-gpu[= ](\S+)", command_line or "")
    first = body[0][1]
    first_cells = [c.strip() for c in first.split(",")]
    has_header = "noheader" not in (command_line or "") and not any(
        _NUMBER.match(c) or c.startswith("0000") for c in first_cells)
    if has_header:
        columns = [re.sub(r"\s*\[.*\]$", "", c) for c in first_cells]
        rows = body[1:]
    elif query:
        columns = query.group(1).split(",")
        rows = body
    else:
        raise ParseError(TOOL, "CSV without a header row and without the command line", line_no=body[0][0],
                         line=first, expected="a header row, or '$ nvidia-smi --query-gpu=...' as line 1",
                         hint="save the output without 'noheader', or keep the command line")
    if query and has_header and len(query.group(1).split(",")) != len(columns):
        raise ParseError(TOOL, "CSV header does not match the --query-gpu list", line_no=body[0][0],
                         line=first, expected=f"{len(query.group(1).split(','))} columns")
    gpus: list[NvidiaGpu] = []
    data, truncated = _csv_data(rows, len(columns))
    for _, _, cells in data:
        values: dict[str, object] = {"index": len(gpus), "fields": dict(zip(columns, cells, strict=True))}
        for column, cell in zip(columns, cells, strict=True):
            attr = _CSV_FIELDS.get(column)
            if attr is None:
                continue
            if attr in _CSV_INT:
                values[attr] = _int(_na(cell))
            elif attr in _CSV_FLOAT:
                values[attr] = _number(_na(cell))
            else:
                values[attr] = _na(cell)
        if values.get("index") is None:
            values["index"] = len(gpus)
        if "pci.device_id" in values["fields"]:  # type: ignore[operator]
            values["pci_device_id"] = _pci_device(values["fields"]["pci.device_id"])  # type: ignore[index]
        gpus.append(NvidiaGpu(**values))  # type: ignore[arg-type]
    if not gpus:
        raise ParseError(TOOL, "CSV without data rows", line_no=body[-1][0], line=body[-1][1],
                         expected="one row per GPU")
    return NvidiaSmiRecord(view="csv", command_line=command_line, driver_version=None, cuda_version=None,
                           attached_gpus=None, gpus=tuple(gpus), truncated=truncated)


def _csv_data(rows: list[tuple[int, str]], width: int) -> tuple[list[tuple[int, str, list[str]]], bool]:
    """The CSV rows as (line number, line, cells), blank lines left out, and whether an elision marker
    cut the output; a row of another width than the header's is refused with its line."""
    data = []
    truncated = False
    for n, line in rows:
        if not line.strip():
            continue
        if line.strip() in _MARKERS:
            truncated = True
            continue
        cells = [c.strip() for c in next(csv.reader([line], skipinitialspace=True))]
        if len(cells) != width:
            raise ParseError(TOOL, f"CSV row has {len(cells)} values for {width} columns",
                             line_no=n, line=line, expected=f"{width} comma-separated values")
        data.append((n, line, cells))
    return data, truncated


# --- --query-compute-apps CSV ----------------------------------------------------------------

_APP_FIELDS = {"pid": "pid", "process_name": "name", "name": "name", "used_memory": "vram_mib",
               "used_gpu_memory": "vram_mib", "gpu_bus_id": "bus_id", "gpu_uuid": "gpu_uuid"}


def _parse_apps_csv(body: list[tuple[int, str]], command_line: str | None) -> NvidiaSmiRecord:
    """One row per process; a header with no rows is an idle GPU, not an error."""
    query = re.search(r"--query-compute-apps[= ](\S+)", command_line or "")
    first = body[0][1]
    has_header = "pid" in _csv_columns(first)  # 'pid, ...' or 'gpu_uuid, pid, ...'
    if has_header:
        columns = _csv_columns(first)
        rows = body[1:]
    elif query:
        columns = query.group(1).split(",")
        rows = body
    else:
        raise ParseError(TOOL, "compute-apps CSV without a header row and without the command line",
                         line_no=body[0][0], line=first,
                         expected="a header row, or '$ nvidia-smi --query-compute-apps=...' as line 1")
    if "pid" not in columns:
        raise ParseError(TOOL, "compute-apps CSV without a pid column", line_no=body[0][0], line=first,
                         expected="--query-compute-apps=pid,...")
    processes: list[GpuProcess] = []
    data, truncated = _csv_data([(n, line) for n, line in rows if not line.strip().startswith("No running")],
                                len(columns))
    for n, line, cells in data:
        row = {_APP_FIELDS.get(c, c): v for c, v in zip(columns, cells, strict=True)}
        pid = _int(row["pid"])
        if pid is None:
            raise ParseError(TOOL, f"pid {row['pid']!r} is not a number", line_no=n, line=line,
                             expected="a process id in the pid column")
        processes.append(GpuProcess(pid=pid, name=_na(row.get("name")), bus_id=_na(row.get("bus_id")),
                                    vram_mib=_number(_na(row.get("vram_mib"))), gpu_uuid=_na(row.get("gpu_uuid"))))
    return NvidiaSmiRecord(view="apps", command_line=command_line, driver_version=None, cuda_version=None,
                           attached_gpus=None, gpus=(), truncated=truncated, processes=tuple(processes))
