"""All-reduce bus bandwidth through torch.distributed (NCCL on CUDA, RCCL on ROCm, gloo on CPU).

`allreduce_probe()` spawns one process per GPU (torch.multiprocessing, spawn start method) and
rendezvous through a file store in a private temporary directory (no port to collide on).
Inside an already-initialised process group (torchrun), call `sweep()` directly.

Figures follow nccl-tests (doc/PERFORMANCE.md): algbw = bytes / seconds per operation, and
busbw = algbw * 2(n-1)/n for all-reduce. Each sample runs a batch of in-place all-reduces on a
zero-filled buffer (zeros stay zeros, so nothing overflows) and ends with a device sync; its
time is the slowest rank's. After timing, every size is verified by value: rank r contributes
r + 1 everywhere, and every element must equal n(n+1)/2 on every rank.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import math
import os
import queue
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from validation.errors import ProbeError
from validation.probes.stats import Measurement, summarize

log = logging.getLogger(__name__)

# NVLink SHARP / multicast stays off unless a caller asks otherwise (the lent machine forbids it).
MULTICAST_OFF_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
DEFAULT_SIZES_BYTES = tuple(1 << p for p in range(20, 33, 2))  # 1 MiB .. 4 GiB, x4 steps
_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_POLL_S = 0.2
ResultQueue = Queue  # carries rank 0's tuple[AllReducePoint, ...] to the parent
_GRACE_S = 30.0  # process start (importing torch) and teardown, on top of the two timeouts


@dataclass(frozen=True, slots=True, kw_only=True)
class AllReducePoint:
    """One message size. seconds is per all-reduce; busbw_gb_s values = algbw values x bus_factor."""

    size_bytes: int
    dtype: str
    iterations_per_sample: int
    seconds: Measurement
    algbw_gb_s: Measurement
    busbw_gb_s: Measurement
    bus_factor: float  # 2(n-1)/n
    verified: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class AllReduceResult:
    backend: str  # torch.distributed backend: "nccl" (NCCL or RCCL) or "gloo"
    world_size: int
    points: tuple[AllReducePoint, ...]
    timed_out: bool
    reason: str | None  # why points is empty or short


def bus_factor(world_size: int) -> float:
    """nccl-tests' all-reduce correction: each byte crosses 2(n-1)/n links."""
    return 2 * (world_size - 1) / world_size


def sweep(
    sizes_bytes: Sequence[int],
    *,
    dtype: str = "fp32",
    device: torch.device,
    warmup: int = 5,
    repeats: int = 10,
    timeout_s: float = 60.0,
    target_sample_s: float = 0.05,
) -> tuple[AllReducePoint, ...]:
    """Time and verify all_reduce(SUM) over sizes_bytes in the current process group.

    Every rank must call this with the same arguments. The ranks agree after each sample on its
    time (the slowest rank's) and on whether the deadline has passed, so they always run the
    same collectives; after the deadline the sweep stops and the last point says timed_out.
    """
    world = dist.get_world_size()
    rank = dist.get_rank()
    deadline = time.monotonic() + timeout_s
    factor = bus_factor(world)
    points = []
    for size in sizes_bytes:
        numel = max(1, size // _element_size(dtype))
        buf = torch.zeros(numel, dtype=_DTYPES[dtype], device=device)
        iterations = _iterations(buf, device, target_sample_s)
        samples, timed_out = _samples(buf, device, iterations, warmup=warmup, repeats=repeats, deadline=deadline)
        per_op = [s / iterations for s in samples]
        nbytes = numel * buf.element_size()
        algbw = [nbytes / s / 1e9 for s in per_op]
        kw: dict[str, Any] = {"warmup": warmup, "repeats": repeats, "timed_out": timed_out}
        points.append(
            AllReducePoint(
                size_bytes=nbytes,
                dtype=dtype,
                iterations_per_sample=iterations,
                seconds=summarize("allreduce_seconds", "s", per_op, **kw),
                algbw_gb_s=summarize("allreduce_algbw", "GB/s", algbw, **kw),
                busbw_gb_s=summarize("allreduce_busbw", "GB/s", [a * factor for a in algbw], **kw),
                bus_factor=factor,
                verified=_verify(buf, rank, world, device),
            )
        )
        del buf
        if timed_out:
            log.warning("all-reduce sweep passed its %.0f s deadline at %d bytes", timeout_s, nbytes)
            break
    return tuple(points)


def allreduce_probe(
    world_size: int,
    *,
    sizes_bytes: Sequence[int] = DEFAULT_SIZES_BYTES,
    dtype: str = "fp32",
    backend: str | None = None,
    warmup: int = 5,
    repeats: int = 10,
    timeout_s: float = 300.0,
    init_timeout_s: float = 60.0,
    target_sample_s: float = 0.05,
    env: Mapping[str, str] = MULTICAST_OFF_ENV,
) -> AllReduceResult:
    """Spawn world_size processes (one per GPU, or CPU processes with gloo) and run `sweep`.

    backend: None picks "nccl" when GPUs exist (NCCL or RCCL), else "gloo". timeout_s bounds the
    whole run; on expiry every worker is killed and the result says timed_out. `env` is applied
    in each worker before the process group starts (the parent's environment is untouched).
    """
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl" and torch.cuda.device_count() < world_size:
        return AllReduceResult(
            backend=backend,
            world_size=world_size,
            points=(),
            timed_out=False,
            reason=f"{world_size} ranks need {world_size} GPUs, found {torch.cuda.device_count()}",
        )
    if world_size < 2:
        return AllReduceResult(
            backend=backend,
            world_size=world_size,
            points=(),
            timed_out=False,
            reason="all-reduce needs >= 2 ranks (bus bandwidth is 0 for one)",
        )
    config = {
        "backend": backend,
        "sizes_bytes": tuple(sizes_bytes),
        "dtype": dtype,
        "warmup": warmup,
        "repeats": repeats,
        "timeout_s": timeout_s,
        "init_timeout_s": init_timeout_s,
        "target_sample_s": target_sample_s,
        "env": dict(env),
    }
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory(prefix="rf-allreduce-") as tmp:
        init_method = (Path(tmp) / "store").as_uri()
        procs = mp.start_processes(
            _worker,
            args=(world_size, init_method, config, results),
            nprocs=world_size,
            join=False,
            start_method="spawn",
        )
        limit_s = init_timeout_s + timeout_s + _GRACE_S
        points, killed = _collect(procs, results, deadline=time.monotonic() + limit_s)
    timed_out = killed or any(p.seconds.timed_out for p in points)
    reason = None
    if killed:
        reason = f"workers did not finish within {limit_s:.0f} s and were killed"
    elif timed_out:
        reason = f"the sweep passed its {timeout_s:.0f} s deadline after {len(points)} sizes"
    return AllReduceResult(backend=backend, world_size=world_size, points=points, timed_out=timed_out, reason=reason)


def _collect(
    procs: mp.ProcessContext, results: ResultQueue, *, deadline: float
) -> tuple[tuple[AllReducePoint, ...], bool]:
    points: tuple[AllReducePoint, ...] = ()
    try:
        while True:
            with contextlib.suppress(queue.Empty):
                points = results.get(timeout=_POLL_S)
            if procs.join(timeout=_POLL_S):
                break
            if time.monotonic() > deadline:
                log.warning("all-reduce workers ran past their deadline; killing them")
                _kill(procs)
                return points, True
    except mp.ProcessRaisedException as exc:
        _kill(procs)
        raise ProbeError(f"an all-reduce worker failed: {exc}") from exc
    except mp.ProcessExitedException as exc:
        _kill(procs)
        raise ProbeError(f"an all-reduce worker died (exit code {exc.exit_code})") from exc
    if not points:
        try:
            points = results.get(timeout=_POLL_S)
        except queue.Empty:
            raise ProbeError("all-reduce workers exited without a result") from None
    return points, False


def _kill(procs: mp.ProcessContext) -> None:
    for proc in procs.processes:
        if proc.is_alive():
            proc.kill()
        proc.join(5)


def _worker(rank: int, world_size: int, init_method: str, config: dict[str, Any], results: ResultQueue) -> None:
    os.environ.update(config["env"])
    if config["backend"] == "nccl":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(
        config["backend"],
        init_method=init_method,
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=config["init_timeout_s"]),
    )
    try:
        points = sweep(
            config["sizes_bytes"],
            dtype=config["dtype"],
            device=device,
            warmup=config["warmup"],
            repeats=config["repeats"],
            timeout_s=config["timeout_s"],
            target_sample_s=config["target_sample_s"],
        )
        if rank == 0:
            results.put(points)
    finally:
        dist.destroy_process_group()


def _element_size(dtype: str) -> int:
    return torch.empty((), dtype=_DTYPES[dtype]).element_size()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _agree(elapsed_s: float, late: bool, device: torch.device) -> tuple[float, bool]:
    """Slowest rank's time, and whether any rank is past its deadline (one collective)."""
    t = torch.tensor([elapsed_s, 1.0 if late else 0.0], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t[0].item()), bool(t[1].item())


def _run_batch(buf: torch.Tensor, device: torch.device, iterations: int) -> float:
    start = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(buf)
    _sync(device)
    return time.perf_counter() - start


def _samples(
    buf: torch.Tensor, device: torch.device, iterations: int, *, warmup: int, repeats: int, deadline: float
) -> tuple[list[float], bool]:
    samples: list[float] = []
    for i in range(warmup + repeats):
        elapsed, late = _agree(_run_batch(buf, device, iterations), time.monotonic() > deadline, device)
        if i >= warmup:
            samples.append(elapsed)
        if late:
            return samples, True
    return samples, False


def _iterations(buf: torch.Tensor, device: torch.device, target_s: float) -> int:
    _run_batch(buf, device, 1)
    elapsed, _ = _agree(_run_batch(buf, device, 1), False, device)
    return max(1, min(1000, math.ceil(target_s / max(elapsed, 1e-9))))


def _verify(buf: torch.Tensor, rank: int, world: int, device: torch.device) -> bool:
    buf.fill_(rank + 1)
    dist.all_reduce(buf)
    ok = torch.tensor([1 if bool((buf == world * (world + 1) // 2).all()) else 0], device=device)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    return bool(ok.item())
