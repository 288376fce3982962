"""ResNet-50 inference benchmark, the bf16 matmul ceiling and scaling in one run; JSON + a table.

Run from the repository root (PyTorch needed; torchvision only for the cross-check):

    python3 -m bench.h200_model                       # a GPU; writes $OUT/h200_model.json (or ./)
    python3 -m bench.h200_model --cpu-smoke           # CPU code-path run at tiny sizes

What it measures, with the library the suite uses (validation/probes/model_bench.py, scaling.py,
torch_probes.py):

1. the bf16 matmul at 8192^3: the ceiling (best of 30 samples) and the probe as the suite runs
   it (median of 10), so the model figures sit next to the GEMM ceiling of the same run;
2. the model sweep on the first GPU: bf16, fp16, fp32 (TF32 off) and int8 (a recorded skip),
   eager and CUDA-graph modes, batches 1, 32, 128, 256, channels-last, 224x224;
3. a cross-check against torchvision.models.resnet50(weights=None) at batch 256 bf16 eager:
   our weights are loaded into torchvision's model (strict, so names and shapes must match), its
   logits are checked against the same float64 reference, and the throughput ratio is reported;
4. scaling of the bf16 matmul and the bf16 graph-mode model over 1, 2, 4, 8 GPUs (only N=1
   on a one-GPU machine; the rest is recorded as skipped with the reason).

The JSON is rewritten after every result, so an interrupted run leaves what it measured.
Budget: about 3 minutes of GPU time on one H200 (estimated; not yet measured there).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from validation.probes import model_bench, scaling, torch_probes
from validation.probes.resnet import resnet50
from validation.records import to_jsonable

log = logging.getLogger("bench.h200_model")

GPU_PLAN = model_bench.SweepPlan(batches=(1, 32, 128, 256), dtypes=("bf16", "fp16", "fp32", "int8"),
                                 modes=("eager", "graph"), latency_repeats=100, latency_budget_s=1.5)
SMOKE_PLAN = dataclasses.replace(model_bench.TINY_PLAN, dtypes=("bf16", "fp32", "int8"))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m bench.h200_model", description=__doc__.split("\n\n")[0])
    p.add_argument("--out-dir", type=Path, default=Path(os.environ.get("OUT", ".")),
                   help="where h200_model.json goes (default: $OUT, else the current directory)")
    p.add_argument("--cpu-smoke", action="store_true", help="tiny sizes on the CPU: proves the code path only")
    p.add_argument("--gpu", type=int, default=0, help="GPU index for the sweep and cross-check (default 0)")
    p.add_argument("--no-scaling", action="store_true", help="leave out the 1/2/4/8-GPU scaling runs")
    p.add_argument("--compile", action="store_true",
                   help="also time torch.compile at batch 256 bf16 (adds about a minute of compilation)")
    return p.parse_args(argv)


class Doc:
    """The JSON document, rewritten atomically after every addition."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self.data: dict[str, Any] = {"schema_version": 1, "kind": "rocm-fleet-model-bench", **header,
                                     "matmul": None, "model": [], "cross_check": None, "scaling": [],
                                     "seconds": None, "complete": False}
        self.write()

    def set(self, key: str, value: Any) -> None:
        self.data[key] = to_jsonable(value)
        self.write()

    def append(self, key: str, value: Any) -> None:
        self.data[key].append(to_jsonable(value))
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        tmp.replace(self.path)


def matmul_figures(device: torch.device, smoke: bool) -> dict[str, Any]:
    size, kw = (64, {"target_sample_s": 0.002}) if smoke else (8192, {"target_sample_s": 0.1})
    ceiling = torch_probes.matmul_tflops(device, "bf16", size=size, repeats=5 if smoke else 30, **kw)
    probe = torch_probes.matmul_tflops(device, "bf16", size=size, repeats=3 if smoke else 10, **kw)
    return {"size": size, "ceiling_tflops": ceiling.tflops.best, "probe_median_tflops": probe.tflops.median,
            "probe_spread_pct": probe.tflops.spread_pct, "correct": ceiling.correct and probe.correct,
            "ceiling": ceiling, "probe": probe}


def cross_check(device: torch.device, plan: model_bench.SweepPlan, batch: int) -> dict[str, Any]:
    """Our ResNet-50 vs torchvision's with the same weights: logits and throughput."""
    try:
        import torchvision
    except ImportError as exc:
        return {"skipped": f"torchvision is not installed ({exc})"}
    ours = resnet50(0)
    theirs = torchvision.models.resnet50(weights=None)
    theirs.load_state_dict(ours.state_dict(), strict=True)
    reference = model_bench.make_reference(ours, plan.image_size)
    kw = {"mode": "eager", "reference": reference, "image_size": plan.image_size, "latency_repeats": 20,
          "warmup": plan.warmup, "repeats": plan.repeats, "target_sample_s": plan.target_sample_s}
    a = model_bench.resnet50_inference(device, "bf16", batch, model=ours, **kw)
    b = model_bench.resnet50_inference(device, "bf16", batch, model=theirs, **kw)
    ratio = a.images_s.median / b.images_s.median if a.images_s.median and b.images_s.median else None
    return {"torchvision": torchvision.__version__, "dtype": "bf16", "mode": "eager", "batch": batch,
            "ours_images_s": a.images_s.median, "torchvision_images_s": b.images_s.median, "ratio": ratio,
            "ours_correct": a.correct, "torchvision_correct": b.correct, "ours": a, "torchvision_result": b}


def run_scaling(doc: Doc, smoke: bool) -> None:
    if smoke:
        devices: list[str] = ["cpu"]
        loads = [scaling.Workload(probe="matmul", dtype="fp32", size=64, warmup=1, repeats=3, target_sample_s=0.002,
                                  filler_size=32)]
    else:
        devices = [f"cuda:{i}" for i in range(torch.cuda.device_count())]
        loads = [scaling.Workload(probe="matmul", dtype="bf16", size=8192),
                 scaling.Workload(probe="resnet50", dtype="bf16", batch=256, mode="graph")]
    for w in loads:
        doc.append("scaling", scaling.scaling(w, devices))


def table(doc: dict[str, Any]) -> str:
    lines = [f"{'dtype':<6}{'mode':<7}{'batch':>6}{'images/s':>11}{'spread%':>9}{'p50 ms':>9}{'p99 ms':>9}"
             f"{'MiB':>9}  check"]
    for r in doc["model"]:
        if "reason" in r:
            lines.append(f"skip  {r['subject']}: {r['reason'][:90]}")
            continue
        lines.append(f"{r['dtype']:<6}{r['mode']:<7}{r['batch']:>6}{_n(r['images_s']['median']):>11}"
                     f"{_n(r['images_s']['spread_pct'], '.1f'):>9}{_n(r['latency_p50_ms'], '.3f'):>9}"
                     f"{_n(r['latency_p99_ms'], '.3f'):>9}{_n(r['peak_memory_mib'], '.0f'):>9}  "
                     f"{'ok' if r['correct'] else 'WRONG ' + format(r['max_rel_err'], '.3g')}")
    m = doc["matmul"]
    if m:
        lines.append(f"matmul bf16 {m['size']}^3: ceiling {_n(m['ceiling_tflops'])} TFLOP/s, probe median "
                     f"{_n(m['probe_median_tflops'])} (spread {_n(m['probe_spread_pct'], '.1f')}%), "
                     f"{'ok' if m['correct'] else 'WRONG'}")
    c = doc["cross_check"]
    if c:
        lines.append(f"cross-check: {c['skipped']}" if "skipped" in c else
                     f"cross-check b{c['batch']} bf16 eager: ours {_n(c['ours_images_s'])} vs torchvision "
                     f"{c['torchvision']} {_n(c['torchvision_images_s'])} images/s, ratio {_n(c['ratio'], '.3f')}, "
                     f"logits {'ok' if c['ours_correct'] and c['torchvision_correct'] else 'DIFFER'}")
    for s in doc["scaling"]:
        for p in s["points"]:
            if p["reason"]:
                lines.append(f"scaling {s['workload']} N={p['n_gpus']}: skipped, {p['reason']}")
            else:
                eff = "—" if p["efficiency"] is None else f"{p['efficiency'] * 100:.1f}%"
                per = " ".join(f"{f['gpu']}={_n(f['value'])}" for f in p["figures"])
                lines.append(f"scaling {s['workload']} N={p['n_gpus']}: {per} {s['unit']}, efficiency {eff}")
        lines += [f"scaling {s['workload']}: SLOW {msg}" for msg in _slow_messages(s)]
    return "\n".join(lines)


def _slow_messages(s: dict[str, Any]) -> list[str]:
    return [scaling.describe_slowdown(scaling.Slowdown(**x), s["unit"]) for x in s["slow"]]


def _n(value: float | None, fmt: str = ".4g") -> str:
    return "—" if value is None else format(value, fmt)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if not args.cpu_smoke and not torch.cuda.is_available():
        print("no GPU visible to PyTorch; use --cpu-smoke for a CPU code-path run", file=sys.stderr)
        return 2
    device = torch.device("cpu") if args.cpu_smoke else torch.device("cuda", args.gpu)
    plan = SMOKE_PLAN if args.cpu_smoke else GPU_PLAN
    args.out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    doc = Doc(args.out_dir / "h200_model.json", {
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "argv": list(sys.argv if argv is None else argv),
        "device": to_jsonable(torch_probes.describe(device)),
        "gpu_count": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "plan": to_jsonable(plan),
    })
    doc.set("matmul", matmul_figures(device, args.cpu_smoke))
    model_bench.sweep(device, plan, on_result=lambda r: doc.append("model", r))
    if args.compile and not args.cpu_smoke:
        doc.append("model", model_bench.resnet50_inference(device, "bf16", 256, mode="compile", latency_repeats=50))
    doc.set("cross_check", cross_check(device, plan, 2 if args.cpu_smoke else 256))
    if not args.no_scaling:
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the workers need the memory this process cached
        run_scaling(doc, args.cpu_smoke)
    doc.data["seconds"] = round(time.monotonic() - t0, 1)
    doc.data["complete"] = True
    doc.write()
    wrong = [r for r in doc.data["model"] if r.get("correct") is False]
    print(f"wrote {doc.path} in {doc.data['seconds']} s")
    print(table(doc.data))
    return 1 if wrong or not doc.data["matmul"]["correct"] else 0


if __name__ == "__main__":
    sys.exit(main())
