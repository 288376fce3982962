"""Time `rocm-fleet report` over a generated 1,000-node results set (synthetic values, real schema).

    python bench/aggregate_bench.py [--nodes 1000] [--repeats 3]

Prints the generation time, every repeat of the aggregation (load + summarize + batch verdicts +
Markdown/HTML/JUnit/Prometheus written) and the median, and which nodes the batch verdict failed:
the planted slow GPU (node0042/gpu3, 20 % low) must be named, and no other node (the synthetic
values are normal noise around round numbers, so any other failure is a false alarm).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_fleet_results import generate

from validation.cli import main as cli_main
from validation.fleet import summarize
from validation.report import load_run


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "run"
        start = time.perf_counter()
        generate(results, args.nodes, seed=7, slow_node="node0042")
        print(f"generated {args.nodes} node documents in {time.perf_counter() - start:.2f} s "
              f"({sum(p.stat().st_size for p in results.glob('*.json')) / 1e6:.1f} MB)")
        times = []
        for i in range(args.repeats):
            start = time.perf_counter()
            rc = cli_main(["report", str(results), "--out", str(Path(tmp) / f"out{i}"), "--json"])
            times.append(time.perf_counter() - start)
            assert rc == 1, rc       # node0042 fails its batch_peers check
        print("aggregation seconds per repeat: " + ", ".join(f"{t:.2f}" for t in times))
        print(f"median {statistics.median(times):.2f} s over {args.repeats} repeats")
        failed = sorted({f"{m.node}/{m.subject} {s.metric}" for s in summarize(load_run(results))
                         for m, _ in s.outliers})
        print(f"planted slow GPU named: {any(f.startswith('node0042/gpu3') for f in failed)}; "
              f"batch failures: {failed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
