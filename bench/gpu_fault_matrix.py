"""The GPU fault matrix (issue 30): the quick tier on the lent GPU, idle and with loads injected the
way they happen, and whether each verdict is right. Exits 1 on any wrong verdict, 2 on bad use.

Run on the GPU machine from the repository root (pytest-testinfra importable), in two calls that
fit the device tool's 10 minutes each:

    python3 -m bench.gpu_fault_matrix idle  --out DIR [--runs 3]          idle runs, one run without the
                                                                          watcher, a site baseline from the idle runs
    python3 -m bench.gpu_fault_matrix loads --out DIR --baseline FILE     the loaded cases, judged with the baseline
    python3 -m bench.gpu_fault_matrix all   --out DIR [--runs 3]          idle runs and the loaded cases in one call
                                                                          (no watcher-off run, no baseline)
    python3 -m bench.gpu_fault_matrix namespace --out DIR [--baseline FILE]
                                                                          the suite in its own PID namespace (as a
                                                                          container runs it), the load outside it

Cases and what is right:
- idle (>= 3): no check that needs a GPU fails; no number is invalid or throttled.
- idle, watcher off (--watch-interval 0): the same run's wall time without the watcher (its cost).
- pre-load: a second process runs bf16 matmuls before the run: the pre-flight fails RF-GPU-BUSY and
  nothing is measured.
- memory-only: a process holds 40 GiB and computes nothing, before the run: pre-flight RF-GPU-BUSY.
- late-load: the matmul load starts right after the pre-flight and lasts past the end: some check
  fails RF-GPU-BUSY; no number taken beside it is judged as the hardware's (every failing
  measurement is `valid: false`, no check fails with a number code).
- mid-load: the load runs for 25 s starting 20 s after the pre-flight: the same rule.
- copy-only: a process doing only host<->device copies starts when the host-copy probe starts and
  runs 30 s: the host-copy check fails RF-GPU-BUSY, the same rule.
- ns-idle: the suite inside its own PID namespace (`unshare --pid --fork --mount-proc`, as a container's
  runtime starts it; root), nothing else on the GPU: clean, as idle (the run's own unlisted context, its
  tools and the GPU's idle power are no neighbour).
- ns-late, ns-mid (and ns-mid-baseline, judged with --baseline): the suite in its own PID namespace,
  the matmul load outside it (late: from the pre-flight's end past the run's end; mid: 25 s from 20 s
  after the pre-flight). The process views inside list nothing of it: some check fails RF-GPU-UNSEEN,
  none RF-GPU-BUSY (no process was seen), and no number taken beside it fails as the hardware's.
The right verdicts are judged from the results documents; `--markdown` writes the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

NUMBER_CODES = {"RF-GEMM-LOW", "RF-HBM-LOW", "RF-BW-HOST-LOW", "RF-MIOPEN-LOW", "RF-MODEL-LOW", "RF-BELOW-TARGET",
                "RF-ABOVE-TARGET", "RF-SIBLING-GAP", "RF-PROBE-UNSTABLE"}
PREFLIGHT = "test_gpus_are_idle_before_measuring"
HOST_COPY = "test_pinned_host_copy_per_gpu"

MATMUL = """
import os, sys, time, torch
print("load pid", os.getpid(), flush=True)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20): a @ b
    torch.cuda.synchronize()
"""
MEMORY = """
import os, sys, time, torch
x = torch.empty(40 << 30, dtype=torch.uint8, device="cuda")
print("memory pid", os.getpid(), flush=True)
time.sleep(float(sys.argv[1]))
"""
COPIES = """
import os, sys, time, torch
h = torch.empty(1 << 30, dtype=torch.uint8).pin_memory(); d = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
print("copy pid", os.getpid(), flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    d.copy_(h, non_blocking=True); h.copy_(d, non_blocking=True); torch.cuda.synchronize()
"""


def sku() -> tuple[str, int]:
    names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                           text=True, check=True).stdout.split("\n")
    names = [n for n in names if n.strip()]
    return ("h200" if "H200" in names[0] else "h100"), len(names)


def spec(out: Path) -> Path:
    name, gpus = sku()
    path = out / "spec.yml"
    path.write_text(f"validation_gpu_vendor: nvidia\nvalidation_gpu_count: {gpus}\nvalidation_target_sku: {name}\n")
    return path


def load(code: str, seconds: float, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", code, str(seconds)], stdout=log.open("w"),
                            stderr=subprocess.STDOUT)
    for _ in range(300):            # wait until it holds the GPU (its pid line comes after the allocation)
        if "pid" in log.read_text():
            break
        time.sleep(0.1)
    return proc


def doc_of(results: Path, node: str) -> dict[str, Any]:
    try:
        return json.loads((results / f"{node}.json").read_text())
    except (OSError, ValueError):
        return {}


def wait_for_check(results: Path, node: str, name: str, *, started: bool = False, limit_s: float = 300) -> float:
    """Block until check `name` finished (or, started=True, is running per the progress file)."""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        if started:
            try:
                prog = json.loads((results / f"progress-{node}.json").read_text())
                if name in json.dumps(prog.get("running") or prog.get("current") or ""):
                    return time.time()
            except (OSError, ValueError):
                pass
        if any(c.get("name") == name for c in doc_of(results, node).get("checks", [])):
            return time.time()
        time.sleep(0.2)
    return time.time()


NAMESPACE = ("unshare", "--pid", "--fork", "--mount-proc")    # a PID namespace of its own, as in a container


def quick(out: Path, node: str, *extra: str, during: Any = None, namespace: bool = False) -> dict[str, Any]:
    results = out / "runs" / node
    shutil.rmtree(results, ignore_errors=True)
    started = time.time()
    proc = subprocess.Popen([*(NAMESPACE if namespace else ()), sys.executable, "-m", "validation", "validate",
                             "--hosts", "local://", "--spec", str(out / "spec.yml"), "--tier", "quick", "--results",
                             str(results), "--node-name", node, *extra],
                            stdout=(out / "runs" / f"{node}.log").open("w"), stderr=subprocess.STDOUT)
    helper = during(results, node) if during else None
    rc = proc.wait()
    if helper is not None and helper.poll() is None:
        helper.terminate()
        helper.wait()
    return {"node": node, "rc": rc, "wall_s": round(time.time() - started, 1), "doc": doc_of(results, node)}


def judged_counts(doc: dict[str, Any]) -> dict[str, Any]:
    """What the run says it judged (validation/judged.py), for documents written before it said so too."""
    from validation import judged

    return judged.of(doc) if doc else {"numbers": 0, "judged": 0, "record_only": 0}


KNOWN: dict[str, str] = {}      # code -> why every idle run of this machine fails it (--known CODE=WHY)


def verdict(case: str, run: dict[str, Any]) -> tuple[bool, str]:
    """(right, why) for one case's run."""
    doc = run["doc"]
    checks = doc.get("checks", [])
    failing = [c for c in checks if c.get("status") in ("fail", "error") and c.get("code") not in KNOWN]
    gpu_failing = [c for c in failing if c.get("needs_gpu")]
    codes = sorted({c.get("code") or "-" for c in gpu_failing})
    pre = next((c for c in checks if c.get("name") == PREFLIGHT), {})
    numbers = [m for m in doc.get("measurements", []) if m.get("value") is not None
               and not str(m.get("metric", "")).startswith("idle_")]
    hardware_blamed = [m for m in numbers if m.get("status") == "fail" and m.get("valid", True)]
    number_codes = [c for c in gpu_failing if c.get("code") in NUMBER_CODES]
    busy = [c for c in gpu_failing if c.get("code") == "RF-GPU-BUSY"]
    unseen = [c for c in gpu_failing if c.get("code") == "RF-GPU-UNSEEN"]
    if not doc.get("complete"):
        return False, "results document incomplete"
    if case.startswith(("ns-late", "ns-mid")):
        ok = bool(unseen) and not busy and not hardware_blamed and not number_codes
        marked = sum(1 for m in numbers if m.get("valid") is False)
        return ok, (f"{len(unseen)} checks RF-GPU-UNSEEN, {len(busy)} RF-GPU-BUSY, {marked} numbers invalid; "
                    f"{len(hardware_blamed)} loaded numbers failed as the hardware's; other GPU codes "
                    f"{[c for c in codes if c not in ('RF-GPU-BUSY', 'RF-GPU-UNSEEN')]}")
    if case.startswith(("idle", "ns-idle")):
        invalid = [m for m in numbers if m.get("valid") is False or m.get("throttled")]
        ok = not gpu_failing and not invalid
        return ok, "no GPU check failed" if ok else f"GPU checks failed: {codes}; {len(invalid)} numbers marked"
    if case in ("pre-load", "memory-only"):
        measured = [m for m in numbers if m.get("metric", "").startswith(("torch_", "resnet", "gemm"))]
        ok = pre.get("code") == "RF-GPU-BUSY" and not measured
        return ok, f"pre-flight {pre.get('code')}; {len(measured)} numbers measured"
    if case == "copy-only":
        copy = [c for c in busy if c.get("name") == HOST_COPY]
        ok = bool(copy) and not hardware_blamed and not number_codes
        return ok, (f"host copy RF-GPU-BUSY: {bool(copy)}; {len(busy)} checks RF-GPU-BUSY; "
                    f"{len(hardware_blamed)} loaded numbers failed as the hardware's; "
                    f"number codes {[c.get('code') for c in number_codes]}")
    ok = bool(busy) and not hardware_blamed and not number_codes
    invalid = sum(1 for m in numbers if m.get("valid") is False)
    return ok, (f"{len(busy)} checks RF-GPU-BUSY, {invalid} numbers invalid; {len(hardware_blamed)} loaded numbers "
                f"failed as the hardware's; other GPU codes {[c for c in codes if c != 'RF-GPU-BUSY']}")


def idle_phase(out: Path, runs: int) -> list[dict[str, Any]]:
    rows = [quick(out, f"idle-{i}") for i in range(1, runs + 1)]
    rows.append(quick(out, "idle-nowatch", "--watch-interval", "0"))
    # every idle run, the watcher-off one too, so that three runs reach a baseline's four nodes
    dirs = [str(out / "runs" / f"idle-{i}") for i in range(1, runs + 1)] + [str(out / "runs" / "idle-nowatch")]
    done = subprocess.run([sys.executable, "-m", "validation", "baseline", "create", *dirs, "-o",
                           str(out / "baseline.yml"), "--name", "fault-matrix-idle", "--gpu-checks-only"],
                          capture_output=True, text=True, check=False)
    (out / "baseline.log").write_text(done.stdout + done.stderr)
    rows.append(quick(out, "idle-baseline", "--baseline", str(out / "baseline.yml")))
    return rows


LOADED_CASES = ("pre-load", "memory-only", "late-load", "mid-load", "copy-only")


def loads_phase(out: Path, baseline: Path | None, cases: tuple[str, ...] = LOADED_CASES) -> list[dict[str, Any]]:
    base = ("--baseline", str(baseline)) if baseline else ()
    rows = []
    if "pre-load" in cases:
        proc = load(MATMUL, 120, out / "pre-load.log")
        rows.append(quick(out, "pre-load", *base))
        proc.terminate()
        proc.wait()
    if "memory-only" in cases:
        proc = load(MEMORY, 120, out / "memory-only.log")
        rows.append(quick(out, "memory-only", *base))
        proc.terminate()
        proc.wait()

    def late(results: Path, node: str) -> subprocess.Popen:
        wait_for_check(results, node, PREFLIGHT)
        return load(MATMUL, 300, out / "late-load.log")
    if "late-load" in cases:
        rows.append(quick(out, "late-load", *base, during=late))

    def mid(results: Path, node: str) -> subprocess.Popen:
        wait_for_check(results, node, PREFLIGHT)
        time.sleep(20)
        return load(MATMUL, 25, out / "mid-load.log")
    if "mid-load" in cases:
        rows.append(quick(out, "mid-load", *base, during=mid))

    def copies(results: Path, node: str) -> subprocess.Popen:
        wait_for_check(results, node, HOST_COPY, started=True)
        return load(COPIES, 30, out / "copy-only.log")
    if "copy-only" in cases:
        rows.append(quick(out, "copy-only", *base, during=copies))
    return rows


NAMESPACE_CASES = ("ns-idle", "ns-mid", "ns-late")


def namespace_phase(out: Path, baseline: Path | None) -> list[dict[str, Any]]:
    """The suite in its own PID namespace; the load, where there is one, outside it."""
    rows = [quick(out, "ns-idle", namespace=True)]

    def mid(name: str) -> Any:
        def start(results: Path, node: str) -> subprocess.Popen:
            wait_for_check(results, node, PREFLIGHT)
            time.sleep(20)
            return load(MATMUL, 25, out / f"{name}.log")
        return start
    rows.append(quick(out, "ns-mid", during=mid("ns-mid"), namespace=True))

    def late(results: Path, node: str) -> subprocess.Popen:
        wait_for_check(results, node, PREFLIGHT)
        return load(MATMUL, 300, out / "ns-late.log")
    rows.append(quick(out, "ns-late", during=late, namespace=True))
    if baseline is not None:
        rows.append(quick(out, "ns-mid-baseline", "--baseline", str(baseline), during=mid("ns-mid-baseline"),
                          namespace=True))
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| case | exit | wall s | right | verdict | GPU failure codes | numbers judged / recorded only |",
             "|---|---:|---:|---|---|---|---|"]
    for row in rows:
        case = row["node"]
        right, why = verdict(case, row)
        row["right"] = right
        gpu_codes = sorted({c.get("code") or "-" for c in row["doc"].get("checks", [])
                            if c.get("status") in ("fail", "error") and c.get("needs_gpu")})
        counts = judged_counts(row["doc"])
        lines.append(f"| {case} | {row['rc']} | {row['wall_s']} | {'yes' if right else '**NO**'} | {why} | "
                     f"{', '.join(gpu_codes) or '-'} | {counts['judged']} / {counts['record_only']} |")
    return "\n".join(lines)


def pack(out: Path, phase: str) -> Path:
    """Every run's results document and log in one archive (the device tool returns few files)."""
    path = out / f"documents-{phase}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for item in sorted((out / "runs").glob("*/*.json")) + sorted((out / "runs").glob("*.log")):
            if not item.name.startswith("progress-"):
                archive.add(item, arcname=str(item.relative_to(out)))
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=("idle", "loads", "all", "namespace"))
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--baseline", type=Path, default=None,
                   help="site baseline for the loaded cases (made by the idle phase), so their numbers are judged")
    p.add_argument("--cases", default=",".join(LOADED_CASES),
                   help="the loaded cases to run, comma-separated (default all: " + ",".join(LOADED_CASES) + ")")
    p.add_argument("--known", action="append", default=[], metavar="CODE=WHY",
                   help="a code every idle run of this machine fails for a reason of its own, left out of the "
                   "verdicts and named in the table")
    args = p.parse_args(argv)
    if args.baseline is not None and not args.baseline.is_file():
        print(f"gpu_fault_matrix: no baseline file {args.baseline}", file=sys.stderr)
        return 2
    cases = tuple(c for c in args.cases.split(",") if c)
    if unknown := [c for c in cases if c not in LOADED_CASES]:
        print(f"gpu_fault_matrix: no case {', '.join(unknown)}; cases: {', '.join(LOADED_CASES)}", file=sys.stderr)
        return 2
    for item in args.known:
        code, _, why = item.partition("=")
        KNOWN[code] = why
    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    spec(args.out)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if args.phase == "idle":
        rows = idle_phase(args.out, args.runs)
    elif args.phase == "loads":
        rows = loads_phase(args.out, args.baseline, cases)
    elif args.phase == "namespace":
        rows = namespace_phase(args.out, args.baseline)
    else:
        rows = [quick(args.out, f"idle-{i}") for i in range(1, args.runs + 1)] + loads_phase(args.out, None, cases)
    text = table(rows)
    watch = [{"case": r["node"], **{k: v for k, v in (r["doc"].get("watch") or {}).items() if k != "run"}}
             for r in rows]
    (args.out / f"matrix-{args.phase}.md").write_text(text + "\n")
    (args.out / f"matrix-{args.phase}.json").write_text(json.dumps(
        [{k: v for k, v in r.items() if k != "doc"} | {"counts": judged_counts(r["doc"])} for r in rows]
        + [{"watch": watch}], indent=1))
    pack(args.out, args.phase)
    if KNOWN:
        text += "\n\nLeft out of the verdicts: " + "; ".join(f"{c} ({w})" for c, w in KNOWN.items())
    print(text)
    print(json.dumps(watch, indent=1))
    # an idle run judged against the baseline made from its siblings must not fail either: a false alarm
    return 0 if all(r["right"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
