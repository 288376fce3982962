"""Portable probes (PyTorch on ROCm or CUDA, the HIP kernel): per-GPU numbers, judged or recorded.

They run inside the node's own pytest process, so they need `--hosts=local://` (which is how
playbooks/validate.yml runs the suite on every node). Every number lands in the node's results
with its verdict: judged where the SKU profile has a target for it, otherwise recorded with the
reason that no published target exists. A wrong result always fails. A figure whose own samples
scatter beyond its family's bound is measured once more (validation/stability.py); unstable twice,
it is recorded as RF-PROBE-UNSTABLE and not judged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from validation.checks.outcome import expect, expect_stable, fail_on_verdicts, require
from validation.judge import Verdict, judge_value
from validation.stability import UNSTABLE, Figure, measure_steadily

pytestmark = [pytest.mark.quick, pytest.mark.gpu]

MATMUL_DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32", "fp64")


@pytest.fixture(scope="module")
def torch_gpus(host: Any) -> tuple[Any, ...]:
    if host.backend.NAME != "local":
        pytest.skip("portable probes run on the node itself: use --hosts=local:// (playbooks/validate.yml does)")
    torch = pytest.importorskip("torch", reason="PyTorch is not installed on this node; portable probes need it")
    from validation.probes import torch_probes

    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU (torch.cuda.is_available() is false); the presence checks say why")
    return torch_probes.gpu_devices()


def judge_and_record(record: Any, targets: Any, metric: str, subject: str, value: float | None, unit: str, *,
                     figure: Figure | None = None, **extra: Any) -> Verdict | None:
    """Judge against the SKU's target (or the site baseline) when there is one; otherwise record
    with the reason. Returns the verdict; callers fail once at the end (`fail_on_verdicts`), so one slow GPU
    does not keep the others from being measured. A `figure` adds its samples, spread and retry to the
    entry; an unstable one is recorded as a failure with RF-PROBE-UNSTABLE and never judged."""
    if figure is not None:
        extra = {**extra, **figure.extra()}
        if figure.unstable:
            record(metric, subject, value, unit, status="fail", code=UNSTABLE, reason=figure.reason(), **extra)
            return None
    if targets.get(metric) is None:
        record(metric, subject, value, unit, status="skip",
               reason=f"record only: no published {metric} target for {targets.name}; a site baseline "
                      "(rocm-fleet baseline create) or the sibling and batch verdicts judge it", **extra)
        return None
    verdict = judge_value(metric, subject, value, targets)
    record(metric, subject, value, unit, status=verdict.status.value, reason=verdict.reason, code=verdict.code,
           **extra)
    return verdict


def figures(attributes: Mapping[str, str]) -> Callable[[Any], dict[str, Any]]:
    """The figures of a probe's result for measure_steadily: metric -> the measurement held in the
    named attribute; none for a skip (nothing measured, nothing to repeat)."""
    def pick(result: Any) -> dict[str, Any]:
        from validation.probes.torch_probes import ProbeSkip

        return {} if isinstance(result, ProbeSkip) else {m: getattr(result, a) for m, a in attributes.items()}
    return pick


def judge_figure(record: Any, targets: Any, figure: Figure, unit: str, *, subject: str | None = None,
                 **extra: Any) -> Verdict | None:
    """judge_and_record for one figure of a steady measurement: its median, its samples and spread."""
    return judge_and_record(record, targets, figure.metric, subject or figure.subject, figure.measurement.median,
                            unit, figure=figure, **extra)


@pytest.mark.parametrize("dtype", MATMUL_DTYPES)
def test_matmul_tflops_per_gpu(torch_gpus: tuple, targets: Any, record: Any, dtype: str) -> None:
    """Every GPU multiplies matrices correctly at its target rate (PyTorch, per data type)."""
    from validation.probes import torch_probes

    metric = f"torch_matmul_{dtype}_tflops"
    verdicts, wrong, unstable = [], [], []
    for device in torch_gpus:
        subject = torch_probes.label(device)
        steady = measure_steadily(functools.partial(torch_probes.matmul_tflops, device, dtype),
                                  figures({metric: "tflops"}), subject=subject)
        result = steady.result
        if isinstance(result, torch_probes.ProbeSkip):
            record(metric, subject, None, "TFLOPS", status="skip", reason=result.reason)
            continue
        for attempt in steady.attempts:
            if not isinstance(attempt, torch_probes.ProbeSkip) and not attempt.correct:
                wrong.append(f"{subject} {dtype} matmul result wrong: max relative error {attempt.max_rel_err:.3g} "
                             f"> {attempt.tolerance:.3g}")
        unstable += steady.unstable
        verdicts.append(judge_figure(record, targets, steady.figures[metric], "TFLOPS",
                                     size=[result.m, result.n, result.k]))
    expect(not wrong, "RF-PROBE-WRONG-RESULT", "; ".join(wrong))
    expect_stable(unstable)
    fail_on_verdicts(verdicts)


def test_device_copy_bandwidth_per_gpu(torch_gpus: tuple, targets: Any, record: Any) -> None:
    """Every GPU copies its own memory correctly at its target bandwidth (PyTorch)."""
    from validation.probes import torch_probes

    metric = "torch_device_copy_gb_s"
    verdicts, wrong, unstable = [], [], []
    for device in torch_gpus:
        subject = torch_probes.label(device)
        steady = measure_steadily(functools.partial(torch_probes.device_copy_gb_s, device),
                                  figures({metric: "gb_s"}), subject=subject)
        if not all(attempt.checksum_ok for attempt in steady.attempts):
            wrong.append(f"{subject} device copy checksum mismatch")
        unstable += steady.unstable
        verdicts.append(judge_figure(record, targets, steady.figures[metric], "GB/s",
                                     counting=steady.result.counting))
    expect(not wrong, "RF-PROBE-WRONG-RESULT", "; ".join(wrong))
    expect_stable(unstable)
    fail_on_verdicts(verdicts)


def test_pinned_host_copy_per_gpu(torch_gpus: tuple, targets: Any, record: Any) -> None:
    """Every GPU copies to and from pinned host memory on its own NUMA node at its target bandwidth.

    Host memory on another node, where the host has one, is recorded beside it (*_remote_*), so
    local and remote bandwidth sit side by side."""
    from validation.probes import torch_probes

    nodes = torch_probes.usable_numa_nodes()
    verdicts, wrong, unstable = [], [], []
    for device in torch_gpus:
        subject = torch_probes.label(device)
        plan = torch_probes.host_copy_plan(torch_probes.gpu_numa_node(torch_probes.gpu_index(device)), nodes)
        for numa_node, locality in plan:
            infix = "_remote" if locality == "remote" else ""
            h2d, d2h = f"torch_h2d{infix}_gb_s", f"torch_d2h{infix}_gb_s"
            steady = measure_steadily(functools.partial(torch_probes.pinned_copy_gb_s, device, numa_node=numa_node),
                                      figures({h2d: "h2d_gb_s", d2h: "d2h_gb_s"}), subject=subject)
            result = steady.result
            if isinstance(result, torch_probes.ProbeSkip):
                record("torch_h2d_gb_s", subject, None, "GB/s", status="skip", reason=result.reason)
                break
            if not all(isinstance(a, torch_probes.ProbeSkip) or a.checksum_ok for a in steady.attempts):
                wrong.append(f"{subject} host copy checksum mismatch ({locality})")
            unstable += steady.unstable
            extra = {"numa_node": result.numa_node, "cpus": len(result.cpus), "locality": locality}
            verdicts.append(judge_figure(record, targets, steady.figures[h2d], "GB/s",
                                         subject=f"{result.host} -> {subject}", **extra))
            verdicts.append(judge_figure(record, targets, steady.figures[d2h], "GB/s",
                                         subject=f"{subject} -> {result.host}", **extra))
    expect(not wrong, "RF-PROBE-WRONG-RESULT", "; ".join(wrong))
    expect_stable(unstable)
    fail_on_verdicts(verdicts)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_conv2d_forward_per_gpu(torch_gpus: tuple, targets: Any, record: Any, dtype: str) -> None:
    """Every GPU runs the ResNet-50 convolution layers correctly at their target rate (PyTorch)."""
    from validation.probes import torch_probes

    verdicts, wrong, unstable = [], [], []
    for device in torch_gpus:
        subject = torch_probes.label(device)
        for shape in torch_probes.RESNET50_SHAPES:
            metric = f"torch_conv2d_{shape.name}_{dtype}_tflops"
            steady = measure_steadily(functools.partial(torch_probes.conv2d_tflops, device, shape, dtype),
                                      figures({metric: "tflops"}), subject=subject)
            if not all(attempt.correct for attempt in steady.attempts):
                wrong.append(f"{subject} conv2d {shape.name} {dtype} result wrong")
            unstable += steady.unstable
            verdicts.append(judge_figure(record, targets, steady.figures[metric], "TFLOPS",
                                         library=torch_probes.conv_library()))
    expect(not wrong, "RF-PROBE-WRONG-RESULT", "; ".join(wrong))
    expect_stable(unstable)
    fail_on_verdicts(verdicts)


def test_hip_kernel_builds_and_checks_itself_on_every_gpu(torch_gpus: tuple, record: Any) -> None:
    """A HIP kernel builds and computes the right result on every GPU."""
    from validation.probes import hip_probe

    if hip_probe.pick_compiler() is None:
        pytest.skip("neither hipcc nor nvcc is on PATH; the HIP probe needs one of them")
    run = hip_probe.hip_probe()
    output = require(run.output, "RF-TOOL-FAILED", f"HIP probe did not produce output: {run.reason}")
    wrong = [f"gpu{g.gpu}: {g.result} {g.error or ''}".strip() for g in output.gpus if g.result != "ok"]
    for g in output.gpus:
        record("hip_probe_kernel_ms", f"gpu{g.gpu}", g.kernel_ms, "ms", higher_is_better=False,
               status="pass" if g.result == "ok" else "fail", platform=output.platform)
    expect(output.devices == len(torch_gpus), "RF-GPU-MISSING",
           f"the HIP probe saw {output.devices} GPUs, PyTorch sees {len(torch_gpus)}")
    expect(not wrong, "RF-PROBE-WRONG-RESULT", "; ".join(wrong))
