"""The scaling section of the terminal and HTML reports, from a results document on disk.

The document is written the way a real run writes it: the check's own `record_scaling` feeds
entries shaped like the plugin's `record` fixture into validation/checks/results.NodeResults,
and the report reads the directory back with load_run. The figures (100, 97, 85, ...) are
synthetic round values chosen by hand: they test rendering, not hardware.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    pytest.importorskip("torch", reason="PyTorch is not installed (dev extra: torch==2.13.0)")

from validation.checks.test_model_probes import record_scaling
from validation.probes import scaling
from validation.probes.scaling import GpuFigure, ScalingPoint
from validation.report import load_run, render_html, render_terminal
from validation.report.scaling import scaling_tables
from validation.results.node import NodeResults
from validation.targets import load_targets


def fig(gpu: str, value: float) -> GpuFigure:
    return GpuFigure(gpu=gpu, value=value, spread_pct=0.5, error=None)


def synthetic_result() -> scaling.ScalingResult:
    """4 GPUs at 100 each alone; gpu3 drops to 85 with all four busy; 8 GPUs not present."""
    solo = tuple(fig(f"gpu{i}", 100.0) for i in range(4))
    n2 = (fig("gpu0", 98.0), fig("gpu1", 98.0))
    n4 = (fig("gpu0", 97.0), fig("gpu1", 97.0), fig("gpu2", 96.0), fig("gpu3", 85.0))
    points = (
        ScalingPoint(n_gpus=1, figures=solo[:1], aggregate=100.0, efficiency=1.0, reason=None),
        ScalingPoint(n_gpus=2, figures=n2, aggregate=196.0, efficiency=scaling.efficiency([98.0, 98.0], [100.0] * 2),
                     reason=None),
        ScalingPoint(n_gpus=4, figures=n4, aggregate=375.0,
                     efficiency=scaling.efficiency([f.value for f in n4], [100.0] * 4), reason=None),
        ScalingPoint(n_gpus=8, figures=(), aggregate=None, efficiency=None, reason="needs 8 GPUs, this node has 4"),
    )
    slow = scaling.worst_slowdowns(scaling.slowdowns(solo, points), 0.05)
    return scaling.ScalingResult(workload="matmul_bf16_8192", unit="TFLOP/s", solo=solo, points=points,
                                 slow_threshold=0.05, slow=slow)


@pytest.fixture
def nodes(tmp_path: Path) -> list[dict[str, Any]]:
    results = NodeResults(tmp_path, "node1", tier="quick", argv=["pytest"])

    def record(metric: str, subject: str, value: float | None, unit: str, *, higher_is_better: bool = True,
               status: str = "pass", **extra: Any) -> None:  # the plugin's `record` fixture, entry for entry
        results.add_measurement({"metric": metric, "subject": subject, "value": value, "unit": unit,
                                 "higher_is_better": higher_is_better, "status": status,
                                 "check": "test_model_probes.py::test_gemm_scaling_over_1_2_4_8_gpus", **extra})

    record_scaling(record, load_targets("h200"), synthetic_result())
    results.finish()
    return load_run(tmp_path)


def test_table_has_an_alone_row_then_one_row_per_gpu_count(nodes: list[dict[str, Any]]) -> None:
    (table,) = scaling_tables(nodes[0])
    assert table["workload"] == "matmul_bf16_8192" and table["unit"] == "TFLOP/s"
    assert table["gpus"] == ["gpu0", "gpu1", "gpu2", "gpu3"]
    assert [r["label"] for r in table["rows"]] == ["alone", "1 together", "2 together", "4 together", "8 together"]
    four = table["rows"][3]
    assert {g: m["value"] for g, m in four["cells"].items()} == {"gpu0": 97.0, "gpu1": 97.0, "gpu2": 96.0,
                                                                 "gpu3": 85.0}
    assert four["efficiency"]["value"] == pytest.approx(93.75)
    assert table["rows"][4]["reason"] == "needs 8 GPUs, this node has 4"


def test_only_the_gpu_past_the_threshold_is_named_slow(nodes: list[dict[str, Any]]) -> None:
    (table,) = scaling_tables(nodes[0])
    assert table["slow"] == ["gpu3 slows 15% when neighbours are busy (N=4: 85 vs 100 TFLOP/s alone)"]


def test_terminal_shows_per_gpu_figures_efficiency_and_the_slow_gpu(nodes: list[dict[str, Any]]) -> None:
    text = render_terminal(nodes)
    block = text[text.index("scaling node1 matmul_bf16_8192 (TFLOP/s per GPU)"):].splitlines()
    assert block[1].split() == ["gpu0", "gpu1", "gpu2", "gpu3", "aggregate", "efficiency"]
    assert block[2].split() == ["alone", "100", "100", "100", "100"]
    assert block[4].split() == ["2", "together", "98", "98", "—", "—", "196", "98.0%"]
    assert block[5].split() == ["4", "together", "97", "97", "96", "85", "375", "93.8%"]
    assert block[6] == "8 together  skipped: needs 8 GPUs, this node has 4"
    assert block[7] == "  SLOW gpu3 slows 15% when neighbours are busy (N=4: 85 vs 100 TFLOP/s alone)"


def test_html_has_the_scaling_table_and_names_the_slow_gpu(nodes: list[dict[str, Any]]) -> None:
    html = render_html(nodes, title="t")
    assert "Scaling: matmul_bf16_8192 (TFLOP/s per GPU), node1" in html
    assert "93.8%" in html and "375" in html
    assert "Slow under load: gpu3 slows 15% when neighbours are busy" in html
    assert "skipped: needs 8 GPUs, this node has 4" in html


def test_report_without_scaling_entries_has_no_scaling_section(tmp_path: Path) -> None:
    NodeResults(tmp_path, "node2", tier="quick", argv=["pytest"]).finish()
    loaded = load_run(tmp_path)
    assert "scaling" not in render_terminal(loaded)
    assert "Scaling:" not in render_html(loaded, title="t")
