"""The cluster key's authorized_keys line and the checks on what goes into the nodes' SSH files. Pure.

roles/mpi_launcher (through plugins/filter/rocm_fleet.py) gives every node of a cluster one key pair so that
mpirun on one node can start daemons on the others. That key must not open more than that:

- it is authorized for the job user only (mpi_launcher_user, a non-root account by default);
- `from="..."` limits it to the cluster's own addresses: a copy of the key is useless elsewhere;
- `restrict` turns off port, agent and X11 forwarding, PTY allocation and ~/.ssh/rc. mpirun's
  launch agent needs none of them: it runs one non-interactive command per node (OpenMPI 5's
  prted), whose daemons then connect to each other over TCP directly, not through SSH.

sshd matches `from=` against the client's address (with `UseDNS no`, the default, names never
match), so only addresses, CIDR blocks and wildcards are accepted.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from collections.abc import Iterable

from validation.multinode.model import HOST_RE, MCA_RE, PATH_RE, PROGRAM_RE, USER_RE, ClusterError, check_word

KEY_RE = re.compile(r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+=* [A-Za-z0-9@._-]+$")
SOURCE_RE = re.compile(r"^!?[0-9A-Fa-f.:*?]+(/[0-9]{1,3})?$")   # address, CIDR or sshd wildcard; '!' negates
OPTIONS = "restrict"


def own_addresses(reach_host: str, ipv4: Iterable[str], ipv6: Iterable[str]) -> list[str]:
    """A node's source addresses for from=: its interface addresses, plus the address the others use
    for it when that is an address (a name is left out: sshd would never match it)."""
    found = [str(a) for a in (*ipv4, *ipv6)]
    with contextlib.suppress(ValueError):
        found.insert(0, str(ipaddress.ip_address(reach_host)))
    return found


def check_sources(sources: Iterable[str]) -> list[str]:
    """The from= patterns, sorted and unique; ClusterError naming mpi_launcher_ssh_from when one is not an
    address, CIDR block or wildcard, or when there are none."""
    found = sorted({str(s).strip() for s in sources})
    bad = [s for s in found if not SOURCE_RE.fullmatch(s)]
    if bad:
        raise ClusterError(f"mpi_launcher_ssh_from holds {bad}; give addresses, CIDR blocks (10.1.0.0/16) or sshd "
                           "wildcards (10.1.*): sshd does not match host names in from= unless UseDNS is on")
    if not found:
        raise ClusterError("no address to restrict the cluster key to (mpi_launcher_ssh_from is empty and the "
                           "nodes reported none); set mpi_launcher_ssh_from to the cluster network's addresses")
    return found


def authorized_key_line(public_key: str, sources: Iterable[str]) -> str:
    """`from="a,b",restrict <type> <key> <comment>` for the cluster's public key."""
    key = " ".join(public_key.split())
    if not KEY_RE.fullmatch(key):
        raise ClusterError("the cluster public key is not one 'type base64 comment' line; delete the controller's "
                           "key pair (mpi_launcher_controller_key_dir) and run the role again to make a new one")
    return f'from="{",".join(check_sources(sources))}",{OPTIONS} {key}'


def settings_problems(*, user: str, reach_host: str, reach_port: object, config_dir: str, work_dir: str,
                      programs: Iterable[str], mca_names: Iterable[str]) -> list[str]:
    """Why these mpi_launcher settings cannot go into ssh_config or a command line (empty when fine)."""
    problems = []
    checks = [(user, USER_RE, "mpi_launcher_user", "a user name"),
              (reach_host, HOST_RE, "mpi_launcher_ssh_host (else ansible_host)", "a host name or address"),
              (config_dir, PATH_RE, "mpi_launcher_config_dir", "an absolute path"),
              (work_dir, PATH_RE, "mpi_launcher_work_dir", "an absolute path")]
    checks += [(p, PROGRAM_RE, "mpi_launcher_mpirun / mpi_launcher_srun", "a program name or path") for p in programs]
    checks += [(m, MCA_RE, "an mpi_launcher_mca name", "an MCA parameter name") for m in mca_names]
    for value, pattern, what, hint in checks:
        try:
            check_word(str(value), pattern, what, hint)
        except ClusterError as exc:
            problems.append(str(exc))
    if not str(reach_port).isdigit() or not 0 < int(str(reach_port)) < 65536:
        problems.append(f"mpi_launcher_ssh_port (else ansible_port) is {reach_port!r}, not a TCP port")
    return problems
