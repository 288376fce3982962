"""Per-rail ib_write_bw pairs: plans, the command lines each side gets, and verdicts on finished runs.

SSH is replaced here by a recorder of the command lines (the real SSH path runs on three lab
hosts in tests/integration/test_multinode.py). The failing runs carry the error text that real
perftest 4.5 (Debian bookworm) printed on this project's CI machine, which has no RDMA device.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from validation.multinode.model import ClusterError, ClusterSpec, Connection, Node
from validation.multinode.rail_runs import RUNS_FILE, partner_plan, run_plan, run_verdicts, swapped_pairs_plan
from validation.records import Status
from validation.runner import RawRun

# ib_write_bw -d mlx5_0 ... on a machine without RDMA support: exit 1, these lines on stderr
NO_DEVICE = (" Did not detect devices \n If device exists, check if driver is up\n"
             " Unable to find the Infiniband/RoCE device\n")
BW = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "ib_write_bw" / \
    "amd-gpu-cluster-networking-d2d-bidir-roce.txt"


def _spec(*names: str) -> ClusterSpec:
    nodes = tuple(Node(name=n, ssh_host=f"10.0.0.{i}", ssh_port=22,
                       connection=Connection(host=f"10.0.0.{i}", port=22, user="root", key_file=None, ssh_args=()))
                  for i, n in enumerate(names, 1))
    return ClusterSpec(name="c", nodes=nodes, method="mpirun", launch_node=names[0], ranks_per_node=8,
                       socket_ifname="", env=(), mca=(), job_user="root", config_dir="/etc/rocm-fleet/cluster",
                       work_dir="/var/lib/rocm-fleet/cluster", mpirun="mpirun", srun="srun", srun_args=())


class Recorder:
    """Stands in for runner.run over SSH: records each command and answers per side.

    client: what every client call returns (default: exit 0 with the recorded real output), or a list
    answered in turn; server_hangs: the server call returns only once the run's marker is swept;
    server_delay_s: how long a server call takes."""

    def __init__(self, client: RawRun | list[RawRun] | None = None, server_rc: int = 0,
                 server_hangs: bool = False, server_delay_s: float = 0.0) -> None:
        self.server_delay_s = server_delay_s
        self.calls: list[tuple[float, list[str], float]] = []
        self.client, self.server_rc, self.server_hangs = client, server_rc, server_hangs
        self.lock = threading.Lock()
        self.swept = threading.Event()

    def __call__(self, argv, timeout_s):
        with self.lock:
            self.calls.append((time.monotonic(), list(argv), timeout_s))
        remote = argv[-1]
        if "python3 -c" in remote:   # the sweep
            self.swept.set()
            return RawRun(argv=tuple(argv), rc=0, stdout="", stderr="", seconds=0.1, timed_out=False)
        if remote.split()[-1].startswith("10.0.0."):
            answer = self.client
            if isinstance(answer, list):
                with self.lock:
                    answer = answer.pop(0)
            return answer or RawRun(argv=tuple(argv), rc=0, stdout=BW.read_text(), stderr="", seconds=12.0,
                                    timed_out=False)
        if self.server_hangs:
            assert self.swept.wait(timeout=30), "the hanging server was never stopped"
            return RawRun(argv=tuple(argv), rc=137, stdout="", stderr="", seconds=6.0, timed_out=False)
        time.sleep(self.server_delay_s)
        return RawRun(argv=tuple(argv), rc=self.server_rc, stdout="", stderr="", seconds=12.0, timed_out=False)

    def sides(self, rail: str) -> tuple[list[float], list[float]]:
        """Start times of the server and client calls of one rail."""
        calls = [(t, argv[-1]) for t, argv, _ in self.calls if f"-d {rail}" in argv[-1]]
        return ([t for t, cmd in calls if not cmd.endswith("10.0.0.1")],
                [t for t, cmd in calls if cmd.endswith("10.0.0.1")])


def test_partner_plan_puts_every_other_node_against_the_partner_one_pair_per_round() -> None:
    assert partner_plan(["a", "b", "c"], "b") == ((("b", "a"),), (("b", "c"),))
    with pytest.raises(ClusterError, match="partner 'z'"):
        partner_plan(["a", "b"], "z")


def test_swapped_pairs_make_every_node_client_once() -> None:
    assert swapped_pairs_plan(["a", "b", "c", "d"]) == ((("a", "b"), ("c", "d")), (("b", "a"), ("d", "c")))
    plan = swapped_pairs_plan(["a", "b", "c"])
    assert sorted(client for rnd in plan for _, client in rnd) == ["a", "b", "c"]
    for rnd in plan:
        nodes = [n for pair in rnd for n in pair]
        assert len(nodes) == len(set(nodes))
    with pytest.raises(ClusterError, match="listed twice"):
        swapped_pairs_plan(["a", "a"])


def test_each_rail_gets_its_own_port_server_starts_first_and_both_sides_are_time_limited(tmp_path: Path) -> None:
    rec = Recorder()
    runs = run_plan(_spec("n1", "n2"), partner_plan(["n1", "n2"], "n1"), ["mlx5_0:1", "mlx5_1:1"], tmp_path,
                    gid_index=3, duration_s=5, start_s=0.5, run=rec)
    assert [(r.server, r.client, r.rail, r.tcp_port, r.ok) for r in runs] == [
        ("n1", "n2", "mlx5_0:1", 18515, True), ("n1", "n2", "mlx5_1:1", 18516, True)]
    for rail in ("mlx5_0", "mlx5_1"):
        servers, clients = rec.sides(rail)
        assert len(servers) == len(clients) == 1 and servers[0] < clients[0]
    sides = [argv[-1] for _, argv, _ in rec.calls if "ib_write_bw" in argv[-1]]
    for cmd in sides:
        assert cmd.startswith("env ROCM_FLEET_JOB=rf-") and " timeout --signal=TERM --kill-after=5 " in cmd
        assert " -x 3 --report_gbits -F -s 1048576 -D 5 " in cmd
    assert {cmd.split(" -p ")[1].split()[0] for cmd in sides} == {"18515", "18516"}
    assert len({cmd.split()[1] for cmd in sides}) == 2          # one marker per (pair, rail) run
    assert any(argv[-3:-1] == ["--", "10.0.0.1"] for _, argv, _ in rec.calls if "-d mlx5_0" in argv[-1]
               and not argv[-1].endswith("10.0.0.1"))   # the server side runs on the partner
    assert (tmp_path / "n2" / "mlx5_0:1.txt").read_text() == BW.read_text()
    doc = json.loads((tmp_path / RUNS_FILE).read_text())
    assert [r["output"] for r in doc["runs"]] == ["n2/mlx5_0:1.txt", "n2/mlx5_1:1.txt"]
    assert run_verdicts(runs) == []


def test_pairs_of_one_round_get_distinct_ports(tmp_path: Path) -> None:
    runs = run_plan(_spec("n1", "n2", "n3", "n4"), swapped_pairs_plan(["n1", "n2", "n3", "n4"]), ["mlx5_0:1"],
                    tmp_path, start_s=0.0, run=Recorder())
    assert [(r.client, r.tcp_port) for r in runs] == [("n2", 18515), ("n4", 18516), ("n1", 18515), ("n3", 18516)]


def test_a_client_that_found_no_listener_yet_is_started_again(tmp_path: Path) -> None:
    refused = RawRun(argv=("ssh",), rc=1, stdout="", stderr="Couldn't connect to 10.0.0.1:18515\n", seconds=0.2,
                     timed_out=False)
    rec = Recorder(client=[refused, None], server_delay_s=3.0)   # the server still runs when the client retries
    (run,) = run_plan(_spec("n1", "n2"), partner_plan(["n1", "n2"], "n1"), ["mlx5_0:1"], tmp_path, start_s=0.0,
                      run=rec)
    assert run.ok and len(rec.sides("mlx5_0")[1]) == 2
    assert "2 attempt(s)" in (tmp_path / run.log).read_text()


def test_old_outputs_in_the_directory_are_not_judged_again(tmp_path: Path) -> None:
    (tmp_path / "n9").mkdir()
    (tmp_path / "n9" / "mlx5_7:1.txt").write_text(BW.read_text())
    run_plan(_spec("n1", "n2"), partner_plan(["n1", "n2"], "n1"), ["mlx5_0:1"], tmp_path, start_s=0.0,
             run=Recorder())
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob("*/*.txt")) == ["n2/mlx5_0:1.txt"]


def test_a_run_that_cannot_find_its_device_fails_naming_both_nodes_the_rail_and_the_tool_error(tmp_path) -> None:
    failed = RawRun(argv=("ssh",), rc=1, stdout="", stderr=NO_DEVICE, seconds=0.3, timed_out=False)
    runs = run_plan(_spec("n1", "n2", "n3"), partner_plan(["n1", "n2", "n3"], "n1"), ["mlx5_0:1"], tmp_path,
                    start_s=0.0, run=Recorder(client=failed, server_rc=1))
    verdicts = run_verdicts(runs)
    assert [(v.subject, v.status, v.code) for v in verdicts] == [
        ("n2 mlx5_0:1", Status.FAIL, "RF-NET-RAIL-RUN"), ("n3 mlx5_0:1", Status.FAIL, "RF-NET-RAIL-RUN")]
    assert verdicts[0].reason.startswith("ib_write_bw n2 -> n1 rail mlx5_0:1 (TCP port 18515) failed: client exit 1:")
    assert "Unable to find the Infiniband/RoCE device" in verdicts[0].reason
    assert not (tmp_path / "n2" / "mlx5_0:1.txt").exists()       # nothing for the bandwidth judge to read
    assert "Unable to find the Infiniband/RoCE device" in (tmp_path / "n2" / "mlx5_0:1.log").read_text()


def test_a_server_left_waiting_by_a_failed_client_is_stopped_at_once_and_the_run_is_a_failure(tmp_path) -> None:
    failed = RawRun(argv=("ssh",), rc=1, stdout="", stderr=NO_DEVICE, seconds=0.3, timed_out=False)
    started = time.monotonic()
    (run,) = run_plan(_spec("n1", "n2"), partner_plan(["n1", "n2"], "n1"), ["mlx5_0:1"], tmp_path, start_s=0.0,
                      run=Recorder(client=failed, server_hangs=True))
    assert time.monotonic() - started < 15      # SERVER_GRACE_S, not the pair's 32 s limit
    (verdict,) = run_verdicts([run])
    assert (verdict.status, verdict.code) == (Status.FAIL, "RF-NET-RAIL-RUN")
    assert run.server_rc is None and "server stopped 5 s after its client ended" in run.error


def test_a_killed_run_is_a_timeout_and_a_missing_tool_is_a_skip(tmp_path: Path) -> None:
    killed = RawRun(argv=("ssh",), rc=124, stdout="", stderr="", seconds=45.0, timed_out=False)
    (verdict,) = run_verdicts(run_plan(_spec("n1", "n2"), partner_plan(["n1", "n2"], "n1"), ["mlx5_0:1"], tmp_path,
                                       start_s=0.0, run=Recorder(client=killed)))
    assert (verdict.status, verdict.code) == (Status.TIMEOUT, "RF-TIMEOUT")
    missing = RawRun(argv=("ssh",), rc=127, stdout="", stderr="timeout: failed to run command 'ib_write_bw': "
                     "No such file or directory\n", seconds=0.1, timed_out=False)
    (verdict,) = run_verdicts(run_plan(_spec("n1", "n2"), partner_plan(["n1", "n2"], "n1"), ["mlx5_0:1"], tmp_path,
                                       start_s=0.0, run=Recorder(client=missing, server_rc=127)))
    assert verdict.status == Status.SKIP and "not installed (perftest)" in verdict.reason


def test_a_server_killed_at_its_limit_makes_the_run_a_timeout_whatever_the_client_saw(tmp_path: Path) -> None:
    # seen on CI with the hanging stand-in: the server's limit fired first, its client then saw a closed
    # connection and failed; the pair hung, so this is a timeout, not a tool failure
    broken = RawRun(argv=("ssh",), rc=1, stdout="", stderr=" Failed to exchange data between server and clients\n",
                    seconds=31.0, timed_out=False)
    (run,) = run_plan(_spec("n1", "n2"), partner_plan(["n1", "n2"], "n1"), ["mlx5_0:1"], tmp_path, start_s=0.0,
                      run=Recorder(client=broken, server_rc=124))
    (verdict,) = run_verdicts([run])
    assert (verdict.status, verdict.code) == (Status.TIMEOUT, "RF-TIMEOUT")
    assert "server exit 124" in verdict.reason


def test_no_rails_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="no rails"):
        run_plan(_spec("n1", "n2"), partner_plan(["n1", "n2"], "n1"), [], tmp_path, run=Recorder())
