"""Launch ib_write_bw per rail between node pairs over SSH; save each side's output; leave nothing behind.

    plan = partner_plan(nodes, partner)           # every other node against one known-good partner
    plan = swapped_pairs_plan(nodes)              # disjoint pairs, then the same pairs the other way
    runs = run_plan(spec, plan, rails, out_dir, gid_index=3, duration_s=10)

A plan is a tuple of rounds; a round is (server, client) pairs that share no node, so they run at
the same time. Every rail of every pair of a round runs at once, each on its own perftest TCP port
(`tcp_port + run index` within the round), so all rails of a node are loaded together, as a job
loads them. One (pair, rail) run, with its own marker:

1. the server starts on the server node: `env ROCM_FLEET_JOB=<marker> timeout ... ib_write_bw ...`;
2. after `PAIR_START_S` the client starts on the client node with the server's address; perftest's
   client connects once, so while it reports "Couldn't connect to" it is started again, for up to
   `CONNECT_RETRY_S`;
3. both have the pair's limit on the node (coreutils timeout, TERM then KILL) and on the
   controller (the SSH process group is killed); a server still running `SERVER_GRACE_S` after its
   client ended (the client failed to start, say) is stopped then, not at its limit;
4. both nodes are swept for processes of the run's marker (remote.sweep), always.

Written: OUT/<client>/<rail>.txt (client stdout, only for a run that exited 0, so that
rails.read_rail_outputs judges exactly the runs that completed), OUT/<client>/<rail>.log (both
sides' stderr, and stdout of a failed run) and OUT/rail-runs.json (one entry per run). The
measurement belongs to the client node: with a known-good partner the client is the node under
test. With swapped pairs each node is client once; a slow pair then makes both nodes suspects.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

from validation import runner
from validation.codes import CODES
from validation.judge import Verdict
from validation.multinode import remote
from validation.multinode.launch import MARKER_VAR
from validation.multinode.model import ClusterError, ClusterSpec
from validation.multinode.rails import DEFAULT_TCP_PORT, NOT_INSTALLED_RC, PAIR_START_S, rail_pair_argv
from validation.records import Status, to_jsonable
from validation.runner import RawRun
from validation.targets.model import Target

RUNS_FILE = "rail-runs.json"
KILL_AFTER_S = 5
RUN_METRIC = "ib_write_bw_run"
CONNECT_RETRY_S = 10       # the client is started again while it cannot connect, up to this long
CONNECT_REFUSED = "Couldn't connect to"   # perftest's client when nothing listens on the port yet
SERVER_GRACE_S = 5         # after its client ends, a server still running this long is stopped

Pair = tuple[str, str]           # (server, client)
Plan = tuple[tuple[Pair, ...], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RailRun:
    """One finished (pair, rail) run. rc None: the controller had to cut the SSH session."""

    server: str
    client: str
    rail: str
    tcp_port: int
    client_rc: int | None
    server_rc: int | None
    timed_out: bool
    seconds: float
    output: str            # OUT-relative path of the client's stdout ("" when the run failed)
    log: str               # OUT-relative path of both sides' stderr
    error: str             # last lines of what the failing side printed; "" when both exited 0
    strays: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.client_rc == 0 and self.server_rc == 0 and not self.timed_out

    @property
    def not_installed(self) -> bool:
        return NOT_INSTALLED_RC in (self.client_rc, self.server_rc)


def partner_plan(nodes: Sequence[str], partner: str) -> Plan:
    """Every other node as client of the known-good partner, one pair per round (the partner is in all)."""
    names = _unique(nodes)
    if partner not in names:
        raise ClusterError(f"partner {partner!r} is not one of the nodes {names}")
    return tuple((((partner, n),)) for n in names if n != partner)


def swapped_pairs_plan(nodes: Sequence[str]) -> Plan:
    """Disjoint neighbour pairs (n1,n2), (n3,n4), ... in one round, then the same pairs swapped, so every
    node is client once in two rounds; an odd node out is client of the first node in a third round."""
    names = _unique(nodes)
    pairs = [(names[i], names[i + 1]) for i in range(0, len(names) - 1, 2)]
    plan = [tuple(pairs), tuple((b, a) for a, b in pairs)]
    if len(names) % 2:
        plan.append(((names[0], names[-1]),))
    return tuple(plan)


def _unique(nodes: Sequence[str]) -> list[str]:
    names = list(nodes)
    if len(set(names)) != len(names):
        raise ClusterError(f"a node is listed twice in {names}")
    if len(names) < 2:
        raise ClusterError(f"per-rail pairs need at least 2 nodes, got {names}")
    return names


def _remote(argv: Sequence[str], marker: str, limit_s: int) -> list[str]:
    return ["env", f"{MARKER_VAR}={marker}", "timeout", "--signal=TERM", f"--kill-after={KILL_AFTER_S}",
            str(limit_s), *argv]


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[-lines:] if ln.strip())


@dataclass(frozen=True, slots=True, kw_only=True)
class PairSides:
    """What both sides of one (pair, rail) run returned."""

    server: RawRun
    client: RawRun
    port: int
    server_stopped: bool           # it outlived its client by SERVER_GRACE_S and was swept
    connect_attempts: int
    strays: tuple[str, ...]        # processes of this run found (and killed) on either node afterwards


def _refused(raw: RawRun) -> bool:
    return raw.rc not in (0, None) and CONNECT_REFUSED in raw.stdout + raw.stderr


def run_pair_rail(spec: ClusterSpec, server: str, client: str, rail: str, *, index: int, marker: str,
                  gid_index: int | None, size_bytes: int, duration_s: int, qps: int, bidirectional: bool,
                  binary: str, tcp_port: int, run: Callable[..., RawRun] = runner.run,
                  start_s: float = PAIR_START_S, connect_retry_s: float = CONNECT_RETRY_S) -> PairSides:
    """Server, then client (again while the server is not listening yet), then both nodes swept."""
    job = f"{marker}-{index}"
    port = tcp_port + index
    pair = rail_pair_argv(rail, spec.node(server).ssh_host, gid_index=gid_index, size_bytes=size_bytes,
                          duration_s=duration_s, qps=qps, tcp_port=port, bidirectional=bidirectional, binary=binary)
    limit = pair.timeout_s
    ssh_limit = limit + KILL_AFTER_S + remote.SSH_SLACK_S
    with ThreadPoolExecutor(max_workers=1) as serving:
        served = serving.submit(run, remote.ssh_argv(spec.node(server).connection,
                                                     _remote(pair.server_argv, job, limit)), timeout_s=ssh_limit)
        time.sleep(start_s)
        deadline, attempts = time.monotonic() + connect_retry_s, 0
        while True:
            attempts += 1
            client_run = run(remote.ssh_argv(spec.node(client).connection,
                                             _remote(pair.client_argv, job, limit - int(start_s))),
                             timeout_s=ssh_limit)
            if not _refused(client_run) or served.done() or time.monotonic() > deadline:
                break
            time.sleep(1)   # perftest's client connects once; the server may still be starting
        stopped = False
        try:
            server_run = served.result(timeout=SERVER_GRACE_S)
        except FutureTimeout:
            # the client is gone (failed, or finished while the server waits on): stop the server now
            # rather than let it sit until its limit
            stopped = True
            remote.sweep(spec, server, job, run=run)
            server_run = served.result()
    strays: list[str] = []
    for node in dict.fromkeys((server, client)):
        found, error = remote.sweep(spec, node, job, run=run)
        strays += [f"{s.node}:{s.pid} {s.command}" for s in found] + ([error] if error else [])
    return PairSides(server=server_run, client=client_run, port=port, server_stopped=stopped,
                     connect_attempts=attempts, strays=tuple(strays))


def run_plan(spec: ClusterSpec, plan: Plan, rails: Sequence[str], out: Path, *, gid_index: int | None = None,
             size_bytes: int = 1048576, duration_s: int = 10, qps: int = 1, bidirectional: bool = False,
             binary: str = "ib_write_bw", tcp_port: int = DEFAULT_TCP_PORT,
             run: Callable[..., RawRun] = runner.run, start_s: float = PAIR_START_S) -> list[RailRun]:
    """Run every round of `plan` over every rail; write outputs and OUT/rail-runs.json after each round.

    OUT's earlier outputs (OUT/<node>/*.txt|*.log, rail-runs.json) are removed first, so what is judged
    afterwards is this run's and nothing older."""
    if not rails:
        raise ClusterError("no rails to test: declare them (--rails mlx5_0:1,... or NCCL_IB_HCA in the inventory)")
    out.mkdir(parents=True, exist_ok=True)
    for old in [out / RUNS_FILE, *out.glob("*/*.txt"), *out.glob("*/*.log")]:
        old.unlink(missing_ok=True)
    done: list[RailRun] = []
    for number, pairs in enumerate(plan, 1):
        marker = remote.new_marker()
        jobs = [(server, client, rail, p * len(rails) + i)
                for p, (server, client) in enumerate(pairs) for i, rail in enumerate(rails)]
        logging.getLogger(__name__).info("rail round %d/%d (%s): %d runs of %s", number, len(plan), marker,
                                         len(jobs), binary)
        one = functools.partial(run_pair_rail, spec, marker=marker, gid_index=gid_index, size_bytes=size_bytes,
                                duration_s=duration_s, qps=qps, bidirectional=bidirectional, binary=binary,
                                tcp_port=tcp_port, run=run, start_s=start_s)
        # every run of the round at once: all rails of every pair are loaded together
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            futures = [pool.submit(one, server, client, rail, index=i) for server, client, rail, i in jobs]
            for (server, client, rail, _), future in zip(jobs, futures, strict=True):
                done.append(_record(out, server, client, rail, future.result()))
        (out / RUNS_FILE).write_text(json.dumps({"schema_version": 1, "cluster": spec.name, "binary": binary,
                                                 "rails": list(rails), "runs": to_jsonable(done)}, indent=2) + "\n")
    return done


def _record(out: Path, server: str, client: str, rail: str, sides: PairSides) -> RailRun:
    srv, cli = sides.server, sides.client
    # either side killed at its limit means the pair hung; whichever limit fires first, the other side
    # then sees a broken connection (a server this code stopped early is not a timeout)
    server_timed_out = not sides.server_stopped and (srv.timed_out or srv.rc in remote.TIMEOUT_RCS)
    timed_out = cli.timed_out or cli.rc in remote.TIMEOUT_RCS or server_timed_out
    ok = cli.rc == 0 and srv.rc == 0 and not timed_out and not sides.server_stopped
    directory = out / client
    directory.mkdir(parents=True, exist_ok=True)
    output = ""
    if ok:
        output = f"{client}/{rail}.txt"
        (out / output).write_text(cli.stdout)
    log = f"{client}/{rail}.log"
    server_state = "stopped after its client ended" if sides.server_stopped else f"rc {srv.rc}"
    sections = [f"# client {client} rc {cli.rc}, {sides.connect_attempts} attempt(s): {' '.join(cli.argv)}",
                cli.stderr, *([] if ok else ["# client stdout", cli.stdout]),
                f"# server {server} {server_state}: {' '.join(srv.argv)}", srv.stderr, "# server stdout", srv.stdout]
    (out / log).write_text("\n".join(sections) + "\n")
    error = ""
    if not ok:
        parts = []
        if cli.rc != 0 or cli.timed_out:
            parts.append(f"client exit {'killed' if cli.timed_out else cli.rc}: {_tail(cli.stderr or cli.stdout)}")
        if sides.server_stopped:
            parts.append(f"server stopped {SERVER_GRACE_S} s after its client ended: {_tail(srv.stderr or srv.stdout)}")
        elif srv.rc != 0 or srv.timed_out:
            parts.append(f"server exit {'killed' if srv.timed_out else srv.rc}: {_tail(srv.stderr or srv.stdout)}")
        error = "; ".join(parts)
    return RailRun(server=server, client=client, rail=rail, tcp_port=sides.port, client_rc=cli.rc,
                   server_rc=None if sides.server_stopped else srv.rc, timed_out=timed_out,
                   seconds=round(max(srv.seconds, cli.seconds), 1), output=output, log=log, error=error,
                   strays=sides.strays)


def run_verdicts(runs: Sequence[RailRun], *, binary: str = "ib_write_bw") -> list[Verdict]:
    """A verdict for every run that produced no bandwidth (timeout, failed to run; not installed is SKIP)
    and a WARN for any run that left processes behind. Runs that exited 0 are judged on their bandwidth
    (rails.judge_rail_bandwidth)."""
    target = Target(metric=RUN_METRIC, value=None, unit="", record_only=True,
                    source="perftest exits 0 when the test completed")
    out = []

    def verdict(run: RailRun, status: Status, code: str, why: str) -> None:
        where = f"{binary} {run.client} -> {run.server} rail {run.rail} (TCP port {run.tcp_port})"
        out.append(Verdict(status=status, subject=f"{run.client} {run.rail}", metric=RUN_METRIC, measured=None,
                           unit="", target=target, reason=f"{where} {why}", code=code,
                           hint=CODES.get(code, "") if code else ""))

    for r in runs:
        if r.timed_out:
            verdict(r, Status.TIMEOUT, "RF-TIMEOUT", f"ran past its limit and was killed: {r.error}")
        elif r.not_installed:
            verdict(r, Status.SKIP, "", f"not run: {binary} is not installed (perftest): {r.error}")
        elif not r.ok:
            verdict(r, Status.FAIL, "RF-NET-RAIL-RUN", f"failed: {r.error}")
        if r.strays:
            verdict(r, Status.WARN, "", f"left processes behind (killed): {', '.join(r.strays)}")
    return out
