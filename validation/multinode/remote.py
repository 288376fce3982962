"""Run a launch on the cluster over SSH, with a time limit, and leave no stray rank behind.

The controller reaches nodes the way Ansible does (ansible_host, ansible_port, ansible_user, the
private key and ansible_ssh_common_args). One launch:

1. writes the job's hostfile on the launch node (mpirun only; srun takes a node list);
2. runs `timeout ... mpirun|srun ...` there; the controller's own limit is the launch limit plus
   the launcher's TERM->KILL grace plus SSH slack, and it kills the local ssh's process group;
3. sweeps every node of the job, always: any process whose environment holds
   ROCM_FLEET_JOB=<this job's marker> is killed with SIGKILL and reported as a stray;
4. removes the hostfile.

Steps 1, 2 and 4 run as the cluster's job user (mpi_launcher_user): directly when Ansible's SSH user
is that user, otherwise through `sudo -n -u USER --` on the launch node. Every ssh command line names
the user with `-l` and ends its options with `--` before the host, so no inventory value is read as
an ssh option.
"""

from __future__ import annotations

import logging
import shlex
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from validation import runner
from validation.multinode import launch as launch_argv
from validation.multinode.hostfile import openmpi_hostfile
from validation.multinode.model import MPIRUN, ClusterSpec, Connection, check_host, check_user
from validation.runner import RawRun

log = logging.getLogger(__name__)

SSH_SLACK_S = 30          # connection set-up and teardown on top of the launcher's own limit
SWEEP_TIMEOUT_S = 30
TIMEOUT_RCS = (124, 137)  # coreutils timeout: TERM worked (124) / had to KILL (128 + 9)

# Runs on a node with python3 (every Ansible-managed node has it). argv[1] is the marker.
SWEEP_SCRIPT = """\
import os, signal, sys
mark = ("ROCM_FLEET_JOB=" + sys.argv[1]).encode()
found = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue
    try:
        with open("/proc/" + pid + "/environ", "rb") as f:
            env = f.read().split(b"\\0")
        with open("/proc/" + pid + "/comm") as f:
            comm = f.read().strip()
    except OSError:
        continue
    if mark in env:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            continue
        found.append(pid + " " + comm)
print("\\n".join(found))
"""

Runner = Callable[..., RawRun]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stray:
    node: str
    pid: int
    command: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchResult:
    """One job. `rc` is the launcher's exit status (None when the controller had to cut SSH)."""

    method: str
    nodes: tuple[str, ...]
    launch_node: str
    marker: str
    argv: tuple[str, ...]           # what ran on the launch node
    hostfile: str                   # "" for srun
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    strays: tuple[Stray, ...]       # processes of this job found (and killed) after it ended
    sweep_errors: tuple[str, ...]   # nodes the sweep could not check, with why

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out


def ssh_argv(conn: Connection, remote_argv: Sequence[str]) -> list[str]:
    """ssh to a node as Ansible would, running remote_argv (quoted for the remote shell):
    `ssh -p PORT -l USER [options] -- HOST 'command'`."""
    check_user(conn.user, "ansible_user")
    check_host(conn.host, "ansible_host")
    argv = ["ssh", "-p", str(conn.port), "-l", conn.user, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
    if conn.key_file:
        argv += ["-i", conn.key_file]
    argv += list(conn.ssh_args)
    return [*argv, "--", conn.host, shlex.join(remote_argv)]


def as_job_user(spec: ClusterSpec, conn: Connection, argv: Sequence[str], *, cwd: str = "/") -> list[str]:
    """argv run as the cluster's job user: as it is when SSH already logs in as that user, else via sudo,
    from a directory that user can enter (mpirun crashes in one it cannot: seen with a root SSH login,
    whose cwd /root is closed to the job user; OpenMPI 5.0.7 exits 139)."""
    if conn.user == spec.job_user:
        return list(argv)
    return ["sudo", "-n", "-H", "-u", check_user(spec.job_user, "mpi_launcher_user"), "--", "env", f"--chdir={cwd}",
            *argv]


def new_marker() -> str:
    return f"rf-{uuid.uuid4().hex[:16]}"


def write_file_argv(directory: str, name: str, content: str) -> list[str]:
    """Remote argv that writes content to directory/name (no interpolation into the script)."""
    return ["sh", "-c", 'umask 077 && mkdir -p -- "$1" && printf %s "$2" > "$1/$3"', "sh", directory, content, name]


def sweep(spec: ClusterSpec, node: str, marker: str, *, run: Runner = runner.run) -> tuple[list[Stray], str]:
    """Kill what is left of job `marker` on `node`; (strays, error text or "")."""
    conn = spec.node(node).connection
    sweeper = ["python3", "-c", SWEEP_SCRIPT, marker]           # root sees every process; else the job's own user
    raw = run(ssh_argv(conn, sweeper if conn.user == "root" else as_job_user(spec, conn, sweeper)),
              timeout_s=SWEEP_TIMEOUT_S)
    if not raw.ok:
        why = "timed out" if raw.timed_out else f"rc {raw.rc}: {raw.stderr.strip()[-300:]}"
        return [], f"{node}: sweep failed ({why})"
    strays = []
    for line in raw.stdout.splitlines():
        pid, _, command = line.strip().partition(" ")
        if pid.isdigit():
            strays.append(Stray(node=node, pid=int(pid), command=command))
    return strays, ""


def launch(spec: ClusterSpec, nodes: Sequence[str], program: Sequence[str], *, timeout_s: float,
           run: Runner = runner.run, marker: str | None = None) -> LaunchResult:
    """Run `program` on `nodes` through the cluster's launcher; sweep every node afterwards."""
    nodes = tuple(nodes)
    marker = marker or new_marker()
    launch_node = spec.launch_node if spec.launch_node in nodes or spec.method != MPIRUN else nodes[0]
    conn = spec.node(launch_node).connection
    hostfile, hostfile_path = "", ""
    if spec.method == MPIRUN:
        hostfile = openmpi_hostfile(nodes, spec.ranks_per_node)
        hostfile_path = f"{spec.work_dir}/hostfile-{marker}"
    argv = launch_argv.argv_for(spec, nodes, program, hostfile_path=hostfile_path, marker=marker,
                                timeout_s=timeout_s)
    if hostfile:
        wrote = run(ssh_argv(conn, as_job_user(spec, conn, write_file_argv(spec.work_dir, f"hostfile-{marker}",
                                                                            hostfile))),
                    timeout_s=SWEEP_TIMEOUT_S)
        if not wrote.ok:
            return _result(spec, nodes, launch_node, marker, argv, hostfile, wrote, (), (
                f"{launch_node}: could not write the hostfile: rc {wrote.rc} {wrote.stderr.strip()[-300:]}",))
    log.info("launching %s on %s (%d nodes) via %s, limit %.0f s", marker, launch_node, len(nodes), spec.method,
             timeout_s)
    raw = run(ssh_argv(conn, as_job_user(spec, conn, argv, cwd=spec.work_dir)),
              timeout_s=timeout_s + launch_argv.KILL_AFTER_S + SSH_SLACK_S)
    strays, errors = [], []
    with ThreadPoolExecutor(max_workers=min(16, len(nodes))) as pool:
        for found, error in pool.map(lambda n: sweep(spec, n, marker, run=run), nodes):
            strays += found
            if error:
                errors.append(error)
    if strays:
        log.warning("job %s left %d process(es) behind; killed: %s", marker, len(strays),
                    ", ".join(f"{s.node}:{s.pid} {s.command}" for s in strays))
    if hostfile:
        run(ssh_argv(conn, as_job_user(spec, conn, ["rm", "-f", "--", hostfile_path])), timeout_s=SWEEP_TIMEOUT_S)
    return _result(spec, nodes, launch_node, marker, argv, hostfile, raw, tuple(strays), tuple(errors))


def _result(spec: ClusterSpec, nodes: tuple[str, ...], launch_node: str, marker: str, argv: list[str],
            hostfile: str, raw: RawRun, strays: tuple[Stray, ...], errors: tuple[str, ...]) -> LaunchResult:
    timed_out = raw.timed_out or raw.rc in TIMEOUT_RCS
    return LaunchResult(method=spec.method, nodes=nodes, launch_node=launch_node, marker=marker, argv=tuple(argv),
                        hostfile=hostfile, rc=raw.rc, stdout=raw.stdout, stderr=raw.stderr, seconds=raw.seconds,
                        timed_out=timed_out, strays=strays, sweep_errors=errors)
