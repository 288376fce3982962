"""Portable PyTorch probes: matmul, device copy, pinned host<->device copy, conv2d, peer copy.

The same code runs on CUDA and ROCm builds of PyTorch (ROCm answers through the torch.cuda
API; `torch.version.hip` tells them apart) and on CPU tensors at tiny sizes for the unit tests.
Every figure is measured here: nothing is derived from a datasheet. Timing: each sample runs
a batch of operations and then synchronizes the device, timed with time.perf_counter; the
batch is sized so one sample takes about `target_sample_s` (launch overhead then vanishes).
Every probe checks its own result (a float64 reference slice, or a checksum) and reports it.
All-reduce lives in torch_allreduce.py (it needs one process per GPU).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from validation.probes.conv_shapes import RESNET50_SHAPES, ConvShape  # noqa: F401  (re-exported)
from validation.probes.stats import Measurement, Timing, measure, rate
from validation.records import LinkBandwidth

log = logging.getLogger(__name__)

GIB = 1 << 30
DEFAULT_MATMUL_SIZE = 8192
DEFAULT_COPY_BYTES = 4 * GIB
DEFAULT_PINNED_BYTES = GIB
DEFAULT_PEER_BYTES = GIB
TARGET_SAMPLE_S = 0.1
# GPUs settle into their sustained clock under load: warm up at least this long before timing.
GPU_WARMUP_MIN_S = 1.0
MAX_ITERATIONS = 1000
CHECK_SLICE = 64  # rows/columns of the result compared against a float64 reference

MATMUL_DTYPES = ("bf16", "fp16", "fp32", "tf32", "fp8", "fp64")
# Largest |result - float64 reference| / max|reference| accepted on the checked slice. The
# inputs are compared in the precision they were stored in, so only accumulation and output
# rounding count: bf16 keeps 8 mantissa bits, fp16 11 (cuBLAS/hipBLASLt may reduce in fp16),
# tf32 rounds inputs to 10 bits.
MATMUL_TOLERANCE = {"bf16": 1e-2, "fp16": 5e-3, "fp32": 1e-4, "tf32": 1e-2, "fp8": 1e-2, "fp64": 1e-10}
CONV_TOLERANCE = {"bf16": 2e-2, "fp16": 1e-2}  # loose enough for Winograd/FFT algorithms

_TORCH_DTYPE = {
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
    "tf32": torch.float32,
    "fp64": torch.float64,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceInfo:
    """What ran the probe. backend: "cuda", "rocm" or "cpu"."""

    label: str  # "gpu0" or "cpu"
    index: int | None
    name: str
    backend: str
    runtime_version: str | None  # torch.version.cuda or torch.version.hip
    torch_version: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeSkip:
    """A probe that could not run here, and why (no device, dtype unsupported)."""

    probe: str
    subject: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MatmulResult:
    device: str
    dtype: str
    tf32_enabled: bool  # fp32 matmul allowed TF32 units (read back; only "tf32" asks for it)
    m: int
    n: int
    k: int
    flops_per_matmul: int  # 2*m*n*k
    iterations_per_sample: int
    tflops: Measurement
    max_rel_err: float  # max |C - ref| / max |ref| on a CHECK_SLICE x CHECK_SLICE slice
    tolerance: float
    correct: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyResult:
    """Device-to-device copy. bytes_counted_per_copy = 2 x size: every byte is read and written."""

    device: str
    size_bytes: int
    bytes_counted_per_copy: int
    counting: str
    iterations_per_sample: int
    gb_s: Measurement
    checksum_ok: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class HostCopyResult:
    """Pinned host memory <-> device, each direction timed on its own; bytes counted once."""

    device: str
    host: str  # "cpu<numa node>" when pinned to a node, else "host"
    numa_node: int | None
    cpus: tuple[int, ...]  # CPU affinity in force while measuring
    size_bytes: int
    iterations_per_sample: tuple[int, int]  # (h2d, d2h)
    h2d_gb_s: Measurement
    d2h_gb_s: Measurement
    checksum_ok: bool

    def links(self) -> tuple[LinkBandwidth, ...]:
        out: list[LinkBandwidth] = []
        for src, dst, m in ((self.host, self.device, self.h2d_gb_s), (self.device, self.host, self.d2h_gb_s)):
            if m.median is not None:
                out.append(LinkBandwidth(src=src, dst=dst, gb_s=m.median))
        return tuple(out)




@dataclass(frozen=True, slots=True, kw_only=True)
class ConvResult:
    """conv2d in channels-last layout. fwd+bwd counts 3 x forward flops (data and weight grads)."""

    device: str
    library: str  # "cudnn", "miopen" or "cpu"
    shape: ConvShape
    dtype: str
    direction: str  # "fwd" or "fwd+bwd"
    flops_per_call: int
    iterations_per_sample: int
    tflops: Measurement
    max_rel_err: float  # forward output of image 0 against a float64 reference
    tolerance: float
    correct: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerCopyMatrix:
    """Every ordered GPU pair; bytes counted once per copy. Empty links with a reason if < 2 GPUs."""

    size_bytes: int
    links: tuple[LinkBandwidth, ...]
    measurements: tuple[Measurement, ...]  # same order as links
    peer_access: tuple[bool, ...]  # torch.cuda.can_device_access_peer, same order as links
    checksum_ok: tuple[bool, ...]
    reason: str | None


# --- devices ---------------------------------------------------------------------------------


def backend() -> str:
    if torch.version.hip:
        return "rocm"
    if torch.version.cuda and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def gpu_devices() -> tuple[torch.device, ...]:
    if not torch.cuda.is_available():
        return ()
    return tuple(torch.device("cuda", i) for i in range(torch.cuda.device_count()))


def label(device: torch.device) -> str:
    return f"gpu{gpu_index(device)}" if device.type == "cuda" else device.type


def describe(device: torch.device | str) -> DeviceInfo:
    device = torch.device(device)
    if device.type == "cuda":
        index = gpu_index(device)
        return DeviceInfo(
            label=label(device),
            index=index,
            name=torch.cuda.get_device_name(index),
            backend=backend(),
            runtime_version=torch.version.hip or torch.version.cuda,
            torch_version=torch.__version__,
        )
    return DeviceInfo(
        label=label(device),
        index=None,
        name=device.type,
        backend="cpu",
        runtime_version=None,
        torch_version=torch.__version__,
    )


def synchronize(*devices: torch.device) -> None:
    for device in devices:
        if device.type == "cuda":
            torch.cuda.synchronize(device)


def gpu_numa_node(index: int) -> int | None:
    """NUMA node of GPU `index` from sysfs, None when unknown (no PCI id, no NUMA)."""
    props = torch.cuda.get_device_properties(index)
    bus, dev, domain = (getattr(props, f"pci_{k}_id", None) for k in ("bus", "device", "domain"))
    if bus is None or dev is None:
        return None
    path = Path(f"/sys/bus/pci/devices/{domain or 0:04x}:{bus:02x}:{dev:02x}.0/numa_node")
    try:
        node = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def numa_cpus(node: int, sysfs: Path = Path("/sys/devices/system/node")) -> frozenset[int]:
    """CPUs of a NUMA node, from its cpulist ("0-47,96-143")."""
    text = (sysfs / f"node{node}" / "cpulist").read_text().strip()
    cpus: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(cpus)


def usable_numa_nodes(sysfs: Path = Path("/sys/devices/system/node")) -> tuple[int, ...]:
    """NUMA nodes that have at least one CPU this process may run on."""
    allowed = os.sched_getaffinity(0)
    nodes = []
    for entry in sorted(sysfs.glob("node[0-9]*"), key=lambda e: int(e.name[4:])):
        try:
            if numa_cpus(int(entry.name[4:]), sysfs) & allowed:
                nodes.append(int(entry.name[4:]))
        except (OSError, ValueError):
            continue
    return tuple(nodes)


def host_copy_plan(gpu_node: int | None, nodes: Sequence[int]) -> tuple[tuple[int | None, str], ...]:
    """Where the host side of a GPU's copies runs: its own NUMA node ("local") and, when the host
    has another usable node, the nearest other one ("remote"); unbound when the GPU's node is unknown."""
    if gpu_node is None or gpu_node not in nodes:
        return ((None, "unknown"),)
    others = sorted((n for n in nodes if n != gpu_node), key=lambda n: (abs(n - gpu_node), n))
    return ((gpu_node, "local"),) + (((others[0], "remote"),) if others else ())


def gpu_index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def _generator(device: torch.device, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def _iterations(step: Callable[[], object], devices: Sequence[torch.device], target_s: float) -> int:
    """Operations per sample so that one sample lasts about target_s (fastest of 3 tries)."""
    step()
    synchronize(*devices)
    fastest = math.inf
    for _ in range(3):
        start = time.perf_counter()
        step()
        synchronize(*devices)
        fastest = min(fastest, time.perf_counter() - start)
    return max(1, min(MAX_ITERATIONS, math.ceil(target_s / max(fastest, 1e-9))))


def _timed(
    step: Callable[[], object],
    devices: Sequence[torch.device],
    *,
    warmup: int,
    repeats: int,
    timeout_s: float,
    target_sample_s: float,
) -> tuple[Timing, int]:
    """Time batches of `step` (each batch ends with a device sync); returns the timing and the
    number of operations per batch."""
    iterations = _iterations(step, devices, target_sample_s)
    if any(d.type == "cuda" for d in devices):
        warmup = max(warmup, math.ceil(GPU_WARMUP_MIN_S / max(target_sample_s, 1e-3)))

    def sample() -> None:
        for _ in range(iterations):
            step()
        synchronize(*devices)

    return measure(sample, warmup=warmup, repeats=repeats, timeout_s=timeout_s), iterations


def _checksum(t: torch.Tensor) -> int:
    return int(torch.sum(t, dtype=torch.int64).item())


def _cpu64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().to(torch.float64).contiguous()


def _rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    got, ref = _cpu64(got), _cpu64(ref)
    scale = ref.abs().max().item() or 1.0
    return (got - ref).abs().max().item() / scale


@contextlib.contextmanager
def _fp32_matmul_precision(tf32: bool) -> Iterator[bool]:
    """Allow or forbid TF32 for fp32 matmuls; yields the setting in force, restores the old one.

    Uses `allow_tf32`: its setter updates the legacy flag and the newer `fp32_precision` together.
    Setting only `fp32_precision` leaves them disagreeing, and cuBLAS matmuls then raise
    ("mix of the legacy and new APIs"). ROCm builds keep TF32 off unless HIPBLASLT_ALLOW_TF32=1,
    which is why the setting in force is read back rather than assumed.
    """
    matmul = torch.backends.cuda.matmul
    old = matmul.allow_tf32
    matmul.allow_tf32 = tf32
    try:
        yield bool(matmul.allow_tf32)
    finally:
        matmul.allow_tf32 = old


@contextlib.contextmanager
def _cpu_affinity(cpus: frozenset[int] | None) -> Iterator[None]:
    if cpus is None:
        yield
        return
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


# --- matmul ----------------------------------------------------------------------------------


def _fp8_dtype(device: torch.device) -> torch.dtype:
    """MI300 (gfx94x) uses the "fnuz" e4m3 variant; CUDA and newer AMD parts use e4m3fn."""
    if device.type == "cuda" and torch.version.hip:
        arch = getattr(torch.cuda.get_device_properties(gpu_index(device)), "gcnArchName", "")
        if arch.startswith("gfx94"):
            return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn


def _matmul_operands(
    device: torch.device, dtype: str, m: int, n: int, k: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, Callable[[], torch.Tensor]]:
    gen = _generator(device, seed)
    if dtype == "fp8":
        fp8 = _fp8_dtype(device)
        a = torch.randn(m, k, device=device, generator=gen).to(fp8)
        b = torch.randn(n, k, device=device, generator=gen).to(fp8).t()  # column-major, as required
        one = torch.ones((), device=device, dtype=torch.float32)

        def step() -> torch.Tensor:
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        return a, b, step
    a = torch.randn(m, k, device=device, generator=gen, dtype=torch.float32).to(_TORCH_DTYPE[dtype])
    b = torch.randn(k, n, device=device, generator=gen, dtype=torch.float32).to(_TORCH_DTYPE[dtype])
    c = torch.empty(m, n, device=device, dtype=_TORCH_DTYPE[dtype])
    return a, b, lambda: torch.mm(a, b, out=c)


def matmul_tflops(
    device: torch.device | str,
    dtype: str,
    *,
    size: int | tuple[int, int, int] = DEFAULT_MATMUL_SIZE,
    warmup: int = 3,
    repeats: int = 10,
    timeout_s: float = 120.0,
    target_sample_s: float = TARGET_SAMPLE_S,
    seed: int = 0,
) -> MatmulResult | ProbeSkip:
    """C = A @ B on random normal inputs; TFLOP/s = 2*M*N*K * iterations / seconds / 1e12.

    dtype is one of MATMUL_DTYPES; "tf32" is fp32 with TF32 allowed, "fp32" forbids it, "fp8" is
    e4m3 x e4m3 -> bf16 through torch._scaled_mm (skipped where the device lacks it).
    """
    if dtype not in MATMUL_DTYPES:
        raise ValueError(f"unknown matmul dtype {dtype!r}; one of {', '.join(MATMUL_DTYPES)}")
    device = torch.device(device)
    m, n, k = (size, size, size) if isinstance(size, int) else size
    with _fp32_matmul_precision(dtype == "tf32") as tf32_enabled:
        try:
            a, b, step = _matmul_operands(device, dtype, m, n, k, seed)
            result = step()
        except (RuntimeError, NotImplementedError, AttributeError, TypeError) as exc:
            if dtype != "fp8":
                raise
            return ProbeSkip(probe="matmul", subject=f"{label(device)} fp8", reason=f"no fp8 matmul here: {exc}")
        # The reference runs on the CPU in float64: independent of the device's math library.
        s = min(CHECK_SLICE, m, n)
        ref = a[:s].cpu().to(torch.float64) @ b[:, :s].cpu().to(torch.float64)
        err = _rel_err(result[:s, :s], ref)
        del result
        timing, iterations = _timed(
            step,
            (device,),
            warmup=warmup,
            repeats=repeats,
            timeout_s=timeout_s,
            target_sample_s=target_sample_s,
        )
    flops = 2 * m * n * k
    tolerance = MATMUL_TOLERANCE[dtype]
    return MatmulResult(
        device=label(device),
        dtype=dtype,
        tf32_enabled=tf32_enabled and dtype in ("fp32", "tf32"),
        m=m,
        n=n,
        k=k,
        flops_per_matmul=flops,
        iterations_per_sample=iterations,
        tflops=rate(f"matmul_{dtype}", "TFLOP/s", timing, work=flops * iterations / 1e12),
        max_rel_err=err,
        tolerance=tolerance,
        correct=err <= tolerance,
    )


# --- copies ----------------------------------------------------------------------------------


def _random_int32(numel: int, device: torch.device, seed: int) -> torch.Tensor:
    return torch.randint(
        -(2**31), 2**31 - 1, (numel,), dtype=torch.int32, device=device, generator=_generator(device, seed)
    )


def device_copy_gb_s(
    device: torch.device | str,
    *,
    size_bytes: int = DEFAULT_COPY_BYTES,
    warmup: int = 3,
    repeats: int = 10,
    timeout_s: float = 120.0,
    target_sample_s: float = TARGET_SAMPLE_S,
    seed: int = 0,
) -> CopyResult:
    """dst.copy_(src) within one device; GB/s counts 2 x size_bytes per copy (read + write)."""
    device = torch.device(device)
    src = _random_int32(size_bytes // 4, device, seed)
    dst = torch.zeros_like(src)
    step = lambda: dst.copy_(src)  # noqa: E731
    timing, iterations = _timed(
        step, (device,), warmup=warmup, repeats=repeats, timeout_s=timeout_s, target_sample_s=target_sample_s
    )
    counted = 2 * src.numel() * 4
    return CopyResult(
        device=label(device),
        size_bytes=src.numel() * 4,
        bytes_counted_per_copy=counted,
        counting="read+write",
        iterations_per_sample=iterations,
        gb_s=rate("device_copy", "GB/s", timing, work=counted * iterations / 1e9),
        checksum_ok=_checksum(dst) == _checksum(src),
    )


def pinned_copy_gb_s(
    device: torch.device | str,
    *,
    size_bytes: int = DEFAULT_PINNED_BYTES,
    numa_node: int | None = None,
    warmup: int = 3,
    repeats: int = 10,
    timeout_s: float = 120.0,
    target_sample_s: float = TARGET_SAMPLE_S,
    seed: int = 0,
) -> HostCopyResult | ProbeSkip:
    """H2D and D2H copies from/to pinned host memory, GB/s per direction (bytes counted once).

    With numa_node, the calling thread is bound to that node's CPUs (those it may use) while it
    allocates and copies, so the host buffer is local to the node; the binding is undone
    afterwards. If the node has no CPU this process may use, nothing is bound and numa_node is
    recorded as None.
    """
    device = torch.device(device)
    if device.type != "cuda":
        return ProbeSkip(
            probe="pinned_copy",
            subject=label(device),
            reason="no GPU: pinned host memory and host<->device copies need a CUDA or ROCm device",
        )
    cpus = None
    if numa_node is not None:
        cpus = numa_cpus(numa_node) & os.sched_getaffinity(0)
        if not cpus:
            log.warning("none of NUMA node %d's CPUs is allowed to this process; not binding", numa_node)
            numa_node, cpus = None, None
    with _cpu_affinity(cpus):
        used = tuple(sorted(os.sched_getaffinity(0)))
        reference = torch.randint(
            0, 256, (size_bytes,), dtype=torch.uint8, device=device, generator=_generator(device, seed)
        )
        host = torch.empty(size_bytes, dtype=torch.uint8, pin_memory=True)
        back = torch.empty(size_bytes, dtype=torch.uint8, pin_memory=True)
        host.copy_(reference)
        on_device = torch.empty_like(reference)
        h2d = lambda: on_device.copy_(host, non_blocking=True)  # noqa: E731
        d2h = lambda: back.copy_(reference, non_blocking=True)  # noqa: E731
        kw: dict[str, Any] = {
            "warmup": warmup,
            "repeats": repeats,
            "timeout_s": timeout_s,
            "target_sample_s": target_sample_s,
        }
        t_h2d, n_h2d = _timed(h2d, (device,), **kw)
        t_d2h, n_d2h = _timed(d2h, (device,), **kw)
        expected = _checksum(reference)
        ok = _checksum(on_device) == expected and _checksum(back) == expected
    return HostCopyResult(
        device=label(device),
        host="host" if numa_node is None else f"cpu{numa_node}",
        numa_node=numa_node,
        cpus=used,
        size_bytes=size_bytes,
        iterations_per_sample=(n_h2d, n_d2h),
        h2d_gb_s=rate("h2d_pinned", "GB/s", t_h2d, work=size_bytes * n_h2d / 1e9),
        d2h_gb_s=rate("d2h_pinned", "GB/s", t_d2h, work=size_bytes * n_d2h / 1e9),
        checksum_ok=ok,
    )


def peer_copy_matrix(
    indices: Sequence[int] | None = None,
    *,
    size_bytes: int = DEFAULT_PEER_BYTES,
    warmup: int = 2,
    repeats: int = 5,
    timeout_s: float = 60.0,
    target_sample_s: float = TARGET_SAMPLE_S,
    seed: int = 0,
) -> PeerCopyMatrix:
    """Copy GPU i -> GPU j for every ordered pair (dst.copy_(src), peer access where the driver
    allows it); one LinkBandwidth per pair, bytes counted once per copy."""
    if indices is None:
        indices = tuple(range(torch.cuda.device_count())) if torch.cuda.is_available() else ()
    if len(indices) < 2:
        return PeerCopyMatrix(
            size_bytes=size_bytes,
            links=(),
            measurements=(),
            peer_access=(),
            checksum_ok=(),
            reason=f"peer copies need >= 2 GPUs, found {len(indices)}",
        )
    kw = {"warmup": warmup, "repeats": repeats, "timeout_s": timeout_s, "target_sample_s": target_sample_s}
    links, measurements, access, checks = [], [], [], []
    for i in indices:
        for j in indices:
            if i == j:
                continue
            m, ok = _peer_copy(i, j, size_bytes, seed, kw)
            measurements.append(m)
            links.append(LinkBandwidth(src=f"gpu{i}", dst=f"gpu{j}", gb_s=m.median or 0.0))
            access.append(torch.cuda.can_device_access_peer(i, j))
            checks.append(ok)
    return PeerCopyMatrix(
        size_bytes=size_bytes,
        links=tuple(links),
        measurements=tuple(measurements),
        peer_access=tuple(access),
        checksum_ok=tuple(checks),
        reason=None,
    )


def _peer_copy(i: int, j: int, size_bytes: int, seed: int, kw: dict[str, Any]) -> tuple[Measurement, bool]:
    src_dev, dst_dev = torch.device("cuda", i), torch.device("cuda", j)
    src = _random_int32(size_bytes // 4, src_dev, seed + i)
    dst = torch.zeros(src.numel(), dtype=torch.int32, device=dst_dev)
    timing, iterations = _timed(lambda: dst.copy_(src), (src_dev, dst_dev), **kw)
    m = rate(f"peer_copy_gpu{i}_gpu{j}", "GB/s", timing, work=src.numel() * 4 * iterations / 1e9)
    return m, _checksum(dst) == _checksum(src)


# --- conv2d ----------------------------------------------------------------------------------


def conv_library() -> str:
    if torch.version.hip:
        return "miopen"
    return "cudnn" if torch.cuda.is_available() else "cpu"


def conv2d_tflops(
    device: torch.device | str,
    shape: ConvShape,
    dtype: str,
    *,
    backward: bool = False,
    warmup: int = 3,
    repeats: int = 10,
    timeout_s: float = 120.0,
    target_sample_s: float = TARGET_SAMPLE_S,
    seed: int = 0,
) -> ConvResult:
    """conv2d through cuDNN / MIOpen with benchmark mode on (the autotuner picks the algorithm in
    warm-up), channels-last fp16/bf16 tensors. backward=True times forward + both gradients."""
    if dtype not in CONV_TOLERANCE:
        raise ValueError(f"conv2d dtype must be one of {', '.join(CONV_TOLERANCE)}, got {dtype!r}")
    device = torch.device(device)
    tdtype = _TORCH_DTYPE[dtype]
    gen = _generator(device, seed)
    x = torch.randn(shape.n, shape.c, shape.h, shape.w, device=device, generator=gen).to(
        dtype=tdtype, memory_format=torch.channels_last
    )
    w = torch.randn(shape.k, shape.c, shape.r, shape.s, device=device, generator=gen).to(
        dtype=tdtype, memory_format=torch.channels_last
    )
    conv = torch.nn.functional.conv2d
    with torch.backends.cudnn.flags(enabled=True, benchmark=True):
        # float64 reference on the CPU (MIOpen has no fp64 kernels; cuDNN none for fp64 NHWC)
        ref = conv(_cpu64(x[:1]), _cpu64(w), stride=shape.stride, padding=shape.pad)
        err = _rel_err(conv(x[:1], w, stride=shape.stride, padding=shape.pad), ref)
        if backward:
            x.requires_grad_(True)
            w.requires_grad_(True)
            grad_out = torch.randn(shape.n, shape.k, *shape.out_hw, device=device, generator=gen).to(
                dtype=tdtype, memory_format=torch.channels_last
            )

            def step() -> object:
                out = conv(x, w, stride=shape.stride, padding=shape.pad)
                return torch.autograd.grad(out, (x, w), grad_out)
        else:

            def step() -> object:
                with torch.no_grad():
                    return conv(x, w, stride=shape.stride, padding=shape.pad)

        timing, iterations = _timed(
            step,
            (device,),
            warmup=warmup,
            repeats=repeats,
            timeout_s=timeout_s,
            target_sample_s=target_sample_s,
        )
    flops = shape.forward_flops * (3 if backward else 1)
    direction = "fwd+bwd" if backward else "fwd"
    tolerance = CONV_TOLERANCE[dtype]
    return ConvResult(
        device=label(device),
        library=conv_library() if device.type == "cuda" else "cpu",
        shape=shape,
        dtype=dtype,
        direction=direction,
        flops_per_call=flops,
        iterations_per_sample=iterations,
        tflops=rate(f"conv2d_{shape.name}_{dtype}_{direction}", "TFLOP/s", timing, work=flops * iterations / 1e12),
        max_rel_err=err,
        tolerance=tolerance,
        correct=err <= tolerance,
    )
