"""`rocm-fleet cluster ...`: launch across an inventory group (mpirun or srun, as the inventory
declares), schedule pairwise runs, and admit nodes into the cluster.

    cluster hostfile -i INV [--group G] [--slurm]           the group's hostfile / Slurm node list
    cluster run      -i INV [--group G] [--nodes a,b] [--timeout S] -- PROGRAM [ARGS]
    cluster smoke    -i INV [--group G] [--timeout S]    MPI ping-pong + allreduce on every node
    cluster pairwise -i INV [--group G] --out DIR [--pattern pairwise|partner|k-batch|all]
                     [--partner NODE] [--k K] [--timeout S] -- all_reduce_perf ARGS
    cluster admit    --runs DIR --single-node RESULTS_DIR --sku SKU [--gpus-per-node 8] [--out DIR]
                     [--rails RAILS_JSON]               + reject nodes whose per-rail checks failed
    cluster rails    -i INV [--group G] [--rails mlx5_0:1,mlx5_1:1] [--gid-index N]
                     RDMA port state, NIC firmware, RoCE v2 GID at the declared index (rails and
                     index default to the inventory's NCCL_IB_HCA / NCCL_IB_GID_INDEX)
                     [--run-bw OUT [--pattern partner|swapped] [--partner NODE] [--duration-s 10]]
                                                     + launch ib_write_bw pairs per rail, save, judge
                     [--bw-results DIR] [--nic-gbps 400] [--peer-gap-pct 10]
                                                     + judge saved ib_write_bw: DIR/<node>/<rail>.txt

Exit codes: 0 the job passed / every node admitted; 1 a job failed or timed out / a node was
rejected; 2 no verdict (bad inventory, unreadable input).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from validation.commands._options import deprecated
from validation.errors import RocmFleetError
from validation.judge import Verdict
from validation.multinode import admission, rail_gids, rail_runs, rails, report, results, schedule
from validation.multinode.hostfile import openmpi_hostfile, slurm_nodelist
from validation.multinode.inventory import load_cluster
from validation.multinode.model import ClusterSpec
from validation.multinode.remote import LaunchResult, launch
from validation.multinode.targets import multinode_target
from validation.records import FAILING, Status, to_jsonable, worst
from validation.runner import RawRun

SMOKE_PROGRAM = "rocm_fleet_mpi_smoke.py"
SMOKE_PREFIX = "rocm-fleet-mpi-smoke: "


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="multi-node launch, pairwise runs and node admission",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cmds = p.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")

    def with_inventory(q: argparse.ArgumentParser) -> None:
        q.add_argument("-i", "--inventory", type=Path, required=True, help="Ansible inventory")
        q.add_argument("--group", default="gpu_nodes", help="inventory group forming the cluster (default gpu_nodes)")

    q = cmds.add_parser("hostfile", help="print the group's OpenMPI hostfile (or Slurm node list)")
    with_inventory(q)
    q.add_argument("--slurm", action="store_true", help="print a Slurm node list instead")
    q.set_defaults(run=run_hostfile)

    q = cmds.add_parser("run", help="run a program on the group's nodes through the declared launcher")
    with_inventory(q)
    q.add_argument("--nodes", default="", help="comma-separated subset of the group (default: all)")
    q.add_argument("--timeout", dest="timeout_s", type=float, default=300.0, metavar="SECONDS",
                   help="wall-clock limit of the job (default 300)")
    deprecated(q, "--timeout-s", "--timeout", "timeout_s", type=float)
    q.add_argument("--json", action="store_true", help="print one JSON document")
    q.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS]")
    q.set_defaults(run=run_program)

    q = cmds.add_parser("smoke", help="MPI ping-pong + allreduce across every node (roles/mpi_launcher's program)")
    with_inventory(q)
    q.add_argument("--timeout", dest="timeout_s", type=float, default=300.0, metavar="SECONDS",
                   help="wall-clock limit of the job (default 300)")
    deprecated(q, "--timeout-s", "--timeout", "timeout_s", type=float)
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=run_smoke)

    q = cmds.add_parser("pairwise", help="run a collective test per pair / batch and save the outputs")
    with_inventory(q)
    q.add_argument("--out", type=Path, required=True, help="directory for the outputs and runs.json")
    q.add_argument("--pattern", choices=["pairwise", "partner", "k-batch", "all"], default="pairwise")
    q.add_argument("--partner", default="", help="known-good node for --pattern partner")
    q.add_argument("--k", type=int, default=2, help="batch size for --pattern k-batch")
    q.add_argument("--timeout", dest="timeout_s", type=float, default=600.0, metavar="SECONDS",
                   help="limit per run (default 600)")
    deprecated(q, "--timeout-s", "--timeout", "timeout_s", type=float)
    q.add_argument("program", nargs=argparse.REMAINDER, help="-- all_reduce_perf -b 8 -e 16G -f 2 -g 1 -c 1")
    q.set_defaults(run=run_pairwise)

    q = cmds.add_parser("admit", help="admitted / rejected nodes from pairwise outputs and single-node results")
    q.add_argument("--runs", type=Path, required=True, help="directory with runs.json (cluster pairwise)")
    q.add_argument("--single-node", type=Path, required=True, help="per-node results of `rocm-fleet validate`")
    q.add_argument("--sku", required=True, help="target SKU, e.g. mi300x")
    q.add_argument("--gpus-per-node", type=int, default=8)
    q.add_argument("--rails", type=Path, default=None,
                   help="`cluster rails --json` output; a node whose rail checks failed is rejected")
    q.add_argument("--cluster", default="cluster", help="name in the report heading")
    q.add_argument("--out", type=Path, default=None, help="write admitted.hostfile, admitted.nodelist, "
                   "admission.md, admission.json here (default: --runs)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=run_admit)


    q = cmds.add_parser("rails", help="per-rail RDMA checks: port state, NIC firmware, RoCE GID, ib_write_bw pairs")
    with_inventory(q)
    q.add_argument("--rails", default="", help="declared rails DEVICE:PORT, comma-separated (default: the "
                   "inventory's NCCL_IB_HCA; neither: ports are listed, not judged)")
    bw = q.add_mutually_exclusive_group()
    bw.add_argument("--run-bw", type=Path, default=None, metavar="OUT",
                    help="launch ib_write_bw server/client pairs per rail over SSH, save to OUT, judge them")
    q.add_argument("--pattern", choices=["partner", "swapped"], default="partner",
                   help="partner: every node against --partner; swapped: disjoint pairs both ways (faster)")
    q.add_argument("--partner", default="", help="known-good node for --pattern partner (default: the first)")
    q.add_argument("--duration-s", type=int, default=10, help="ib_write_bw -D per run (default 10)")
    q.add_argument("--size-bytes", type=int, default=1048576, help="ib_write_bw -s (default 1 MiB)")
    q.add_argument("--qps", type=int, default=1, help="ib_write_bw -q (default 1)")
    q.add_argument("--bidirectional", action="store_true", help="ib_write_bw -b")
    q.add_argument("--binary", default="ib_write_bw", help="perftest binary on the nodes (default ib_write_bw)")
    q.add_argument("--tcp-port", type=int, default=rails.DEFAULT_TCP_PORT,
                   help="first perftest TCP port; rail i uses port + i (default 18515)")
    bw.add_argument("--bw-results", type=Path, default=None,
                   help="saved ib_write_bw outputs DIR/<node>/<rail>.txt to judge per rail (and their GID index)")
    q.add_argument("--nic-gbps", type=int, default=None,
                   help="NIC speed; 400 applies AMD's 390/770 Gb/s target, otherwise record only")
    q.add_argument("--gid-index", type=int, default=None,
                   help="declared RoCE GID index (default: the inventory's NCCL_IB_GID_INDEX, else the "
                        "fleet's most common one in the ib_write_bw outputs)")
    q.add_argument("--peer-gap-pct", type=float, default=rails.PEER_GAP * 100,
                   help="flag a rail this many %% below its peers' median (default 10)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=run_rails)


def _program(args: argparse.Namespace) -> list[str]:
    program = list(args.program)
    if program[:1] == ["--"]:
        program = program[1:]
    if not program:
        raise RocmFleetError("no program given; put it after `--`, e.g. `-- hostname`")
    return program


def _describe(result: LaunchResult) -> dict:
    doc = to_jsonable(result)
    doc["ok"] = result.ok
    return doc


def _emit(result: LaunchResult, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"schema_version": 1, **_describe(result)}, indent=2))
    else:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        state = "timed out" if result.timed_out else f"exit {result.rc}"
        print(f"cluster job {result.marker} on {', '.join(result.nodes)} via {result.method}: {state}, "
              f"{result.seconds:.1f} s, stray processes killed: {len(result.strays)}", file=sys.stderr)
    return 0 if result.ok and not result.sweep_errors else 1


def run_hostfile(args: argparse.Namespace) -> int:
    spec, names = load_cluster(args.inventory, args.group)
    text = slurm_nodelist(names) + "\n" if args.slurm else openmpi_hostfile(names, spec.ranks_per_node)
    sys.stdout.write(text)
    return 0


def run_program(args: argparse.Namespace) -> int:
    spec, names = load_cluster(args.inventory, args.group)
    nodes = [n for n in args.nodes.split(",") if n] or names
    return _emit(launch(spec, nodes, _program(args), timeout_s=args.timeout_s), args.json)


def smoke_verdict(result: LaunchResult, nodes: list[str], ranks_per_node: int) -> tuple[bool, str]:
    """Did the smoke job prove the launch path: every rank on its node, allreduce and ping-pong right?"""
    if result.timed_out:
        return False, "the smoke job timed out"
    line = next((ln for ln in result.stdout.splitlines() if ln.startswith(SMOKE_PREFIX)), None)
    if line is None:
        return False, f"the smoke job printed no summary (exit {result.rc})"
    summary = json.loads(line[len(SMOKE_PREFIX):])
    want = len(nodes) * ranks_per_node
    if summary.get("ranks") != want or sorted(set(summary.get("hosts", []))) != sorted(nodes):
        return False, f"ranks ran on {summary.get('hosts')}, expected {ranks_per_node} on each of {nodes}"
    if not summary.get("ok") or result.rc != 0:
        return False, f"the smoke checks failed (exit {result.rc}): {line}"
    return True, f"{want} ranks on {len(nodes)} nodes; allreduce {summary['allreduce_sum']} as expected"


def run_smoke(args: argparse.Namespace) -> int:
    spec, names = load_cluster(args.inventory, args.group)
    program = ["python3", f"{spec.config_dir}/{SMOKE_PROGRAM}"]
    result = launch(spec, names, program, timeout_s=args.timeout_s)
    ok, why = smoke_verdict(result, names, spec.ranks_per_node)
    if args.json:
        print(json.dumps({"schema_version": 1, "passed": ok, "reason": why, **_describe(result)}, indent=2))
    else:
        sys.stdout.write(result.stdout)
        print(f"cluster smoke: {'PASS' if ok else 'FAIL'}: {why}", file=sys.stderr)
    return 0 if ok else 1


def run_pairwise(args: argparse.Namespace) -> int:
    spec, names = load_cluster(args.inventory, args.group)
    program = _program(args)
    if args.pattern == "pairwise":
        plan = schedule.pairwise(names)
    elif args.pattern == "partner":
        plan = schedule.with_partner(names, args.partner or names[0])
    elif args.pattern == "k-batch":
        plan = schedule.k_batch(names, args.k)
    else:
        plan = schedule.all_nodes(names)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = []
    # Groups of one round share no node; they run one after the other here, which is slower but
    # keeps one job's traffic from disturbing another's numbers.
    for group in schedule.groups(plan):
        result = launch(spec, group, program, timeout_s=args.timeout_s)
        name = "+".join(group) + ".txt"
        (args.out / name).write_text(result.stdout)
        runs.append({"nodes": list(group), "output": name, "rc": result.rc, "timed_out": result.timed_out,
                     "seconds": round(result.seconds, 1), "strays": to_jsonable(result.strays),
                     "argv": list(result.argv)})
        (args.out / results.RUNS_FILE).write_text(json.dumps({"schema_version": 1, "cluster": spec.name,
                                                               "pattern": args.pattern, "runs": runs}, indent=2))
    failed = [r for r in runs if r["rc"] != 0 or r["timed_out"]]
    print(f"{len(runs)} runs, {len(failed)} failed or timed out; outputs in {args.out}", file=sys.stderr)
    return 1 if failed else 0


def _rail_results(path: Path, nodes: list[str]) -> dict[str, tuple[str, list[str]]]:
    """node -> (status, reasons) from `cluster rails --json`; a node the file lacks counts as an error."""
    try:
        doc = json.loads(path.read_text())
        out = {n: (str(d["status"]), [str(r) for r in d["reasons"]]) for n, d in doc["nodes"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RocmFleetError(f"{path}: not the output of `rocm-fleet cluster rails --json` ({exc})") from exc
    for node in nodes:
        out.setdefault(node, ("error", [f"not in the per-rail results {path}"]))
    return out


def run_admit(args: argparse.Namespace) -> int:
    index = json.loads((args.runs / results.RUNS_FILE).read_text()) if (args.runs / results.RUNS_FILE).exists() \
        else {}
    sizes = {len(r["nodes"]) for r in index.get("runs", [])}
    if len(sizes) != 1:
        raise RocmFleetError(f"{args.runs / results.RUNS_FILE}: runs must all have the same node count to share "
                             f"one target; found {sorted(sizes) or 'no runs'}")
    target = multinode_target(args.sku, sizes.pop(), args.gpus_per_node)
    runs = results.load_runs(args.runs, target)
    single = results.single_node_statuses(args.single_node)
    nodes = list(dict.fromkeys([*[n for r in runs for n in r.nodes], *single]))
    rail_results = _rail_results(args.rails, nodes) if args.rails is not None else None
    verdict = admission.admit(nodes, single, runs, target, rails=rail_results)
    out = args.out or args.runs
    out.mkdir(parents=True, exist_ok=True)
    (out / "admitted.hostfile").write_text(report.admitted_hostfile(verdict, args.gpus_per_node))
    (out / "admitted.nodelist").write_text(report.admitted_nodelist(verdict))
    (out / "admission.md").write_text(report.markdown(verdict, cluster=args.cluster))
    doc = {"schema_version": 1, "admitted": list(verdict.admitted),
           "rejected": [{"node": n.node, "reasons": list(n.reasons)} for n in verdict.rejected],
           "nodes": to_jsonable(verdict.nodes)}
    (out / "admission.json").write_text(json.dumps(doc, indent=2) + "\n")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(report.markdown(verdict, cluster=args.cluster), end="")
    return 0 if not verdict.rejected else 1


class _NodeDocs:
    """Per-node result of `cluster rails`: worst status, the reasons of every non-passing verdict."""

    RECORD_SECTIONS = ("port_state", "gid", "bandwidth")   # their SKIPs are record-only values, not reasons

    def __init__(self, names: list[str]) -> None:
        self.docs: dict[str, dict] = {n: {"status": Status.SKIP.value, "reasons": []} for n in names}
        self._seen: dict[str, list[Status]] = {n: [] for n in names}

    def add(self, node: str, status: Status, reason: str = "", section: str = "", item: object = None) -> None:
        doc = self.docs[node]
        self._seen[node].append(status)
        doc["status"] = worst(self._seen[node]).value
        recorded_only = status == Status.SKIP and section in self.RECORD_SECTIONS
        if reason and status != Status.PASS and not recorded_only:
            doc["reasons"].append(reason)
        if section:
            doc.setdefault(section, []).append(to_jsonable(item))

    def verdict(self, node: str, v: Verdict, section: str) -> None:
        self.add(node, v.status, v.reason, section, v)

    @property
    def failed(self) -> list[str]:
        return [n for n, doc in self.docs.items() if doc["status"] in FAILING]


def _why(raw: RawRun) -> str:
    return "timed out" if raw.timed_out else f"exit {raw.rc}: {raw.stderr.strip()[-300:]}"


def _rail_ports(spec: ClusterSpec, names: list[str], declared: list[str], docs: _NodeDocs) -> None:
    ports_by_node: dict[str, tuple[rails.RdmaPort, ...]] = {}
    for name in names:
        raw = rails.probe(spec, name)
        if raw.rc == rails.NOT_INSTALLED_RC:
            docs.add(name, Status.SKIP, "ibv_devinfo is not installed (ibverbs-utils)")
            continue
        if rails.no_devices(raw):
            ports: tuple[rails.RdmaPort, ...] = ()
        elif not raw.ok:
            docs.add(name, Status.ERROR, f"ibv_devinfo {_why(raw)}")
            continue
        else:
            ports = rails.parse_ibv_devinfo(raw.stdout)
        ports_by_node[name] = ports
        docs.docs[name]["ports"] = to_jsonable(ports)
        if not ports and not declared:
            docs.add(name, Status.SKIP, f"no RDMA device (ibv_devinfo: {(raw.stdout + raw.stderr).strip()[-200:]})")
        for v in rails.judge_rails(name, ports, declared):
            docs.verdict(name, v, "port_state")
    for name, why in rails.firmware_outliers(ports_by_node).items():
        docs.add(name, Status.FAIL, why)


def _rail_gids(spec: ClusterSpec, names: list[str], declared: list[str], gid_index: int, docs: _NodeDocs) -> None:
    for name in names:
        raw = rail_gids.probe(spec, name, declared, gid_index=gid_index)
        if not raw.ok:
            docs.add(name, Status.ERROR, f"GID probe {_why(raw)}")
            continue
        try:
            gids = rail_gids.parse_probe(raw.stdout)
        except ValueError as exc:
            docs.add(name, Status.ERROR, f"GID probe output not understood: {exc}")
            continue
        for v in rail_gids.judge_gids(name, gids, declared, gid_index=gid_index):
            docs.verdict(name, v, "gid")


def _rail_bandwidth(args: argparse.Namespace, spec: ClusterSpec, names: list[str], declared: list[str],
                    gid_index: int | None, docs: _NodeDocs) -> None:
    directory = args.bw_results
    if args.run_bw is not None:
        if args.pattern == "swapped":
            plan = rail_runs.swapped_pairs_plan(names)
        else:
            plan = rail_runs.partner_plan(names, args.partner or names[0])
        done = rail_runs.run_plan(spec, plan, declared, args.run_bw, gid_index=gid_index, size_bytes=args.size_bytes,
                                  duration_s=args.duration_s, qps=args.qps, bidirectional=args.bidirectional,
                                  binary=args.binary, tcp_port=args.tcp_port)
        for v in rail_runs.run_verdicts(done, binary=args.binary):
            docs.verdict(v.subject.split()[0], v, "runs")
        directory = args.run_bw
    if directory is None:
        return
    measured = rails.rail_bandwidths(rails.read_rail_outputs(directory, names))
    for m, v in zip(measured, rails.judge_rail_bandwidth(measured, nic_gbps=args.nic_gbps,
                                                         peer_gap=args.peer_gap_pct / 100), strict=True):
        docs.verdict(m.node, v, "bandwidth")
    for name, why in rails.gid_index_outliers(measured, declared=gid_index).items():
        docs.add(name, Status.FAIL, why)


def run_rails(args: argparse.Namespace) -> int:
    spec, names = load_cluster(args.inventory, args.group)
    env = dict(spec.env)
    try:
        declared = rails.declared_rails(args.rails, env)
        gid_index = rails.declared_gid_index(args.gid_index, env)
    except ValueError as exc:
        raise RocmFleetError(str(exc)) from exc
    if args.run_bw is not None and not declared:
        raise RocmFleetError("--run-bw needs the rails: --rails mlx5_0:1,... or NCCL_IB_HCA in the inventory")
    docs = _NodeDocs(names)
    _rail_ports(spec, names, declared, docs)
    if declared and gid_index is not None:
        _rail_gids(spec, names, declared, gid_index, docs)
    _rail_bandwidth(args, spec, names, declared, gid_index, docs)
    if args.json:
        print(json.dumps({"schema_version": 1, "rails": declared, "gid_index": gid_index, "nodes": docs.docs,
                          "failed": docs.failed}, indent=2))
    else:
        for name, doc in docs.docs.items():
            print(f"{name}: {doc['status']}" + (f": {'; '.join(doc['reasons'])}" if doc["reasons"] else ""))
    return 1 if docs.failed else 0
