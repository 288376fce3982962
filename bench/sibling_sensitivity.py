"""How small a slowdown of one GPU in eight the sibling verdict catches, on real H200 numbers.

The node: gpuK carries the measurements of the lent H200's idle quick-tier run K (eight runs,
tests/fixtures/real/results/h200/; tests/helpers/derived_results.py). For each metric the sibling
verdict judges and each GPU in turn, the GPU's value is lowered (latencies raised) in 0.5 % steps
until the verdict fails it; the table gives the smallest and largest such step over the eight
GPUs, and whether the untouched node raised any verdict (a false alarm).

    python -m bench.sibling_sensitivity [--markdown FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))

from derived_results import eight_gpu_node, idle_runs, scaled

from validation import peers
from validation.records import Status

STEP = 0.005


def caught_at(node: dict, metric: str, subject: str) -> float | None:
    """The smallest slowdown (fraction) of `subject` on `metric` that fails, up to 90 %."""
    for i in range(1, int(0.9 / STEP) + 1):
        slowdown = i * STEP
        derived = scaled(node, subject, 1 - slowdown)
        entries = [e for e in derived["measurements"] if e["metric"] == metric]
        if any(v.status is Status.FAIL and v.subject == subject
               for v in peers.judge_siblings(derived["host"], entries)):
            return slowdown
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args(argv)
    node = eight_gpu_node(idle_runs())
    baseline_verdicts = peers.judge_siblings(node["host"], node["measurements"])
    false_alarms = [v for v in baseline_verdicts if v.status is Status.FAIL]
    judged = sorted({v.metric for v in baseline_verdicts if v.status is Status.PASS})
    allowed = {v.metric: v.allowed for v in baseline_verdicts if v.status is Status.PASS}
    lines = ["| metric | allowed gap | smallest slowdown caught (best GPU .. worst GPU) |", "|---|---:|---|"]
    for metric in judged:
        subjects = sorted({e["subject"] for e in node["measurements"] if e["metric"] == metric})
        steps = [caught_at(node, metric, s) for s in subjects]
        found = [s for s in steps if s is not None]
        span = f"{min(found):.1%} .. {max(found):.1%}" if found else "not caught below 90 %"
        lines.append(f"| {metric} | {allowed[metric]:.1%} | {span} |")
    lines += ["", f"Untouched node: {len(baseline_verdicts)} sibling verdicts, {len(false_alarms)} failures "
              f"(false alarms); {len(judged)} metrics judged."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 1 if false_alarms else 0


if __name__ == "__main__":
    raise SystemExit(main())
