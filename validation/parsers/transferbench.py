"""TransferBench output: settings, `p2p` matrices, per-transfer `Test N:` blocks and the `a2a` summary.

Endpoints are named "cpu0", "gpu7" (the tool's "CPU 00", "GPU 07"). Unidirectional p2p cells and a2a
summary cells become `LinkBandwidth(src, dst, gb_s)`; a bidirectional p2p cell keeps the row's `->`,
`<-` and `<->` values as the tool printed them. "N/A" cells are listed in `missing`, never turned into 0.
`Test N:` blocks (a2a, config files) give one row per transfer with its executor, bytes, GB/s and ms.
The healthcheck preset's output is refused with a ParseError until a real fixture of it exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from validation.errors import ParseError
from validation.parsers._bench_text import COMMAND, is_elision, number
from validation.parsers._text import numbered, require_text
from validation.records import LinkBandwidth

TOOL = "transferbench"

PRESETS = ("p2p", "a2a", "a2asweep", "healthcheck", "scaling", "schmoo", "sweep", "rsweep", "cmdline")


@dataclass(frozen=True, slots=True, kw_only=True)
class Setting:
    """One `NAME = value : description` line of the environment-variable listing."""

    section: str | None
    name: str
    value: str
    description: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Average:
    """One `Averages (During UniDir)` cell, e.g. kind "GPU->GPU"."""

    kind: str
    gb_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class UniMatrix:
    """The unidirectional copy matrix; `links` holds every numeric cell, diagonal included."""

    title: str
    executor: str | None
    endpoints: tuple[str, ...]
    links: tuple[LinkBandwidth, ...]
    missing: tuple[tuple[str, str], ...]
    averages: tuple[Average, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BidirCell:
    """Row `src`, column `dst`: `->` is src->dst, `<-` is dst->src while both ran, `<->` their sum."""

    src: str
    dst: str
    forward_gb_s: float | None
    reverse_gb_s: float | None
    total_gb_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BidirMatrix:
    """The bidirectional copy matrix, one cell per (row, column) pair that the tool printed."""

    title: str
    executor: str | None
    endpoints: tuple[str, ...]
    cells: tuple[BidirCell, ...]
    averages: tuple[Average, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorResult:
    """` Executor: GPU 00 |  315.552 GB/s |  1.489 ms | 469762048 bytes | 326.317 GB/s (sum)`."""

    test: int
    executor: str
    gb_s: float
    duration_ms: float
    bytes: int
    sum_gb_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Transfer:
    """`Transfer 00 | 47.056 GB/s | 1.426 ms | 67108864 bytes | F0 -> G000:008 -> F1`.

    `src`/`executor`/`dst` are the tool's tokens; `src_devices`/`dst_devices` name the devices behind
    the memory tokens ("F1" is fine-grained memory on GPU 1 -> "gpu1"; "N0" null memory -> none).
    """

    test: int
    index: int
    gb_s: float
    duration_ms: float
    bytes: int
    src: str
    executor: str
    dst: str
    src_devices: tuple[str, ...]
    dst_devices: tuple[str, ...]
    sub_executors: int | None

    @property
    def link(self) -> LinkBandwidth | None:
        """The transfer as one directed link, when it has exactly one source and one destination device."""
        if len(self.src_devices) == 1 and len(self.dst_devices) == 1:
            return LinkBandwidth(src=self.src_devices[0], dst=self.dst_devices[0], gb_s=self.gb_s)
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregateResult:
    """` Aggregate (CPU)  | 1937.924 GB/s | 1.939 ms | 3758096384 bytes | Overhead: 0.447 ms`."""

    test: int
    gb_s: float
    duration_ms: float
    bytes: int
    overhead_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferTest:
    """One `Test N:` block."""

    number: int
    executors: tuple[ExecutorResult, ...]
    transfers: tuple[Transfer, ...]
    aggregate: AggregateResult | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRow:
    """A summary row's trailing columns: STotal (sum of the row) and Actual (slowest link x links)."""

    src: str
    total_gb_s: float
    actual_gb_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """A labelled bandwidth, such as "Aggregate bandwidth (GPU Timed)" or an RTotal column."""

    label: str
    gb_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryMatrix:
    """The a2a `Summary:` matrix: one directed link per numeric cell, N/A cells in `missing`."""

    bytes_per_transfer: int
    endpoints: tuple[str, ...]
    links: tuple[LinkBandwidth, ...]
    missing: tuple[tuple[str, str], ...]
    rows: tuple[SummaryRow, ...]
    column_totals: tuple[Figure, ...]
    rtotal_trailing_gb_s: tuple[float, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TransferBenchResult:
    """A TransferBench run. `truncated` is True when the text carries an elision marker ("<SNIP>")."""

    command: str | None
    version: str | None
    settings: tuple[Setting, ...]
    benchmark: str | None
    notes: tuple[str, ...]
    bytes_per_direction: int | None
    unidirectional: UniMatrix | None
    bidirectional: BidirMatrix | None
    tests: tuple[TransferTest, ...]
    summary: SummaryMatrix | None
    figures: tuple[Figure, ...]
    truncated: bool


_VERSION = re.compile(r"^TransferBench v(?P<v>\S+)(?:\s+\((?P<extra>[^)]*)\))?\s*$")
_RULE = re.compile(r"^=+\s*$")
_SECTION = re.compile(r"^\[(?P<name>[^\]]+)\](?:\s+\([^)]*\))?\s*$")
_SETTING = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)\s*=\s*(?P<value>\S+)\s*:\s*(?P<desc>.*?)\s*$")
_BYTES = re.compile(r"^Bytes Per Direction\s+(?P<n>\d+)\s*$")
_TITLE = re.compile(r"^(?P<kind>Unidirectional|Bidirectional) copy peak bandwidth GB/s.*?"
                    r"(?:\(GPU-Executor:\s*(?P<exe>[^)]+)\))?\s*$")
_COLUMNS = re.compile(r"^(?:SRC\+EXE|SRC)\\DST\s+(?P<rest>.*)$")
_ENDPOINT = re.compile(r"([A-Z]+) (\d+)")
_ROW = re.compile(r"^(?P<kind>[A-Z]+) (?P<idx>\d+)\s*(?P<dir><->|->|<-)\s+(?P<values>.*)$")
_AVG_HEAD = re.compile(r"^[A-Z]+->[A-Z]+(?:\s+[A-Z]+->[A-Z]+)*$")
_AVG = re.compile(r"^Averages \(During\s+(?P<kind>UniDir|BiDir)\):\s+(?P<values>.*)$")
_BENCHMARK = re.compile(r"^(?P<title>\S.* benchmark):$")
# "- Copying ..." (preset descriptions) and "## ..." (comments echoed from a config file).
_NOTE = re.compile(r"^(?:-|##) (?P<text>\S.*)$")
_TEST = re.compile(r"^Test (?P<n>\d+):$")
_PIPE = r"\s*\|\s*(?P<gbs>\S+) GB/s\s*\|\s*(?P<ms>\S+) ms\s*\|\s*(?P<bytes>\d+) bytes\s*\|\s*"
_EXECUTOR = re.compile(r"^Executor:\s*(?P<kind>[A-Z]+) (?P<idx>\d+)" + _PIPE + r"(?P<sum>\S+)\s+GB/s \(sum\)$")
_TRANSFER = re.compile(r"^Transfer\s+(?P<idx>\d+)" + _PIPE + r"(?P<src>\S+) -> (?P<exe>\S+) -> (?P<dst>\S+)$")
_AGGREGATE = re.compile(r"^Aggregate \(CPU\)" + _PIPE + r"Overhead:?\s*(?P<ov>\S+) ms$")
_SUMMARY = re.compile(r"^Summary: \[(?P<bytes>\d+) bytes per Transfer\]$")
_PLAIN_ROW = re.compile(r"^(?P<kind>[A-Z]+) (?P<idx>\d+)\s+(?P<values>\S.*)$")
_RTOTAL = re.compile(r"^RTotal\s+(?P<values>\S.*)$")
_FIGURE = re.compile(r"^(?P<label>(?:Average|Aggregate)\s+bandwidth \((?:GPU|CPU) Timed\)):\s*(?P<gbs>\S+) GB/s$")
_MEMORY = re.compile(r"([A-Z])(\d*)")
_EXE_TOKEN = re.compile(r"^[A-Z](?P<idx>\d+)(?::(?P<sub>\d+))?(?:\.\d+)?$")
# Memory-type letters of the transfer notation: CPU coarse/fine/unpinned, GPU coarse/fine/managed, null.
_MEMORY_DEVICE = {"C": "cpu", "B": "cpu", "U": "cpu", "G": "gpu", "F": "gpu", "M": "gpu", "N": None}


def _name(kind: str, idx: str) -> str:
    return f"{kind.lower()}{int(idx)}"


class _Matrix:
    """Mutable accumulator for one matrix while its lines are read."""

    def __init__(self, kind: str, title: str, executor: str | None) -> None:
        self.kind = kind
        self.title = title
        self.executor = executor
        self.endpoints: list[str] = []
        self.uni: list[LinkBandwidth] = []
        self.missing: list[tuple[str, str]] = []
        self.bidir: dict[tuple[str, str], dict[str, float | None]] = {}
        self.avg_kinds: list[str] = []
        self.averages: list[Average] = []


class _State:
    """Everything collected while the lines are read."""

    def __init__(self) -> None:
        self.command: str | None = None
        self.version: str | None = None
        self.settings: list[Setting] = []
        self.section: str | None = None
        self.benchmark: str | None = None
        self.notes: list[str] = []
        self.bytes_per_direction: int | None = None
        self.truncated = False
        self.matrices: dict[str, _Matrix] = {}
        self.current: _Matrix | None = None
        self.tests: list[tuple[int, list[ExecutorResult], list[Transfer], list[AggregateResult]]] = []
        self.summary: dict[str, Any] | None = None
        self.figures: list[Figure] = []


def parse(text: str) -> TransferBenchResult:
    """Parse TransferBench output: p2p (v1.50, v1.66 layouts), a2a and config-file `Test N:` blocks."""
    require_text(TOOL, text)
    st = _State()
    for line_no, raw in numbered(text):
        line = raw.strip()
        if not line or _RULE.match(line):
            continue
        if is_elision(line):
            st.truncated = True
        elif not _header_line(st, line, line_no, raw) and not _p2p_line(st, line, line_no, raw) \
                and not _test_line(st, line, line_no, raw) and not _summary_line(st, line, line_no, raw):
            raise ParseError(TOOL, "line not understood", line_no=line_no, line=raw,
                             expected="settings, a p2p matrix, a 'Test N:' block or an a2a summary",
                             hint="p2p, a2a and config-file outputs are parsed; healthcheck output is not yet")
    if not st.matrices and not st.tests and st.summary is None:
        raise ParseError(TOOL, "no bandwidth matrix or test results found",
                         expected="'Unidirectional copy peak bandwidth GB/s', 'Test 1:' or 'Summary:'",
                         hint="pass the whole stdout of the TransferBench run")
    for matrix in st.matrices.values():
        if not matrix.uni and not matrix.bidir and not matrix.missing:
            raise ParseError(TOOL, f"the {matrix.kind} matrix has no rows",
                             expected="rows such as 'GPU 00  ->  ...'")
    # a matrix ends with its 'Averages (During ...)' line and has one row per endpoint; an a2a summary has a
    # row per endpoint and its RTotal line: anything less is an output that was cut
    for matrix in st.matrices.values():
        sources = {link.src for link in matrix.uni} | {src for src, _ in matrix.bidir} | {s for s, _ in matrix.missing}
        if not matrix.averages or len(sources) < len(matrix.endpoints):
            st.truncated = True
    if st.summary is not None and (len(st.summary["rows"]) < len(st.summary["endpoints"])
                                   or not st.summary["totals"]):
        st.truncated = True
    tests = []
    for number_, executors, transfers, aggregates in st.tests:
        if not transfers:
            raise ParseError(TOOL, f"Test {number_} has no transfer rows",
                             expected="'Transfer NN | GB/s | ms | bytes | SRC -> EXE -> DST' rows")
        tests.append(TransferTest(number=number_, executors=tuple(executors), transfers=tuple(transfers),
                                  aggregate=aggregates[0] if aggregates else None))
    return TransferBenchResult(
        command=st.command, version=st.version, settings=tuple(st.settings), benchmark=st.benchmark,
        notes=tuple(st.notes), bytes_per_direction=st.bytes_per_direction,
        unidirectional=_uni(st.matrices.get("unidirectional")),
        bidirectional=_bidir(st.matrices.get("bidirectional")), tests=tuple(tests),
        summary=_summary(st.summary), figures=tuple(st.figures), truncated=st.truncated)


def _header_line(st: _State, line: str, line_no: int, raw: str) -> bool:
    if m := COMMAND.match(line):
        st.command = m["cmd"]
    elif m := _VERSION.match(line):
        st.version = m["v"]
    elif m := _SECTION.match(line):
        st.section = m["name"].strip()
    elif m := _SETTING.match(line):
        st.settings.append(Setting(section=st.section, name=m["name"], value=m["value"], description=m["desc"]))
    elif m := _BENCHMARK.match(line):
        st.benchmark = m["title"]
    elif m := _NOTE.match(line):
        st.notes.append(m["text"])
    else:
        return False
    return True


def _p2p_line(st: _State, line: str, line_no: int, raw: str) -> bool:
    if st.summary is not None:
        return False
    if m := _BYTES.match(line):
        if st.bytes_per_direction is not None:
            raise ParseError(TOOL, "a second 'Bytes Per Direction' block", line_no=line_no, line=raw,
                             expected="one p2p run per file", hint="split the log into one file per run")
        st.bytes_per_direction = int(m["n"])
    elif m := _TITLE.match(line):
        kind = m["kind"].lower()
        if kind in st.matrices:
            raise ParseError(TOOL, f"a second {kind} matrix", line_no=line_no, line=raw,
                             expected="one matrix of each kind", hint="split the log into one file per run")
        st.current = st.matrices[kind] = _Matrix(kind, line, m["exe"].strip() if m["exe"] else None)
    elif m := _COLUMNS.match(line):
        if st.current is None or st.current.endpoints:
            raise ParseError(TOOL, "matrix column header without a matrix title", line_no=line_no,
                             line=raw, expected="'Unidirectional/Bidirectional copy peak bandwidth' first")
        st.current.endpoints = [_name(k, i) for k, i in _ENDPOINT.findall(m["rest"])]
        if not st.current.endpoints:
            raise ParseError(TOOL, "no endpoints in the column header", line_no=line_no, line=raw,
                             expected="columns such as 'CPU 00  GPU 00'")
    elif m := _ROW.match(line):
        _matrix_row(st.current, m, line_no, raw)
    elif _AVG_HEAD.match(line):
        if st.current is None:
            raise ParseError(TOOL, "averages header outside a matrix", line_no=line_no, line=raw,
                             expected="a matrix first")
        st.current.avg_kinds = line.split()
    elif m := _AVG.match(line):
        _averages(st.current, m, line_no, raw)
    else:
        return False
    return True


def _devices(token: str, line_no: int, raw: str) -> tuple[str, ...]:
    parts = _MEMORY.findall(token)
    if not parts or "".join(f"{k}{i}" for k, i in parts) != token:
        raise ParseError(TOOL, f"memory token {token!r} not understood", line_no=line_no, line=raw,
                         expected="memory such as G0, F1, C0 (type letter + device index)")
    out = []
    for kind, idx in parts:
        if kind not in _MEMORY_DEVICE:
            raise ParseError(TOOL, f"unknown memory type {kind!r} in {token!r}", line_no=line_no, line=raw,
                             expected=f"one of {', '.join(_MEMORY_DEVICE)}")
        device = _MEMORY_DEVICE[kind]
        if device is None:
            continue  # null memory ("N") has no device
        if not idx:
            raise ParseError(TOOL, f"memory {kind!r} without a device index in {token!r}", line_no=line_no,
                             line=raw, expected="a device index after the memory type, e.g. G0")
        out.append(f"{device}{int(idx)}")
    return tuple(out)


def _test_line(st: _State, line: str, line_no: int, raw: str) -> bool:
    if m := _TEST.match(line):
        st.tests.append((int(m["n"]), [], [], []))
        return True
    m = _EXECUTOR.match(line) or _TRANSFER.match(line) or _AGGREGATE.match(line)
    if m is None:
        return False
    if not st.tests:
        raise ParseError(TOOL, "result line before any 'Test N:' line", line_no=line_no, line=raw,
                         expected="'Test 1:' first")
    number_, executors, transfers, aggregates = st.tests[-1]
    gbs = number(TOOL, m["gbs"], line_no, raw, "GB/s")
    ms = number(TOOL, m["ms"], line_no, raw, "ms")
    size = int(m["bytes"])
    if m.re is _EXECUTOR:
        executors.append(ExecutorResult(test=number_, executor=_name(m["kind"], m["idx"]), gb_s=gbs,
                                        duration_ms=ms, bytes=size,
                                        sum_gb_s=number(TOOL, m["sum"], line_no, raw, "sum GB/s")))
    elif m.re is _TRANSFER:
        exe = _EXE_TOKEN.match(m["exe"])
        if exe is None:
            raise ParseError(TOOL, f"executor token {m['exe']!r} not understood", line_no=line_no, line=raw,
                             expected="an executor such as G000:008 or D000:001")
        transfers.append(Transfer(test=number_, index=int(m["idx"]), gb_s=gbs, duration_ms=ms, bytes=size,
                                  src=m["src"], executor=m["exe"], dst=m["dst"],
                                  src_devices=_devices(m["src"], line_no, raw),
                                  dst_devices=_devices(m["dst"], line_no, raw),
                                  sub_executors=int(exe["sub"]) if exe["sub"] else None))
    else:
        if aggregates:
            raise ParseError(TOOL, f"a second aggregate line in Test {number_}", line_no=line_no, line=raw,
                             expected="one 'Aggregate (CPU)' line per test")
        aggregates.append(AggregateResult(test=number_, gb_s=gbs, duration_ms=ms, bytes=size,
                                          overhead_ms=number(TOOL, m["ov"], line_no, raw, "overhead ms")))
    return True


def _summary_line(st: _State, line: str, line_no: int, raw: str) -> bool:
    if m := _SUMMARY.match(line):
        if st.summary is not None:
            raise ParseError(TOOL, "a second summary", line_no=line_no, line=raw, expected="one summary per run")
        st.summary = {"bytes": int(m["bytes"]), "endpoints": [], "extra": [], "links": [], "missing": [],
                      "rows": [], "totals": [], "trailing": []}
        return True
    if (m := _FIGURE.match(line)):
        label = " ".join(m["label"].split())
        st.figures.append(Figure(label=label, gb_s=number(TOOL, m["gbs"], line_no, raw, label)))
        return True
    summary = st.summary
    if summary is None:
        return False
    if m := _COLUMNS.match(line):
        endpoints = [_name(k, i) for k, i in _ENDPOINT.findall(m["rest"])]
        extra = _ENDPOINT.sub("", m["rest"]).split()
        if not endpoints or extra != ["STotal", "Actual"]:
            raise ParseError(TOOL, "summary header not understood", line_no=line_no, line=raw,
                             expected="'SRC\\DST  GPU 00 ... GPU NN  STotal  Actual'")
        summary["endpoints"] = endpoints
    elif m := _PLAIN_ROW.match(line):
        endpoints = summary["endpoints"]
        values = m["values"].split()
        if not endpoints or len(values) != len(endpoints) + 2:
            raise ParseError(TOOL, f"summary row has {len(values)} values", line_no=line_no, line=raw,
                             expected=f"{len(endpoints)} bandwidths or N/A, then STotal and Actual")
        src = _name(m["kind"], m["idx"])
        for dst, cell in zip(endpoints, values, strict=False):
            if cell == "N/A":
                summary["missing"].append((src, dst))
            else:
                summary["links"].append(LinkBandwidth(src=src, dst=dst,
                                                      gb_s=number(TOOL, cell, line_no, raw, f"{src}->{dst} GB/s")))
        summary["rows"].append(SummaryRow(src=src, total_gb_s=number(TOOL, values[-2], line_no, raw, "STotal"),
                                          actual_gb_s=number(TOOL, values[-1], line_no, raw, "Actual")))
    elif m := _RTOTAL.match(line):
        endpoints = summary["endpoints"]
        totals = [number(TOOL, v, line_no, raw, "RTotal") for v in m["values"].split()]
        if len(totals) < len(endpoints):
            raise ParseError(TOOL, "RTotal row is shorter than the header", line_no=line_no, line=raw,
                             expected=f"at least {len(endpoints)} column totals")
        summary["totals"] = [Figure(label=e, gb_s=v) for e, v in zip(endpoints, totals, strict=False)]
        summary["trailing"] = totals[len(endpoints):]
    else:
        return False
    return True


def _summary(summary: dict[str, Any] | None) -> SummaryMatrix | None:
    if summary is None:
        return None
    if not summary["links"] and not summary["missing"]:
        raise ParseError(TOOL, "the a2a summary has no rows", expected="rows such as 'GPU 00  N/A  47.056 ...'")
    return SummaryMatrix(bytes_per_transfer=int(summary["bytes"]), endpoints=tuple(summary["endpoints"]),
                         links=tuple(summary["links"]), missing=tuple(summary["missing"]),
                         rows=tuple(summary["rows"]), column_totals=tuple(summary["totals"]),
                         rtotal_trailing_gb_s=tuple(summary["trailing"]))


def _matrix_row(current: _Matrix | None, m: re.Match[str], line_no: int, raw: str) -> None:
    if current is None or not current.endpoints:
        raise ParseError(TOOL, "matrix row before the column header", line_no=line_no, line=raw,
                         expected="the 'SRC\\DST  CPU 00 ...' header first")
    src = _name(m["kind"], m["idx"])
    values = m["values"].split()
    if len(values) != len(current.endpoints):
        raise ParseError(TOOL, f"row has {len(values)} cells for {len(current.endpoints)} columns",
                         line_no=line_no, line=raw, expected=f"{len(current.endpoints)} values or N/A")
    direction = m["dir"]
    if current.kind == "unidirectional" and direction != "->":
        raise ParseError(TOOL, f"'{direction}' row in the unidirectional matrix", line_no=line_no, line=raw,
                         expected="'->' rows only")
    for dst, cell in zip(current.endpoints, values, strict=True):
        value = None if cell == "N/A" else number(TOOL, cell, line_no, raw, f"{src}->{dst} GB/s")
        if value is not None and value < 0:
            raise ParseError(TOOL, f"negative bandwidth {cell}", line_no=line_no, line=raw,
                             expected="a bandwidth >= 0 or N/A")
        if current.kind == "unidirectional":
            if value is None:
                current.missing.append((src, dst))
            else:
                current.uni.append(LinkBandwidth(src=src, dst=dst, gb_s=value))
        else:
            current.bidir.setdefault((src, dst), {})[direction] = value


def _averages(current: _Matrix | None, m: re.Match[str], line_no: int, raw: str) -> None:
    if current is None or not current.avg_kinds:
        raise ParseError(TOOL, "averages line without its 'CPU->CPU  CPU->GPU ...' header", line_no=line_no,
                         line=raw, expected="the averages header line first")
    values = m["values"].split()
    if len(values) != len(current.avg_kinds):
        raise ParseError(TOOL, f"{len(values)} averages for {len(current.avg_kinds)} headings",
                         line_no=line_no, line=raw, expected=f"{len(current.avg_kinds)} numbers")
    current.averages = [Average(kind=k, gb_s=number(TOOL, v, line_no, raw, f"{k} average GB/s"))
                        for k, v in zip(current.avg_kinds, values, strict=True)]


def _uni(matrix: _Matrix | None) -> UniMatrix | None:
    if matrix is None:
        return None
    return UniMatrix(title=matrix.title, executor=matrix.executor, endpoints=tuple(matrix.endpoints),
                     links=tuple(matrix.uni), missing=tuple(matrix.missing), averages=tuple(matrix.averages))


def _bidir(matrix: _Matrix | None) -> BidirMatrix | None:
    if matrix is None:
        return None
    cells = tuple(BidirCell(src=src, dst=dst, forward_gb_s=v.get("->"), reverse_gb_s=v.get("<-"),
                            total_gb_s=v.get("<->")) for (src, dst), v in matrix.bidir.items())
    return BidirMatrix(title=matrix.title, executor=matrix.executor, endpoints=tuple(matrix.endpoints),
                       cells=cells, averages=tuple(matrix.averages))


def argv(binary: str = "TransferBench", *, preset: str = "p2p", bytes_per_transfer: str | None = None) -> list[str]:
    """Command line for one preset run, e.g. `TransferBench p2p 256M`.

    CUs per transfer and the executor are environment variables (NUM_GPU_SE, USE_GPU_DMA); the probe
    runner passes those as env, not argv.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown TransferBench preset {preset!r}; known: {', '.join(PRESETS)}")
    out = [binary, preset]
    if bytes_per_transfer is not None:
        if not re.fullmatch(r"[1-9]\d*[KMG]?", bytes_per_transfer):
            raise ValueError(f"bytes_per_transfer {bytes_per_transfer!r} is not N, NK, NM or NG")
        out.append(bytes_per_transfer)
    return out
