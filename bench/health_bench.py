"""Time `rocm-fleet health` on this node: the first run (it records the node's memory) and repeats.

    python -m bench.health_bench --spec SPEC [--runs 5] [--state-dir DIR] [--json FILE]

Each run is the whole command as Slurm or the timer starts it (a fresh Python, pytest, the checks,
the textfile), timed from outside. Prints every run's wall time and exit code, the median of the
repeats, and which checks ran (passed / failed / skipped) in the last one. The issue's budget is
10 s on an 8-GPU node.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from validation.report import load_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--state-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    state = args.state_dir or Path(tempfile.mkdtemp(prefix="rf-health-bench-"))
    runs = []
    for i in range(args.runs):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "validation", "health", "--spec", str(args.spec), "--state-dir",
                               str(state), "--textfile", str(state / "health.prom"), "--json"],
                              capture_output=True, text=True, timeout=300, check=False)
        seconds = time.perf_counter() - start
        summary = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {"error": proc.stderr[-500:]}
        runs.append({"run": i + 1, "seconds": round(seconds, 2), "exit": proc.returncode,
                     "checks_seconds": summary.get("seconds"), "failed": summary.get("failed")})
        print(f"run {i + 1}: {seconds:.2f} s wall (checks {summary.get('seconds')} s), exit {proc.returncode}"
              + ("; first run: records counters, kernel-log position, firmware" if i == 0 else ""))
    repeats = [r["seconds"] for r in runs[1:]] or [runs[0]["seconds"]]
    (last,) = load_run(state / "last")
    counts = {s: sum(c["status"] == s for c in last["checks"]) for s in ("pass", "fail", "skip", "error")}
    print(f"median of the repeats: {statistics.median(repeats):.2f} s; last run's checks: {counts}")
    for c in last["checks"]:
        print(f"  {c['status']:5} {c['duration_s']:6.2f} s  {c['id']}")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "median_repeat_s": statistics.median(repeats),
                                         "checks": counts}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
