"""Scaling: the arithmetic on hand-picked round numbers, and the concurrent runner on CPU workers.

The round numbers (100, 88, ...) are synthetic: they test efficiency and slowdown arithmetic,
not hardware. The runner tests use the CPU at tiny sizes; they prove the code path (barrier,
one result per device, errors kept per device), never speed.
"""

from __future__ import annotations

import warnings

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    pytest.importorskip("torch", reason="PyTorch is not installed (dev extra: torch==2.13.0)")

from validation.probes import scaling
from validation.probes.scaling import GpuFigure, ScalingPoint

TINY = scaling.Workload(probe="matmul", dtype="fp32", size=32, warmup=0, repeats=2, target_sample_s=0.001,
                        timeout_s=60, filler_size=16)


def fig(gpu: str, value: float | None) -> GpuFigure:
    return GpuFigure(gpu=gpu, value=value, spread_pct=None, error=None)


def test_efficiency_is_aggregate_over_the_sum_of_solo_figures() -> None:
    assert scaling.efficiency([90.0, 80.0], [100.0, 100.0]) == pytest.approx(0.85)
    assert scaling.efficiency([100.0], [100.0]) == 1.0


def test_efficiency_is_none_when_a_figure_is_missing() -> None:
    assert scaling.efficiency([90.0, None], [100.0, 100.0]) is None
    assert scaling.efficiency([90.0, 90.0], [100.0, None]) is None
    assert scaling.efficiency([], []) is None


def test_a_gpu_slowing_past_the_threshold_is_named_with_its_worst_n() -> None:
    solo = (fig("gpu0", 100.0), fig("gpu1", 100.0), fig("gpu2", 100.0), fig("gpu3", 100.0))
    points = (
        ScalingPoint(n_gpus=1, figures=solo[:1], aggregate=100.0, efficiency=1.0, reason=None),
        ScalingPoint(n_gpus=2, figures=(fig("gpu0", 99.0), fig("gpu1", 94.0)), aggregate=193.0, efficiency=0.965,
                     reason=None),
        ScalingPoint(n_gpus=4, figures=(fig("gpu0", 98.0), fig("gpu1", 97.0), fig("gpu2", 97.0), fig("gpu3", 88.0)),
                     aggregate=380.0, efficiency=0.95, reason=None),
    )
    every = scaling.slowdowns(solo, points)
    assert len(every) == 6  # N=1 is the solo run itself
    slow = scaling.worst_slowdowns(every, 0.05)
    assert [(s.gpu, s.n_gpus) for s in slow] == [("gpu1", 2), ("gpu3", 4)]
    assert scaling.describe_slowdown(slow[1], "images/s") == (
        "gpu3 slows 12% when neighbours are busy (N=4: 88 vs 100 images/s alone)")


def test_workload_names_and_units() -> None:
    assert (TINY.name, TINY.unit) == ("matmul_fp32_32", "TFLOP/s")
    model = scaling.Workload(probe="resnet50", dtype="bf16", batch=256, mode="graph")
    assert (model.name, model.unit) == ("resnet50_bf16_graph_b256", "images/s")


def test_threads_behind_a_barrier_give_one_figure_per_device() -> None:
    figures = scaling.run_together([["cpu"], ["cpu"]], TINY, workers="thread", timeout_s=60)
    assert [f.gpu for f in figures] == ["cpu", "cpu"]
    assert all(f.value is not None and f.value > 0 and f.error is None for f in figures)


def test_a_failing_probe_is_an_error_on_its_device_not_an_exception() -> None:
    broken = scaling.Workload(probe="nope", timeout_s=30, filler_size=16)
    figures = scaling.run_together([["cpu"], ["cpu"]], broken, workers="thread", timeout_s=60)
    assert [f.value for f in figures] == [None, None]
    assert all("unknown scaling probe 'nope'" in (f.error or "") for f in figures)


def test_spawned_worker_process_reports_its_figure() -> None:
    (figure,) = scaling.run_together([["cpu"]], TINY, workers="process", timeout_s=120)
    assert figure.error is None and figure.value is not None and figure.value > 0


def test_one_device_runs_n1_and_skips_larger_counts_with_the_reason() -> None:
    result = scaling.scaling(TINY, ["cpu"], counts=(1, 2, 4, 8), workers="thread", timeout_s=60)
    n1, n2, _, n8 = result.points
    assert n1.efficiency == 1.0 and n1.figures == result.solo
    assert (n2.figures, n2.reason) == ((), "needs 2 GPUs, this node has 1")
    assert n8.reason == "needs 8 GPUs, this node has 1"
    assert result.slow == ()


def test_no_device_skips_every_count() -> None:
    result = scaling.scaling(TINY, [], counts=(1, 2))
    assert [p.reason for p in result.points] == ["no GPU: PyTorch sees none (torch.cuda.is_available() is false)"] * 2
