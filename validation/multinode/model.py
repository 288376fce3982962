"""Records of the multi-node package: nodes, how the controller reaches them, the cluster spec."""

from __future__ import annotations

from dataclasses import dataclass

from validation.errors import RocmFleetError

MPIRUN = "mpirun"
SRUN = "srun"
METHODS = (MPIRUN, SRUN)


class ClusterError(RocmFleetError):
    """The cluster cannot be launched on as declared (inventory, connection, launcher)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Connection:
    """How the controller reaches one node over SSH (from the node's Ansible connection variables)."""

    host: str
    port: int
    user: str
    key_file: str | None
    ssh_args: tuple[str, ...]     # ansible_ssh_common_args, split


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """One cluster node. `name` is the inventory name: hostfiles, node lists and the nodes' own
    SSH config use it; `ssh_host`/`ssh_port` are where other nodes reach it."""

    name: str
    ssh_host: str
    ssh_port: int
    connection: Connection


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

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise ClusterError(f"{name!r} is not a node of cluster {self.name}; nodes: "
                           f"{', '.join(n.name for n in self.nodes)}")

    @property
    def ssh_config(self) -> str:
        return f"{self.config_dir}/ssh_config"
