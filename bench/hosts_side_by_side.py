"""`rocm-fleet validate --hosts ansible://GROUP` on one host and on all of them, interleaved (issue 20).

    python -m bench.hosts_side_by_side -i INVENTORY --group lab [--one HOST] [--forks N] [--repeats 2]
        [--json FILE] [-- EXTRA VALIDATE ARGS]

Each repeat runs the smoke tier without GPU checks (`--tier smoke --no-gpu` unless other arguments are
given after `--`) on the one host, then on the whole group with `--forks N` (default: the group's size),
over real SSH, from this checkout. Per run: wall time, CPU seconds of the command and its children (the
pytest workers and ssh clients: the controller's share), the exit code and the nodes that have a results
document. Prints the median of each and all / one. A run that exits 2 (no verdict) is an error: the
ratio of two broken runs means nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from validation.runner import environment_tool

ROOT = Path(__file__).resolve().parents[1]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def validate(inventory: Path, hosts: str, forks: int, extra: list[str], results: Path) -> dict:
    before, start = children_cpu(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "validation", "validate", "-i", str(inventory), "--hosts", hosts,
                           "--forks", str(forks), "--results", str(results), *extra],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - start, children_cpu() - before
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"{hosts}: exit {proc.returncode} (no verdict); see above")
    return {"hosts": hosts, "forks": forks, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "rc": proc.returncode,
            "documents": sorted(p.stem for p in results.glob("*.json") if "host" in json.loads(p.read_text()))}


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    extra = args_in[args_in.index("--") + 1:] if "--" in args_in else ["--tier", "smoke", "--no-gpu"]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--inventory", type=Path, required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--one", default=None, help="the one host (default: the group's first)")
    parser.add_argument("--forks", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(args_in[:args_in.index("--")] if "--" in args_in else args_in)
    ansible = environment_tool("ansible") or "ansible"
    listed = subprocess.run([ansible, "-i", str(args.inventory), args.group,
                             "--list-hosts"], capture_output=True, text=True, check=True, cwd=ROOT)
    group = [line.strip() for line in listed.stdout.splitlines()[1:] if line.strip()]
    one, forks = args.one or group[0], args.forks or len(group)
    runs = []
    with tempfile.TemporaryDirectory(prefix="rf-side-by-side-") as tmp:
        for repeat in range(1, args.repeats + 1):
            for hosts, count in ((f"ansible://{one}", 1), (f"ansible://{args.group}", len(group))):
                run = validate(args.inventory, hosts, forks, extra, Path(tmp) / f"{repeat}-{count}")
                runs.append({"repeat": repeat, "count": count, **run})
                print(f"repeat {repeat}: {count} host(s) {run['wall_s']:6.2f} s wall {run['cpu_s']:6.2f} CPU-s "
                      f"exit {run['rc']} documents {len(run['documents'])}", flush=True)

    def median(count: int, key: str) -> float:
        return statistics.median(r[key] for r in runs if r["count"] == count)

    summary = {"one_host_wall_s": median(1, "wall_s"), "all_hosts_wall_s": median(len(group), "wall_s"),
               "all_over_one_wall": round(median(len(group), "wall_s") / median(1, "wall_s"), 2),
               "one_host_cpu_s": median(1, "cpu_s"), "all_hosts_cpu_s": median(len(group), "cpu_s"),
               "hosts": len(group), "forks": forks, "cpus": os.cpu_count(), "load_after": os.getloadavg()}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
