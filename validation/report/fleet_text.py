"""Fleet summaries as Markdown, Prometheus textfile and JUnit XML (render only; no judging)."""

from __future__ import annotations

import functools
import io
import locale
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from itertools import chain, compress, repeat
from pathlib import Path
from typing import Any, BinaryIO, TextIO, cast
from xml.etree import ElementTree as ET

from validation import validity
from validation.flap import label_code
from validation.fleet import Delta, MetricSummary
from validation.records import FAILING
from validation.report.load import node_status
from validation.report.machine import node_failed
from validation.report.markdown import node_cell as _cell

# dict.get as a plain callable for map(): C speed over a million entries, and typed as such for mypy
_dict_get = cast("Callable[..., Any]", dict.get)


def behind(summary: MetricSummary, member_gap: float) -> str:
    """'24.9 % below' (throughput) / '12.0 % above' (latency): how far worse than the batch median."""
    return f"{member_gap:.1%} {'below' if summary.higher_is_better else 'above'}"


def markdown(nodes: list[dict[str, Any]], summaries: list[MetricSummary]) -> str:
    lines = ["# rocm-fleet fleet report", "", f"{len(nodes)} nodes.", "", "| node | status | checks | complete |",
             "|---|---|---|---|"]
    for node in nodes:
        lines.append(f"| {node['host']} | {node_status(node)} | {len(node['checks'])} | "
                     f"{'yes' if node.get('complete') else 'no'} |")
    if summaries:
        lines += ["", "## Metrics (batch verdicts: a GPU or link worse than its SKU's batch median by more than "
                  "the allowed gap fails with RF-BATCH-GAP)", "",
                  "| metric | SKU | unit | members | p50 | min | max | behind the batch median |",
                  "|---|---|---|---|---|---|---|---|"]
        for s in summaries:
            named = ", ".join(f"{_cell(m.node)}/{_cell(m.subject)} {behind(s, gap)}" for m, gap in s.outliers[:10])
            more = f" and {len(s.outliers) - 10} more" if len(s.outliers) > 10 else ""
            verdict = f"{named}{more}" or ("none" if s.judged == "judged" else _cell(s.judged))
            lines.append(f"| {_cell(s.metric)} | {_cell(s.sku)} | {_cell(s.unit)} | {s.count} "
                         f"| {s.p50:.4g} | {s.minimum:.4g} | "
                         f"{s.maximum:.4g} | {verdict} |")
    failures = [(node["host"], c) for node in nodes for c in node["checks"]
                if c["status"] in FAILING]
    if failures:
        lines += ["", "## Failures", "", "| node | check | code | found | what to do |", "|---|---|---|---|---|"]
        lines += [f"| {host} | {_cell(c.get('name') or c['id'])} | {_cell(c.get('code'))} | "
                  f"{_cell(c.get('message'))} | {_cell(c.get('hint'))} |" for host, c in failures]
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=65536)      # the same subjects, units and check ids recur on every node
def label(value: str) -> str:
    """A Prometheus label value: backslashes, quotes and newlines escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


@functools.lru_cache(maxsize=4096)
def _metric_name(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


STATUS_VALUE = {"pass": 0, "skip": 0, "warn": 1, "fail": 2, "timeout": 3, "error": 4}


def check_labels(check: Mapping[str, Any]) -> str:
    """A check series' own labels (fleet.prom and the health textfile): its id, its status (a skip is told from
    a pass) and its failure code (flap.label_code: codes only, never a test id)."""
    return f'check="{label(check["id"])}",status="{label(str(check["status"]))}",code="{label(label_code(check))}"'


_CHECKS_HEAD = ("# HELP rocm_fleet_check_status 0 pass or skip (the status label tells them apart), 1 warn, 2 fail, "
                "3 timeout, 4 error; code: the failure code of a failing check\n"
                "# TYPE rocm_fleet_check_status gauge\n")
_NODE_HEAD = ("# HELP rocm_fleet_node_failed 1 when the node's verdict is fail: a check failed, timed out or erred, "
              "or its run did not finish\n"
              "# TYPE rocm_fleet_node_failed gauge\n")
_VALID_HEAD = ("# HELP rocm_fleet_node_valid_until_timestamp_seconds Until when the node's verdict vouches for it "
               "(Unix time; RF-VALIDATION-EXPIRED after it)\n"
               "# TYPE rocm_fleet_node_valid_until_timestamp_seconds gauge\n")
_MEASUREMENTS_HEAD = ("# HELP rocm_fleet_measurement measured value (unit in the label)\n"
                      "# TYPE rocm_fleet_measurement gauge\n")
_COMPLETE_HEAD = ("# HELP rocm_fleet_run_complete 1 when the node's run finished normally\n"
                  "# TYPE rocm_fleet_run_complete gauge\n")


def prometheus(nodes: list[dict[str, Any]]) -> str:
    """node_exporter textfile: check status (0 pass or skip, 1 warn, 2 fail, 3 timeout, 4 error, labelled with the
    status and the failure code), measurements, and per node whether its run finished, its verdict and until when
    it vouches for the node."""
    out = io.StringIO()
    write_prometheus(out, nodes, lambda node: measurement_lines(node["host"], node.get("measurements", [])))
    return out.getvalue()


def write_prometheus(out: TextIO | _Encoding, nodes: list[dict[str, Any]],
                     measurements: Callable[[dict[str, Any]], str]) -> None:
    """The textfile of `prometheus` written to `out`; `measurements(node)` gives a node's measurement
    lines (measurement_lines, or the same text kept aside while its document was read)."""
    out.write(_CHECKS_HEAD)
    for node in nodes:
        host = label(node["host"])
        out.write("".join(f'rocm_fleet_check_status{{node="{host}",{check_labels(check)}}} '
                          f'{STATUS_VALUE.get(check["status"], 4)}\n' for check in node["checks"]))
    out.write(_MEASUREMENTS_HEAD)
    for node in nodes:
        out.write(measurements(node))
    out.write(_COMPLETE_HEAD)
    out.write("".join(f'rocm_fleet_run_complete{{node="{label(n["host"])}"}} {1 if n.get("complete") else 0}\n'
                      for n in nodes))
    out.write(_NODE_HEAD)
    out.write("".join(f'rocm_fleet_node_failed{{node="{label(n["host"])}"}} {int(node_failed(n))}\n' for n in nodes))
    until = [(n["host"], validity.parsed(n.get("valid_until"))) for n in nodes]
    out.write(_VALID_HEAD)
    out.write("".join(f'rocm_fleet_node_valid_until_timestamp_seconds{{node="{label(host)}"}} {when.timestamp():.0f}\n'
                      for host, when in until if when is not None))


def measurement_lines(host: str, entries: Iterable[Mapping[str, Any]]) -> str:
    """One node's rocm_fleet_measurement lines, each ending in a newline ("" when none is numeric).
    A fleet has over a million of them; the nodes of a fleet share a handful of label sequences,
    so each sequence's label text is made once (_label_parts, cached) and a node only adds its
    name and its numbers."""
    entries = list(entries)
    values = list(map(_dict_get, entries, repeat("value")))
    numeric = list(map(isinstance, values, repeat((int, float))))
    if not all(numeric):
        entries, values = list(compress(entries, numeric)), list(compress(values, numeric))
    labels = (tuple(map(operator.getitem, entries, repeat("metric"))),
              tuple(map(_dict_get, entries, repeat("subject"), repeat("node"))),
              tuple(map(_dict_get, entries, repeat("unit"), repeat(""))))
    try:
        parts = _label_parts(labels)
    except TypeError:                # a label value that cannot be a cache key (not from a JSON document)
        parts = _label_parts.__wrapped__(labels)
    head = f'rocm_fleet_measurement{{node="{label(host)}",'
    return "".join(chain.from_iterable(zip(repeat(head), parts, map(repr, map(float, values)), repeat("\n"))))


@functools.lru_cache(maxsize=256)
def _label_parts(labels: tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]) -> tuple[str, ...]:
    """Per entry of a label sequence: the rest of its labels and the closing brace, up to the value."""
    return tuple(f"{_labels_text(*key)}}} " for key in zip(*labels, strict=True))


def _labels_text(metric: Any, subject: Any, unit: Any) -> str:
    return f'metric="{_metric_name(metric)}",subject="{label(str(subject))}",unit="{label(str(unit))}"'


class MeasurementSpool:
    """Each node's measurement lines of fleet.prom, rendered while its document is read and kept in
    a file, not in memory (at 10,000 nodes they are about 100 MB of text); `write` then writes the
    textfile exactly as `prometheus` does, in the order of the nodes it is given.

    A spool is written through one file (`path`, open while the spool is used as a context
    manager) and can be pickled without it: a reader in another process fills its own spool, and
    the report `extend`s its spool by it."""

    def __init__(self, path: Path) -> None:
        self._paths = [path]
        self._where: dict[str, tuple[int, int, int]] = {}      # host -> (file, offset, length)
        self._encoding = locale.getpreferredencoding(False)   # what Path.write_text would use
        self._out: BinaryIO | None = None

    def __enter__(self) -> MeasurementSpool:
        self._out = self._paths[0].open("wb")
        return self

    def __exit__(self, *_: object) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    def __getstate__(self) -> dict[str, Any]:
        return {"_paths": self._paths, "_where": self._where, "_encoding": self._encoding, "_out": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def add(self, node: Mapping[str, Any]) -> None:
        assert self._out is not None, "add() inside `with spool:`"
        data = measurement_lines(node["host"], node.get("measurements", [])).encode(self._encoding)
        self._where[node["host"]] = (0, self._out.tell(), len(data))
        self._out.write(data)

    def extend(self, other: MeasurementSpool) -> None:
        """Take over another spool's nodes (its files stay where they are)."""
        first = len(self._paths)
        self._paths += other._paths
        self._where.update({host: (first + f, at, n) for host, (f, at, n) in other._where.items()})

    def write(self, path: Path, nodes: list[dict[str, Any]]) -> None:
        sources = [p.open("rb") for p in self._paths]
        try:
            with path.open("wb") as raw:
                def lines(node: dict[str, Any]) -> str:
                    where = self._where.get(node["host"])
                    if where is None:              # a stand-in for a node that delivered nothing
                        return measurement_lines(node["host"], node.get("measurements", []))
                    _copy_range(sources[where[0]], raw, where[1], where[2])
                    return ""

                write_prometheus(_Encoding(raw, self._encoding), nodes, lines)
        finally:
            for source in sources:
                source.close()


class _Encoding:
    """Text written straight through to a binary file, encoded."""

    def __init__(self, raw: BinaryIO, encoding: str) -> None:
        self.raw, self.encoding = raw, encoding

    def write(self, text: str) -> int:
        return self.raw.write(text.encode(self.encoding))


def _copy_range(source: BinaryIO, out: BinaryIO, offset: int, length: int) -> None:
    source.seek(offset)
    while length > 0:
        block = source.read(min(length, 1 << 23))
        if not block:
            raise OSError(f"{source.name} ended {length} bytes short of what was spooled there")
        out.write(block)
        length -= len(block)


# What XML 1.0 forbids (C0 controls but tab, newline and carriage return; lone surrogates; U+FFFE, U+FFFF),
# and DEL and the C1 controls it discourages, which a terminal showing the file obeys (CSI 0x9b).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: Any) -> str:
    """`value` as text XML 1.0 can carry: every character it may not hold shown as its escape (`\\x1b`,
    `\\ud800`), so a node's terminal colours or a NUL in a message cannot make a CI dashboard refuse the file."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", str(value))


def junit(nodes: list[dict[str, Any]]) -> str:
    """The fleet's JUnit XML: a suite per node, a case per check. Every string from a node's document passes
    xml_text (element text and attributes), so the file is well-formed whatever the node wrote."""
    suites = ET.Element("testsuites", name="rocm-fleet")
    for node in nodes:
        checks = node["checks"]
        host = xml_text(node["host"])
        suite = ET.SubElement(suites, "testsuite", name=host, tests=str(len(checks)),
                              failures=str(sum(c["status"] in ("fail", "timeout") for c in checks)),
                              errors=str(sum(c["status"] == "error" for c in checks)),
                              skipped=str(sum(c["status"] == "skip" for c in checks)))
        for check in checks:
            case = ET.SubElement(suite, "testcase", classname=host, name=xml_text(check["id"]),
                                 time=xml_text(check.get("duration_s", 0)))
            if check["status"] in ("fail", "timeout", "error"):
                tag = "error" if check["status"] == "error" else "failure"
                first = (check.get("message") or "").splitlines()[0][:300] if check.get("message") else ""
                element = ET.SubElement(case, tag, message=xml_text(f"{check.get('code') or check['status']}: {first}"))
                element.text = xml_text((check.get("message") or "")
                                        + ("\nhint: " + check["hint"] if check.get("hint") else ""))
            elif check["status"] == "skip":
                ET.SubElement(case, "skipped", message=xml_text((check.get("message") or "")[:300]))
        if not node.get("complete"):
            case = ET.SubElement(suite, "testcase", classname=host, name="run_complete")
            ET.SubElement(case, "failure", message="the node's run did not finish (interrupted or unreachable)")
    return ET.tostring(suites, encoding="unicode")


def change_text(delta: Delta) -> str:
    """'6.7 % worse' / '2.0 % better' / 'missing': never a bare signed percent."""
    if delta.change is None:
        return "missing" if delta.after is None else "new"
    worse = -delta.change if delta.higher_is_better else delta.change
    return "same" if abs(worse) < 5e-4 else f"{abs(worse):.1%} {'worse' if worse > 0 else 'better'}"


def compare_table(deltas: list[Delta]) -> str:
    lines = [f"{'node':<20} {'metric':<32} {'subject':<14} {'before':>12} {'after':>12} {'change':>12}  verdict"]
    for d in deltas:
        change = change_text(d)
        before = f"{d.before:.4g}" if d.before is not None else "missing"
        after = f"{d.after:.4g}" if d.after is not None else "missing"
        lines.append(f"{d.node:<20} {d.metric:<32} {d.subject:<14} {before:>12} {after:>12} {change:>12}  "
                     f"{'REGRESSION' if d.regression else 'ok'}")
    return "\n".join(lines)
