"""Records of the multi-node package: nodes, how the controller reaches them, the cluster spec."""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation import names
from validation.errors import RocmFleetError
from validation.names import HOST_RE, USER_RE

MPIRUN = "mpirun"
SRUN = "srun"
METHODS = (MPIRUN, SRUN)


class ClusterError(RocmFleetError):
    """The cluster cannot be launched on as declared (inventory, connection, launcher)."""


# Inventory values that end up as words of ssh, mpirun, srun or ib_write_bw command lines. A value
# that starts with '-' would be read as an option, one with a space or a newline would split or
# end an ssh_config line: refuse them where the inventory is read, and again where argv is built.
PROGRAM_RE = re.compile(r"^[A-Za-z0-9_./+][A-Za-z0-9_./+-]*$")   # an executable name or path, no '='
PATH_RE = re.compile(r"^/[A-Za-z0-9_./+-]*$")                     # an absolute path without spaces
MCA_RE = re.compile(r"^[A-Za-z0-9_]+$")
IFNAME_RE = re.compile(r"^([A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*)?$")


def check_word(value: str, pattern: re.Pattern[str], what: str, hint: str) -> str:
    """value, when it matches pattern; else ClusterError naming `what` (the inventory variable)."""
    if not names.matches(value, pattern):      # whole: `$` alone lets a trailing newline through
        raise ClusterError(f"{what} is {value!r}, which is not {hint}; a leading '-', spaces, newlines and "
                           "quotes are refused because the value becomes a word of a command line")
    return value


def check_host(value: str, what: str) -> str:
    return check_word(value, HOST_RE, what, "a host name or address")


def check_user(value: str, what: str) -> str:
    return check_word(value, USER_RE, what, "a user name")


@dataclass(frozen=True, slots=True, kw_only=True)
class Connection:
    """How the controller reaches one node over SSH (from the node's Ansible connection variables)."""

    host: str
    port: int
    user: str
    key_file: str | None
    ssh_args: tuple[str, ...]     # ansible_ssh_common_args, split

    def __post_init__(self) -> None:
        check_host(self.host, "ansible_host")
        check_user(self.user, "ansible_user")
        if not 0 < self.port < 65536:
            raise ClusterError(f"ansible_port is {self.port}; give a TCP port (1-65535)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """One cluster node. `name` is the inventory name: hostfiles, node lists and the nodes' own
    SSH config use it; `ssh_host`/`ssh_port` are where other nodes reach it."""

    name: str
    ssh_host: str
    ssh_port: int
    connection: Connection

    def __post_init__(self) -> None:
        check_host(self.name, "the inventory host name")
        check_host(self.ssh_host, f"mpi_launcher_ssh_host of {self.name}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSpec:
    """The cluster as the inventory declares it (roles/mpi_launcher variables)."""

    name: str
    nodes: tuple[Node, ...]
    method: str                              # mpirun | srun
    launch_node: str                         # where mpirun/srun runs
    ranks_per_node: int
    socket_ifname: str                       # "" = leave interface choice to MPI and RCCL
    env: tuple[tuple[str, str], ...]         # passed to every rank, sorted by name
    mca: tuple[tuple[str, str], ...]         # extra OpenMPI MCA parameters
    job_user: str
    config_dir: str                          # on every node: ssh_config, key, known_hosts
    work_dir: str                            # on the launch node: per-job hostfiles
    mpirun: str
    srun: str
    srun_args: tuple[str, ...]

    def __post_init__(self) -> None:
        check_user(self.job_user, "mpi_launcher_user")
        for what, value in (("mpi_launcher_mpirun", self.mpirun), ("mpi_launcher_srun", self.srun)):
            check_word(value, PROGRAM_RE, what, "a program name or path")
        for what, value in (("mpi_launcher_config_dir", self.config_dir), ("mpi_launcher_work_dir", self.work_dir)):
            check_word(value, PATH_RE, what, "an absolute path")
        check_word(self.socket_ifname, IFNAME_RE, "mpi_launcher_socket_ifname", "interface names, comma-separated")
        for key, _ in self.mca:
            check_word(key, MCA_RE, "an mpi_launcher_mca name", "an MCA parameter name")

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise ClusterError(f"{name!r} is not a node of cluster {self.name}; nodes: "
                           f"{', '.join(n.name for n in self.nodes)}")

    @property
    def ssh_config(self) -> str:
        return f"{self.config_dir}/ssh_config"
