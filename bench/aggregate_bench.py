"""Time and size `rocm-fleet report` over a generated N-node results set (synthetic values, real schema).

    python bench/aggregate_bench.py [--nodes 10000] [--repeats 3] [--jobs 1 --jobs 0] [--before COMMIT ...]

Every repeat runs the report in a fresh Python process (`rocm-fleet report DIR --json`, in-process
timing of main(), so interpreter start-up is left out), and the repeats of all variants are
interleaved (A B C A B C ...), so that a busy moment of this shared machine falls on every variant
alike. A variant is this tree with a `--jobs` value (0 = the default, every CPU lent), or the
`validation` package of an earlier commit (`--before COMMIT`: `git archive COMMIT validation`,
run with the same interpreter). Reported per variant: every repeat's seconds and their median,
the CPU seconds of the report process and its children (less sensitive than wall time to other
work on a shared machine), the peak resident memory of the report process and, apart, of the
processes it started (forked readers and writers share their parent's pages until they write to
them, so the two are not a sum), and whether the planted slow GPU (node0042/gpu3, 20 % low) is the only GPU named: the
values are normal noise around round numbers, so any other name is a false alarm. The load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from gen_fleet_results import generate  # noqa: E402

RUNNER = """
import contextlib, io, json, resource, sys, time
from validation.cli import main
out = io.StringIO()
start = time.perf_counter()
with contextlib.redirect_stdout(out):
    rc = main(sys.argv[1:])
seconds = time.perf_counter() - start
usage = lambda who: resource.getrusage(who).ru_maxrss / 1024
cpu = lambda who: resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
print(json.dumps({"rc": rc, "seconds": seconds, "rss_mb": usage(resource.RUSAGE_SELF),
                  "children_rss_mb": usage(resource.RUSAGE_CHILDREN), "report": json.loads(out.getvalue()),
                  "cpu_s": cpu(resource.RUSAGE_SELF) + cpu(resource.RUSAGE_CHILDREN)}))
"""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def run_once(package_root: Path, results: Path, out: Path, jobs: int | None) -> dict:
    argv = ["report", str(results), "--out", str(out), "--json"] + ([] if jobs is None else ["--jobs", str(jobs)])
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    done = subprocess.run([sys.executable, "-c", RUNNER, *argv], cwd=package_root, env=env, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{package_root}: the report process failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def named(report: dict) -> list[str]:
    return sorted({f"{m['node']}/{m['subject']} {s['metric']}" for s in report["metrics"] for m, _ in s["outliers"]})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, action="append", default=None,
                        help="a --jobs value to time this tree with (repeatable; 0 = the default); default: 1 and 0")
    parser.add_argument("--before", action="append", default=[], metavar="COMMIT",
                        help="also time the validation package of this commit (repeatable)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rf-aggregate-bench-") as tmp:
        work = Path(tmp)
        variants: list[tuple[str, Path, int | None]] = []
        for commit in args.before:
            tree = work / f"tree-{commit}"
            tree.mkdir()
            archive = subprocess.run(["git", "archive", commit, "validation"], cwd=ROOT, capture_output=True,
                                     check=True)
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
            variants.append((f"commit {commit}", tree, None))
        for jobs in args.jobs or [1, 0]:
            variants.append((f"this tree, --jobs {jobs}" if jobs else "this tree, default jobs", ROOT, jobs or None))
        results = work / "run"
        start = time.perf_counter()
        generate(results, args.nodes, seed=7, slow_node="node0042")
        size = sum(p.stat().st_size for p in results.glob("*.json"))
        print(f"generated {args.nodes} node documents in {time.perf_counter() - start:.1f} s ({size / 1e6:.1f} MB)")
        print(f"machine: {os.cpu_count()} CPUs ({cpu_model()}), Python {platform.python_version()}; "
              f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        runs: dict[str, list[dict]] = {name: [] for name, _, _ in variants}
        for repeat in range(args.repeats):
            for name, tree, jobs in variants:
                outcome = run_once(tree, results, work / f"out-{len(runs[name])}", jobs)
                runs[name].append(outcome)
                print(f"  repeat {repeat + 1} {name}: {outcome['seconds']:.2f} s ({outcome['cpu_s']:.2f} CPU-s), "
                      f"{outcome['rss_mb']:.0f} MB "
                      f"(+ children {outcome['children_rss_mb']:.0f} MB)", flush=True)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("\n| variant | seconds per repeat | median | CPU-s (median, with children) | peak memory, report process "
              "| peak, its children | exit | GPUs named |\n|---|---|---|---|---|---|---|---|")
        for name, outcomes in runs.items():
            seconds = [o["seconds"] for o in outcomes]
            names = {tuple(named(o["report"])) for o in outcomes}
            print(f"| {name} | {', '.join(f'{s:.2f}' for s in seconds)} | {statistics.median(seconds):.2f} s | "
                  f"{statistics.median(o['cpu_s'] for o in outcomes):.2f} | "
                  f"{max(o['rss_mb'] for o in outcomes):.0f} MB | "
                  f"{max(o['children_rss_mb'] for o in outcomes):.0f} MB | "
                  f"{sorted({o['rc'] for o in outcomes})} | {'; '.join(', '.join(n) for n in names)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
