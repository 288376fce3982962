"""The HTML report: self-contained, per-GPU measurement grid, GPU x GPU heatmap with the weak link marked."""

from __future__ import annotations

from pathlib import Path

from validation import extract, parsers
from validation.report import render_html
from validation.report.html import heatmaps
from validation.targets import load_targets

DERIVED = Path(__file__).resolve().parents[2] / "fixtures" / "derived"


def node_from_transferbench() -> dict:
    record = parsers.parse("transferbench", (DERIVED / "transferbench/mi300x-x8-p2p-weak-gpu2-to-gpu5.txt").read_text())
    verdicts = extract.verdicts_for("transferbench", record, load_targets("mi300x"))
    return {"host": "node1", "complete": True, "checks": [], "measurements": [
        {"metric": v.metric, "subject": v.subject, "value": v.measured, "unit": v.unit, "status": v.status.value,
         "reason": v.reason} for v in verdicts]}


def test_heatmap_is_8_by_8_and_marks_only_the_weak_pair() -> None:
    (xgmi,) = [h for h in heatmaps(node_from_transferbench()) if h["metric"] == "xgmi_pair_gb_s"]
    assert xgmi["ends"] == [f"gpu{i}" for i in range(8)]
    failing = [(xgmi["ends"][r], xgmi["ends"][c]) for r, row in enumerate(xgmi["rows"])
               for c, (cell, _) in enumerate(row) if cell and cell["status"] == "fail"]
    assert failing == [("gpu2", "gpu5")]
    assert xgmi["rows"][2][2][0] is None            # no self-link cell


def test_report_is_self_contained_and_names_the_failure() -> None:
    html = render_html([node_from_transferbench()], title="t")
    assert "<script src" not in html and "<link " not in html and "http://" not in html
    assert "xgmi_pair_gb_s (GB/s), node1" in html
    assert "outline:2px solid #a00" in html
