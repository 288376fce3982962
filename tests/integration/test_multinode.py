"""Multi-node launch on three lab hosts: real OpenMPI over real SSH through `rocm-fleet cluster`.

Its own lab (name $ROCM_FLEET_MPI_LAB_NAME, default rfmpi-<checkout key>; SSH ports
$ROCM_FLEET_MPI_PORT_BASE + 1..3, default free ones, its TCP ports from cluster_lab.service_ports; inventory in a
temporary directory),
removed at the end also on failure.
The hosts get the lab mirror as their only package source (the Debian
archive line is removed first, so the mirror must carry everything; three tasks here instead of
rocm_repo, which other tests cover), then playbooks/cluster.yml:
roles/mpi_launcher (OpenMPI 5 + mpi4py from the mirror, the cluster key, SSH config and
known_hosts) and the MPI smoke job. The tests then launch through the same code that would
launch rccl-tests: hostfile, environment, time limit with stray cleanup, a failing rank; and they
check what the cluster key opens (the non-root job user, from= the cluster's addresses, restrict)
and that rotating it retires the old key everywhere.

The hosts share the machine's loopback, so the one interface variable is `lo`
(mpi_launcher_socket_ifname). No GPU, no RDMA: the RCCL path itself is not exercised here.

    .venv/bin/pytest tests/integration/test_multinode.py -q
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from ansible_run import ROOT, PlaybookRun, run_playbook
from cluster_lab import cli, cluster_inventory, leftovers, mirror_only_play, service_ports

from validation import runner
from validation.lab import Lab, default_lab_name
from validation.multinode.inventory import load_cluster
from validation.multinode.remote import ssh_argv, sweep

pytestmark = pytest.mark.lab

LAB = os.environ.get("ROCM_FLEET_MPI_LAB_NAME") or default_lab_name("rfmpi")
_BASE = os.environ.get("ROCM_FLEET_MPI_PORT_BASE")
PORT_BASE = int(_BASE) if _BASE else None
HOSTS = [f"{LAB}-1", f"{LAB}-2", f"{LAB}-3"]
H1, H2, H3 = HOSTS
JOB_USER = "rocm-fleet-mpi"    # mpi_launcher_user's default
SMOKE = "/etc/rocm-fleet/cluster/rocm_fleet_mpi_smoke.py"
STRAY_PATTERN = "rocm_fleet_mpi_smoke|prted|prterun|mpirun|sleep 300|ib_write_bw"
# perftest TCP ports: the lab hosts share the machine's network, so they come from the lab's own block
# (cluster_lab.service_ports), set once the lab is up
TCP_PORT = 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path, PlaybookRun]]:
    """Three lab hosts made into a cluster by playbooks/cluster.yml; yields (lab, inventory, run)."""
    work = tmp_path_factory.mktemp("multinode")
    lab = Lab(LAB, len(HOSTS), mirror=True, port_base=PORT_BASE, inventory_path=work / "lab.yml")
    with lab:
        global TCP_PORT
        TCP_PORT = service_ports(lab) + 6
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
    assert out["text"] == f"{H1} slots=1\n{H2} slots=1\n{H3} slots=1\n"


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


def test_ranks_run_as_the_non_root_job_user(cluster, capsys) -> None:
    """mpi_launcher_user defaults to a dedicated system account; `rocm-fleet cluster` reaches the nodes
    as root (the lab's Ansible user) and starts mpirun through `sudo -n -u rocm-fleet-mpi`."""
    _, inventory, _ = cluster
    code, doc = cli(capsys, "cluster", "run", "-i", str(inventory), "--group", "lab", "--json", "--", "id", "-un")
    assert code == 0, doc["stderr"][-2000:]
    assert doc["stdout"].split() == ["rocm-fleet-mpi"] * 3, doc["stdout"]
    assert doc["argv"][:1] == ["timeout"] and "--allow-run-as-root" not in doc["argv"]


def _as_job_user(lab: Lab, host: str, *ssh: str) -> int:
    """Exit code of `ssh -F <cluster ssh_config> SSH...` run on host as the job user, with the cluster key."""
    argv = ["sudo", "-n", "-u", JOB_USER, "--", "ssh", "-F", "/etc/rocm-fleet/cluster/ssh_config", *ssh]
    return lab.ssh(host, [shlex.join(argv)]).returncode


def test_the_cluster_key_works_only_for_the_job_user_from_cluster_addresses_without_forwarding(cluster) -> None:
    """The key every node holds: authorized for the job user only, `from=` the cluster's addresses, `restrict`.
    Source 127.0.0.2 is a loopback address that is not the lab hosts' own (they reach each other from
    127.0.0.1), so sshd must refuse the key from there; a remote forward must be refused too."""
    lab, _, _ = cluster
    line = lab.ssh(H2, [f"cat ~{JOB_USER}/.ssh/authorized_keys"]).stdout.strip()
    assert line.startswith('from="') and ",restrict ssh-ed25519 " in line and "127.0.0.1" in line.split('"')[1], line
    assert line.endswith(f" rocm-fleet-cluster@{LAB}") and len(line.splitlines()) == 1
    assert "rocm-fleet-cluster@" not in lab.ssh(H2, ["cat /root/.ssh/authorized_keys"]).stdout
    assert _as_job_user(lab, H1, H2, "true") == 0
    assert _as_job_user(lab, H1, "-b", "127.0.0.2", H2, "true") == 255      # from= refuses
    assert _as_job_user(lab, H1, "-l", "root", H2, "true") == 255           # not a root key
    assert _as_job_user(lab, H1, "-o", "ExitOnForwardFailure=yes", "-R", "127.0.0.1:0:127.0.0.1:22",
                        H2, "true") == 255                                        # restrict: no forwarding


def test_hanging_job_is_killed_within_its_limit_and_leaves_nothing_on_any_host(cluster, capsys) -> None:
    lab, inventory, _ = cluster
    started = time.monotonic()
    code, doc = cli(capsys, "cluster", "run", "-i", str(inventory), "--group", "lab", "--timeout", "10",
                     "--json", "--", "python3", SMOKE, "--hang-rank", "2")
    took = time.monotonic() - started
    assert code == 1
    assert doc["timed_out"] is True and doc["rc"] in (124, 137), doc
    assert "rank 2 hangs as asked" in doc["stdout"]
    assert took < 10 + 10 + 15, f"the 10 s job took {took:.0f} s to end"
    assert _leftovers(lab) == {}


def test_failing_rank_makes_the_job_fail_with_its_exit_code(cluster, capsys) -> None:
    lab, inventory, _ = cluster
    code, doc = cli(capsys, "cluster", "run", "-i", str(inventory), "--group", "lab", "--timeout", "60",
                     "--json", "--", "python3", SMOKE, "--fail-rank", "1", "--exit-code", "7")
    assert code == 1 and not doc["timed_out"], doc["stderr"][-2000:]
    # prterun exits with the failed rank's status, or now and then with 255 after naming it: a fresh-clone
    # CI run on 2026-12-05 got "Process name: [prterun-...@1,1] Exit code: 7" and exit 255 (2 shared cores).
    named = re.search(r"Exit code:\s+7\b", doc["stderr"])
    assert doc["rc"] == 7 or (doc["rc"] == 255 and named), doc["stderr"][-2000:]
    assert _leftovers(lab) == {}


def test_rail_check_on_hosts_without_rdma_fails_each_declared_rail_from_the_real_tools(cluster, capsys) -> None:
    _, inventory, _ = cluster
    # nothing declared: the real ibv_devinfo (rdma-core from the mirror) finds no device; listed, not judged
    code, doc = cli(capsys, "cluster", "rails", "-i", str(inventory), "--group", "lab", "--json")
    assert code == 0, doc
    assert {doc["nodes"][h]["status"] for h in HOSTS} == {"skip"}
    assert doc["nodes"][H1]["reasons"][0].startswith("no RDMA device (ibv_devinfo: ")
    seen = doc["nodes"][H1]["reasons"][0]
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
    # partner pattern: host 1 serves host 2, then host 3; two rails each, on TCP_PORT and TCP_PORT + 1
    assert [(r["server"], r["client"], r["rail"], r["tcp_port"]) for r in runs] == [
        (H1, H2, "mlx5_0:1", TCP_PORT), (H1, H2, "mlx5_1:1", TCP_PORT + 1),
        (H1, H3, "mlx5_0:1", TCP_PORT), (H1, H3, "mlx5_1:1", TCP_PORT + 1)]
    for host in (H2, H3):
        verdicts = doc["nodes"][host]["runs"]
        assert [(v["subject"], v["status"], v["code"]) for v in verdicts] == [
            (f"{host} mlx5_0:1", "fail", "RF-NET-RAIL-RUN"), (f"{host} mlx5_1:1", "fail", "RF-NET-RAIL-RUN")]
        assert verdicts[0]["reason"].startswith(f"ib_write_bw {host} -> {H1} rail mlx5_0:1 (TCP port "
                                                f"{TCP_PORT}) failed: client exit ")
    print("ib_write_bw on a lab host:", doc["nodes"][H2]["runs"][0]["reason"])
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
        (H1, H2)] * 2 + [(H2, H1)] * 2 + [(H1, H3)] * 2
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
    assert f"per-rail checks failed on {H1}, {H2}, {H3}: {H1} mlx5_0:1: declared rail not present " \
           "(the node has no RDMA device)" in run.output, run.output[-3000:]
    doc = json.loads((tmp_path / "rails.json").read_text())
    assert doc["failed"] == HOSTS
    # the pairs themselves ran (through the stand-in) and their outputs sit next to the verdicts
    assert sorted(p.parent.name for p in (tmp_path / "rails").glob("*/mlx5_0:1.txt")) == [H2, H3]


def test_a_hanging_rail_pair_is_killed_within_its_limit_and_leaves_nothing(cluster, capsys, tmp_path) -> None:
    lab, inventory, _ = cluster
    _install_standin(lab)
    out = tmp_path / "rails"
    started = time.monotonic()
    code, doc = cli(capsys, "cluster", "rails", "-i", str(inventory), "--group", "lab", "--rails", "mlx5_0:1",
                     "--run-bw", str(out), "--partner", H3, "--duration-s", "1",
                     "--binary", "/usr/local/bin/ib_write_bw_standin_hang", "--tcp-port", str(TCP_PORT), "--json")
    took = time.monotonic() - started
    assert code == 1
    for host in (H1, H2):
        (verdict,) = doc["nodes"][host]["runs"]
        assert (verdict["status"], verdict["code"]) == ("timeout", "RF-TIMEOUT"), verdict["reason"]
    limit = 2 + 1 + 30    # start + duration + margin, per pair (rails.rail_pair_argv)
    assert took < 2 * (limit + 15), f"two hanging pairs took {took:.0f} s"
    assert _leftovers(lab) == {}
    print(f"two hanging pairs killed in {took:.1f} s")


def test_sweep_kills_a_process_left_behind_by_a_job_and_spares_others(cluster) -> None:
    lab, inventory, _ = cluster
    spec, _ = load_cluster(inventory, "lab")
    conn = spec.node(H3).connection
    # a "rank" of job rf-leftover0001 that outlived its launcher, and an unrelated process
    for marker in ("rf-leftover0001", "rf-unrelated0002"):
        started = runner.run(ssh_argv(conn, ["sh", "-c", f"ROCM_FLEET_JOB={marker} setsid sleep 300 "
                                             "</dev/null >/dev/null 2>&1 &"]), timeout_s=30)
        assert started.ok, started.stderr
    strays, error = sweep(spec, H3, "rf-leftover0001")
    assert error == ""
    assert [s.command for s in strays] == ["sleep"]
    left = lab.ssh(H3, [shlex.join(["sh", "-c", "for p in $(pgrep -x sleep); do tr '\\0' '\\n' "
                                                        "< /proc/$p/environ | grep ROCM_FLEET_JOB; done"])])
    assert left.stdout.split() == ["ROCM_FLEET_JOB=rf-unrelated0002"]
    assert sweep(spec, H3, "rf-unrelated0002")[0]


def test_rotating_the_cluster_key_replaces_it_on_every_node_and_the_old_key_stops_working(cluster, tmp_path) -> None:
    lab, inventory, _ = cluster
    keys = inventory.parent / "keys" / LAB
    old_private = (keys / "id_ed25519").read_bytes()
    old_public = (keys / "id_ed25519.pub").read_text()
    run = run_playbook(inventory, ROOT / "playbooks" / "cluster.yml", "-e", "mpi_launcher_rotate_key=true")
    assert run.rc == 0, run.output[-3000:]
    assert "cluster smoke: PASS: 3 ranks on 3 nodes" in run.output, run.output[-3000:]
    new_public = (keys / "id_ed25519.pub").read_text()
    assert new_public.split()[1] != old_public.split()[1]
    for host in HOSTS:
        line = lab.ssh(host, [f"cat ~{JOB_USER}/.ssh/authorized_keys"]).stdout
        assert line.count("rocm-fleet-cluster@") == 1 and new_public.split()[1] in line and \
            old_public.split()[1] not in line, (host, line)
    # the old private key, put back on a node, no longer opens the others (the new one does)
    old_key = f"/home/{JOB_USER}/rf-old-key"
    install = 'umask 077 && printf %s "$1" | base64 -d > "$2" && chown "$3" "$2"'
    assert lab.ssh(H1, [shlex.join(["sh", "-c", install, "sh", base64.b64encode(old_private).decode(),
                                           old_key, JOB_USER])]).returncode == 0
    only_old_key = ["-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", old_key,
                    "-o", "UserKnownHostsFile=/etc/rocm-fleet/cluster/known_hosts", "-o", f"HostKeyAlias={H2}",
                    "-p", str(lab.info.hosts[1].port), "-l", JOB_USER, "127.0.0.1", "true"]
    try:
        assert lab.ssh(H1, [shlex.join(["sudo", "-n", "-u", JOB_USER, "--", "ssh", *only_old_key])]
                       ).returncode == 255
        assert _as_job_user(lab, H1, H2, "true") == 0
    finally:
        lab.ssh(H1, ["rm", "-f", old_key])
    again = run_playbook(inventory, ROOT / "playbooks" / "cluster.yml", "-e", "rocm_fleet_cluster_smoke=false")
    assert again.rc == 0 and again.changed() == 0, again.changed_tasks()
