"""Multi-node launch on three lab hosts: real OpenMPI over real SSH through `rocm-fleet cluster`.

Its own lab (name rfmpi, SSH ports 2441-2443, inventory in a temporary directory), removed at
the end also on failure. The hosts get the lab mirror as their only package source (the Debian
archive line is removed first, so the mirror must carry everything; three tasks here instead of
rocm_repo, which other tests cover), then playbooks/cluster.yml:
roles/mpi_launcher (OpenMPI 5 + mpi4py from the mirror, the cluster key, SSH config and
known_hosts) and the MPI smoke job. The tests then launch through the same code that would
launch rccl-tests: hostfile, environment, time limit with stray cleanup, a failing rank.

The hosts share the machine's loopback, so the one interface variable is `lo`
(mpi_launcher_socket_ifname). No GPU, no RDMA: the RCCL path itself is not exercised here.

    .venv/bin/pytest tests/integration/test_multinode.py -q
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ansible_run import ROOT, PlaybookRun, run_playbook
from cluster_lab import cli, cluster_inventory, leftovers, mirror_only_play

from validation.lab import Lab
from validation.multinode.inventory import load_cluster
from validation.multinode.remote import ssh_argv, sweep
from validation.probes import runner

pytestmark = pytest.mark.lab

LAB = "rfmpi"
PORT_BASE = int(os.environ.get("ROCM_FLEET_MPI_PORT_BASE", "2440"))
HOSTS = ["rfmpi-1", "rfmpi-2", "rfmpi-3"]
SMOKE = "/etc/rocm-fleet/cluster/rocm_fleet_mpi_smoke.py"
STRAY_PATTERN = "rocm_fleet_mpi_smoke|prted|prterun|mpirun|sleep 300|ib_write_bw"
# perftest TCP ports: the lab hosts share the machine's network, so derive them from the lab's own ports
TCP_PORT = PORT_BASE + 16000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path, PlaybookRun]]:
    """Three lab hosts made into a cluster by playbooks/cluster.yml; yields (lab, inventory, run)."""
    work = tmp_path_factory.mktemp("multinode")
    lab = Lab(LAB, len(HOSTS), mirror=True, port_base=PORT_BASE, inventory_path=work / "lab.yml")
    with lab:
        inventory = cluster_inventory(lab, work / "cluster.yml", {
            "mpi_launcher_cluster_name": LAB,
            "mpi_launcher_controller_key_dir": str(work / "keys"),
            "mpi_launcher_ranks_per_node": 1,
            "mpi_launcher_socket_ifname": "lo",
            "mpi_launcher_env": {"ROCM_FLEET_TEST_GREETING": "hello, cluster"},
        })
        playbook = work / "prepare.yml"
        playbook.write_text(yaml.safe_dump([
            mirror_only_play(lab),
            {"ansible.builtin.import_playbook": str(ROOT / "playbooks" / "cluster.yml"),
             "vars": {"rocm_fleet_cluster_group": "lab"}},
        ], sort_keys=False))
        first = run_playbook(inventory, playbook)
        yield lab, inventory, first


def _leftovers(lab: Lab) -> dict[str, str]:
    return leftovers(lab, HOSTS, STRAY_PATTERN)


def test_cluster_playbook_installs_openmpi_from_the_mirror_and_passes_the_smoke_job(cluster) -> None:
    _, _, first = cluster
    assert first.rc == 0, first.output[-4000:]
    assert "cluster smoke: PASS: 3 ranks on 3 nodes; allreduce 6 as expected" in first.output, first.output[-3000:]
    print(f"prepare + cluster.yml: {first.seconds:.0f} s")


def test_cluster_playbook_converges_again_without_changes(cluster) -> None:
    _, inventory, _ = cluster
    again = run_playbook(inventory, ROOT / "playbooks" / "cluster.yml", "-e", "rocm_fleet_cluster_smoke=false")
    assert again.rc == 0, again.output[-3000:]
    assert again.changed() == 0, again.changed_tasks()


def test_cluster_playbook_check_mode_on_a_converged_cluster_reports_no_changes(cluster) -> None:
    _, inventory, _ = cluster
    check = run_playbook(inventory, ROOT / "playbooks" / "cluster.yml", "--check", "--diff",
                      "-e", "rocm_fleet_cluster_smoke=false")
    assert check.rc == 0, check.output[-3000:]
    assert check.changed() == 0, check.changed_tasks()


def test_hostfile_lists_every_inventory_host_with_its_slots(cluster, capsys) -> None:
    _, inventory, _ = cluster
    code, out = cli(capsys, "cluster", "hostfile", "-i", str(inventory), "--group", "lab")
    assert code == 0
    assert out["text"] == "rfmpi-1 slots=1\nrfmpi-2 slots=1\nrfmpi-3 slots=1\n"


def test_smoke_job_runs_one_rank_per_host_and_verifies_the_allreduce(cluster, capsys) -> None:
    _, inventory, _ = cluster
    code, doc = cli(capsys, "cluster", "smoke", "-i", str(inventory), "--group", "lab", "--json")
    assert code == 0, doc
    summary = next(json.loads(ln.split(": ", 1)[1]) for ln in doc["stdout"].splitlines()
                   if ln.startswith("rocm-fleet-mpi-smoke: "))
    assert sorted(summary["hosts"]) == HOSTS
    assert (summary["allreduce_sum"], summary["allreduce_expected"], summary["ok"]) == (6, 6, True)
    assert set(summary["pingpong_round_trip_us"]) == {"1", "2"}


def test_every_rank_gets_the_declared_environment(cluster, capsys) -> None:
    _, inventory, _ = cluster
    code, doc = cli(capsys, "cluster", "run", "-i", str(inventory), "--group", "lab", "--json", "--",
                     "python3", SMOKE, "--print-env", "ROCM_FLEET_TEST_GREETING", "--print-env",
                     "NCCL_SOCKET_IFNAME", "--print-env", "NCCL_IB_GID_INDEX")
    assert code == 0, doc["stderr"][-2000:]
    envs = {}
    for line in doc["stdout"].splitlines():
        if line.startswith("rank ") and " env " in line:
            host = line.split(" on ", 1)[1].split()[0]
            envs[host] = json.loads(line.split(" env ", 1)[1])
    # mpi_launcher_env, the interface variable, and env_profiles' default rccl-multinode profile
    want = {"ROCM_FLEET_TEST_GREETING": "hello, cluster", "NCCL_SOCKET_IFNAME": "lo", "NCCL_IB_GID_INDEX": "3"}
    assert envs == {host: want for host in HOSTS}
    assert "--mca" in doc["argv"] and "btl_tcp_if_include" in doc["argv"]


def test_hanging_job_is_killed_within_its_limit_and_leaves_nothing_on_any_host(cluster, capsys) -> None:
    lab, inventory, _ = cluster
    started = time.monotonic()
    code, doc = cli(capsys, "cluster", "run", "-i", str(inventory), "--group", "lab", "--timeout-s", "10",
                     "--json", "--", "python3", SMOKE, "--hang-rank", "2")
    took = time.monotonic() - started
    assert code == 1
    assert doc["timed_out"] is True and doc["rc"] in (124, 137), doc
    assert "rank 2 hangs as asked" in doc["stdout"]
    assert took < 10 + 10 + 15, f"the 10 s job took {took:.0f} s to end"
    assert _leftovers(lab) == {}


def test_failing_rank_makes_the_job_fail_with_its_exit_code(cluster, capsys) -> None:
    lab, inventory, _ = cluster
    code, doc = cli(capsys, "cluster", "run", "-i", str(inventory), "--group", "lab", "--timeout-s", "60",
                     "--json", "--", "python3", SMOKE, "--fail-rank", "1", "--exit-code", "7")
    assert code == 1
    assert (doc["rc"], doc["timed_out"]) == (7, False), doc["stderr"][-2000:]
    assert _leftovers(lab) == {}


def test_rail_check_on_hosts_without_rdma_fails_each_declared_rail_from_the_real_tools(cluster, capsys) -> None:
    _, inventory, _ = cluster
    # nothing declared: the real ibv_devinfo (rdma-core from the mirror) finds no device; listed, not judged
    code, doc = cli(capsys, "cluster", "rails", "-i", str(inventory), "--group", "lab", "--json")
    assert code == 0, doc
    assert {doc["nodes"][h]["status"] for h in HOSTS} == {"skip"}
    assert doc["nodes"]["rfmpi-1"]["reasons"][0].startswith("no RDMA device (ibv_devinfo: ")
    seen = doc["nodes"]["rfmpi-1"]["reasons"][0]
    # declared: ibv_devinfo's port state and the sysfs GID probe (index 3 from the rccl-multinode profile)
    code, doc = cli(capsys, "cluster", "rails", "-i", str(inventory), "--group", "lab", "--rails", "mlx5_0:1",
                     "--json")
    assert code == 1
    assert doc["gid_index"] == 3 and doc["failed"] == HOSTS
    for host in HOSTS:
        codes = [v["code"] for section in ("port_state", "gid") for v in doc["nodes"][host][section]]
        assert codes == ["RF-NET-RAIL-DOWN", "RF-NET-RAIL-DOWN"]
        assert doc["nodes"][host]["reasons"] == [
            f"{host} mlx5_0:1: declared rail not present (the node has no RDMA device)",
            f"{host} mlx5_0:1: declared rail not present (the node has no RDMA device; /sys/class/infiniband)"]
    print("ibv_devinfo on a lab host:", seen)


def test_real_ib_write_bw_pairs_fail_per_rail_with_the_tools_own_error(cluster, capsys, tmp_path) -> None:
    lab, inventory, _ = cluster
    out = tmp_path / "rails"
    code, doc = cli(capsys, "cluster", "rails", "-i", str(inventory), "--group", "lab",
                     "--rails", "mlx5_0:1,mlx5_1:1", "--run-bw", str(out), "--duration-s", "1",
                     "--tcp-port", str(TCP_PORT), "--json")
    assert code == 1
    runs = json.loads((out / "rail-runs.json").read_text())["runs"]
    # partner pattern: rfmpi-1 serves rfmpi-2, then rfmpi-3; two rails each, on TCP_PORT and TCP_PORT + 1
    assert [(r["server"], r["client"], r["rail"], r["tcp_port"]) for r in runs] == [
        ("rfmpi-1", "rfmpi-2", "mlx5_0:1", TCP_PORT), ("rfmpi-1", "rfmpi-2", "mlx5_1:1", TCP_PORT + 1),
        ("rfmpi-1", "rfmpi-3", "mlx5_0:1", TCP_PORT), ("rfmpi-1", "rfmpi-3", "mlx5_1:1", TCP_PORT + 1)]
    for host in ("rfmpi-2", "rfmpi-3"):
        verdicts = doc["nodes"][host]["runs"]
        assert [(v["subject"], v["status"], v["code"]) for v in verdicts] == [
            (f"{host} mlx5_0:1", "fail", "RF-NET-RAIL-RUN"), (f"{host} mlx5_1:1", "fail", "RF-NET-RAIL-RUN")]
        assert verdicts[0]["reason"].startswith(f"ib_write_bw {host} -> rfmpi-1 rail mlx5_0:1 (TCP port "
                                                f"{TCP_PORT}) failed: client exit ")
    print("ib_write_bw on a lab host:", doc["nodes"]["rfmpi-2"]["runs"][0]["reason"])
    assert not list(out.glob("*/*.txt"))
    assert _leftovers(lab) == {}


def _install_standin(lab: Lab) -> None:
    script = (Path(__file__).parent / "standins" / "ib_write_bw_standin.py").read_text()
    recorded = (ROOT / "tests" / "fixtures" / "real" / "ib_write_bw" /
                "amd-gpu-cluster-networking-d2d-bidir-roce.txt").read_text()
    install = ('mkdir -p /usr/local/share/rocm-fleet-standin && printf %s "$1" > /usr/local/bin/ib_write_bw_standin'
               ' && chmod 0755 /usr/local/bin/ib_write_bw_standin'
               ' && ln -sf ib_write_bw_standin /usr/local/bin/ib_write_bw_standin_hang'
               ' && printf %s "$2" > /usr/local/share/rocm-fleet-standin/ib_write_bw.txt')
    for host in HOSTS:
        done = lab.ssh(host, [shlex.join(["sh", "-c", install, "sh", script, recorded])])
        assert done.returncode == 0, done.stderr


def test_rail_pairs_are_launched_paired_saved_and_judged_per_node_and_rail(cluster, capsys, tmp_path) -> None:
    """The RDMA data path is a stand-in (no RDMA device exists here): see standins/ib_write_bw_standin.py."""
    lab, inventory, _ = cluster
    _install_standin(lab)
    out = tmp_path / "rails"
    started = time.monotonic()
    code, doc = cli(capsys, "cluster", "rails", "-i", str(inventory), "--group", "lab",
                     "--rails", "mlx5_0:1,mlx5_1:1", "--run-bw", str(out), "--pattern", "swapped",
                     "--binary", "/usr/local/bin/ib_write_bw_standin", "--nic-gbps", "400",
                     "--tcp-port", str(TCP_PORT), "--json")
    took = time.monotonic() - started
    assert code == 1     # the hosts have no RDMA ports, and the recorded 204.59 Gb/s is below 770
    runs = json.loads((out / "rail-runs.json").read_text())["runs"]
    assert [(r["server"], r["client"]) for r in runs] == [
        ("rfmpi-1", "rfmpi-2")] * 2 + [("rfmpi-2", "rfmpi-1")] * 2 + [("rfmpi-1", "rfmpi-3")] * 2
    assert all(r["client_rc"] == 0 and r["server_rc"] == 0 and not r["timed_out"] for r in runs), runs
    for r in runs:
        log = (out / r["log"]).read_text()
        # the server on the planned node was reached by the planned client, on the rail's own port
        assert f"stand-in server {r['server']} {r['rail'].split(':')[0]} port {r['tcp_port']}: client " \
               f"'{r['client']} {r['rail'].split(':')[0]}'" in log, log
        assert " -x 3 " in log           # the inventory's NCCL_IB_GID_INDEX reached both sides
    for host in HOSTS:
        bandwidth = doc["nodes"][host]["bandwidth"]
        assert [(v["subject"], v["status"], v["code"]) for v in bandwidth] == [
            (f"{host} mlx5_0:1", "fail", "RF-NET-LOW"), (f"{host} mlx5_1:1", "fail", "RF-NET-LOW")]
        assert "204.59 Gb/s < floor 770.0 Gb/s" in bandwidth[0]["reason"]
    assert _leftovers(lab) == {}
    print(f"3 rounds x 2 rails through the stand-in: {took:.1f} s")


def test_cluster_playbook_runs_the_rail_checks_saves_them_and_fails_naming_the_nodes(cluster, tmp_path) -> None:
    lab, inventory, _ = cluster
    _install_standin(lab)
    extra = {"rocm_fleet_cluster_smoke": False, "rocm_fleet_cluster_rails": True,
             "rocm_fleet_cluster_results_dir": str(tmp_path),
             "rocm_fleet_cluster_rails_args": ["--rails", "mlx5_0:1", "--binary", "/usr/local/bin/ib_write_bw_standin",
                                               "--tcp-port", str(TCP_PORT)]}
    run = run_playbook(inventory, ROOT / "playbooks" / "cluster.yml", "-e", json.dumps(extra))
    assert run.rc != 0
    assert "per-rail checks failed on rfmpi-1, rfmpi-2, rfmpi-3: rfmpi-1 mlx5_0:1: declared rail not present " \
           "(the node has no RDMA device)" in run.output, run.output[-3000:]
    doc = json.loads((tmp_path / "rails.json").read_text())
    assert doc["failed"] == HOSTS
    # the pairs themselves ran (through the stand-in) and their outputs sit next to the verdicts
    assert sorted(p.parent.name for p in (tmp_path / "rails").glob("*/mlx5_0:1.txt")) == ["rfmpi-2", "rfmpi-3"]


def test_a_hanging_rail_pair_is_killed_within_its_limit_and_leaves_nothing(cluster, capsys, tmp_path) -> None:
    lab, inventory, _ = cluster
    _install_standin(lab)
    out = tmp_path / "rails"
    started = time.monotonic()
    code, doc = cli(capsys, "cluster", "rails", "-i", str(inventory), "--group", "lab", "--rails", "mlx5_0:1",
                     "--run-bw", str(out), "--partner", "rfmpi-3", "--duration-s", "1",
                     "--binary", "/usr/local/bin/ib_write_bw_standin_hang", "--tcp-port", str(TCP_PORT), "--json")
    took = time.monotonic() - started
    assert code == 1
    for host in ("rfmpi-1", "rfmpi-2"):
        (verdict,) = doc["nodes"][host]["runs"]
        assert (verdict["status"], verdict["code"]) == ("timeout", "RF-TIMEOUT"), verdict["reason"]
    limit = 2 + 1 + 30    # start + duration + margin, per pair (rails.rail_pair_argv)
    assert took < 2 * (limit + 15), f"two hanging pairs took {took:.0f} s"
    assert _leftovers(lab) == {}
    print(f"two hanging pairs killed in {took:.1f} s")


def test_sweep_kills_a_process_left_behind_by_a_job_and_spares_others(cluster) -> None:
    lab, inventory, _ = cluster
    spec, _ = load_cluster(inventory, "lab")
    conn = spec.node("rfmpi-3").connection
    # a "rank" of job rf-leftover0001 that outlived its launcher, and an unrelated process
    for marker in ("rf-leftover0001", "rf-unrelated0002"):
        started = runner.run(ssh_argv(conn, ["sh", "-c", f"ROCM_FLEET_JOB={marker} setsid sleep 300 "
                                             "</dev/null >/dev/null 2>&1 &"]), timeout_s=30)
        assert started.ok, started.stderr
    strays, error = sweep(spec, "rfmpi-3", "rf-leftover0001")
    assert error == ""
    assert [s.command for s in strays] == ["sleep"]
    left = lab.ssh("rfmpi-3", [shlex.join(["sh", "-c", "for p in $(pgrep -x sleep); do tr '\\0' '\\n' "
                                                        "< /proc/$p/environ | grep ROCM_FLEET_JOB; done"])])
    assert left.stdout.split() == ["ROCM_FLEET_JOB=rf-unrelated0002"]
    assert sweep(spec, "rfmpi-3", "rf-unrelated0002")[0]
