"""Bounded input: a 200 MB rccl-tests output must be answered (a result or an error) within 30 s and
500 MB of resident memory, and an endless input (/dev/zero) must end in an error.

The 200 MB file is AMD's published 8xMI300X all_reduce run
(tests/fixtures/real/rccl-tests/mi300x-8gpu-rocm-blogs-rccl-xgmi-allreduce.txt) with NCCL_DEBUG=INFO-style
lines ("host:pid:tid [dev] NCCL INFO ...", which the parser skips) inserted after the device list until
it reaches the size, the shape of a real debug log. Each case runs `rocm-fleet judge` in its own
process; wall time and peak RSS come from os.wait4.

    python -m bench.large_input [--size-mb 200] [--out DIR]

Prints one line per case and exits 1 if a case misses its bound.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/fixtures/real/rccl-tests/mi300x-8gpu-rocm-blogs-rccl-xgmi-allreduce.txt"
LOG_LINE = "host:2509534:2509534 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC comm 0x5581 nRanks 08\n"
WALL_LIMIT_S, RSS_LIMIT_MB = 30.0, 500.0


def make_input(path: Path, size_mb: int) -> int:
    lines = FIXTURE.read_text().splitlines(keepends=True)
    cut = max(i for i, line in enumerate(lines) if "Rank" in line) + 1
    head, tail = "".join(lines[:cut]), "".join(lines[cut:])
    filler = size_mb * 1_000_000 - len(head) - len(tail)
    block = LOG_LINE * 10_000
    with path.open("w") as out:
        out.write(head)
        while filler > len(block):
            out.write(block)
            filler -= len(block)
        out.write(LOG_LINE * max(0, filler // len(LOG_LINE)))
        out.write(tail)
    return path.stat().st_size


def run_case(argv: list[str]) -> tuple[int, float, float, str]:
    """(exit code, wall seconds, peak RSS MB, last stderr line) of `rocm-fleet ARGV` in a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "validation", *argv], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, wall, usage.ru_maxrss / 1024, (err.strip().splitlines() or [""])[-1][:160]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None, help="keep the generated file here")
    args = parser.parse_args(argv)
    workdir = Path(args.out or tempfile.mkdtemp(prefix="rf-large-input-"))
    workdir.mkdir(parents=True, exist_ok=True)
    big = workdir / f"rccl-allreduce-{args.size_mb}mb.txt"
    size = make_input(big, args.size_mb)
    print(f"input: {big} ({size / 1e6:.0f} MB)")
    cases = {
        "default limit": ["judge", "--profile", "mi300x", f"rccl-tests:{big}"],
        "limit raised to 256 MiB": ["judge", "--profile", "mi300x", "--max-input-mb", "256", f"rccl-tests:{big}"],
        "limit raised, tool not named": ["judge", "--profile", "mi300x", "--max-input-mb", "256", str(big)],
        "/dev/zero": ["judge", "--profile", "mi300x", "rccl-tests:/dev/zero"],
    }
    missed = 0
    for name, case in cases.items():
        rc, wall, rss, err = run_case(case)
        ok = wall <= WALL_LIMIT_S and rss <= RSS_LIMIT_MB
        missed += not ok
        print(f"{name:32} exit {rc}  {wall:6.2f} s  {rss:7.1f} MB RSS  {'ok' if ok else 'OVER BOUND'}  {err}")
    if args.out is None:
        big.unlink()
        workdir.rmdir()
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
