"""The result format hipblaslt-bench and rocblas-bench share (both come from the same bench harness).

    Device ID 0 : AMD Radeon Graphics gfx942:sramecc+:xnack-
    with 206.1 GB memory, max. SCLK 2100 MHz, max. MCLK 1300 MHz, compute capability 9.4
    [0]transA,transB,...,m,n,k,...,d_type,compute_type,...,hipblaslt-Gflops,us
    N,N,0,1,896,896,896,...,fp16_r,f32_r,none,0, 58624.5, 24.54

A CSV header starts with `transA,transB` (optionally after a `[0]` or `[0]:` device tag) and is followed
by one row per problem; several header/row groups may follow each other.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._bench_text import COMMAND, integer, is_elision, number
from validation.parsers._text import numbered, require_text


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchDevice:
    """A `Device ID N : name` line and the `with ... GB memory ...` line that follows it."""

    index: int
    name: str
    memory_gb: float | None
    max_sclk_mhz: int | None
    max_mclk_mhz: int | None
    compute_capability: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GemmRow:
    """One result row. `gflops` and `time_us` are the tool's `<lib>-Gflops` and `us` columns.

    `dtype` is the output/data type column (d_type, then a_type, then precision) and None where the
    row does not carry one (plain rocblas gemm: the type was chosen on the command line).
    `columns` keeps every (header, value) pair verbatim for anything not lifted into a field.
    """

    trans_a: str
    trans_b: str
    m: int
    n: int
    k: int
    batch_count: int | None
    dtype: str | None
    compute_type: str | None
    gflops: float
    time_us: float
    columns: tuple[tuple[str, str], ...]
    line_no: int
    # hipblaslt-bench --print_kernel_info: the three '--Solution index/name/kernel name' lines under the row
    solution_index: int | None = None
    solution_name: str | None = None
    kernel_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BlasBenchResult:
    """Everything one hipblaslt-bench / rocblas-bench run printed that we understand."""

    tool: str
    command: str | None
    library_version: str | None
    git_version: str | None
    devices: tuple[BenchDevice, ...]
    rows: tuple[GemmRow, ...]
    truncated: bool


_VERSION = re.compile(r"^(?:hipBLASLt|rocBLAS) version:\s*(?P<v>\S+)$")
_GIT = re.compile(r"^(?:hipBLASLt|rocBLAS) git version:\s*(?P<v>\S+)$")
# hipBLASLt 1500+ appends the device it runs on: "... there are 1 devices. (Target device ID is 0)"
_QUERY = re.compile(r"^Query device success: there (?:is|are) \d+ devices?(?:\. \(Target device ID is \d+\))?$")
_RULE = re.compile(r"^-{5,}$")
_DEVICE = re.compile(r"^Device ID (?P<id>\d+)\s*:\s*(?P<name>\S.*?)$")
_DEVICE_MEM = re.compile(r"^with (?P<mem>[\d.]+) GB memory, max\. SCLK (?P<sclk>\d+) MHz, max\. MCLK (?P<mclk>\d+) MHz,"
                         r" compute capability (?P<cc>\S+)$")
_DEVICE_LIMITS = re.compile(r"^maxGridDimX \d+, sharedMemPerBlock [\d.]+ KB, maxThreadsPerBlock \d+, warpSize \d+$")
_SUPPORTED = re.compile(r"^Is supported \d+ / Total solutions: \d+$")
_INFO = re.compile(r"^(?:rocBLAS|hipBLASLt) info: .*$")
# hipBLASLt 1.x with --rotating N: "Rotating buffer 1002 MiB. Needed Size: 144 MiB. Needed block count: 7 (...)"
_ROTATING = re.compile(r"^Rotating buffer \d+ MiB\. Needed Size: \d+ MiB\. Needed block count: \d+.*$")
# --print_kernel_info (hipBLASLt 100200): three lines under each result row
_KERNEL_INFO = re.compile(r"^--(?P<key>Solution index|Solution name|kernel name):\s*(?P<value>\S.*)$")
_KERNEL_FIELDS = {"Solution index": "solution_index", "Solution name": "solution_name", "kernel name": "kernel_name"}
_HEADER = re.compile(r"^(?:\[\d+\]:?)?(?P<csv>transA,transB,.*)$")


def parse_blas(tool: str, text: str, gflops_column: str) -> BlasBenchResult:
    """Parse a bench run; `gflops_column` is "hipblaslt-Gflops" or "rocblas-Gflops"."""
    require_text(tool, text)
    command = version = git = None
    truncated = False
    devices: list[BenchDevice] = []
    rows: list[GemmRow] = []
    header: list[str] | None = None
    for line_no, raw in numbered(text):
        line = raw.strip()
        if not line or _RULE.match(line) or _QUERY.match(line) or _DEVICE_LIMITS.match(line) \
                or _SUPPORTED.match(line) or _INFO.match(line) or _ROTATING.match(line):
            continue
        if is_elision(line):
            truncated = True
        elif m := COMMAND.match(line):
            command = m["cmd"]
        elif m := _VERSION.match(line):
            version = m["v"]
        elif m := _GIT.match(line):
            git = m["v"]
        elif m := _DEVICE.match(line):
            devices.append(BenchDevice(index=int(m["id"]), name=m["name"], memory_gb=None, max_sclk_mhz=None,
                                       max_mclk_mhz=None, compute_capability=None))
        elif m := _DEVICE_MEM.match(line):
            if not devices:
                raise ParseError(tool, "device properties before a 'Device ID' line", line_no=line_no,
                                 line=raw, expected="'Device ID N : name' first")
            last = devices.pop()
            memory_gb = number(tool, m["mem"], line_no, raw, "memory GB")
            devices.append(BenchDevice(index=last.index, name=last.name, memory_gb=memory_gb,
                                       max_sclk_mhz=int(m["sclk"]), max_mclk_mhz=int(m["mclk"]),
                                       compute_capability=m["cc"]))
        elif m := _HEADER.match(line):
            header = [c.strip() for c in m["csv"].split(",")]
            for needed in ("transA", "transB", gflops_column, "us"):
                if needed not in header:
                    raise ParseError(tool, f"result header lacks the {needed!r} column", line_no=line_no,
                                     line=raw, expected=f"a CSV header with transA, transB, m/M, n/N, k/K, "
                                     f"{gflops_column} and us")
            if not ({"m", "M"} & set(header) and {"n", "N"} & set(header) and {"k", "K"} & set(header)):
                raise ParseError(tool, "result header lacks the m/n/k columns", line_no=line_no, line=raw,
                                 expected="m, n and k (or M, N, K) columns")
        elif m := _KERNEL_INFO.match(line):
            rows[-1] = _with_kernel_info(tool, rows, m["key"], m["value"], line_no, raw)
        elif header is not None and "," in line:
            rows.append(_row(tool, header, gflops_column, line, line_no, raw))
        else:
            raise ParseError(tool, "line not understood", line_no=line_no, line=raw,
                             expected="a version/device line, a 'transA,transB,...' header or a result row")
    if not rows:
        raise ParseError(tool, "no result rows found",
                         expected=f"a 'transA,transB,...,{gflops_column},us' header and a row under it",
                         hint="the run may have failed; look for 'error' in its stderr")
    # a row whose kernel-info lines stop short, or that lacks them although the command asked for them, was cut
    asked = command is not None and "--print_kernel_info" in command.split()
    truncated |= any((asked or row.solution_index is not None or row.solution_name is not None)
                     and row.kernel_name is None for row in rows)
    return BlasBenchResult(tool=tool, command=command, library_version=version, git_version=git,
                           devices=tuple(devices), rows=tuple(rows), truncated=truncated)


def _with_kernel_info(tool: str, rows: list[GemmRow], key: str, value: str, line_no: int, raw: str) -> GemmRow:
    """The row above with one --print_kernel_info line added; they come in order: index, name, kernel name."""
    field = _KERNEL_FIELDS[key]
    order = list(_KERNEL_FIELDS.values())
    row = rows[-1] if rows else None
    if row is None or getattr(row, field) is not None or any(
            getattr(row, before) is None for before in order[:order.index(field)]):
        raise ParseError(tool, f"'--{key}' line out of place", line_no=line_no, line=raw,
                         expected="'--Solution index', '--Solution name', '--kernel name' once each, under a row")
    if field == "solution_index":
        return dataclasses.replace(row, solution_index=integer(tool, value, line_no, raw, key))
    if field == "solution_name":
        return dataclasses.replace(row, solution_name=value.strip())
    return dataclasses.replace(row, kernel_name=value.strip())


def _row(tool: str, header: list[str], gflops_column: str, line: str, line_no: int, raw: str) -> GemmRow:
    values = [v.strip() for v in line.split(",")]
    if len(values) != len(header):
        raise ParseError(tool, f"row has {len(values)} values for {len(header)} header columns",
                         line_no=line_no, line=raw, expected=f"{len(header)} comma-separated values")
    cols = dict(zip(header, values, strict=True))

    def pick(*names: str) -> str | None:
        return next((cols[n] for n in names if n in cols), None)

    trans_a, trans_b = cols["transA"], cols["transB"]
    for t in (trans_a, trans_b):
        if t not in ("N", "T", "C"):
            raise ParseError(tool, f"transpose flag {t!r}", line_no=line_no, line=raw, expected="N, T or C")
    dims = [integer(tool, pick(a, b) or "", line_no, raw, a) for a, b in (("m", "M"), ("n", "N"), ("k", "K"))]
    batch = pick("batch_count")
    gflops = number(tool, cols[gflops_column], line_no, raw, gflops_column)
    time_us = number(tool, cols["us"], line_no, raw, "us")
    if gflops < 0 or time_us < 0:
        raise ParseError(tool, "negative GFLOPS or time", line_no=line_no, line=raw, expected="values >= 0")
    return GemmRow(trans_a=trans_a, trans_b=trans_b, m=dims[0], n=dims[1], k=dims[2],
                   batch_count=integer(tool, batch, line_no, raw, "batch_count") if batch is not None else None,
                   dtype=pick("d_type", "a_type", "precision"), compute_type=pick("compute_type"),
                   gflops=gflops, time_us=time_us, columns=tuple(zip(header, values, strict=True)),
                   line_no=line_no)
