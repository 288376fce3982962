"""Hostfiles, launcher command lines, schedules and the inventory reading of validation/multinode."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time

import pytest

from validation.multinode import schedule
from validation.multinode.hostfile import openmpi_hostfile, slurm_nodelist
from validation.multinode.inventory import cluster_from_inventory, group_hosts, job_env
from validation.multinode.launch import mpirun_argv, srun_argv
from validation.multinode.model import ClusterError
from validation.multinode.remote import SWEEP_SCRIPT, ssh_argv, write_file_argv

DEFAULTS = {
    "env_profiles_env": {"HIP_FORCE_DEV_KERNARG": "1"},
    "env_profiles_env_extra": {},
    "env_profiles_profiles": {"rccl-multinode": {"NCCL_IB_GID_INDEX": "3"}},
    "mpi_launcher_env_profile": "rccl-multinode",
    "mpi_launcher_env": {},
    "mpi_launcher_method": "mpirun",
    "mpi_launcher_ranks_per_node": 8,
    "mpi_launcher_socket_ifname": "",
    "mpi_launcher_mca": {},
    "mpi_launcher_user": "root",
}


def inventory(group_vars: dict | None = None, **hostvars: dict) -> dict:
    """A document shaped like `ansible-inventory --list`: gpu_nodes > mi300x > node01..03."""
    hosts = ["node01", "node02", "node03"]
    hv = {h: {"ansible_host": f"10.0.0.{i}", "ansible_user": "ops", **(group_vars or {}), **hostvars.get(h, {})}
          for i, h in enumerate(hosts, 1)}
    return {"_meta": {"hostvars": hv}, "all": {"children": ["ungrouped", "gpu_nodes"]},
            "gpu_nodes": {"children": ["mi300x"]}, "mi300x": {"hosts": hosts}}


def test_hostfile_gives_every_node_its_slots_in_inventory_order() -> None:
    assert openmpi_hostfile(["b", "a"], 8) == "b slots=8\na slots=8\n"


def test_slurm_nodelist_joins_names_with_commas() -> None:
    assert slurm_nodelist(["gpu-53", "gpu-56"]) == "gpu-53,gpu-56"


@pytest.mark.parametrize("nodes", [[], ["a", "a"], ["a b"]])
def test_hostfile_refuses_empty_duplicate_or_odd_names(nodes: list[str]) -> None:
    with pytest.raises(ClusterError):
        openmpi_hostfile(nodes, 8)


def test_group_hosts_follow_children_in_inventory_order() -> None:
    assert group_hosts(inventory(), "gpu_nodes") == ["node01", "node02", "node03"]


def test_unknown_group_names_the_groups_there_are() -> None:
    with pytest.raises(ClusterError, match="group 'h100' is not in the inventory; groups: all, gpu_nodes, mi300x"):
        group_hosts(inventory(), "h100")


def test_spec_reads_launcher_interface_and_env_from_the_inventory_over_role_defaults() -> None:
    spec = cluster_from_inventory(inventory({"mpi_launcher_socket_ifname": "ens50f0",
                                             "mpi_launcher_env": {"NCCL_IB_HCA": "mlx5_0,mlx5_1"}}),
                                  "gpu_nodes", DEFAULTS)
    assert spec.method == "mpirun" and spec.launch_node == "node01" and spec.ranks_per_node == 8
    assert spec.socket_ifname == "ens50f0"
    assert dict(spec.env) == {"HIP_FORCE_DEV_KERNARG": "1", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "mlx5_0,mlx5_1"}
    assert spec.node("node02").connection.host == "10.0.0.2" and spec.node("node02").connection.user == "ops"


def test_env_profile_that_does_not_exist_is_refused_by_name() -> None:
    with pytest.raises(ClusterError, match="mpi_launcher_env_profile 'ib' is not in env_profiles_profiles"):
        job_env({**DEFAULTS, "mpi_launcher_env_profile": "ib"})


def test_jinja_in_a_launch_variable_is_refused_with_what_to_do() -> None:
    with pytest.raises(ClusterError, match="holds a Jinja template"):
        cluster_from_inventory(inventory({"mpi_launcher_socket_ifname": "{{ iface }}"}), "gpu_nodes", DEFAULTS)


def spec_with(**group_vars: object):
    return cluster_from_inventory(inventory(group_vars), "gpu_nodes", DEFAULTS)


def test_mpirun_line_carries_hostfile_ranks_ssh_agent_interface_and_every_variable() -> None:
    spec = spec_with(mpi_launcher_socket_ifname="ens50f0")
    argv = mpirun_argv(spec, ["node01", "node02"], ["all_reduce_perf", "-g", "1"],
                       hostfile_path="/var/lib/rocm-fleet/cluster/hostfile-rf-abcdef", marker="rf-abcdef",
                       timeout_s=600)
    assert argv[:6] == ["timeout", "--signal=TERM", "--kill-after=10", "600", "mpirun", "--allow-run-as-root"]
    joined = " ".join(argv)
    assert "--hostfile /var/lib/rocm-fleet/cluster/hostfile-rf-abcdef -np 16 --map-by ppr:8:node" in joined
    assert "--mca plm_rsh_agent ssh -F /etc/rocm-fleet/cluster/ssh_config" in joined
    assert "--mca btl_tcp_if_include ens50f0 --mca oob_tcp_if_include ens50f0" in joined
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-x"] == [
        "HIP_FORCE_DEV_KERNARG=1", "NCCL_IB_GID_INDEX=3", "NCCL_SOCKET_IFNAME=ens50f0", "ROCM_FLEET_JOB=rf-abcdef"]
    assert argv[-3:] == ["all_reduce_perf", "-g", "1"]


def test_loopback_interface_feeds_btl_and_nccl_but_not_openmpi_5s_daemon_channel() -> None:
    argv = mpirun_argv(spec_with(mpi_launcher_socket_ifname="lo"), ["node01"], ["true"], hostfile_path="/h",
                       marker="rf-abcdef", timeout_s=10)
    assert "btl_tcp_if_include" in argv and "oob_tcp_if_include" not in argv
    assert "NCCL_SOCKET_IFNAME=lo" in argv


def test_declared_nccl_socket_ifname_and_mca_win_over_derived_ones() -> None:
    spec = spec_with(mpi_launcher_socket_ifname="ens1", mpi_launcher_env={"NCCL_SOCKET_IFNAME": "=ens1"},
                     mpi_launcher_mca={"btl_tcp_if_include": "10.0.0.0/24", "pml": "ucx"})
    argv = mpirun_argv(spec, ["node01"], ["true"], hostfile_path="/h", marker="rf-abcdef", timeout_s=10)
    assert "NCCL_SOCKET_IFNAME==ens1" in argv
    pairs = [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == "--mca"]
    assert ("btl_tcp_if_include", "10.0.0.0/24") in pairs and ("btl_tcp_if_include", "ens1") not in pairs
    assert ("pml", "ucx") in pairs


def test_non_root_job_user_gets_no_allow_run_as_root() -> None:
    argv = mpirun_argv(spec_with(mpi_launcher_user="mpi"), ["node01"], ["true"], hostfile_path="/h",
                       marker="rf-abcdef", timeout_s=10)
    assert "--allow-run-as-root" not in argv


def test_srun_line_passes_env_through_its_own_environment_and_rounds_time_up_to_minutes() -> None:
    spec = spec_with(mpi_launcher_method="srun", mpi_launcher_socket_ifname="ens1",
                     mpi_launcher_env={"NCCL_IB_HCA": "mlx5_0,mlx5_1"}, mpi_launcher_srun_args=["--mpi=pmix"])
    argv = srun_argv(spec, ["node02", "node03"], ["all_reduce_perf"], marker="rf-abcdef", timeout_s=90)
    srun = argv.index("srun")
    assert argv[:5] == ["timeout", "--signal=TERM", "--kill-after=10", "90", "env"]
    assert "NCCL_IB_HCA=mlx5_0,mlx5_1" in argv[5:srun] and "OMPI_MCA_btl_tcp_if_include=ens1" in argv[5:srun]
    assert argv[srun + 1:] == ["--job-name=rocm-fleet-rf-abcdef", "--nodes=2", "--ntasks-per-node=8",
                               "--nodelist=node02,node03", "--time=2", "--kill-on-bad-exit=1", "--export=ALL",
                               "--mpi=pmix", "all_reduce_perf"]


def test_launch_refuses_a_node_outside_the_cluster() -> None:
    with pytest.raises(ClusterError, match="'node09' is not a node of cluster gpu_nodes"):
        mpirun_argv(spec_with(), ["node01", "node09"], ["true"], hostfile_path="/h", marker="rf-abcdef",
                    timeout_s=10)


def test_ssh_to_a_node_uses_the_ansible_connection_and_quotes_the_remote_command() -> None:
    spec = cluster_from_inventory(inventory({"ansible_port": 2201, "ansible_ssh_private_key_file": "/k",
                                             "ansible_ssh_common_args": "-o StrictHostKeyChecking=yes"}),
                                  "gpu_nodes", DEFAULTS)
    argv = ssh_argv(spec.node("node03").connection, ["echo", "a b", "$HOME"])
    assert argv[:5] == ["ssh", "-p", "2201", "-l", "ops"]          # the user is -l's value, never user@host
    assert argv[-3:] == ["--", "10.0.0.3", "echo 'a b' '$HOME'"]   # options end before the host
    assert argv[argv.index("-i"):argv.index("-i") + 2] == ["-i", "/k"]


def test_hostfile_upload_writes_the_exact_content(tmp_path) -> None:
    argv = write_file_argv(str(tmp_path / "d"), "hostfile-x", "a slots=8\nb slots=8\n")
    subprocess.run(argv, check=True, timeout=10)
    assert (tmp_path / "d" / "hostfile-x").read_text() == "a slots=8\nb slots=8\n"


def test_sweep_script_kills_only_processes_carrying_the_job_marker() -> None:
    mine = subprocess.Popen(["sleep", "30"], env={**os.environ, "ROCM_FLEET_JOB": "rf-unit-mine"})
    other = subprocess.Popen(["sleep", "30"], env={**os.environ, "ROCM_FLEET_JOB": "rf-unit-other"})
    try:
        out = subprocess.run([sys.executable, "-c", SWEEP_SCRIPT, "rf-unit-mine"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
        assert out.split() == [str(mine.pid), "sleep"]
        assert mine.wait(timeout=5) == -9
        time.sleep(0.1)
        assert other.poll() is None
    finally:
        for proc in (mine, other):
            proc.kill()
            proc.wait()


def _check_rounds(nodes: list[str], rounds: tuple) -> None:
    for rnd in rounds:
        members = [n for group in rnd for n in group]
        assert len(members) == len(set(members)), f"a node twice in round {rnd}"


@pytest.mark.parametrize("count", [2, 3, 4, 5, 8])
def test_pairwise_covers_every_pair_once_with_no_node_twice_in_a_round(count: int) -> None:
    nodes = [f"n{i}" for i in range(count)]
    rounds = schedule.pairwise(nodes)
    _check_rounds(nodes, rounds)
    pairs = sorted(tuple(sorted(g)) for g in schedule.groups(rounds))
    assert pairs == sorted(itertools.combinations(nodes, 2))
    assert len(rounds) == (count - 1 if count % 2 == 0 else count)


def test_partner_pattern_pairs_everyone_with_the_known_good_node_one_per_round() -> None:
    assert schedule.with_partner(["a", "b", "c"], "b") == ((("b", "a"),), (("b", "c"),))


def test_k_batch_makes_disjoint_groups_and_folds_a_lone_leftover_into_the_last() -> None:
    assert schedule.k_batch(["a", "b", "c", "d", "e"], 2) == ((("a", "b"), ("c", "d", "e")),)
    assert schedule.k_batch(["a", "b", "c", "d"], 2) == ((("a", "b"), ("c", "d")),)


def test_patterns_refuse_too_few_or_repeated_nodes() -> None:
    with pytest.raises(ClusterError):
        schedule.pairwise(["a"])
    with pytest.raises(ClusterError):
        schedule.pairwise(["a", "a"])
    with pytest.raises(ClusterError):
        schedule.with_partner(["a", "b"], "z")
