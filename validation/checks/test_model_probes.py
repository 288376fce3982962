"""Model-level benchmark and scaling: ResNet-50 inference per GPU, GEMM and model on 1-8 GPUs at once.

Like the portable probes, these run in the node's own pytest process (`--hosts=local://`). No
public per-SKU figure exists for these numbers, so the targets are record only: every figure
lands in the results with its reason, and the fleet outlier logic (`rocm-fleet report` over
many nodes) judges them against the fleet median. A wrong model output always fails. A GPU that
slows past the threshold when its neighbours are busy is named in a WARN measurement. A
configuration whose throughput samples scatter beyond their bound is measured once more
(validation/stability.py); unstable twice, its figures are recorded invalid and the check fails
with RF-PROBE-UNSTABLE.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from validation.checks.outcome import expect, expect_stable
from validation.judge import judge_value
from validation.stability import UNSTABLE, Figure, measure_steadily

pytestmark = pytest.mark.gpu

QUICK_DTYPES = ("fp16", "bf16")
ACCEPTANCE_DTYPES = ("fp32", "fp16", "bf16", "int8")


@pytest.fixture(scope="module")
def torch_gpus(host: Any) -> tuple[Any, ...]:
    if host.backend.NAME != "local":
        pytest.skip("model probes run on the node itself: use --hosts=local:// (playbooks/validate.yml does)")
    torch = pytest.importorskip("torch", reason="PyTorch is not installed on this node; model probes need it")
    from validation.probes import torch_probes

    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU (torch.cuda.is_available() is false); the presence checks say why")
    return torch_probes.gpu_devices()


def record_figure(record: Any, targets: Any, metric: str, subject: str, value: float | None, unit: str, *,
                  higher_is_better: bool = True, figure: Figure | None = None, **extra: Any) -> tuple[str, str] | None:
    """Judge where the SKU profile has a threshold for the metric, otherwise record only.

    Returns (code, reason) when the verdict is neither PASS, WARN nor SKIP; callers gather these
    and fail once at the end, so one bad figure does not stop the others from being recorded. A
    `figure` adds its samples, spread and retry to the entry; an unstable one is recorded as a
    failure with RF-PROBE-UNSTABLE and not judged (callers fail on it with expect_stable)."""
    if figure is not None:
        extra = {**extra, **figure.extra()}
        if figure.unstable:
            record(metric, subject, value, unit, higher_is_better=higher_is_better, status="fail", code=UNSTABLE,
                   reason=figure.reason(), **extra)
            return None
    target = targets.get(metric)
    if target is None:
        record(metric, subject, value, unit, higher_is_better=higher_is_better, status="skip",
               reason=f"record only: no published {metric} target for {targets.name}", **extra)
        return None
    verdict = judge_value(metric, subject, value, targets)
    record(metric, subject, value, unit, higher_is_better=higher_is_better, status=verdict.status.value,
           reason=verdict.reason, code=verdict.code, **extra)
    if verdict.status.value in ("pass", "warn", "skip"):
        return None
    return verdict.code or "RF-NOT-REPORTED", verdict.reason


def _sweep_and_record(devices: tuple, targets: Any, record: Any, plan: Any) -> None:
    from validation.probes import model_bench, torch_probes

    def images_s(r: Any) -> dict[str, Any]:
        if isinstance(r, torch_probes.ProbeSkip):
            return {}
        return {f"{model_bench.metric_stem(r.dtype, r.mode, r.batch)}_images_s": r.images_s}

    wrong, problems, unstable = [], [], []
    for device in devices:
        subject = torch_probes.label(device)
        for probe in model_bench.configuration_probes(device, plan):
            steady = measure_steadily(probe, images_s, subject=subject)
            r = steady.result
            if isinstance(r, torch_probes.ProbeSkip):
                metric = f"{r.subject.split(' ', 1)[1]}_images_s"
                record(metric, subject, None, "images/s", status="skip", reason=r.reason)
                continue
            stem = model_bench.metric_stem(r.dtype, r.mode, r.batch)
            extra: dict[str, Any] = {"dtype": r.dtype, "mode": r.mode, "batch": r.batch, "image_size": r.image_size}
            figure = steady.figures[f"{stem}_images_s"]
            unstable += steady.unstable
            problems.append(record_figure(record, targets, figure.metric, subject, figure.measurement.median,
                                          "images/s", figure=figure, **extra))
            if figure.unstable:     # latency and memory come from the same disturbed run
                extra.update(valid=False, invalid_reason=figure.reason()[:500])
            for q, value in (("p50", r.latency_p50_ms), ("p99", r.latency_p99_ms)):
                problems.append(record_figure(record, targets, f"{stem}_latency_{q}_ms", subject, value, "ms",
                                              higher_is_better=False, repeats=len(r.latency_ms.values), **extra))
            problems.append(record_figure(record, targets, f"{stem}_peak_memory_mib", subject, r.peak_memory_mib,
                                          "MiB", higher_is_better=False, **extra))
            for attempt in steady.attempts:
                if not isinstance(attempt, torch_probes.ProbeSkip) and not attempt.correct:
                    wrong.append(f"{subject} {stem}: logits off by {attempt.max_rel_err:.3g} "
                                 f"(limit {attempt.tolerance:.3g})")
    expect(not wrong, "RF-PROBE-WRONG-RESULT", "; ".join(wrong))
    expect_stable(unstable)
    _expect_recorded(problems)


def _expect_recorded(problems: list[tuple[str, str] | None]) -> None:
    found = [p for p in problems if p]
    expect(not found, found[0][0] if found else "", "; ".join(reason for _, reason in found))


@pytest.mark.quick
@pytest.mark.parametrize("dtype", QUICK_DTYPES)
def test_resnet50_inference_small_sweep_per_gpu(torch_gpus: tuple, targets: Any, record: Any, dtype: str) -> None:
    """Every GPU runs ResNet-50 inference correctly (a short sweep of batch sizes and modes)."""
    from validation.probes import model_bench

    _sweep_and_record(torch_gpus, targets, record, dataclasses.replace(model_bench.QUICK_PLAN, dtypes=(dtype,)))


@pytest.mark.acceptance
@pytest.mark.parametrize("dtype", ACCEPTANCE_DTYPES)
def test_resnet50_inference_full_sweep_per_gpu(torch_gpus: tuple, targets: Any, record: Any, dtype: str) -> None:
    """Every GPU runs ResNet-50 inference correctly across the full sweep of types, batches and modes."""
    from validation.probes import model_bench

    _sweep_and_record(torch_gpus, targets, record, dataclasses.replace(model_bench.ACCEPTANCE_PLAN, dtypes=(dtype,)))


def record_scaling(record: Any, targets: Any, result: Any) -> None:
    """Solo and per-N per-GPU figures, efficiency per N, and each GPU's worst slowdown under load.

    Every entry carries a `scaling` object (workload, n_gpus, kind) that the report reads."""
    name, unit = result.workload, result.unit

    def tag(kind: str, n: int | None) -> dict[str, Any]:
        return {"scaling": {"workload": name, "n_gpus": n, "kind": kind}}

    problems = []
    for f in result.solo:
        problems.append(record_figure(record, targets, f"scaling_{name}_solo", f.gpu, f.value, unit,
                                      spread_pct=f.spread_pct, error=f.error, **tag("solo", 1)))
    for p in result.points:
        if p.reason is not None:
            record(f"scaling_{name}_efficiency_n{p.n_gpus}", "node", None, "%", status="skip", reason=p.reason,
                   **tag("efficiency", p.n_gpus))
            continue
        for f in p.figures:
            problems.append(record_figure(record, targets, f"scaling_{name}_n{p.n_gpus}", f.gpu, f.value, unit,
                                          spread_pct=f.spread_pct, error=f.error, **tag("per_gpu", p.n_gpus)))
        eff = None if p.efficiency is None else p.efficiency * 100
        problems.append(record_figure(record, targets, f"scaling_{name}_efficiency_n{p.n_gpus}", "node", eff, "%",
                                      aggregate=p.aggregate, **tag("efficiency", p.n_gpus)))
    from validation.probes.scaling import describe_slowdown, slowdowns

    worst: dict[str, Any] = {}
    for s in slowdowns(result.solo, result.points):
        if s.gpu not in worst or s.slowdown > worst[s.gpu].slowdown:
            worst[s.gpu] = s
    for gpu, s in worst.items():
        slow = s.slowdown > result.slow_threshold
        record(f"scaling_{name}_slowdown_pct", gpu, s.slowdown * 100, "%", higher_is_better=False,
               status="warn" if slow else "pass", reason=describe_slowdown(s, unit) if slow else "",
               threshold_pct=result.slow_threshold * 100, **tag("slowdown", s.n_gpus))
    errors = [f"{f.gpu} at N={p.n_gpus}: {f.error}" for p in result.points for f in p.figures if f.error]
    errors += [f"{f.gpu} alone: {f.error}" for f in result.solo if f.error]
    expect(not errors, "RF-TOOL-FAILED", "; ".join(errors))
    _expect_recorded(problems)


@pytest.mark.quick
def test_gemm_scaling_over_1_2_4_8_gpus(torch_gpus: tuple, targets: Any, record: Any) -> None:
    """Matrix multiplication keeps its per-GPU rate when 1, 2, 4 and 8 GPUs run at once."""
    from validation.probes import scaling

    result = scaling.scaling(scaling.Workload(probe="matmul", dtype="bf16", size=8192),
                             [f"cuda:{d.index}" for d in torch_gpus])
    record_scaling(record, targets, result)


@pytest.mark.acceptance
def test_resnet50_scaling_over_1_2_4_8_gpus(torch_gpus: tuple, targets: Any, record: Any) -> None:
    """ResNet-50 keeps its per-GPU throughput when 1, 2, 4 and 8 GPUs run at once."""
    from validation.probes import scaling

    result = scaling.scaling(scaling.Workload(probe="resnet50", dtype="bf16", batch=256, mode="graph"),
                             [f"cuda:{d.index}" for d in torch_gpus])
    record_scaling(record, targets, result)
