"""ib_write_bw (perftest): the banner's facts and the result table, bandwidths normalised to Gb/s.

    result = parse(text)
    result.device, result.link_type, result.gid_index, result.mtu_bytes
    result.rows[-1].bw_average_gb_s       # the largest message size

perftest prints `BW peak[Gb/sec]` with --report_gbits (10^9 bit/s) and `BW peak[MB/sec]` without
(MB there is 2^20 bytes: perftest's format_factor is 0x100000 for MBS, 125000000 for Gb/s).
Bandwidths are stored in decimal Gb/s (`_gb_s`). The banner's `key : value` pairs come two to a
line; only the keys a rail check needs are kept, the others are passed over. A `local/remote
address` line, a `GID:` line, the dashed rules and perftest's own warnings (CPU frequency, "BW peak
won't be measured") are recognised and skipped; any other line is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._bench_text import COMMAND, integer, is_elision, number
from validation.parsers._text import numbered, require_text

TOOL = "ib_write_bw"

MB_S_TO_GB_S = 1048576 * 8 / 1e9   # perftest's MB/sec is MiB/s
_TO_GB_S = {"Gb/sec": 1.0, "MB/sec": MB_S_TO_GB_S}


@dataclass(frozen=True, slots=True, kw_only=True)
class BwRow:
    """`65536  5000  204.12  203.85  0.388818`: one message size."""

    size_bytes: int
    iterations: int
    bw_peak_gb_s: float
    bw_average_gb_s: float
    msg_rate_mpps: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class IbWriteBwResult:
    """One ib_write_bw side's output (client or server; both print the same table)."""

    command: str | None
    test: str | None                 # "RDMA_Write BW Test", "RDMA_Write Bidirectional BW Test"
    bidirectional: bool
    device: str | None
    link_type: str | None            # "IB" or "Ethernet" (RoCE)
    transport_type: str | None
    connection_type: str | None
    qps: int | None
    gid_index: int | None            # printed for RoCE only
    mtu_bytes: int | None
    unit_reported: str               # "Gb/sec" or "MB/sec", as printed
    rows: tuple[BwRow, ...]
    warnings: tuple[str, ...]
    truncated: bool

    @property
    def largest(self) -> BwRow:
        return max(self.rows, key=lambda r: r.size_bytes)


_RULE = re.compile(r"^-{20,}$")
_TITLE = re.compile(r"^(?P<test>(?:RDMA_Write|RDMA_Read|Send|Atomic)\b.*\bBW Test)$")
_PAIR = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9_.* -]*?)\s*:\s*(?P<value>\S+(?:\s\S+)*?)(?=\s{2,}|\t|$)")
_ADDRESS = re.compile(r"^(?:local|remote) address:\s*(?:LID|GID)\b")
_GID = re.compile(r"^GID:\s*\S+$")
_HEADER = re.compile(r"^#bytes\s+#iterations\s+BW peak\[(?P<unit>Gb/sec|MB/sec)\]\s+"
                     r"BW average\[(?P=unit)\](?:\s+MsgRate\[Mpps\])?$")
_ANY_HEADER = re.compile(r"^#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]*)\]")
_ROW = re.compile(r"^\d+\s")
_WARNING = re.compile(r"^(?:WARNING:.*|Conflicting CPU frequency values detected:.*|"
                      r"\*+|\* Waiting for client to connect\.\.\. \*)$")
# The banner keys perftest prints (print_report_params); a line must start with one of them.
_BANNER_KEYS = frozenset({
    "Dual-port", "Device", "Number of qps", "Transport type", "Connection type", "Using SRQ", "PCIe relax order",
    "Lock-free", "ibv_wr* API", "Using Enhanced Reorder", "TX depth", "RX depth", "CQ Moderation", "CQE Poll Batch",
    "Post List", "Mtu", "Link type", "GID index", "Max inline data", "rdma_cm QPs", "Data ex. method",
    "Outstand reads", "Number of ports", "Using DDP"})
_KEYS = {"Device": "device", "Link type": "link_type", "Transport type": "transport_type",
         "Connection type": "connection_type", "Number of qps": "qps", "GID index": "gid_index", "Mtu": "mtu"}


def parse(text: str) -> IbWriteBwResult:
    """Parse ib_write_bw stdout (a saved `$ command` line first is allowed)."""
    require_text(TOOL, text)
    command = test = unit = None
    facts: dict[str, str] = {}
    rows: list[BwRow] = []
    warnings: list[str] = []
    truncated = False
    for line_no, raw in numbered(text):
        line = raw.strip()
        if not line or _RULE.match(line):
            continue
        if m := COMMAND.match(line):
            command = m["cmd"]
        elif is_elision(line):
            truncated = True
        elif _WARNING.match(line):
            if line[0] != "*":
                warnings.append(line)
        elif m := _TITLE.match(line):
            test = m["test"]
        elif _ADDRESS.match(line) or _GID.match(line):
            continue
        elif m := _HEADER.match(line):
            if unit is not None:
                raise ParseError(TOOL, "a second result table", line_no=line_no, line=raw,
                                 expected="one run per output", hint="parse each run's output separately")
            unit = m["unit"]
        elif m := _ANY_HEADER.match(line):
            raise ParseError(TOOL, f"bandwidth unit {m['unit']!r} not known", line_no=line_no, line=raw,
                             expected="BW peak[Gb/sec] (--report_gbits) or BW peak[MB/sec]",
                             hint="ib_write_bw --report_gbits prints Gb/sec; other perftest output units "
                                  "(--out_json) are not read here")
        elif _ROW.match(line):
            if unit is None:
                raise ParseError(TOOL, "result row before the '#bytes #iterations BW peak...' header",
                                 line_no=line_no, line=raw, expected="the table header first")
            rows.append(_row(line, _TO_GB_S[unit], line_no, raw))
        elif (pairs := _PAIR.findall(line)) and pairs[0][0].strip() in _BANNER_KEYS:
            for key, value in pairs:
                if key.strip() in _KEYS:
                    facts[_KEYS[key.strip()]] = value.strip()
        else:
            raise ParseError(TOOL, "line not understood", line_no=line_no, line=raw,
                             expected="a perftest banner line ('Key : value'), an address/GID line, "
                             "the '#bytes #iterations BW peak[...]' header or a result row",
                             hint="is this ib_write_bw output? latency tests (ib_write_lat) print another table")
    if not rows:
        raise ParseError(TOOL, "no result rows found", expected="a '#bytes #iterations BW peak[...]' table with rows",
                         hint="the run may have failed before measuring (no server, wrong GID index, port down); "
                              "look at its stderr")
    return IbWriteBwResult(
        command=command, test=test, bidirectional=bool(test and "Bidirectional" in test),
        device=facts.get("device"), link_type=facts.get("link_type"), transport_type=facts.get("transport_type"),
        connection_type=facts.get("connection_type"), qps=_int_fact(facts, "qps"),
        gid_index=_int_fact(facts, "gid_index"), mtu_bytes=_mtu(facts.get("mtu")), unit_reported=unit or "",
        rows=tuple(rows), warnings=tuple(warnings), truncated=truncated)


def _row(line: str, scale: float, line_no: int, raw: str) -> BwRow:
    parts = line.split()
    if len(parts) not in (4, 5):
        raise ParseError(TOOL, f"result row has {len(parts)} columns", line_no=line_no, line=raw,
                         expected="#bytes, #iterations, BW peak, BW average and (optionally) MsgRate")
    return BwRow(size_bytes=integer(TOOL, parts[0], line_no, raw, "#bytes"),
                 iterations=integer(TOOL, parts[1], line_no, raw, "#iterations"),
                 bw_peak_gb_s=number(TOOL, parts[2], line_no, raw, "BW peak") * scale,
                 bw_average_gb_s=number(TOOL, parts[3], line_no, raw, "BW average") * scale,
                 msg_rate_mpps=number(TOOL, parts[4], line_no, raw, "MsgRate") if len(parts) == 5 else None)


def _int_fact(facts: dict[str, str], key: str) -> int | None:
    value = facts.get(key)
    return int(value) if value is not None and value.isdigit() else None


def _mtu(value: str | None) -> int | None:
    m = re.fullmatch(r"(\d+)\[B\]", value or "")
    return int(m[1]) if m else None
