"""The result table that nccl-tests and rccl-tests print (they share the code that prints it).

Layout, oldest to newest, all accepted:

    # nThread 1 nGpus 8 minBytes 1 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...
    # Using devices
    #   Rank  0 Pid 112372 on localhost device  0 [0x00] A100-SXM4-40GB          (no Group column)
    #  Rank  0 Group  0 Pid   7085 on host device  0 [0000:05:00] AMD Instinct MI300X
    RCCL version : 2.22.3-HEAD:7d8d67c                                          (rccl-tests 2.22+)
    #       size  count  type  [redop  [root]]  time algbw busbw #wrong|error  time algbw busbw #wrong|error
    ...rows...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 92.3318

Lines before the `# nThread` header are the launcher's (mpirun, srun) and are skipped; from the
header on, every line must be understood. A grep-filtered log of several runs ("====== 2-node ======"
separators, rows without any header) is refused by `parse_table` with a hint; `parse_sections`
reads such a log as what it is: labelled groups of rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._bench_text import COMMAND, integer, is_elision, number
from validation.parsers._text import numbered, require_text


@dataclass(frozen=True, slots=True, kw_only=True)
class RankDevice:
    """One `#  Rank N ... device D [bus] name` line: which host and GPU a rank ran on."""

    rank: int
    group: int | None
    pid: int
    host: str
    device: int
    bus_id: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """One half (out-of-place or in-place) of a result row.

    `wrong` is the `#wrong` element count (None when the tool printed N/A or the older `error`
    column); `max_error` is the older `error` column's maximum deviation (None otherwise);
    `over_threshold` is the tool's trailing asterisk ("errors that have exceeded the maximum threshold").
    """

    time_us: float
    algbw_gb_s: float
    busbw_gb_s: float
    wrong: int | None
    max_error: float | None
    over_threshold: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class SizeRow:
    """One message size. `redop`/`root` are None where the collective has none (alltoall, allgather)."""

    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: Measurement
    in_place: Measurement
    line_no: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectiveRun:
    """A whole nccl-tests / rccl-tests run.

    `gpus_per_process` is the header's nGpus (`-g`); `ranks` counts the `Rank` lines and `nodes` the
    distinct hosts among them (None when the device list was not printed). `complete` is True only
    when the closing `# Avg bus bandwidth` line was seen. `truncated` is True for any elision marker,
    `rows_elided` only for one inside the run (after its `# nThread` header), where it hides results.
    """

    tool: str
    command: str | None
    tests_version: str | None
    library_version: str | None
    hip_version: str | None
    rocm_version: str | None
    hostname: str | None
    library_path: str | None
    threads: int | None
    gpus_per_process: int | None
    min_bytes: int | None
    max_bytes: int | None
    step: str | None
    warmup_iters: int | None
    iters: int | None
    agg_iters: int | None
    validation: int | None
    graph: int | None
    devices: tuple[RankDevice, ...]
    ranks: int | None
    nodes: int | None
    error_column: str
    rows: tuple[SizeRow, ...]
    out_of_bounds: int | None
    out_of_bounds_ok: bool | None
    avg_busbw_gb_s: float | None
    truncated: bool
    complete: bool
    rows_elided: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FilteredSection:
    """Rows found under one "====== label ======" separator of a grep-filtered log."""

    label: str
    rows: tuple[SizeRow, ...]


_NTHREAD = re.compile(r"^#\s*nThread\s+(?P<threads>\d+)\s+nGpus\s+(?P<gpus>\d+)\s+minBytes\s+(?P<min>\d+)"
                      r"\s+maxBytes\s+(?P<max>\d+)(?P<rest>.*)$")
_HEADER_INTS = {
    "warmup_iters": re.compile(r"warmup iters:\s*(\d+)"),
    "iters": re.compile(r"(?<!warmup )(?<!agg )\biters:\s*(\d+)"),
    "agg_iters": re.compile(r"agg iters:\s*(\d+)"),
    "validation": re.compile(r"validation:\s*(\d+)"),
    "graph": re.compile(r"graph:\s*(\d+)"),
}
_STEP = re.compile(r"step:\s*(\S+)")
_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+"
                   r"(?P<host>\S+)\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s+(?P<name>\S.*?)\s*$")
# "RCCL version : 2.22.3" (rccl-tests' own block) or "NCCL version 2.18.3+cuda12.2" (the library, NCCL_DEBUG=VERSION).
_KEYVAL = re.compile(r"^#?\s*(?P<key>RCCL version|NCCL version|HIP version|ROCm version|Hostname|"
                     r"Librccl path|Libnccl path)(?:\s*:\s*|\s+)(?P<value>\S.*?)\s*$")
_TESTS_VERSION = re.compile(r"^#?\s*(?:rccl-tests|nccl-tests)(?::| version)\s*(?:Version\s+)?(?P<v>\S+)")
_COLUMNS = re.compile(r"^#\s*size\s+count\s+type\b.*\btime\s+algbw\s+busbw\s+(?P<err>#wrong|error)\s+"
                      r"time\s+algbw\s+busbw\s+(?:#wrong|error)\s*$")
_UNITS = re.compile(r"^#\s*\(B\)\s+\(elements\)")
_PLACE = re.compile(r"^#\s*out-of-place\s+in-place\s*$")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)\s+(?P<verdict>OK|FAILED)\s*$")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<v>\S+)\s*$")
_COMMENTS = re.compile(r"^#\s*(?:|Using devices|Errors with asterisks indicate errors that have exceeded the "
                       r"maximum threshold\.|Collective test concluded:.*)\s*$")
# NCCL/RCCL debug lines ("host:pid:tid [dev] NCCL INFO ...") interleave with the table when NCCL_DEBUG is set.
_LIBRARY_LOG = re.compile(r"^\S+:\d+:\d+ \[\d+\] (?:NCCL|RCCL) (?:INFO|WARN|TRACE|ABORT)\b")
_SECTION = re.compile(r"^=+\s*(?P<label>\S.*?)\s*=+\s*$")
_ROW_START = re.compile(r"^\s*\d+\s+\d+\s+\S")


def _measurement(tool: str, parts: list[str], error_column: str, line_no: int, line: str,
                 half: str) -> Measurement:
    time_us = number(tool, parts[0], line_no, line, f"{half} time (us)")
    algbw = number(tool, parts[1], line_no, line, f"{half} algbw (GB/s)")
    busbw = number(tool, parts[2], line_no, line, f"{half} busbw (GB/s)")
    raw = parts[3]
    flagged = raw.endswith("*")
    raw = raw.rstrip("*")
    wrong: int | None = None
    max_error: float | None = None
    if raw != "N/A":
        value = number(tool, raw, line_no, line, f"{half} {error_column}")
        if error_column == "#wrong":
            if value < 0 or value != int(value):
                raise ParseError(tool, f"{half} #wrong is not a count: {raw!r}", line_no=line_no, line=line,
                                 expected="a non-negative integer or N/A")
            wrong = int(value)
        else:
            max_error = value
    return Measurement(time_us=time_us, algbw_gb_s=algbw, busbw_gb_s=busbw, wrong=wrong,
                       max_error=max_error, over_threshold=flagged)


def parse_row(tool: str, line: str, line_no: int, error_column: str = "#wrong") -> SizeRow:
    """One result row: size count type [redop] [root] then 4 out-of-place and 4 in-place columns."""
    parts = line.split()
    if len(parts) < 11 or len(parts) > 13:
        raise ParseError(tool, "result row has the wrong number of columns", line_no=line_no, line=line,
                         expected="size count type [redop] [root] time algbw busbw #wrong time algbw busbw #wrong")
    size = integer(tool, parts[0], line_no, line, "size (B)")
    count = integer(tool, parts[1], line_no, line, "count (elements)")
    dtype = parts[2]
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", dtype):
        raise ParseError(tool, f"{dtype!r} is not a data type name", line_no=line_no, line=line,
                         expected="a type such as float, half, bfloat16, int8")
    extra = parts[3:-8]
    redop: str | None = None
    root: int | None = None
    for token in extra:
        if re.fullmatch(r"-?\d+", token):
            if root is not None:
                raise ParseError(tool, "two root columns", line_no=line_no, line=line, expected="one root")
            root = int(token)
        elif redop is None and root is None and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", token):
            redop = token
        else:
            raise ParseError(tool, f"unexpected column {token!r}", line_no=line_no, line=line,
                             expected="a reduction op (sum, prod, max, min, avg, none) and/or a root rank")
    oop = _measurement(tool, parts[-8:-4], error_column, line_no, line, "out-of-place")
    inp = _measurement(tool, parts[-4:], error_column, line_no, line, "in-place")
    return SizeRow(size_bytes=size, count=count, dtype=dtype, redop=redop, root=root,
                   out_of_place=oop, in_place=inp, line_no=line_no)


def _no_start(tool: str, first: tuple[int | None, str | None], section: tuple[int, str] | None,
              row: tuple[int, str] | None, sections: int) -> ParseError:
    """The error for a text in which no run starts (no '# nThread' header, table header or Rank line)."""
    if section and row:
        return ParseError(tool, f"this is a grep-filtered log of {sections} runs, not one run's output",
                          line_no=section[0], line=section[1],
                          expected="one run's full output starting with '# nThread ...'",
                          hint="parse each run's own log; parse_filtered() reads such a log as rows per section")
    if row:
        return ParseError(tool, "result rows without the table header", line_no=row[0], line=row[1],
                          expected="the '# nThread ...' line and the '#  size  count  type ...' header",
                          hint="pass the tool's whole stdout, not a filtered excerpt")
    return ParseError(tool, f"no {tool} result table found", line_no=first[0], line=first[1],
                      expected="a '# nThread N nGpus N minBytes ...' header followed by the result table")


def _starts_run(line: str) -> bool:
    return bool(_NTHREAD.match(line) or _COLUMNS.match(line) or _RANK.match(line))


def parse_table(tool: str, text: str) -> CollectiveRun:
    """Parse one run's stdout (see the module docstring for the accepted layouts) in one pass over its
    lines, so a long NCCL_DEBUG log costs time in proportion to its length and no memory beyond it."""
    require_text(tool, text)
    command: str | None = None
    truncated = rows_elided = started = False
    first: tuple[int | None, str | None] = (None, None)
    section: tuple[int, str] | None = None
    row_seen: tuple[int, str] | None = None
    sections = 0
    last: tuple[int, str] = (0, "")
    facts: dict[str, object] = {}
    devices: list[RankDevice] = []
    rows: list[SizeRow] = []
    error_column: str | None = None
    out_of_bounds: int | None = None
    out_of_bounds_ok: bool | None = None
    avg: float | None = None
    for line_no, line in numbered(text):
        last = (line_no, line)
        if command is None and (m := COMMAND.match(line)):
            command = m["cmd"]
        if not started:  # launcher preamble (mpirun, srun) until the run's first header line
            if not _starts_run(line):
                truncated = truncated or is_elision(line)
                if first[0] is None and line.strip():
                    first = (line_no, line)
                if _SECTION.match(line):
                    sections += 1
                    section = section or (line_no, line)
                if row_seen is None and _ROW_START.match(line):
                    row_seen = (line_no, line)
                continue
            started = True
        stripped = line.strip()
        if not stripped or _COMMENTS.match(stripped) or _LIBRARY_LOG.match(stripped):
            continue
        if is_elision(stripped):
            truncated = rows_elided = True
            continue
        if avg is not None:
            raise ParseError(tool, "output continues after '# Avg bus bandwidth'", line_no=line_no, line=line,
                             expected="the end of the run",
                             hint="several runs in one file? pass each run's output separately")
        if m := _NTHREAD.match(stripped):
            if "threads" in facts:
                raise ParseError(tool, "a second '# nThread' header", line_no=line_no, line=line,
                                 expected="one run per file", hint="split the log into one file per run")
            facts.update(threads=int(m["threads"]), gpus=int(m["gpus"]), min=int(m["min"]), max=int(m["max"]))
            for key, pattern in _HEADER_INTS.items():
                if found := pattern.search(m["rest"]):
                    facts[key] = int(found[1])
            if found := _STEP.search(m["rest"]):
                facts["step"] = found[1]
        elif m := _RANK.match(stripped):
            devices.append(RankDevice(rank=int(m["rank"]), group=int(m["group"]) if m["group"] else None,
                                      pid=int(m["pid"]), host=m["host"], device=int(m["device"]),
                                      bus_id=m["bus"], name=m["name"]))
        elif m := _KEYVAL.match(stripped):
            facts[m["key"]] = m["value"]
        elif m := _TESTS_VERSION.match(stripped):
            facts["tests_version"] = m["v"]
        elif m := _COLUMNS.match(stripped):
            if error_column is not None:
                raise ParseError(tool, "a second table header", line_no=line_no, line=line,
                                 expected="one table per run", hint="split the log into one file per run")
            error_column = m["err"]
        elif _UNITS.match(stripped) or _PLACE.match(stripped):
            continue
        elif m := _OOB.match(stripped):
            out_of_bounds = int(m["n"])
            out_of_bounds_ok = m["verdict"] == "OK"
        elif m := _AVG.match(stripped):
            avg = number(tool, m["v"], line_no, line, "average bus bandwidth (GB/s)")
        elif _ROW_START.match(stripped):
            if error_column is None:
                raise ParseError(tool, "result row before the table header", line_no=line_no, line=line,
                                 expected="the '#  size  count  type ...' header first")
            rows.append(parse_row(tool, stripped, line_no, error_column))
        else:
            raise ParseError(tool, "line not understood", line_no=line_no, line=line,
                             expected="a header line, a '# Rank' device line, a result row, "
                             "'# Out of bounds values' or '# Avg bus bandwidth'")
    if not started:
        raise _no_start(tool, first, section, row_seen, sections)
    if not rows:
        last_no, last_line = last
        raise ParseError(tool, "no result rows", line_no=last_no, line=last_line,
                         expected="at least one 'size count type ...' row after the table header",
                         hint="the run may have failed before its first size; look at its stderr")
    hosts = {d.host for d in devices}
    return CollectiveRun(
        tool=tool, command=command, tests_version=_str(facts.get("tests_version")),
        library_version=_str(facts.get("RCCL version") or facts.get("NCCL version")),
        hip_version=_str(facts.get("HIP version")), rocm_version=_str(facts.get("ROCm version")),
        hostname=_str(facts.get("Hostname")),
        library_path=_str(facts.get("Librccl path") or facts.get("Libnccl path")),
        threads=_int(facts.get("threads")), gpus_per_process=_int(facts.get("gpus")),
        min_bytes=_int(facts.get("min")), max_bytes=_int(facts.get("max")), step=_str(facts.get("step")),
        warmup_iters=_int(facts.get("warmup_iters")), iters=_int(facts.get("iters")),
        agg_iters=_int(facts.get("agg_iters")), validation=_int(facts.get("validation")),
        graph=_int(facts.get("graph")), devices=tuple(devices), ranks=len(devices) or None,
        nodes=len(hosts) or None, error_column=error_column or "#wrong", rows=tuple(rows),
        out_of_bounds=out_of_bounds, out_of_bounds_ok=out_of_bounds_ok, avg_busbw_gb_s=avg,
        truncated=truncated, complete=avg is not None, rows_elided=rows_elided,
    )


def parse_sections(tool: str, text: str) -> tuple[FilteredSection, ...]:
    """Read a grep-filtered multi-run log: result rows grouped under "====== label ======" lines."""
    require_text(tool, text)
    sections: list[tuple[str, list[SizeRow]]] = []
    for line_no, line in numbered(text):
        stripped = line.strip()
        if not stripped or COMMAND.match(stripped) or is_elision(stripped):
            continue
        if m := _SECTION.match(stripped):
            sections.append((m["label"], []))
        elif _ROW_START.match(stripped):
            if not sections:
                raise ParseError(tool, "result row before the first '====== label ======' line",
                                 line_no=line_no, line=line, expected="a section separator first")
            sections[-1][1].append(parse_row(tool, stripped, line_no))
        else:
            raise ParseError(tool, "line not understood in a filtered log", line_no=line_no, line=line,
                             expected="'====== label ======' or a result row")
    if not sections or not any(rows for _, rows in sections):
        raise ParseError(tool, "no sections with result rows", expected="'====== label ======' lines and rows")
    return tuple(FilteredSection(label=label, rows=tuple(rows)) for label, rows in sections)


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None
