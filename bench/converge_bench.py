"""No-op converge against a trivial play on the same hosts, interleaved in one run (issue 20).

    python -m bench.converge_bench -i INVENTORY [--limit-one HOST] [--repeats 2] [--json FILE]
                                   [--playbook playbooks/site.yml] [--shards N] [--pull] [--per-role]

The hosts must already be converged (a first `ansible-playbook playbooks/site.yml`), so every repeat is the
no-op an operator re-runs after each change. Each repeat runs, in this order: the trivial play (facts and one
debug) on one host, the playbook on one host, the trivial play on all hosts, the playbook on all hosts (and,
with --shards N, site.yml on all hosts through `rocm-fleet converge --shards N`; with --pull,
playbooks/pull.yml, where the nodes converge themselves, on one host and on all hosts, and through `rocm-fleet
converge --pull --shards N`; with --per-role, the playbook on all hosts once per role of site.yml with `--tags
ROLE`, and once with `--tags rocm_fleet_no_role`, which runs the preflight and the play's own tasks and no
role's: a role's price is its run's CPU-s above that floor). Per run it records the wall time, the
controller's CPU seconds (ansible-playbook and everything it forked: workers and ssh, from the children's
rusage), and the recap of every host (ok, changed, skipped, failed: a no-op must show changed=0). It prints
the ratios the issue sets goals for: playbook / trivial play on the same hosts, CPU-s per host, and all hosts
/ one host."""

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
from typing import Any

from validation.recap import counts as recap_counts
from validation.spec import roles_for

ROOT = Path(__file__).resolve().parents[1]
PULL = ROOT / "playbooks/pull.yml"
NO_ROLE = "rocm_fleet_no_role"      # a tag no task has: the run's floor (preflight, the play's own tasks)
TRIVIAL = """\
- name: Trivial play (facts and one debug)
  hosts: all
  gather_facts: true
  tasks:
    - name: Say something
      ansible.builtin.debug:
        msg: hello
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(playbook: Path, inventory: Path, limit: str, extra: list[str], shards: int = 0, pull: bool = False) -> dict:
    before = children_cpu()
    start = time.perf_counter()
    if shards:       # rocm-fleet converge: site.yml in `shards` processes at once; it prints every host's recap
        argv = [str(Path(sys.executable).parent / "rocm-fleet"), "converge", "-i", str(inventory), "--hosts", limit,
                "--shards", str(shards), "--out", tempfile.mkdtemp(prefix="rf-converge-bench-"),
                *(["--pull"] if pull else []), *(["--", *extra] if extra else [])]
    else:
        argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "--limit", limit,
                str(playbook), *extra]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False,
                          env={**os.environ, "ANSIBLE_FORCE_COLOR": "0"})
    wall = time.perf_counter() - start
    recap = recap_counts(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-2000:])
    return {"wall_s": round(wall, 2), "cpu_s": round(children_cpu() - before, 2), "rc": proc.returncode,
            "recap": recap}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--inventory", type=Path, required=True)
    parser.add_argument("--hosts", default="gpu_nodes", help="the inventory pattern for 'all hosts'")
    parser.add_argument("--limit-one", default=None, help="the one host (default: the pattern's first)")
    parser.add_argument("--playbook", type=Path, default=ROOT / "playbooks/site.yml")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("-e", "--extra-vars", action="append", default=[])
    parser.add_argument("--shards", type=int, default=0,
                        help="also run site.yml on all hosts through `rocm-fleet converge --shards N` each repeat")
    parser.add_argument("--pull", action="store_true",
                        help="also run playbooks/pull.yml (nodes converge themselves) on one and on all hosts")
    parser.add_argument("--per-role", action="store_true",
                        help="also run the playbook on all hosts with --tags ROLE for each role of site.yml, and with "
                             "a tag no role has (the floor): the CPU-s each role adds per host")
    args = parser.parse_args(argv)
    listed = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(args.inventory),
                             "--list"], capture_output=True, text=True, check=True, cwd=ROOT)
    inventory = json.loads(listed.stdout)

    def members(group: str) -> list[str]:
        found = list(inventory.get(group, {}).get("hosts", []))
        for child in inventory.get(group, {}).get("children", []):
            found += members(child)
        return found

    hosts = members(args.hosts)
    one = args.limit_one or hosts[0]
    extra = [a for e in args.extra_vars for a in ("-e", e)]
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "trivial.yml"
        trivial.write_text(TRIVIAL)
        variants = [("trivial", trivial, one, 1), ("playbook", args.playbook, one, 1),
                    ("trivial", trivial, args.hosts, len(hosts)), ("playbook", args.playbook, args.hosts, len(hosts))]
        if args.shards:
            variants.append(("sharded", args.playbook, args.hosts, len(hosts)))
        if args.pull:
            variants += [("pull", PULL, one, 1), ("pull", PULL, args.hosts, len(hosts))]
            if args.shards:
                variants.append(("pull-sharded", PULL, args.hosts, len(hosts)))
        roles = [NO_ROLE, *roles_for("site")] if args.per_role else []
        variants += [(f"role:{role}", args.playbook, args.hosts, len(hosts)) for role in roles]
        runs: list[dict] = []
        for repeat in range(args.repeats):
            for name, playbook, limit, count in variants:
                tags = ["--tags", name.removeprefix("role:")] if name.startswith("role:") else []
                result = {"repeat": repeat + 1, "variant": name, "hosts": count,
                          **run(playbook, args.inventory, limit, (extra + tags) if name != "trivial" else [],
                                shards=args.shards if name.endswith("sharded") else 0, pull=name.startswith("pull"))}
                runs.append(result)
                per_host = [sum(r[k] for k in ("ok", "changed", "skipped", "failed")) for r in result["recap"].values()]
                changed = sum(r["changed"] for r in result["recap"].values())
                print(f"repeat {repeat + 1}: {name:8} {count} host(s): {result['wall_s']:7.2f} s wall, "
                      f"{result['cpu_s']:7.2f} CPU-s, rc {result['rc']}, task results per host {per_host}, "
                      f"changed {changed}", flush=True)

    def median(name: str, count: int, key: str) -> float:
        return statistics.median(r[key] for r in runs if r["variant"] == name and r["hosts"] == count)

    summary: dict[str, Any] = {}
    for count in sorted({1, len(hosts)}):
        summary[f"{count}_hosts"] = {
            "trivial_wall_s": median("trivial", count, "wall_s"),
            "playbook_wall_s": median("playbook", count, "wall_s"),
            "playbook_over_trivial": round(median("playbook", count, "wall_s") / median("trivial", count, "wall_s"), 2),
            "playbook_cpu_s_per_host": round(median("playbook", count, "cpu_s") / count, 2)}
    one_wall, all_wall = median("playbook", 1, "wall_s"), median("playbook", len(hosts), "wall_s")
    summary["all_over_one_wall"] = round(all_wall / one_wall, 2)
    summary["all_over_one_cpu"] = round(median("playbook", len(hosts), "cpu_s") / median("playbook", 1, "cpu_s"), 2)
    if args.shards:
        summary["sharded"] = {"shards": args.shards, "wall_s": median("sharded", len(hosts), "wall_s"),
                              "cpu_s_per_host": round(median("sharded", len(hosts), "cpu_s") / len(hosts), 2),
                              "over_trivial": round(median("sharded", len(hosts), "wall_s")
                                                    / median("trivial", len(hosts), "wall_s"), 2),
                              "over_one_host": round(median("sharded", len(hosts), "wall_s") / one_wall, 2)}
    if args.pull:
        pulled = {count: median("pull", count, "wall_s") for count in sorted({1, len(hosts)})}
        summary["pull"] = {
            f"{count}_hosts": {"wall_s": wall, "over_trivial": round(wall / median("trivial", count, "wall_s"), 2),
                               "cpu_s_per_host": round(median("pull", count, "cpu_s") / count, 2)}
            for count, wall in pulled.items()}
        summary["pull"]["all_over_one_wall"] = round(pulled[len(hosts)] / pulled[1], 2)
        if args.shards:
            summary["pull"]["sharded"] = {"wall_s": median("pull-sharded", len(hosts), "wall_s"),
                                          "cpu_s_per_host": round(median("pull-sharded", len(hosts), "cpu_s")
                                                                  / len(hosts), 2)}
    if roles:
        floor = median(f"role:{NO_ROLE}", len(hosts), "cpu_s")
        summary["per_role"] = {"floor_cpu_s_per_host": round(floor / len(hosts), 2), "roles": {}}
        for role in roles[1:]:
            cpu = median(f"role:{role}", len(hosts), "cpu_s")
            tasks = statistics.median(sum(r[k] for r in run_["recap"].values() for k in ("ok", "skipped", "changed"))
                                      / len(hosts) for run_ in runs if run_["variant"] == f"role:{role}")
            floor_tasks = statistics.median(sum(r[k] for r in run_["recap"].values() for k in ("ok", "skipped",
                                                                                              "changed"))
                                            / len(hosts) for run_ in runs if run_["variant"] == f"role:{NO_ROLE}")
            summary["per_role"]["roles"][role] = {
                "cpu_s_per_host": round((cpu - floor) / len(hosts), 2), "tasks_per_host": tasks - floor_tasks,
                "wall_s": median(f"role:{role}", len(hosts), "wall_s")}
        print(f"{'role':18} {'CPU-s/host':>10} {'tasks/host':>10}  (above the floor: "
              f"{summary['per_role']['floor_cpu_s_per_host']} CPU-s per host)")
        for role, row in summary["per_role"]["roles"].items():
            print(f"{role:18} {row['cpu_s_per_host']:>10.2f} {row['tasks_per_host']:>10.1f}")
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"hosts": hosts, "playbook": str(args.playbook), "runs": runs,
                                         "summary": summary, "load_before": os.getloadavg()}, indent=2))
    return 0 if all(r["rc"] == 0 for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
