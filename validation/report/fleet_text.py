"""Fleet summaries as Markdown, Prometheus textfile and JUnit XML (render only; no judging)."""

from __future__ import annotations

import functools
import re
from typing import Any
from xml.etree import ElementTree as ET

from validation.fleet import Delta, MetricSummary
from validation.records import FAILING
from validation.report.load import node_status
from validation.report.markdown import cell as _cell


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
            named = ", ".join(f"{m.node}/{m.subject} {behind(s, gap)}" for m, gap in s.outliers[:10])
            more = f" and {len(s.outliers) - 10} more" if len(s.outliers) > 10 else ""
            verdict = f"{named}{more}" or ("none" if s.judged == "judged" else _cell(s.judged))
            lines.append(f"| {s.metric} | {s.sku} | {s.unit} | {s.count} | {s.p50:.4g} | {s.minimum:.4g} | "
                         f"{s.maximum:.4g} | {verdict} |")
    failures = [(node["host"], c) for node in nodes for c in node["checks"]
                if c["status"] in FAILING]
    if failures:
        lines += ["", "## Failures", "", "| node | check | code | found | what to do |", "|---|---|---|---|---|"]
        lines += [f"| {host} | {c.get('name') or c['id']} | {c.get('code') or ''} | {_cell(c.get('message'))} | "
                  f"{_cell(c.get('hint'))} |" for host, c in failures]
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=65536)      # the same subjects, units and check ids recur on every node
def label(value: str) -> str:
    """A Prometheus label value: backslashes, quotes and newlines escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


@functools.lru_cache(maxsize=4096)
def _metric_name(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


STATUS_VALUE = {"pass": 0, "skip": 0, "warn": 1, "fail": 2, "timeout": 3, "error": 4}


def prometheus(nodes: list[dict[str, Any]]) -> str:
    """node_exporter textfile: check status (0 ok, 1 warn, 2 fail, 3 timeout, 4 error) and measurements."""
    lines = ["# HELP rocm_fleet_check_status 0 pass/skip, 1 warn, 2 fail, 3 timeout, 4 error",
             "# TYPE rocm_fleet_check_status gauge"]
    for node in nodes:
        for check in node["checks"]:
            lines.append(f'rocm_fleet_check_status{{node="{label(node["host"])}",check="{label(check["id"])}"}} '
                         f'{STATUS_VALUE.get(check["status"], 4)}')
    lines += ["# HELP rocm_fleet_measurement measured value (unit in the label)",
              "# TYPE rocm_fleet_measurement gauge"]
    for node in nodes:
        for m in node.get("measurements", []):
            if isinstance(m.get("value"), (int, float)):
                labels = (f'node="{label(node["host"])}",metric="{_metric_name(m["metric"])}",'
                          f'subject="{label(str(m.get("subject", "node")))}",unit="{label(str(m.get("unit", "")))}"')
                lines.append(f"rocm_fleet_measurement{{{labels}}} {float(m['value'])!r}")
    lines += ["# HELP rocm_fleet_run_complete 1 when the node's run finished normally",
              "# TYPE rocm_fleet_run_complete gauge"]
    lines += [f'rocm_fleet_run_complete{{node="{label(n["host"])}"}} {1 if n.get("complete") else 0}' for n in nodes]
    return "\n".join(lines) + "\n"


def junit(nodes: list[dict[str, Any]]) -> str:
    suites = ET.Element("testsuites", name="rocm-fleet")
    for node in nodes:
        checks = node["checks"]
        suite = ET.SubElement(suites, "testsuite", name=node["host"], tests=str(len(checks)),
                              failures=str(sum(c["status"] in ("fail", "timeout") for c in checks)),
                              errors=str(sum(c["status"] == "error" for c in checks)),
                              skipped=str(sum(c["status"] == "skip" for c in checks)))
        for check in checks:
            case = ET.SubElement(suite, "testcase", classname=node["host"], name=check["id"],
                                 time=str(check.get("duration_s", 0)))
            if check["status"] in ("fail", "timeout", "error"):
                tag = "error" if check["status"] == "error" else "failure"
                first = (check.get("message") or "").splitlines()[0][:300] if check.get("message") else ""
                element = ET.SubElement(case, tag, message=f"{check.get('code') or check['status']}: {first}")
                element.text = (check.get("message") or "") + ("\nhint: " + check["hint"] if check.get("hint") else "")
            elif check["status"] == "skip":
                ET.SubElement(case, "skipped", message=(check.get("message") or "")[:300])
        if not node.get("complete"):
            case = ET.SubElement(suite, "testcase", classname=node["host"], name="run_complete")
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
