"""Measure a GPU's ceilings and the portable probes in one run; write JSON and a Markdown table.

Run from the repository root (no install needed beyond PyTorch):

    python -m bench.h200_probes --json h200.json --markdown h200.md        # a real GPU
    python -m bench.h200_probes --tiny --json t.json --markdown t.md       # CPU smoke run

Ceilings come first: the same PyTorch library, run longer, best sample wins (bf16/fp16/... matmul
at 8192^3 on random data, a 4 GiB device-to-device copy counting bytes read + written, pinned
1 GiB H2D/D2H, each conv2d layer, all-reduce and peer copies where >= 2 GPUs exist). Then every
probe runs as the suite runs it (warm-up 3, repeats 10, median). Each row gives the probe's
median, the ceiling, their ratio and the spread over repeats; the goal is ratio >= 0.95 and
spread <= 2 %. Nothing here judges a node: this only shows that the probes measure what the
hardware can do. Multicast/NVLS stays off (NCCL_NVLS_ENABLE=0 and friends).
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from validation.errors import ParseError, ProbeError
from validation.probes import hip_probe, torch_allreduce, torch_probes
from validation.probes.stats import Measurement
from validation.records import to_jsonable

log = logging.getLogger("bench.h200_probes")

GOAL_RATIO = 0.95
GOAL_SPREAD_PCT = 2.0
TINY_CONV = (torch_probes.ConvShape(name="tiny_3x3", n=2, c=8, h=8, w=8, k=8, r=3, s=3, pad=1),)


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Sizes and repeat counts for one run."""

    matmul_size: int
    copy_bytes: int
    pinned_bytes: int
    peer_bytes: int
    conv_shapes: tuple[torch_probes.ConvShape, ...]
    allreduce_sizes: tuple[int, ...]
    warmup: int
    repeats: int
    ceiling_repeats: int
    target_sample_s: float


def plan_for(args: argparse.Namespace) -> Plan:
    if args.tiny:
        return Plan(
            matmul_size=64,
            copy_bytes=1 << 20,
            pinned_bytes=1 << 20,
            peer_bytes=1 << 20,
            conv_shapes=TINY_CONV,
            allreduce_sizes=(1 << 10, 1 << 16),
            warmup=1,
            repeats=3,
            ceiling_repeats=5,
            target_sample_s=0.002,
        )
    return Plan(
        matmul_size=args.matmul_size,
        copy_bytes=torch_probes.DEFAULT_COPY_BYTES,
        pinned_bytes=torch_probes.DEFAULT_PINNED_BYTES,
        peer_bytes=torch_probes.DEFAULT_PEER_BYTES,
        conv_shapes=torch_probes.RESNET50_SHAPES,
        allreduce_sizes=torch_allreduce.DEFAULT_SIZES_BYTES,
        warmup=3,
        repeats=args.repeats,
        ceiling_repeats=args.ceiling_repeats,
        target_sample_s=args.sample_ms / 1000,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    probe: str
    subject: str
    unit: str
    median: float | None
    ceiling: float | None
    ratio: float | None
    spread_pct: float | None
    samples: int
    check: str  # "ok", "FAILED" or "-" (the probe has no self-check)
    goal_met: bool | None
    note: str = ""


@dataclass(slots=True)
class Report:
    rows: list[Row] = field(default_factory=list)
    skips: list[torch_probes.ProbeSkip] = field(default_factory=list)
    ceilings: list[Any] = field(default_factory=list)
    probes: list[Any] = field(default_factory=list)
    hip: Any = None

    def add(
        self,
        probe: str,
        subject: str,
        measured: Measurement,
        ceiling: Measurement | None,
        check: bool | None,
        note: str = "",
    ) -> None:
        best = ceiling.best if ceiling is not None else None
        ratio = measured.median / best if measured.median is not None and best else None
        goal = None
        if ratio is not None and measured.spread_pct is not None:
            goal = ratio >= GOAL_RATIO and measured.spread_pct <= GOAL_SPREAD_PCT
        self.rows.append(
            Row(
                probe=probe,
                subject=subject,
                unit=measured.unit,
                median=measured.median,
                ceiling=best,
                ratio=ratio,
                spread_pct=measured.spread_pct,
                samples=len(measured.values),
                check="-" if check is None else ("ok" if check else "FAILED"),
                goal_met=goal,
                note=note,
            )
        )


def _twice(report: Report, probe: Callable[..., Any], plan: Plan, **kwargs: Any) -> tuple[Any, Any]:
    """Run a probe as the ceiling (more repeats, best sample) and then as the suite runs it."""
    ceiling = probe(warmup=plan.warmup, repeats=plan.ceiling_repeats, target_sample_s=plan.target_sample_s, **kwargs)
    measured = probe(warmup=plan.warmup, repeats=plan.repeats, target_sample_s=plan.target_sample_s, **kwargs)
    report.ceilings.append(ceiling)
    report.probes.append(measured)
    return ceiling, measured


def run_gpu(report: Report, device: torch.device, plan: Plan) -> None:
    subject = torch_probes.label(device)
    for dtype in torch_probes.MATMUL_DTYPES:
        log.info("%s matmul %s", subject, dtype)
        ceiling, measured = _twice(
            report, torch_probes.matmul_tflops, plan, device=device, dtype=dtype, size=plan.matmul_size
        )
        if isinstance(measured, torch_probes.ProbeSkip):
            report.skips.append(measured)
            continue
        report.add(
            f"matmul {dtype} {plan.matmul_size}^3",
            subject,
            measured.tflops,
            ceiling.tflops,
            measured.correct and ceiling.correct,
            note=f"max rel err {measured.max_rel_err:.1e}",
        )
    log.info("%s device copy", subject)
    ceiling, measured = _twice(report, torch_probes.device_copy_gb_s, plan, device=device, size_bytes=plan.copy_bytes)
    report.add(
        f"device copy {_size(plan.copy_bytes)} (read+write)",
        subject,
        measured.gb_s,
        ceiling.gb_s,
        measured.checksum_ok and ceiling.checksum_ok,
    )
    log.info("%s pinned host copies", subject)
    numa = _numa_node(device)
    ceiling, measured = _twice(
        report,
        torch_probes.pinned_copy_gb_s,
        plan,
        device=device,
        size_bytes=plan.pinned_bytes,
        numa_node=numa,
    )
    if isinstance(measured, torch_probes.ProbeSkip):
        report.skips.append(measured)
    else:
        note = f"NUMA node {numa}" if numa is not None else "no NUMA binding"
        check = measured.checksum_ok and ceiling.checksum_ok
        report.add(
            f"pinned H2D {_size(plan.pinned_bytes)}",
            subject,
            measured.h2d_gb_s,
            ceiling.h2d_gb_s,
            check,
            note,
        )
        report.add(
            f"pinned D2H {_size(plan.pinned_bytes)}",
            subject,
            measured.d2h_gb_s,
            ceiling.d2h_gb_s,
            check,
            note,
        )
    for shape in plan.conv_shapes:
        for dtype in ("bf16", "fp16"):
            for backward in (False, True):
                log.info("%s conv2d %s %s backward=%s", subject, shape.name, dtype, backward)
                ceiling, measured = _twice(
                    report,
                    torch_probes.conv2d_tflops,
                    plan,
                    device=device,
                    shape=shape,
                    dtype=dtype,
                    backward=backward,
                )
                report.add(
                    f"conv2d {shape.name} {dtype} {measured.direction}",
                    subject,
                    measured.tflops,
                    ceiling.tflops,
                    measured.correct and ceiling.correct,
                    note=f"{measured.library}, max rel err {measured.max_rel_err:.1e}",
                )


def run_allreduce(report: Report, plan: Plan, world_size: int) -> None:
    if world_size >= 2:
        log.info("all-reduce over %d ranks", world_size)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # hand the earlier probes' cached blocks back before the ranks start
        kw = {
            "sizes_bytes": plan.allreduce_sizes,
            "warmup": plan.warmup,
            "target_sample_s": plan.target_sample_s,
        }
        ceiling = torch_allreduce.allreduce_probe(world_size, repeats=plan.ceiling_repeats, **kw)
        measured = torch_allreduce.allreduce_probe(world_size, repeats=plan.repeats, **kw)
        report.ceilings.append(ceiling)
        report.probes.append(measured)
        if measured.reason:
            report.skips.append(
                torch_probes.ProbeSkip(probe="allreduce", subject=f"{world_size} ranks", reason=measured.reason)
            )
        best = {p.size_bytes: p.busbw_gb_s for p in ceiling.points}
        for point in measured.points:
            report.add(
                f"all-reduce {measured.backend} {point.dtype} {_size(point.size_bytes)} busbw",
                f"{world_size} ranks",
                point.busbw_gb_s,
                best.get(point.size_bytes),
                point.verified,
                note=f"factor 2(n-1)/n = {point.bus_factor:g}",
            )
    else:
        report.skips.append(
            torch_probes.ProbeSkip(probe="allreduce", subject="all GPUs", reason=f"needs >= 2 ranks, have {world_size}")
        )


def run_peer(report: Report, plan: Plan) -> None:
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    kw = {"size_bytes": plan.peer_bytes, "warmup": plan.warmup, "target_sample_s": plan.target_sample_s}
    ceiling = torch_probes.peer_copy_matrix(repeats=plan.ceiling_repeats, **kw) if gpus >= 2 else None
    measured = torch_probes.peer_copy_matrix(repeats=plan.repeats, **kw)
    if measured.reason:
        report.skips.append(torch_probes.ProbeSkip(probe="peer_copy", subject="all GPU pairs", reason=measured.reason))
        return
    report.ceilings.append(ceiling)
    report.probes.append(measured)
    assert ceiling is not None
    for i, link in enumerate(measured.links):
        report.add(
            f"peer copy {_size(plan.peer_bytes)}",
            f"{link.src}->{link.dst}",
            measured.measurements[i],
            ceiling.measurements[i],
            measured.checksum_ok[i],
            note="peer access" if measured.peer_access[i] else "no peer access (staged)",
        )


def run_hip(report: Report, device: torch.device) -> None:
    """Build the HIP kernel with the platform's compiler (nvcc under a CUDA build of PyTorch,
    hipcc under ROCm, whichever exists on a CPU-only host) for the GPU found, and run it."""
    wanted = {"cuda": "nvcc", "rocm": "hipcc"}.get(torch_probes.backend())
    compiler = wanted if wanted and hip_probe.which(wanted) else hip_probe.pick_compiler()
    if compiler is None:
        report.skips.append(
            torch_probes.ProbeSkip(probe="hip", subject="all GPUs", reason="neither hipcc nor nvcc on PATH")
        )
        return
    cuda_arch, offload_arch = None, hip_probe.DEFAULT_OFFLOAD_ARCH
    if device.type == "cuda" and torch.version.hip:
        arch = getattr(torch.cuda.get_device_properties(device), "gcnArchName", "")
        offload_arch = arch.split(":")[0] or offload_arch
    elif device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        cuda_arch = f"sm_{major}{minor}"
    log.info("HIP probe through %s", compiler)
    try:
        report.hip = hip_probe.hip_probe(compiler=compiler, cuda_arch=cuda_arch, offload_arch=offload_arch)
    except (ProbeError, ParseError) as exc:
        report.skips.append(torch_probes.ProbeSkip(probe="hip", subject="all GPUs", reason=str(exc)))


def _numa_node(device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    node = torch_probes.gpu_numa_node(torch_probes.gpu_index(device))
    if node is None:
        return None
    try:
        torch_probes.numa_cpus(node)
    except OSError:
        return None
    return node


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if abs(value) >= 0.1 or value == 0 else f"{value:.3g}"


def burst_matmul_tflops(device: torch.device, size: int = 8192, dtype: torch.dtype = torch.bfloat16) -> float | None:
    """Context figure measured the way KINDS.md did: 3 warm-ups, then the mean of 10 single
    products timed with CUDA events, on random data. Short bursts run before power management
    lowers the clock, so this is higher than any sustained rate."""
    if device.type != "cuda":
        return None
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize(device)
    times = []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return 2 * size**3 / (sum(times) / len(times)) / 1e12


def markdown(report: Report, header: dict[str, Any]) -> str:
    dev, plan = header["device"], header["plan"]
    runtime = f"{dev['backend']} {dev['runtime_version'] or ''}".strip()
    lines = [
        f"# Portable probes against ceilings: {dev['name']}",
        "",
        f"- Started {header['started']}, {header['seconds']:.0f} s in all; torch {dev['torch_version']} ({runtime}).",
        f"- Ceiling = best sample of {plan['ceiling_repeats']} repeats; probe = median of {plan['repeats']} "
        f"repeats (warm-up {plan['warmup']}); each sample is about "
        f"{plan['target_sample_s'] * 1000:g} ms of work.",
        f"- Goal: ratio >= {GOAL_RATIO} and spread <= {GOAL_SPREAD_PCT:g} %; spread = (max - min) / median.",
        "",
        "| probe | subject | unit | probe median | ceiling (best) | ratio | spread % | n | check | goal | note |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for r in report.rows:
        goal = "-" if r.goal_met is None else ("yes" if r.goal_met else "NO")
        lines.append(
            f"| {r.probe} | {r.subject} | {r.unit} | {_fmt(r.median)} | {_fmt(r.ceiling)} | "
            f"{_fmt(r.ratio, 3)} | {_fmt(r.spread_pct, 2)} | {r.samples} | {r.check} | {goal} | {r.note} |"
        )
    burst = header.get("burst_bf16_tflops")
    if burst is not None:
        lines += ["", "## Context", "",
                  f"- bf16 8192^3 burst (3 warm-ups, mean of 10 single products, CUDA events): {burst:.1f} TFLOP/s. "
                  "Sustained samples run lower once power management settles the clock; the table's ceiling is "
                  "the best sustained sample of the same library."]
    if report.hip is not None:
        lines += ["", "## HIP kernel probe", ""]
        hip = report.hip
        lines.append(f"- Built with `{' '.join(hip.build.argv)}` in {hip.build.seconds:.1f} s (rc {hip.build.rc}).")
        if hip.output is not None:
            out = hip.output
            lines.append(
                f"- Platform {out.platform}: {out.devices} devices, {out.ok} ok, {out.failed} failed"
                + (f" ({out.error})" if out.error else "")
                + "."
            )
            for g in out.gpus:
                lines.append(
                    f"  - gpu{g.gpu} {g.name or ''} {g.arch or ''}: {g.result}, "
                    f"max_abs_err {g.max_abs_err}, sum_err {g.sum_err}, kernel {g.kernel_ms} ms"
                )
        if hip.reason:
            lines.append(f"- {hip.reason}")
    if report.skips:
        lines += ["", "## Skipped", ""]
        lines += [f"- {s.probe} ({s.subject}): {s.reason}" for s in report.skips]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.h200_probes", description=__doc__.split("\n")[0])
    p.add_argument("--json", type=Path, required=True, help="write the full records here")
    p.add_argument("--markdown", type=Path, required=True, help="write the summary table here")
    p.add_argument("--tiny", action="store_true", help="tiny sizes; runs on CPU (a smoke test)")
    p.add_argument("--gpus", type=int, nargs="*", help="GPU indices for per-GPU probes (default: all)")
    p.add_argument("--matmul-size", type=int, default=torch_probes.DEFAULT_MATMUL_SIZE)
    p.add_argument("--repeats", type=int, default=10, help="probe repeats (as the suite runs them)")
    p.add_argument("--ceiling-repeats", type=int, default=30, help="repeats for the best-of ceiling")
    p.add_argument("--sample-ms", type=float, default=100.0, help="work per timed sample, in ms")
    p.add_argument("--skip-hip", action="store_true", help="do not compile and run the HIP kernel probe")
    p.add_argument("--skip-allreduce", action="store_true", help="do not spawn all-reduce ranks")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for key, value in torch_allreduce.MULTICAST_OFF_ENV.items():
        os.environ.setdefault(key, value)
    gpus = torch_probes.gpu_devices()
    if not gpus and not args.tiny:
        print("no GPU visible to PyTorch; use --tiny for a CPU smoke run", file=sys.stderr)
        return 2
    devices = [d for d in gpus if args.gpus is None or d.index in args.gpus] or [torch.device("cpu")]
    plan = plan_for(args)
    started, t0 = datetime.datetime.now(datetime.UTC), time.monotonic()
    report = Report()
    for device in devices:
        run_gpu(report, device, plan)
    if not args.skip_allreduce:
        run_allreduce(report, plan, world_size=len(gpus) if gpus else 2)
    run_peer(report, plan)
    burst = burst_matmul_tflops(devices[0]) if not args.tiny else None
    if not args.skip_hip:
        run_hip(report, devices[0])
    header = {
        "started": started.isoformat(timespec="seconds"),
        "seconds": time.monotonic() - t0,
        "device": to_jsonable(torch_probes.describe(devices[0])),
        "plan": to_jsonable(plan),
        "argv": list(sys.argv if argv is None else argv),
        "env": {k: os.environ.get(k) for k in torch_allreduce.MULTICAST_OFF_ENV},
        "burst_bf16_tflops": burst,
    }
    doc = {
        "schema_version": 1,
        "kind": "rocm-fleet-probe-bench",
        **header,
        "rows": to_jsonable(report.rows),
        "skips": to_jsonable(report.skips),
        "ceilings": to_jsonable(report.ceilings),
        "probes": to_jsonable(report.probes),
        "hip": to_jsonable(report.hip),
    }
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    args.markdown.write_text(markdown(report, header))
    failed = [f"{r.probe} {r.subject}" for r in report.rows if r.check == "FAILED"]
    hip = report.hip
    if hip is not None and hip.output is None:
        failed.append(f"HIP probe: {hip.reason}")
    elif hip is not None and (hip.output.failed or (gpus and hip.output.devices == 0)):
        failed.append(f"HIP probe: {hip.output.failed} of {hip.output.devices} GPUs failed ({hip.output.error})")
    print(
        f"{len(report.rows)} rows, {len(failed)} failed self-checks, {len(report.skips)} skipped; "
        f"wrote {args.json} and {args.markdown}"
    )
    for line in failed:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
