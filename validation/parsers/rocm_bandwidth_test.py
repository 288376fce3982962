"""rocm-bandwidth-test (RocmBandwidthTest 2.x): device list, all-pairs matrices, single-pair sweeps.

Device indices are the tool's own (CPUs and GPUs share one numbering); "N/A" matrix cells stay None.
Sizes in the sweep table are the tool's binary units (1 KB = 1024 bytes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from validation.errors import ParseError
from validation.parsers._bench_text import COMMAND, integer, is_elision, number
from validation.parsers._text import numbered, require_text
from validation.records import LinkBandwidth

TOOL = "rocm-bandwidth-test"


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    """One `Device Index:` block of `-e` (or of the default run's preamble)."""

    index: int
    kind: str
    name: str
    bdf: str | None
    uuid: str | None
    allocatable_kb: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MatrixCell:
    """Row `src`, column `dst` of a peak-bandwidth matrix; None where the tool printed N/A."""

    src: int
    dst: int
    gb_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Matrix:
    """An all-pairs matrix (`-a` unidirectional, `-A` bidirectional)."""

    kind: str
    title: str
    indices: tuple[int, ...]
    cells: tuple[MatrixCell, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SizeSample:
    """One row of a single-pair sweep."""

    size_bytes: int
    avg_time_us: float
    avg_bw_gb_s: float
    min_time_us: float
    peak_bw_gb_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class PairSweep:
    """A `-s SRC -d DST` (or `-b`) size sweep between two devices."""

    kind: str
    src: int
    src_type: str
    dst: int
    dst_type: str
    samples: tuple[SizeSample, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BandwidthTestResult:
    """Everything one rocm-bandwidth-test invocation printed that we understand."""

    command: str | None
    version: str | None
    devices: tuple[Device, ...]
    matrices: tuple[Matrix, ...]
    sweeps: tuple[PairSweep, ...]
    truncated: bool


_VERSION = re.compile(r"^RocmBandwidthTest Version:\s*(?P<v>\S+)$")
_LAUNCH = re.compile(r"^Launch Command is:\s*(?P<cmd>\S.*)$")
_PROGRESS = re.compile(r"^\.+$")
_DEV_FIELD = re.compile(r"^Device\s+(?P<key>Index|Type|Name|BDF|UUID):\s*(?P<value>\S.*?)$")
_ALLOC = re.compile(r"^Allocatable Memory Size \(KB\):\s*(?P<kb>\d+)$")
_MATRIX_TITLE = re.compile(r"^(?P<kind>Unidirectional|Bidirectional) copy peak bandwidth GB/s$")
_MATRIX_HEAD = re.compile(r"^D/D\s+(?P<rest>[\d\s]+)$")
_MATRIX_ROW = re.compile(r"^(?P<src>\d+)(?P<values>(?:\s+(?:N/A|[\d.]+))+)$")
_BANNER = re.compile(r"^=+\s*(?P<kind>Unidirectional|Bidirectional) Benchmark Result\s*=+$")
_ENDPOINT = re.compile(r"^=+\s*(?P<end>Src|Dst) Device Id:\s*(?P<id>\d+)\s+(?:Src|Dst) Device Type:\s*"
                       r"(?P<type>\w+)\s*=+$")
_SWEEP_HEAD = re.compile(r"^Data Size\s+Avg Time\(us\)\s+Avg BW\(GB/s\)\s+Min Time\(us\)\s+Peak BW\(GB/s\)$")
_SWEEP_ROW = re.compile(r"^(?P<n>\d+)\s+(?P<unit>B|KB|MB|GB)\s+(?P<rest>.*)$")
_UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}


def parse(text: str) -> BandwidthTestResult:
    """Parse `-e`, `-a`/`-A` and `-s/-d` outputs (alone or together, as the default run prints them)."""
    require_text(TOOL, text)
    command = version = None
    truncated = False
    devices: list[Device] = []
    dev: dict[str, Any] | None = None
    matrices: list[Matrix] = []
    matrix: dict[str, Any] | None = None
    sweeps: list[PairSweep] = []
    sweep: dict[str, Any] | None = None

    def close_device() -> None:
        nonlocal dev
        if dev is not None:
            devices.append(_device(dev))
            dev = None

    def close_matrix() -> None:
        nonlocal matrix
        if matrix is not None:
            if not matrix["cells"]:
                raise ParseError(TOOL, f"{matrix['kind']} matrix has no rows", expected="rows of bandwidths")
            matrices.append(Matrix(kind=str(matrix["kind"]), title=str(matrix["title"]),
                                   indices=tuple(matrix["indices"]), cells=tuple(matrix["cells"])))
            matrix = None

    def close_sweep() -> None:
        nonlocal sweep
        if sweep is not None:
            if "src" not in sweep or "dst" not in sweep or not sweep["samples"]:
                raise ParseError(TOOL, "a benchmark result without its device lines or rows",
                                 expected="Src/Dst Device Id lines and a 'Data Size' table")
            sweeps.append(PairSweep(kind=str(sweep["kind"]), src=int(sweep["src"]), src_type=str(sweep["src_type"]),
                                    dst=int(sweep["dst"]), dst_type=str(sweep["dst_type"]),
                                    samples=tuple(sweep["samples"])))
            sweep = None

    for line_no, raw in numbered(text):
        line = raw.strip()
        if not line:
            continue
        if is_elision(line):
            truncated = True
        elif m := COMMAND.match(line):
            command = m["cmd"]
        elif _PROGRESS.match(line):
            continue
        elif m := _VERSION.match(line):
            version = m["v"]
        elif _LAUNCH.match(line):
            continue
        elif m := _DEV_FIELD.match(line):
            key = m["key"]
            if key == "Index":
                close_device()
                dev = {"index": integer(TOOL, m["value"], line_no, raw, "device index"), "alloc": []}
            elif dev is None:
                raise ParseError(TOOL, f"'Device {key}' before 'Device Index'", line_no=line_no, line=raw,
                                 expected="'Device Index: N' first")
            else:
                dev[key] = m["value"]
        elif m := _ALLOC.match(line):
            if dev is None:
                raise ParseError(TOOL, "memory size outside a device block", line_no=line_no, line=raw,
                                 expected="'Device Index: N' first")
            dev["alloc"].append(int(m["kb"]))
        elif m := _MATRIX_TITLE.match(line):
            close_device()
            close_matrix()
            close_sweep()
            matrix = {"kind": m["kind"].lower(), "title": line, "indices": None, "cells": []}
        elif m := _MATRIX_HEAD.match(line):
            if matrix is None or matrix["indices"] is not None:
                raise ParseError(TOOL, "'D/D' header without a matrix title", line_no=line_no, line=raw,
                                 expected="'Unidirectional/Bidirectional copy peak bandwidth GB/s' first")
            matrix["indices"] = [int(x) for x in m["rest"].split()]
        elif (m := _MATRIX_ROW.match(line)) and matrix is not None:
            _matrix_row(matrix, m, line_no, raw)
        elif m := _BANNER.match(line):
            close_device()
            close_matrix()
            close_sweep()
            sweep = {"kind": m["kind"].lower(), "samples": [], "head": False}
        elif (m := _ENDPOINT.match(line)) and sweep is not None:
            end = m["end"].lower()
            sweep[end] = int(m["id"])
            sweep[f"{end}_type"] = m["type"].upper()
        elif _SWEEP_HEAD.match(line) and sweep is not None:
            sweep["head"] = True
        elif (m := _SWEEP_ROW.match(line)) and sweep is not None and sweep["head"]:
            sweep["samples"].append(_sample(m, line_no, raw))
        else:
            raise ParseError(TOOL, "line not understood", line_no=line_no, line=raw,
                             expected="a device block, a copy matrix, or a single-pair benchmark result")
    close_device()
    close_matrix()
    close_sweep()
    if not devices and not matrices and not sweeps:
        raise ParseError(TOOL, "no devices, matrices or benchmark results found",
                         expected="the output of rocm-bandwidth-test -e, -a, -A or -s/-d")
    return BandwidthTestResult(command=command, version=version, devices=tuple(devices),
                               matrices=tuple(matrices), sweeps=tuple(sweeps), truncated=truncated)


def _device(dev: dict[str, Any]) -> Device:
    kind = str(dev.get("Type", ""))
    if kind not in ("CPU", "GPU") or "Name" not in dev:
        raise ParseError(TOOL, f"device {dev['index']} lacks a CPU/GPU type or a name",
                         expected="'Device Type: CPU|GPU' and 'Device Name: ...'")
    return Device(index=int(dev["index"]), kind=kind, name=str(dev["Name"]),
                  bdf=str(dev["BDF"]) if "BDF" in dev else None, uuid=str(dev["UUID"]) if "UUID" in dev else None,
                  allocatable_kb=tuple(dev["alloc"]))


def _matrix_row(matrix: dict[str, Any], m: re.Match[str], line_no: int, raw: str) -> None:
    indices = matrix["indices"]
    if indices is None:
        raise ParseError(TOOL, "matrix row before the 'D/D' header", line_no=line_no, line=raw,
                         expected="the 'D/D  0  1 ...' header first")
    values = m["values"].split()
    if len(values) != len(indices):
        raise ParseError(TOOL, f"row has {len(values)} cells for {len(indices)} columns", line_no=line_no,
                         line=raw, expected=f"{len(indices)} bandwidths or N/A")
    src = int(m["src"])
    for dst, cell in zip(indices, values, strict=True):
        value = None if cell == "N/A" else number(TOOL, cell, line_no, raw, f"{src}->{dst} GB/s")
        matrix["cells"].append(MatrixCell(src=src, dst=dst, gb_s=value))


def _sample(m: re.Match[str], line_no: int, raw: str) -> SizeSample:
    parts = m["rest"].split()
    if len(parts) != 4:
        raise ParseError(TOOL, "sweep row has the wrong number of columns", line_no=line_no, line=raw,
                         expected="size, avg time (us), avg BW (GB/s), min time (us), peak BW (GB/s)")
    avg_t, avg_bw, min_t, peak = (number(TOOL, p, line_no, raw, what) for p, what in
                                  zip(parts, ("avg time", "avg BW", "min time", "peak BW"), strict=True))
    return SizeSample(size_bytes=int(m["n"]) * _UNITS[m["unit"]], avg_time_us=avg_t, avg_bw_gb_s=avg_bw,
                      min_time_us=min_t, peak_bw_gb_s=peak)


def endpoint_names(devices: tuple[Device, ...]) -> dict[int, str]:
    """Tool index -> "cpu0"/"gpu3": CPUs and GPUs are each numbered in the order the tool lists them."""
    counts = {"CPU": 0, "GPU": 0}
    names = {}
    for dev in sorted(devices, key=lambda d: d.index):
        names[dev.index] = f"{dev.kind.lower()}{counts[dev.kind]}"
        counts[dev.kind] += 1
    return names


def links(matrix: Matrix, names: dict[int, str]) -> tuple[LinkBandwidth, ...]:
    """The matrix's numeric cells as directed links named by `endpoint_names`; N/A cells are left out."""
    missing = {i for c in matrix.cells for i in (c.src, c.dst)} - names.keys()
    if missing:
        raise ValueError(f"no device name for indices {sorted(missing)}; pass the -e device list of the same host")
    return tuple(LinkBandwidth(src=names[c.src], dst=names[c.dst], gb_s=c.gb_s) for c in matrix.cells
                 if c.gb_s is not None)


def argv(binary: str = "rocm-bandwidth-test", *, src: int | None = None, dst: int | None = None,
         all_pairs: str | None = None, bidirectional: bool = False) -> list[str]:
    """Command line: `all_pairs="uni"` (-a) or `"bi"` (-A) for matrices, or one `src`/`dst` pair sweep."""
    if all_pairs is not None:
        if src is not None or dst is not None:
            raise ValueError("all_pairs and src/dst are exclusive")
        if all_pairs not in ("uni", "bi"):
            raise ValueError(f"all_pairs must be 'uni' or 'bi', got {all_pairs!r}")
        return [binary, "-a" if all_pairs == "uni" else "-A"]
    if src is None or dst is None or src < 0 or dst < 0:
        raise ValueError("give all_pairs, or both src and dst device indices (>= 0)")
    return [binary, "-s", str(src), "-d", str(dst), *(["-b"] if bidirectional else [])]
