"""A repeat playbooks/validate.yml on unchanged nodes: its overhead above the checks' own time (issue 20).

    python -m bench.validate_bench -i INVENTORY [--hosts lab] [--repeats 2] [--json FILE] [-e VAR=VALUE ...]

Run it on converged nodes (lab hosts: add -e validation_node_no_gpu=true). One warm-up run on all
hosts installs the suite; then each repeat runs the playbook on one host and on all hosts, in that
order. Per run: wall time, controller CPU seconds (ansible-playbook and its children), `changed` on
the nodes (a repeat on an unchanged node must change nothing: the controller's own report step is
not counted, it is delegated), and the checks' own time on each node, from the CPU-side run record
the node wrote (pytest's session, as the results document's started_at/finished_at bound it, to the
second) and more exactly from the summed check durations. Overhead = wall - the slowest node's
checks' own time. Each repeat first runs bench/playbooks/validate_floor.yml on the one host: the
playbook's shape with no work, the least its overhead could be.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from validation.recap import counts as recap_counts
from validation.runner import environment_tool

ROOT = Path(__file__).resolve().parents[1]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def node_seconds(doc: dict) -> tuple[float, float]:
    """(session seconds from the document's timestamps, sum of the checks' durations)."""
    started = dt.datetime.fromisoformat(doc["started_at"])
    finished = dt.datetime.fromisoformat(doc["finished_at"]) if doc.get("finished_at") else started
    return (finished - started).total_seconds(), sum(float(c.get("duration_s") or 0) for c in doc["checks"])


def playbook(inventory: Path, limit: str, path: str,
             *args: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """(the run, wall seconds, CPU seconds of ansible-playbook and its children)."""
    before = children_cpu()
    start = time.perf_counter()
    proc = subprocess.run([environment_tool("ansible-playbook") or "ansible-playbook", "-i", str(inventory),
                           "--limit", limit, path, *args], cwd=ROOT, capture_output=True, text=True, check=False,
                          env={**os.environ, "ANSIBLE_FORCE_COLOR": "0"})
    return proc, time.perf_counter() - start, children_cpu() - before


def floor(inventory: Path, limit: str, scratch: Path, extra: list[str]) -> dict:
    """bench/playbooks/validate_floor.yml: validate.yml's plays and steps with no work in them (given the
    run's extra variables too: they may say how to reach the hosts)."""
    proc, wall, cpu = playbook(inventory, limit, "bench/playbooks/validate_floor.yml", *extra,
                               "-e", json.dumps({"validate_floor_dir": str(scratch)}))
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-2000:])
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "rc": proc.returncode}


def run(inventory: Path, limit: str, extra: list[str], name: str) -> dict:
    proc, wall, cpu = playbook(inventory, limit, "playbooks/validate.yml", "-e", f"rocm_fleet_run_name={name}", *extra)
    recap = recap_counts(proc.stdout)
    nodes = {}
    for path in sorted((ROOT / "results" / name).glob("*.json")):
        doc = json.loads(path.read_text())
        if "host" in doc:
            session, checks = node_seconds(doc)
            nodes[doc["host"]] = {"session_s": session, "checks_s": round(checks, 2)}
    if proc.returncode not in (0, 2):
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-2000:])
    changed_lines, task = [], ""
    for line in proc.stdout.splitlines():
        if line.startswith("TASK ["):
            task = line[6:].split("]", 1)[0]
        elif line.startswith("changed:"):
            changed_lines.append(f"{task}: {line}")
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "rc": proc.returncode,
            "recap": recap, "nodes": nodes, "changed_lines": changed_lines,
            "overhead_s": round(wall - max((n["checks_s"] for n in nodes.values()), default=0.0), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--inventory", type=Path, required=True)
    parser.add_argument("--hosts", default="gpu_nodes")
    parser.add_argument("--one", default=None, help="the one host (default: the first in the inventory's listing)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("-e", "--extra-vars", action="append", default=[])
    args = parser.parse_args(argv)
    extra = [a for e in args.extra_vars for a in ("-e", e)]
    listed = subprocess.run([environment_tool("ansible") or "ansible", "-i", str(args.inventory), args.hosts,
                             "--list-hosts"], capture_output=True, text=True, check=True, cwd=ROOT)
    hosts = [line.strip() for line in listed.stdout.splitlines()[1:] if line.strip()]
    one = args.one or hosts[0]
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    warm = run(args.inventory, args.hosts, extra, f"bench-validate-{stamp}-warm")
    print(f"warm-up, {len(hosts)} hosts: {warm['wall_s']} s, rc {warm['rc']}", flush=True)
    runs, floors = [], []
    scratch = Path(tempfile.mkdtemp(prefix="rf-validate-floor-"))
    for repeat in range(args.repeats):
        floors.append(floor(args.inventory, one, scratch, extra))
        print(f"repeat {repeat + 1}: floor, 1 host: {floors[-1]['wall_s']:6.2f} s wall, "
              f"{floors[-1]['cpu_s']:6.2f} CPU-s, rc {floors[-1]['rc']}", flush=True)
        for limit, count in ((one, 1), (args.hosts, len(hosts))):
            result = {"repeat": repeat + 1, "hosts": count,
                      **run(args.inventory, limit, extra, f"bench-validate-{stamp}-{repeat}-{count}")}
            runs.append(result)
            # fetching the run's documents writes on the controller, not on the node
            node_changed = sum("Fetch the node's" not in line for line in result["changed_lines"])
            print(f"repeat {repeat + 1}: {count} host(s): {result['wall_s']:6.2f} s wall, "
                  f"{result['cpu_s']:6.2f} CPU-s, "
                  f"rc {result['rc']}, checks' own time {[n['checks_s'] for n in result['nodes'].values()]}, "
                  f"overhead {result['overhead_s']} s, changed on the nodes {node_changed}: {result['changed_lines']}",
                  flush=True)

    def median(count: int, key: str) -> float:
        return statistics.median(r[key] for r in runs if r["hosts"] == count)

    summary = {"one_host_wall_s": median(1, "wall_s"), "one_host_overhead_s": median(1, "overhead_s"),
               "all_hosts_wall_s": median(len(hosts), "wall_s"),
               "all_over_one_wall": round(median(len(hosts), "wall_s") / median(1, "wall_s"), 2),
               "cpu_s_per_host_all": round(median(len(hosts), "cpu_s") / len(hosts), 2),
               "one_host_floor_s": statistics.median(f["wall_s"] for f in floors)}
    summary["one_host_overhead_above_floor_s"] = round(summary["one_host_overhead_s"] - summary["one_host_floor_s"], 2)
    shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"hosts": hosts, "warm": warm, "runs": runs, "floors": floors,
                                         "summary": summary, "load_before": os.getloadavg()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
