"""What a run inside its own PID namespace can see of a neighbour on its GPU (issue 41), on the lent GPU.

Run as root on the GPU machine from the repository root (it uses `unshare --pid --fork --mount-proc`, as
a container's runtime does); prints one JSON document and writes it to --out:

    python3 -m bench.neighbour_facts --out DIR/facts.json

- `process_views`: `nvidia-smi --query-compute-apps` (and NVML's running-process list where the
  nvidia-ml-py package is importable) outside and inside a new PID namespace, with a load outside
  the namespace, then with the load inside it.
- `memory_drift`: one process's device memory in use (cudaMemGetInfo) less what its caching allocator
  reserves (`torch.cuda.memory_reserved`), after its context is made and after each kind of work a
  probe does; what a neighbour-by-memory rule must tolerate of the run's own memory outside the
  allocator (its context, lazily loaded kernels, library handles).
- `utilization_tail`: after a matmul load stops, how long `utilization.gpu` and `power.draw` take to
  fall back (sampled every 0.1 s): how soon after the run's own work a quiet moment can be read.
- `watcher_interference`: 200 pinned host->device copies of 1 GiB, timed one by one, alone, beside
  the watcher's two nvidia-smi views once a second (as validation/probes/watch_sampler.py runs them),
  and beside the same queries through one NVML handle kept open (nvidia-ml-py): does the watcher's own
  tool slow the run's samples (the false RF-PROBE-UNSTABLE of docs/measurements/h100-2026-12-07-pm.md)?
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

LOAD = """
import os, sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
print("load pid", os.getpid(), flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20): a @ b
    torch.cuda.synchronize()
"""

VIEWS = r"""
import json, os, subprocess
out = {"pid_namespace": os.readlink("/proc/self/ns/pid"), "my_pid": os.getpid()}
q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                   capture_output=True, text=True)
out["compute_apps"] = q.stdout.strip().splitlines()
q = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used,power.draw", "--format=csv,noheader"],
                   capture_output=True, text=True)
out["gpu"] = q.stdout.strip()
try:
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    out["nvml_compute"] = [{"pid": p.pid, "used": p.usedGpuMemory}
                           for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]
    try:
        out["nvml_process_util"] = [{"pid": s.pid, "sm": s.smUtil, "mem": s.memUtil}
                                    for s in pynvml.nvmlDeviceGetProcessUtilization(h, 0)]
    except pynvml.NVMLError as exc:
        out["nvml_process_util"] = f"error: {exc}"
    pynvml.nvmlShutdown()
except ImportError:
    out["nvml"] = "nvidia-ml-py not importable"
print(json.dumps(out))
"""

DRIFT = r"""
import json, time, torch
def mib(x): return round(x / 2**20, 1)
def state(what):
    free, total = torch.cuda.mem_get_info(0)
    used = total - free
    return {"after": what, "used_mib": mib(used), "reserved_mib": mib(torch.cuda.memory_reserved(0)),
            "outside_allocator_mib": mib(used - torch.cuda.memory_reserved(0)),
            "peak_reserved_mib": mib(torch.cuda.max_memory_reserved(0))}
rows = []
torch.cuda.init(); torch.zeros(1, device="cuda"); torch.cuda.synchronize(); rows.append(state("context"))
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    a = torch.randn(4096, 4096, device="cuda", dtype=dtype); b = a @ a; torch.cuda.synchronize()
    rows.append(state(f"matmul {dtype}"))
torch.backends.cuda.matmul.allow_tf32 = True; b = a.float() @ a.float(); torch.cuda.synchronize()
rows.append(state("matmul tf32"))
torch.backends.cudnn.benchmark = True
x = torch.randn(64, 64, 56, 56, device="cuda", dtype=torch.bfloat16)
conv = torch.nn.Conv2d(64, 64, 3, padding=1).cuda().to(torch.bfloat16)
for _ in range(3): y = conv(x)
torch.cuda.synchronize(); rows.append(state("conv2d bf16 cudnn benchmark"))
try:
    import torchvision
    m = torchvision.models.resnet50().cuda().to(torch.bfloat16).eval()
    with torch.no_grad():
        for _ in range(3): m(torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.bfloat16))
    torch.cuda.synchronize(); rows.append(state("resnet50 bf16 b64"))
except Exception as exc:
    rows.append({"after": "resnet50", "error": str(exc)[:200]})
q = torch.randn(8, 16, 1024, 64, device="cuda", dtype=torch.bfloat16)
torch.nn.functional.scaled_dot_product_attention(q, q, q); torch.cuda.synchronize(); rows.append(state("sdpa"))
h = torch.empty(1 << 28, dtype=torch.uint8).pin_memory(); d = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
d.copy_(h); h.copy_(d); torch.cuda.synchronize(); rows.append(state("pinned copies"))
big = torch.empty(20 << 30, dtype=torch.uint8, device="cuda"); del big; rows.append(state("20 GiB freed (cached)"))
torch.cuda.empty_cache(); rows.append(state("empty_cache"))
print(json.dumps(rows))
"""


COPIES = r"""
import json, sys, time, torch
h = torch.empty(1 << 30, dtype=torch.uint8).pin_memory(); d = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
for _ in range(5): d.copy_(h); torch.cuda.synchronize()
rows = []
for _ in range(int(sys.argv[1])):
    t = time.perf_counter(); d.copy_(h); torch.cuda.synchronize(); s = time.perf_counter() - t
    rows.append([round(time.time(), 3), round((1 << 30) / s / 1e9, 2)])
print(json.dumps(rows))
"""

SMI_LOOP = r"""
import subprocess, sys, time
end = time.time() + float(sys.argv[1])
while time.time() < end:
    t = time.time()
    subprocess.run(["nvidia-smi", "--query-gpu=index,pci.bus_id,utilization.gpu,memory.used,clocks.sm,power.draw",
                    "--format=csv,noheader"], capture_output=True)
    subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                   capture_output=True)
    print(round(t, 3), round(time.time() - t, 3), flush=True)
    time.sleep(max(0.0, 1.0 - (time.time() - t)))
"""

NVML_LOOP = r"""
import sys, time, pynvml
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    t = time.time()
    pynvml.nvmlDeviceGetUtilizationRates(h); pynvml.nvmlDeviceGetMemoryInfo(h); pynvml.nvmlDeviceGetPowerUsage(h)
    pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM); pynvml.nvmlDeviceGetComputeRunningProcesses(h)
    print(round(t, 3), round(time.time() - t, 4), flush=True)
    time.sleep(max(0.0, 1.0 - (time.time() - t)))
"""


def interference(copies: int = 200) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, loop in (("alone", None), ("nvidia-smi each second", SMI_LOOP), ("nvml each second", NVML_LOOP)):
        side = None
        if loop is not None:
            side = subprocess.Popen([sys.executable, "-c", loop, "120"], stdout=subprocess.PIPE, text=True)
            time.sleep(1.5)
        raw = run([sys.executable, "-c", COPIES, str(copies)], timeout=300)
        ticks = []
        if side is not None:
            side.terminate()
            ticks = [line.split() for line in side.communicate()[0].splitlines() if line.strip()]
        try:
            rows = json.loads(raw.strip().splitlines()[-1])
        except (ValueError, IndexError):
            out[name] = {"error": raw[-300:]}
            continue
        speeds = sorted(r[1] for r in rows)
        median = speeds[len(speeds) // 2]
        low = [r for r in rows if r[1] < 0.85 * median]
        out[name] = {"copies": len(rows), "median_gb_s": median, "min_gb_s": speeds[0],
                     "below_85pct_of_median": len(low), "low_samples": low[:20],
                     "tool_ticks": len(ticks),
                     "tool_seconds_median": sorted(float(t[1]) for t in ticks)[len(ticks) // 2] if ticks else None,
                     "low_within_0.1s_of_a_tick": sum(1 for r in low if any(-0.05 <= r[0] - float(t[0]) <= 0.3
                                                                          for t in ticks))}
    return out


def run(argv: list[str], timeout: float = 120) -> str:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False).stdout


def views(inside: bool) -> Any:
    argv = [sys.executable, "-c", VIEWS]
    if inside:
        argv = ["unshare", "--pid", "--fork", "--mount-proc", *argv]
    out = run(argv)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": out[-500:]}


def load(seconds: float, inside: bool = False) -> subprocess.Popen:
    argv = [sys.executable, "-c", LOAD, str(seconds)]
    if inside:
        argv = ["unshare", "--pid", "--fork", "--mount-proc", *argv]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    time.sleep(2)
    return proc


def tail() -> list[dict[str, Any]]:
    proc = load(4)
    rows = []
    started = time.time()
    while time.time() - started < 7:
        out = run(["nvidia-smi", "--query-gpu=utilization.gpu,power.draw,power.draw.instant,memory.used",
                   "--format=csv,noheader,nounits"])
        rows.append({"t": round(time.time() - started, 2), "load_running": proc.poll() is None, "view": out.strip()})
        time.sleep(0.1)
    proc.wait()
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    driver = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]).strip()
    facts: dict[str, Any] = {"uid": os.getuid(), "card": run(["nvidia-smi", "-L"]).strip(), "driver": driver}
    facts["idle"] = {"outside": views(False), "inside": views(True)}
    proc = load(60)
    facts["load_outside"] = {"outside": views(False), "inside": views(True)}
    proc.terminate()
    proc.wait()
    proc = load(60, inside=True)
    facts["load_inside"] = {"outside": views(False), "inside": views(True)}
    proc.terminate()
    proc.wait()
    time.sleep(2)
    drift = run([sys.executable, "-c", DRIFT], timeout=300)
    try:
        facts["memory_drift"] = json.loads(drift.strip().splitlines()[-1])
    except (ValueError, IndexError):
        facts["memory_drift"] = {"error": drift[-500:]}
    facts["utilization_tail"] = tail()
    facts["watcher_interference"] = interference()
    text = json.dumps(facts, indent=1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
