"""The portable and model checks with a probe whose samples scatter: measured once more, recorded, and
failed with RF-PROBE-UNSTABLE when still unstable. The probes are fakes that return given samples;
the checks, the recording and the judging are the real ones (on CPU, SKU profile h200)."""

from __future__ import annotations

import dataclasses
import warnings
from types import SimpleNamespace
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (dev extra: torch==2.13.0)")

import validation.checks.test_model_probes as model_checks
import validation.checks.test_portable_probes as portable
from validation.checks.outcome import CheckFailure
from validation.probes import model_bench, torch_probes
from validation.probes.stats import summarize
from validation.targets import load_targets

CPU = (torch.device("cpu"),)
SHAKY = (680.0, 690.0, 350.0)          # spread 50 %: over the bf16 matmul bound (48 %)
SHAKY_AGAIN = (700.0, 300.0, 690.0)    # spread 58 %
STEADY = (680.0, 690.0, 700.0)         # spread 2.9 %


def recorder() -> tuple[list[dict[str, Any]], Any]:
    out: list[dict[str, Any]] = []

    def record(metric: str, subject: str, value: float | None, unit: str, *, higher_is_better: bool = True,
               status: str = "pass", **extra: Any) -> None:
        out.append({"metric": metric, "subject": subject, "value": value, "unit": unit,
                    "higher_is_better": higher_is_better, "status": status, **extra})
    return out, record


def matmul_results(*sample_sets: tuple[float, ...], correct: bool = True) -> Any:
    results = iter(sample_sets)
    calls: list[int] = []

    def fake(device: Any, dtype: str) -> Any:
        calls.append(1)
        return SimpleNamespace(tflops=summarize("tflops", "TFLOPS", next(results), warmup=0, repeats=3),
                               correct=correct, max_rel_err=0.5, tolerance=1e-2, m=8192, n=8192, k=8192)
    fake.calls = calls  # type: ignore[attr-defined]
    return fake


def test_matmul_unstable_twice_fails_with_its_code_and_is_recorded_unjudged(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = matmul_results(SHAKY, SHAKY_AGAIN)
    monkeypatch.setattr(torch_probes, "matmul_tflops", fake)
    entries, record = recorder()
    with pytest.raises(CheckFailure) as failed:
        portable.test_matmul_tflops_per_gpu(CPU, load_targets("h200"), record, "bf16")
    assert len(fake.calls) == 2
    assert failed.value.code == "RF-PROBE-UNSTABLE"
    assert failed.value.message.startswith("cpu torch_matmul_bf16_tflops unstable: measured 2 times")
    assert "samples [680, 690, 350]" in failed.value.message and "samples [700, 300, 690]" in failed.value.message
    assert "foreign load" in failed.value.hint
    (entry,) = entries
    assert (entry["status"], entry["code"], entry["valid"]) == ("fail", "RF-PROBE-UNSTABLE", False)
    assert entry["value"] == 690.0                    # the second try's median, recorded, not judged
    assert entry["samples"] == [700.0, 300.0, 690.0] and entry["first_samples"] == [680.0, 690.0, 350.0]
    assert entry["remeasured"] is True and entry["spread_bound_pct"] == 48.0


def test_matmul_unstable_then_stable_is_recorded_from_the_second_try(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = matmul_results(SHAKY, STEADY)
    monkeypatch.setattr(torch_probes, "matmul_tflops", fake)
    entries, record = recorder()
    portable.test_matmul_tflops_per_gpu(CPU, load_targets("h200"), record, "bf16")   # does not raise
    assert len(fake.calls) == 2
    (entry,) = entries
    assert entry["status"] == "skip" and entry["reason"].startswith("record only: no published")
    assert entry["value"] == 690.0 and entry["samples"] == [680.0, 690.0, 700.0]
    assert entry["remeasured"] is True and entry["first_samples"] == [680.0, 690.0, 350.0]
    assert "valid" not in entry and "code" not in entry


def test_a_wrong_result_in_the_first_try_still_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch_probes, "matmul_tflops", matmul_results(SHAKY, STEADY, correct=False))
    _, record = recorder()
    with pytest.raises(CheckFailure) as failed:
        portable.test_matmul_tflops_per_gpu(CPU, load_targets("h200"), record, "bf16")
    assert failed.value.code == "RF-PROBE-WRONG-RESULT"


def test_a_resnet_configuration_unstable_twice_marks_all_its_figures_invalid(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # graph mode, bound 3.8 %: 10 % then 8 % spread
    tries = iter([(1000.0, 1050.0, 950.0), (1000.0, 1040.0, 960.0)])
    calls: list[int] = []

    def probe() -> Any:
        calls.append(1)
        return SimpleNamespace(
            dtype="bf16", mode="graph", batch=256, image_size=224, correct=True, max_rel_err=0.0, tolerance=3e-2,
            images_s=summarize("images_s", "images/s", next(tries), warmup=0, repeats=3),
            latency_ms=summarize("latency", "ms", (16.0, 16.1), warmup=0, repeats=2),
            latency_p50_ms=16.0, latency_p99_ms=16.1, peak_memory_mib=1700.0)

    monkeypatch.setattr(model_bench, "configuration_probes", lambda device, plan: iter([probe]))
    entries, record = recorder()
    plan = dataclasses.replace(model_bench.QUICK_PLAN, dtypes=("bf16",))
    with pytest.raises(CheckFailure) as failed:
        model_checks._sweep_and_record(CPU, load_targets("h200"), record, plan)
    assert len(calls) == 2
    assert failed.value.code == "RF-PROBE-UNSTABLE"
    assert "cpu resnet50_bf16_graph_b256_images_s unstable" in failed.value.message
    assert "the ResNet-50 graph bound of 3.8 %" in failed.value.message
    by_metric = {e["metric"]: e for e in entries}
    images = by_metric["resnet50_bf16_graph_b256_images_s"]
    assert (images["status"], images["code"], images["valid"]) == ("fail", "RF-PROBE-UNSTABLE", False)
    assert images["first_samples"] == [1000.0, 1050.0, 950.0] and images["samples"] == [1000.0, 1040.0, 960.0]
    for rest in ("latency_p50_ms", "latency_p99_ms", "peak_memory_mib"):
        entry = by_metric[f"resnet50_bf16_graph_b256_{rest}"]
        assert entry["status"] == "skip" and entry["valid"] is False
