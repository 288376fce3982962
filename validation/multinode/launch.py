"""mpirun and srun command lines for one job on a set of cluster nodes. Pure.

Both launchers get the same three things from the inventory:
- the environment of every rank: the env_profiles variables (login-shell variables, the opt-in
  profile named by mpi_launcher_env_profile) and mpi_launcher_env, plus the job marker;
- the socket interface (mpi_launcher_socket_ifname), which feeds NCCL_SOCKET_IFNAME and OpenMPI's
  btl_tcp_if_include / oob_tcp_if_include, so MPI and RCCL use the same network;
- a wall-clock limit: coreutils `timeout` on the launch node (TERM, then KILL), so mpirun or srun
  tears the job down on every node while it still can.

ROCM_FLEET_JOB=<marker> is set in every rank's environment: it is how remote.sweep() finds what
is left of a job on each node.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from validation.multinode.hostfile import slurm_nodelist
from validation.multinode.model import MPIRUN, SRUN, ClusterError, ClusterSpec

MARKER_VAR = "ROCM_FLEET_JOB"
KILL_AFTER_S = 10           # between TERM and KILL of the launcher
LOOPBACK = ("lo",)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MARKER = re.compile(r"^[A-Za-z0-9-]{6,64}$")


def job_env(spec: ClusterSpec, marker: str) -> list[tuple[str, str]]:
    """Every variable a rank gets, sorted by name; NCCL_SOCKET_IFNAME from the socket interface
    unless the env declares it itself."""
    if not _MARKER.fullmatch(marker):
        raise ClusterError(f"job marker {marker!r} must be 6-64 letters, digits or '-'")
    env = dict(spec.env)
    bad = [k for k in env if not _ENV_NAME.fullmatch(k)]
    if bad:
        raise ClusterError(f"environment variable names {bad} are not valid; fix env_profiles_* / mpi_launcher_env")
    if spec.socket_ifname and "NCCL_SOCKET_IFNAME" not in env:
        env["NCCL_SOCKET_IFNAME"] = spec.socket_ifname
    env[MARKER_VAR] = marker
    return sorted(env.items())


def _ranks(spec: ClusterSpec, nodes: Sequence[str]) -> int:
    for name in nodes:
        spec.node(name)   # raises for a node that is not in the cluster
    if spec.ranks_per_node < 1:
        raise ClusterError(f"mpi_launcher_ranks_per_node must be >= 1, not {spec.ranks_per_node}")
    return len(nodes) * spec.ranks_per_node


def _timeout_prefix(timeout_s: float) -> list[str]:
    if timeout_s <= 0:
        raise ClusterError(f"a launch needs a positive time limit, not {timeout_s}")
    return ["timeout", "--signal=TERM", f"--kill-after={KILL_AFTER_S}", f"{timeout_s:g}"]


def mca_params(spec: ClusterSpec) -> list[tuple[str, str]]:
    """OpenMPI MCA parameters: node-to-node SSH through the cluster's config, the socket interface, extras."""
    params = [("plm_rsh_agent", f"ssh -F {spec.ssh_config}")]
    if spec.socket_ifname:
        params.append(("btl_tcp_if_include", spec.socket_ifname))
        # OpenMPI 5's runtime (PRRTE) never uses a loopback interface for its daemons' control
        # channel: oob_tcp_if_include=lo fails with "No network interfaces were found for
        # out-of-band communications" (seen with 5.0.7). On loopback it keeps its own choice.
        if spec.socket_ifname not in LOOPBACK:
            params.append(("oob_tcp_if_include", spec.socket_ifname))
    declared = dict(spec.mca)
    params = [(k, v) for k, v in params if k not in declared]
    return params + sorted(declared.items())


def mpirun_argv(spec: ClusterSpec, nodes: Sequence[str], program: Sequence[str], *, hostfile_path: str,
                marker: str, timeout_s: float) -> list[str]:
    """`timeout ... mpirun --hostfile H -np N --map-by ppr:R:node --mca ... -x NAME=value ... program`."""
    if not program:
        raise ClusterError("no program to launch")
    argv = [*_timeout_prefix(timeout_s), spec.mpirun]
    if spec.job_user == "root":
        argv.append("--allow-run-as-root")   # OpenMPI refuses root without it
    argv += ["--hostfile", hostfile_path, "-np", str(_ranks(spec, nodes)),
             "--map-by", f"ppr:{spec.ranks_per_node}:node"]
    for key, value in mca_params(spec):
        argv += ["--mca", key, value]
    for key, value in job_env(spec, marker):
        argv += ["-x", f"{key}={value}"]
    return argv + list(program)


def srun_argv(spec: ClusterSpec, nodes: Sequence[str], program: Sequence[str], *, marker: str,
              timeout_s: float) -> list[str]:
    """`timeout ... env NAME=value ... srun --export=ALL --nodelist ... --time M program`.

    The variables go through srun's own environment (`--export=ALL`), so values may hold commas.
    OpenMPI programs under srun read the interface and extra MCA parameters as OMPI_MCA_* variables.
    """
    if not program:
        raise ClusterError("no program to launch")
    env = job_env(spec, marker)
    mca = [(k, v) for k, v in mca_params(spec) if k != "plm_rsh_agent" and not k.startswith("oob_")]
    env += [(f"OMPI_MCA_{k}", v) for k, v in mca]
    minutes = max(1, math.ceil(timeout_s / 60))
    return [*_timeout_prefix(timeout_s), "env", *[f"{k}={v}" for k, v in env], spec.srun,
            f"--job-name=rocm-fleet-{marker}", f"--nodes={len(nodes)}",
            f"--ntasks-per-node={spec.ranks_per_node}", f"--nodelist={slurm_nodelist(nodes)}",
            f"--time={minutes}", "--kill-on-bad-exit=1", "--export=ALL", *spec.srun_args, *program]


def argv_for(spec: ClusterSpec, nodes: Sequence[str], program: Sequence[str], *, hostfile_path: str,
             marker: str, timeout_s: float) -> list[str]:
    _ranks(spec, nodes)
    if spec.method == MPIRUN:
        return mpirun_argv(spec, nodes, program, hostfile_path=hostfile_path, marker=marker, timeout_s=timeout_s)
    if spec.method == SRUN:
        return srun_argv(spec, nodes, program, marker=marker, timeout_s=timeout_s)
    raise ClusterError(f"mpi_launcher_method {spec.method!r} is not one of mpirun, srun")
