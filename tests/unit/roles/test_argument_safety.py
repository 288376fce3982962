"""Hostile inventory values against every Python builder of ssh, mpirun, srun and ib_write_bw
command lines (issue 16): a value that starts with '-' or holds a space, quote or newline is refused
where the inventory is read and where argv is built, and the argv shapes (`ssh -l USER ... -- HOST`,
`mkdir -p -- DIR`) keep even an unchecked value from being read as an option.

The role-side builders (node_drain's scontrol/kubectl, node_tuning's sysctl drop-in, mpi_launcher's
ssh_config and authorized_keys) are tested through ansible-playbook in test_role_argument_checks.py.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from validation.multinode.inventory import cluster_from_inventory
from validation.multinode.launch import mpirun_argv, srun_argv
from validation.multinode.model import ClusterError, Connection
from validation.multinode.rail_gids import probe_argv
from validation.multinode.rails import declared_rails, rail_pair_argv
from validation.multinode.remote import as_job_user, ssh_argv, write_file_argv

DEFAULTS = {"mpi_launcher_method": "mpirun", "mpi_launcher_ranks_per_node": 1, "mpi_launcher_user": "rocm-fleet-mpi"}
HOSTILE = ["-oProxyCommand=touch /tmp/rf-pwned", "a b", "node\nProxyCommand x", "'quoted'", "-"]


def inventory(**hostvars: object) -> dict:
    """`ansible-inventory --list` for one group of two nodes; hostvars apply to node02 only."""
    hv = {"node01": {"ansible_host": "10.0.0.1", "ansible_user": "ops"},
          "node02": {"ansible_host": "10.0.0.2", "ansible_user": "ops", **hostvars}}
    return {"_meta": {"hostvars": hv}, "all": {"children": ["gpu_nodes"]}, "gpu_nodes": {"hosts": ["node01", "node02"]}}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("variable", ["ansible_user", "ansible_host", "mpi_launcher_ssh_host"])
def test_hostile_connection_values_in_the_inventory_are_refused_naming_host_and_variable(variable: str,
                                                                                      value: str) -> None:
    doc = inventory(**{variable: value})
    with pytest.raises(ClusterError, match=f"inventory host node02: {variable}"):
        cluster_from_inventory(doc, "gpu_nodes", DEFAULTS)


def test_an_inventory_user_that_is_an_ssh_option_runs_nothing_on_the_controller(tmp_path: Path) -> None:
    """The reproduction from issue 16: ansible_user '-oProxyCommand=...' made the controller's ssh run
    the command. It is refused when the inventory is read, so no ssh starts at all."""
    marker = tmp_path / "pwned"
    doc = inventory(ansible_user=f"-oProxyCommand=touch {marker}", ansible_host="127.0.0.1",
                    ansible_port=closed_port())
    with pytest.raises(ClusterError, match="ansible_user is '-oProxyCommand="):
        cluster_from_inventory(doc, "gpu_nodes", DEFAULTS)
    assert not marker.exists()


def test_ssh_names_the_user_with_l_and_ends_its_options_before_the_host() -> None:
    conn = Connection(host="10.0.0.2", port=2202, user="ops", key_file="/k", ssh_args=("-o", "IdentitiesOnly=yes"))
    argv = ssh_argv(conn, ["id", "-un"])
    assert argv[:5] == ["ssh", "-p", "2202", "-l", "ops"]
    assert argv[-3:] == ["--", "10.0.0.2", "id -un"]
    assert not any("@" in a for a in argv)


@pytest.mark.skipif(not shutil.which("ssh"), reason="needs the OpenSSH client")
def test_real_ssh_reads_a_dash_word_after_the_double_dash_as_a_host_not_an_option(tmp_path: Path) -> None:
    """Even a value that slipped past the checks is a host name to ssh once it follows `--`: ssh tries to
    resolve it and fails; the ProxyCommand it spells never runs."""
    marker = tmp_path / "pwned"
    argv = ssh_argv(Connection(host="127.0.0.1", port=closed_port(), user="ops", key_file=None, ssh_args=()), ["true"])
    argv[argv.index("--") + 1] = f"-oProxyCommand=touch {marker}"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 255 and not marker.exists(), done.stderr


@pytest.mark.parametrize("user", [*HOSTILE, ""])
def test_ssh_argv_refuses_a_hostile_user_or_host_even_without_the_inventory_reader(user: str) -> None:
    with pytest.raises(ClusterError):
        Connection(host="10.0.0.2", port=22, user=user, key_file=None, ssh_args=())
    with pytest.raises(ClusterError):
        Connection(host=user, port=22, user="ops", key_file=None, ssh_args=())


def test_hostfile_upload_to_a_directory_named_like_an_option_writes_it_there(tmp_path: Path) -> None:
    argv = write_file_argv("-m777", "hostfile-x", "a slots=1\n")
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=10, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "-m777" / "hostfile-x").read_text() == "a slots=1\n"


@pytest.mark.parametrize(("variable", "value"), [
    ("mpi_launcher_user", "-u root"), ("mpi_launcher_user", "root\nx"),
    ("mpi_launcher_mpirun", "--mca plm_rsh_agent sh"), ("mpi_launcher_mpirun", "mpirun -x A"),
    ("mpi_launcher_srun", "LD_PRELOAD=/tmp/x.so"), ("mpi_launcher_config_dir", "/etc/x -o ProxyCommand=y"),
    ("mpi_launcher_config_dir", "relative"), ("mpi_launcher_work_dir", "-rf"),
    ("mpi_launcher_socket_ifname", "lo -x"), ("mpi_launcher_mca", {"--prefix": "/opt/x"}),
])
def test_hostile_launcher_values_are_refused_naming_the_variable(variable: str, value: object) -> None:
    doc = inventory()
    for hv in doc["_meta"]["hostvars"].values():
        hv[variable] = value
    with pytest.raises(ClusterError, match=variable):
        cluster_from_inventory(doc, "gpu_nodes", DEFAULTS)


def test_launch_lines_keep_values_as_single_words() -> None:
    doc = inventory()
    for hv in doc["_meta"]["hostvars"].values():
        hv.update(mpi_launcher_env={"GREETING": "a b; rm -rf /"}, mpi_launcher_srun_args=["--mpi=pmix"])
    spec = cluster_from_inventory(doc, "gpu_nodes", DEFAULTS)
    mpirun = mpirun_argv(spec, ["node01", "node02"], ["prog"], hostfile_path="/h", marker="rf-abcdef", timeout_s=5)
    assert "GREETING=a b; rm -rf /" in mpirun and "--allow-run-as-root" not in mpirun
    srun = srun_argv(spec, ["node01", "node02"], ["prog"], marker="rf-abcdef", timeout_s=5)
    assert "GREETING=a b; rm -rf /" in srun and "--nodelist=node01,node02" in srun


def test_a_non_root_job_user_runs_through_sudo_unless_ssh_already_is_that_user() -> None:
    spec = cluster_from_inventory(inventory(), "gpu_nodes", DEFAULTS)
    ops = spec.node("node01").connection
    assert as_job_user(spec, ops, ["mpirun"]) == ["sudo", "-n", "-H", "-u", "rocm-fleet-mpi", "--", "env", "--chdir=/",
                                                  "mpirun"]
    same = Connection(host="10.0.0.1", port=22, user="rocm-fleet-mpi", key_file=None, ssh_args=())
    assert as_job_user(spec, same, ["mpirun"]) == ["mpirun"]


@pytest.mark.parametrize("host", ["-x", "-oFoo", "a b", "h\nx", ""])
def test_ib_write_bw_refuses_a_server_host_that_would_be_an_option(host: str) -> None:
    with pytest.raises(ValueError, match="server host"):
        rail_pair_argv("mlx5_0:1", host)


@pytest.mark.parametrize("rail", ["-d:1", "mlx5_0 -x:1", "--help", "mlx5_0:-1"])
def test_rails_from_nccl_ib_hca_that_would_be_options_are_refused(rail: str) -> None:
    with pytest.raises(ValueError, match="is not DEVICE"):
        declared_rails("", {"NCCL_IB_HCA": f"={rail}"})
    with pytest.raises(ValueError):
        probe_argv([rail], 3)
