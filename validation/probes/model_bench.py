"""Model-level benchmark: ResNet-50 inference throughput, latency and device memory.

One configuration is (dtype, batch, mode). `resnet50_inference` builds the model on the device
(channels-last, weights cast to the dtype, eval mode), checks image 0's logits against a
float64 CPU reference of the same weights, then measures:

- throughput: batches of forward passes with one device sync per sample (torch_probes._timed,
  the same calibration and warm-up as the matmul probe), images/s = batch x passes / seconds;
- latency: one forward pass plus a sync per sample, `latency_repeats` samples (fewer, but at
  least 20, when `latency_budget_s` would be exceeded); p50 is the median, p99 the nearest-rank
  99th percentile (with fewer than 100 samples, the maximum);
- peak device memory: torch.cuda.max_memory_allocated over the whole configuration, in MiB.

Modes: "eager" runs the module; "graph" captures one forward pass in a CUDA graph (HIP graph on
ROCm, same torch.cuda.graphs API) and replays it; "compile" runs torch.compile (opt-in: it takes
tens of seconds per shape). A capture or compilation that fails becomes a skip with the error. fp32 forbids
TF32 in convolutions and matmuls. int8 is recorded as a skip with the reason: PyTorch has no int8
convolution kernels for CUDA or ROCm devices (its quantized tensors are CPU-only, deprecated
since 2.13); int8 ResNet-50 needs TensorRT or MIGraphX, which this probe does not use.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from validation.probes.resnet import resnet50
from validation.probes.stats import Measurement, measure, rate, summarize
from validation.probes.torch_probes import ProbeSkip, _generator, _timed, label, synchronize

log = logging.getLogger(__name__)

MODEL = "resnet50"
MODEL_DTYPES = ("fp32", "fp16", "bf16", "int8")
MODES = ("eager", "graph", "compile")
IMAGE_SIZE = 224
MIB = 1 << 20
# Largest |logits - float64 reference| / max|reference| on image 0. Measured on CPU with random
# weights: bf16 4.6e-3, fp16 5.9e-4, fp32 4.9e-7; the limits leave room for the algorithms that
# cuDNN / MIOpen pick (Winograd, FFT, split-K).
MODEL_TOLERANCE = {"fp32": 1e-3, "fp16": 1e-2, "bf16": 3e-2}
_TORCH_DTYPE = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
GRAPH_WARMUP_PASSES = 3  # on a side stream before capture, so cuDNN/MIOpen autotuning is done
MIN_LATENCY_SAMPLES = 20  # a latency budget never cuts the samples below this


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPlan:
    """What one sweep measures, and how long it samples each configuration."""

    batches: tuple[int, ...]
    dtypes: tuple[str, ...]
    modes: tuple[str, ...]
    image_size: int = IMAGE_SIZE
    warmup: int = 3
    repeats: int = 10
    latency_repeats: int = 100
    latency_budget_s: float | None = None  # cap on latency sampling time per configuration
    target_sample_s: float = 0.1
    timeout_s: float = 120.0


QUICK_PLAN = SweepPlan(batches=(32, 256), dtypes=("fp16", "bf16"), modes=("eager", "graph"), latency_repeats=50,
                       latency_budget_s=2.0)
ACCEPTANCE_PLAN = SweepPlan(batches=(1, 32, 128, 256), dtypes=MODEL_DTYPES, modes=("eager", "graph"))
# CPU code-path runs (unit tests, --cpu-smoke): 32x32 images keep a forward pass in milliseconds.
TINY_PLAN = SweepPlan(batches=(1, 2), dtypes=("fp32", "bf16"), modes=("eager", "graph"), image_size=32,
                      warmup=1, repeats=3, latency_repeats=5, target_sample_s=0.002, timeout_s=60.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResult:
    """One inference configuration on one device. peak_memory_mib is None on CPU."""

    device: str
    model: str
    dtype: str
    mode: str
    batch: int
    image_size: int
    channels_last: bool
    tf32_enabled: bool
    setup_s: float  # building, casting, reference check, graph capture or compilation
    iterations_per_sample: int
    images_s: Measurement
    latency_ms: Measurement  # one batch per sample
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    peak_memory_mib: float | None
    max_rel_err: float
    tolerance: float
    correct: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Reference:
    """Image 0 and its float64 logits on the CPU, computed once per sweep."""

    image: torch.Tensor  # (1, 3, H, W) float32 on the CPU
    logits: torch.Tensor  # (1, 1000) float64 on the CPU


def metric_stem(dtype: str, mode: str, batch: int) -> str:
    """"resnet50_bf16_graph_b256": the prefix of every metric of one configuration."""
    return f"{MODEL}_{dtype}_{mode}_b{batch}"


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100): the ceil(q/100 * n)-th smallest value."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def make_reference(model: torch.nn.Module, image_size: int = IMAGE_SIZE, seed: int = 0) -> Reference:
    """Image 0 (random normal, seeded) and the logits of `model` for it, in float64 on the CPU."""
    image = torch.randn(1, 3, image_size, image_size, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        logits = copy.deepcopy(model).eval().double()(image.double())
    return Reference(image=image, logits=logits)


def int8_unsupported_reason(device: torch.device) -> str:
    """Why int8 is not measured on `device`, with the device's own answer where it has one."""
    base = ("PyTorch has no int8 convolution for CUDA/ROCm devices (quantized tensors are CPU-only, deprecated "
            "since 2.13); int8 ResNet-50 needs TensorRT or MIGraphX, which this probe does not use")
    if device.type != "cuda":
        return f"{base}; not measured on {device.type}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation warning of quantized tensors
        try:
            x = torch.quantize_per_tensor(torch.ones(1, 4, 4, 4, device=device), 0.1, 0, torch.quint8)
            w = torch.quantize_per_tensor(torch.ones(4, 4, 3, 3, device=device), 0.1, 0, torch.qint8)
            torch.ao.nn.quantized.functional.conv2d(x, w, None, padding=1, scale=1.0, zero_point=0)
        except (RuntimeError, NotImplementedError, AttributeError, TypeError) as exc:
            return f"{base}; this device: {str(exc).splitlines()[0][:200]}"
    return f"{base}; a quantized conv2d ran here, but the int8 ResNet-50 path is not implemented"


@contextlib.contextmanager
def _no_tf32() -> Iterator[bool]:
    """cuDNN/MIOpen benchmark mode on, TF32 off for convolutions and matmuls (it would change
    what fp32 means); yields whether TF32 is in force, for the record."""
    matmul = torch.backends.cuda.matmul
    old = matmul.allow_tf32
    matmul.allow_tf32 = False
    try:
        with torch.backends.cudnn.flags(enabled=True, benchmark=True, allow_tf32=False):
            yield False
    finally:
        matmul.allow_tf32 = old


def resnet50_inference(
    device: torch.device | str,
    dtype: str,
    batch: int,
    *,
    mode: str = "eager",
    model: torch.nn.Module | None = None,
    reference: Reference | None = None,
    image_size: int = IMAGE_SIZE,
    warmup: int = 3,
    repeats: int = 10,
    latency_repeats: int = 100,
    latency_budget_s: float | None = None,
    timeout_s: float = 120.0,
    target_sample_s: float = 0.1,
    seed: int = 0,
) -> ModelResult | ProbeSkip:
    """Measure one configuration; `model` (fp32, CPU; ResNet-50 or any module with the same
    input and output, such as torchvision's) and `reference` are built when not given.

    Returns a ProbeSkip with the reason for int8, for "graph" without a GPU, and for a graph
    capture or a torch.compile that raises.
    """
    if dtype not in MODEL_DTYPES:
        raise ValueError(f"unknown model dtype {dtype!r}; one of {', '.join(MODEL_DTYPES)}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
    device = torch.device(device)
    subject = f"{label(device)} {metric_stem(dtype, mode, batch)}"
    if dtype == "int8":
        return ProbeSkip(probe="model", subject=subject, reason=int8_unsupported_reason(device))
    if mode == "graph" and device.type != "cuda":
        return ProbeSkip(probe="model", subject=subject, reason="CUDA/HIP graphs need a GPU; eager mode covers CPU")
    started = time.perf_counter()
    model = model if model is not None else resnet50(seed)
    reference = reference if reference is not None else make_reference(model, image_size, seed)
    tdtype = _TORCH_DTYPE[dtype]
    if device.type == "cuda":
        # reset_peak_memory_stats does not initialise CUDA itself: on a process whose first CUDA call
        # this is, it raised "Invalid device argument" for cuda:0 (seen on the H200, torch 2.11).
        torch.cuda.init()
        torch.cuda.reset_peak_memory_stats(device)
    with torch.no_grad(), _no_tf32() as tf32, _on(device):
        # Module.to takes memory_format at run time; torch's stubs do not list it
        net = copy.deepcopy(model).eval().to(device=device, dtype=tdtype,
                                             memory_format=torch.channels_last)  # type: ignore[call-overload]
        x = torch.randn(batch, 3, image_size, image_size, device=device, generator=_generator(device, seed + 1))
        x[:1] = reference.image.to(device)
        x = x.to(dtype=tdtype, memory_format=torch.channels_last)
        try:
            step, output = _forward(net, x, mode, device)
            out = output()
        except Exception as exc:  # compile and capture raise many kinds (BackendCompilerFailed, InductorError, ...)
            if mode == "eager":
                raise
            what = "torch.compile" if mode == "compile" else "CUDA/HIP graph capture"
            return ProbeSkip(probe="model", subject=subject, reason=f"{what} failed here: {exc!r:.300}")
        err = _rel_err(out[:1], reference.logits)
        setup_s = time.perf_counter() - started
        timing, iterations = _timed(step, (device,), warmup=warmup, repeats=repeats, timeout_s=timeout_s,
                                    target_sample_s=target_sample_s)

        def once() -> None:
            step()
            synchronize(device)

        if latency_budget_s is not None and timing.seconds:
            per_pass = sorted(timing.seconds)[len(timing.seconds) // 2] / iterations
            latency_repeats = min(latency_repeats, max(MIN_LATENCY_SAMPLES, int(latency_budget_s / per_pass)))
        lat = measure(once, warmup=1, repeats=latency_repeats, timeout_s=timeout_s)
    latency_ms = [s * 1e3 for s in lat.seconds]
    peak = torch.cuda.max_memory_allocated(device) / MIB if device.type == "cuda" else None
    tolerance = MODEL_TOLERANCE[dtype]
    return ModelResult(
        device=label(device),
        model=MODEL,
        dtype=dtype,
        mode=mode,
        batch=batch,
        image_size=image_size,
        channels_last=True,
        tf32_enabled=tf32,
        setup_s=setup_s,
        iterations_per_sample=iterations,
        images_s=rate(f"{metric_stem(dtype, mode, batch)}_images_s", "images/s", timing, work=batch * iterations),
        latency_ms=summarize(f"{metric_stem(dtype, mode, batch)}_latency_ms", "ms", latency_ms,
                             warmup=lat.warmup, repeats=lat.repeats, timed_out=lat.timed_out),
        latency_p50_ms=percentile(latency_ms, 50),
        latency_p99_ms=percentile(latency_ms, 99),
        peak_memory_mib=peak,
        max_rel_err=err,
        tolerance=tolerance,
        correct=math.isfinite(err) and err <= tolerance,
    )


def _forward(
    net: torch.nn.Module, x: torch.Tensor, mode: str, device: torch.device
) -> tuple[Callable[[], object], Callable[[], torch.Tensor]]:
    """(step, output): step runs one forward pass; output returns the latest logits."""
    if mode == "eager":
        last: list[torch.Tensor] = []

        def step() -> torch.Tensor:
            last[:] = [net(x)]
            return last[0]

        return step, step
    if mode == "compile":
        compiled = torch.compile(net)
        return (lambda: compiled(x)), (lambda: compiled(x))
    # graph: warm up on a side stream (autotuning allocates), then capture one pass and replay it
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(GRAPH_WARMUP_PASSES):
            net(x)
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = net(x)
    graph.replay()
    synchronize(device)
    return graph.replay, lambda: static_out


@contextlib.contextmanager
def _on(device: torch.device) -> Iterator[None]:
    """Make `device` current, so graph capture and side streams land on it."""
    if device.type != "cuda":
        yield
        return
    with torch.cuda.device(device):
        yield


def _rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    got = got.detach().cpu().to(torch.float64)
    scale = ref.abs().max().item() or 1.0
    return (got - ref).abs().max().item() / scale


def configuration_probes(
    device: torch.device | str,
    plan: SweepPlan,
    *,
    seed: int = 0,
    model: torch.nn.Module | None = None,
) -> Iterator[Callable[[], ModelResult | ProbeSkip]]:
    """One zero-argument probe per (dtype, mode, batch) of the plan, in sweep order, all sharing one
    model (ResNet-50 unless given) and one reference; calling a probe again measures its
    configuration again (the checks do, when its samples scatter beyond their bound)."""
    model = model if model is not None else resnet50(seed)
    reference = make_reference(model, plan.image_size, seed)
    for dtype in plan.dtypes:
        for mode in plan.modes:
            for batch in plan.batches:
                yield functools.partial(_configuration, device, plan, dtype, mode, batch, model, reference, seed)


def _configuration(device: torch.device | str, plan: SweepPlan, dtype: str, mode: str, batch: int,
                   model: torch.nn.Module, reference: Reference, seed: int) -> ModelResult | ProbeSkip:
    result = resnet50_inference(
        device, dtype, batch, mode=mode, model=model, reference=reference, image_size=plan.image_size,
        warmup=plan.warmup, repeats=plan.repeats, latency_repeats=plan.latency_repeats,
        latency_budget_s=plan.latency_budget_s, timeout_s=plan.timeout_s,
        target_sample_s=plan.target_sample_s, seed=seed)
    if isinstance(result, ProbeSkip):
        log.info("%s: skipped, %s", result.subject, result.reason)
    else:
        log.info("%s %s: %.4g images/s, p50 %.3g ms, correct=%s", result.device,
                 metric_stem(dtype, mode, batch), result.images_s.median or 0.0,
                 result.latency_p50_ms or 0.0, result.correct)
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()  # graph pools of one batch size must not crowd the next
    return result


def sweep(
    device: torch.device | str,
    plan: SweepPlan,
    *,
    seed: int = 0,
    model: torch.nn.Module | None = None,
    on_result: Callable[[ModelResult | ProbeSkip], None] | None = None,
) -> tuple[ModelResult | ProbeSkip, ...]:
    """Every (dtype, mode, batch) of the plan on one device, with one model (ResNet-50 unless
    given) and one reference; on_result sees each result as it arrives."""
    results: list[ModelResult | ProbeSkip] = []
    for probe in configuration_probes(device, plan, seed=seed, model=model):
        result = probe()
        if on_result is not None:
            on_result(result)
        results.append(result)
    return tuple(results)
