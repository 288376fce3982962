"""The model check's recording path on CPU at a tiny size: metric names, units, record-only reasons.

It runs the real sweep (ResNet-50 at 32x32, batch 1, one sample) on the CPU; figures are
whatever the CPU measures and are never asserted, only where and how they are recorded.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (dev extra: torch==2.13.0)")

from validation.checks.test_model_probes import _sweep_and_record
from validation.probes import model_bench
from validation.targets import load_targets


@pytest.fixture(scope="module")
def entries() -> list[dict[str, Any]]:
    plan = dataclasses.replace(model_bench.TINY_PLAN, batches=(1,), dtypes=("fp32", "int8"), warmup=0, repeats=1,
                               latency_repeats=2)
    out: list[dict[str, Any]] = []

    def record(metric: str, subject: str, value: float | None, unit: str, *, higher_is_better: bool = True,
               status: str = "pass", **extra: Any) -> None:
        out.append({"metric": metric, "subject": subject, "value": value, "unit": unit,
                    "higher_is_better": higher_is_better, "status": status, **extra})

    _sweep_and_record((torch.device("cpu"),), load_targets("h200"), record, plan)
    return out


def test_a_measured_configuration_records_four_figures_per_device(entries: list[dict[str, Any]]) -> None:
    eager = [(e["metric"], e["subject"], e["unit"], e["higher_is_better"]) for e in entries
             if e["metric"].startswith("resnet50_fp32_eager_b1")]
    assert eager == [
        ("resnet50_fp32_eager_b1_images_s", "cpu", "images/s", True),
        ("resnet50_fp32_eager_b1_latency_p50_ms", "cpu", "ms", False),
        ("resnet50_fp32_eager_b1_latency_p99_ms", "cpu", "ms", False),
        ("resnet50_fp32_eager_b1_peak_memory_mib", "cpu", "MiB", False),
    ]


def test_figures_without_a_published_target_are_record_only(entries: list[dict[str, Any]]) -> None:
    (images,) = [e for e in entries if e["metric"] == "resnet50_fp32_eager_b1_images_s"]
    assert images["status"] == "skip"
    assert images["reason"] == "record only: no published resnet50_fp32_eager_b1_images_s target for h200"
    assert (images["dtype"], images["mode"], images["batch"], images["image_size"]) == ("fp32", "eager", 1, 32)
    assert len(images["samples"]) == 1


def test_skipped_configurations_are_recorded_with_their_reason(entries: list[dict[str, Any]]) -> None:
    skipped = {e["metric"]: e["reason"] for e in entries if e["value"] is None and "images_s" in e["metric"]}
    assert sorted(skipped) == ["resnet50_fp32_graph_b1_images_s", "resnet50_int8_eager_b1_images_s",
                               "resnet50_int8_graph_b1_images_s"]
    assert "graphs need a GPU" in skipped["resnet50_fp32_graph_b1_images_s"]
    assert "no int8 convolution" in skipped["resnet50_int8_eager_b1_images_s"]
