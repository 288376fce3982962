"""Parse `nvidia-smi topo -m` (the GPU/NIC connection matrix with CPU and NUMA affinity).

Two spellings are accepted: the tool's own tab-separated output (empty cells kept; NIC rows end in
empty affinity cells; an extra tab stands before "GPU NUMA ID"), and the space-aligned copy that
documentation pages show. Older drivers name NIC columns `mlx5_0` instead of `NIC0`. The legend
after the matrix is checked only for its "NIC Legend" (NIC0 -> mlx5_0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._text import require_text

TOOL = "nvidia-smi-topo"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\r")
_DEVICE = r"(?:GPU\d+|NIC\d+|mlx\d+_\d+|[a-z][a-z0-9]*_\d+)"
_EXTRA = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_HEADER_TOKEN = re.compile(rf"{_DEVICE}|CPU Affinity|NUMA Affinity|GPU NUMA ID")
_CELL = re.compile(r"X|NV\d+|[A-Z][A-Z0-9]*")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopoDevice:
    """One row of the matrix: a GPU or a NIC; None = empty or N/A cell."""

    name: str  # "GPU3", "NIC0", "mlx5_0"
    kind: str  # gpu, nic
    index: int  # the number in the name
    cpu_affinity: str | None = None  # "0-51" as printed
    numa_affinity: int | None = None
    gpu_numa_id: int | None = None
    nic_device: str | None = None  # from the NIC Legend ("mlx5_0")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopoLink:
    """One ordered pair of distinct devices and the connection the matrix names."""

    src: str
    dst: str
    connection: str  # NV18, SYS, NODE, PHB, PXB, PIX
    nvlink_count: int | None  # 18 for NV18; None for PCIe paths


@dataclass(frozen=True, slots=True, kw_only=True)
class NvidiaTopoRecord:
    command_line: str | None
    devices: tuple[TopoDevice, ...]
    links: tuple[TopoLink, ...]

    @property
    def gpus(self) -> tuple[TopoDevice, ...]:
        return tuple(d for d in self.devices if d.kind == "gpu")


def parse(text: str) -> NvidiaTopoRecord:
    """Parse one `nvidia-smi topo -m` run."""
    require_text(TOOL, text)
    lines = [(n, _ANSI.sub("", raw).rstrip("\n")) for n, raw in enumerate(text.splitlines(), start=1)]
    command_line: str | None = None
    body: list[tuple[int, str]] = []
    for n, line in lines:
        if not body and not line.strip():
            continue
        if not body and command_line is None and line.startswith("$ "):
            command_line = line[2:].strip()
            continue
        body.append((n, line))
    if not body:
        raise ParseError(TOOL, "no output after the command line", expected="the topology matrix")
    n, header_line = body[0]
    tabbed = "\t" in header_line
    columns = ([c.strip() for c in header_line.split("\t")][1:] if tabbed
               else _HEADER_TOKEN.findall(header_line))
    devices_cols = [c for c in columns if re.fullmatch(_DEVICE, c)]
    extras = columns[len(devices_cols):]
    if not devices_cols or not any(c.startswith("GPU") for c in devices_cols) or \
            columns[:len(devices_cols)] != devices_cols or any(e not in _EXTRA for e in extras):
        raise ParseError(TOOL, "header is not 'GPU0 GPU1 ... [NICn ...] CPU Affinity ...'", line_no=n,
                         line=header_line, expected="device columns then CPU/NUMA affinity columns",
                         hint="is this `nvidia-smi topo -m` output?")
    rows: dict[str, tuple[list[str], list[str]]] = {}
    i = 1
    while i < len(body):
        n, line = body[i]
        if not line.strip():
            break
        cells = [c.strip() for c in line.split("\t")] if tabbed else line.split()
        name = cells[0]
        if name not in devices_cols:
            raise ParseError(TOOL, f"row {name!r} is not one of the header's devices", line_no=n, line=line,
                             expected=f"one of {', '.join(devices_cols)}")
        matrix, rest = cells[1:1 + len(devices_cols)], cells[1 + len(devices_cols):]
        if len(matrix) != len(devices_cols) or not all(_CELL.fullmatch(c) for c in matrix):
            raise ParseError(TOOL, f"row {name} does not have one connection per device", line_no=n, line=line,
                             expected=f"{len(devices_cols)} cells such as X, NV18, SYS, NODE, PHB, PXB, PIX")
        if matrix[devices_cols.index(name)] != "X":
            raise ParseError(TOOL, f"row {name} does not mark itself X", line_no=n, line=line,
                             expected=f"'X' in column {name}")
        rows[name] = (matrix, rest)
        i += 1
    if not any(name.startswith("GPU") for name in rows):
        raise ParseError(TOOL, "matrix without GPU rows", line_no=n, line=body[min(i, len(body) - 1)][1],
                         expected="rows 'GPUn  X  NV18 ...'")
    legend = _nic_legend(body[i:])
    devices = [_device(name, rest, extras, legend) for name, (_, rest) in rows.items()]
    links = [TopoLink(src=src, dst=dst, connection=cell,
                      nvlink_count=int(cell[2:]) if re.fullmatch(r"NV\d+", cell) else None)
             for src, (matrix, _) in rows.items() for dst, cell in zip(devices_cols, matrix, strict=True)
             if src != dst]
    return NvidiaTopoRecord(command_line=command_line, devices=tuple(devices), links=tuple(links))


def _device(name: str, rest: list[str], extras: list[str], legend: dict[str, str]) -> TopoDevice:
    kind = "gpu" if name.startswith("GPU") else "nic"
    values = {"CPU Affinity": rest[0] if rest else "", "NUMA Affinity": rest[1] if len(rest) > 1 else ""}
    if "GPU NUMA ID" in extras and len(rest) > 2:
        values["GPU NUMA ID"] = rest[-1]  # the tool prints an extra tab before this column
    return TopoDevice(name=name, kind=kind, index=int(re.search(r"(\d+)$", name).group(1)),  # type: ignore[union-attr]
                      cpu_affinity=_text(values["CPU Affinity"]) if "CPU Affinity" in extras else None,
                      numa_affinity=_int(values["NUMA Affinity"]) if "NUMA Affinity" in extras else None,
                      gpu_numa_id=_int(values.get("GPU NUMA ID", "")),
                      nic_device=legend.get(name) or (name if kind == "nic" and not name.startswith("NIC") else None))


def _nic_legend(tail: list[tuple[int, str]]) -> dict[str, str]:
    legend: dict[str, str] = {}
    in_nic = False
    for _, line in tail:
        if line.strip() == "NIC Legend:":
            in_nic = True
            continue
        m = _NIC_LEGEND.match(line)
        if in_nic and m:
            legend[m.group(1)] = m.group(2)
    return legend


def _text(raw: str) -> str | None:
    text = raw.strip()
    return None if text in ("", "N/A") else text


def _int(raw: str) -> int | None:
    text = raw.strip()
    return int(text) if re.fullmatch(r"-?\d+", text) else None
