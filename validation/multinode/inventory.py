"""The cluster as the Ansible inventory declares it: one group's hosts and the mpi_launcher,
env_profiles and connection variables, overlaid on the role defaults (the same variables the
roles read; there is no second copy).

`ansible-inventory --list` resolves the inventory (group_vars, host_vars, children); variables
are taken from the launch node's hostvars (a cluster's launch settings are group-wide), and the
connection variables from each node's own.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from validation.multinode.model import METHODS, ClusterError, ClusterSpec, Connection, Node
from validation.runner import environment_tool
from validation.spec import role_defaults, with_partition_counts

INVENTORY_TIMEOUT_S = 120


def ansible_inventory(path: Path) -> dict[str, Any]:
    """`ansible-inventory -i PATH --list` as a dict (found next to this interpreter first)."""
    return ansible_inventory_sources([str(path)])


def ansible_inventory_sources(sources: list[str]) -> dict[str, Any]:
    """`ansible-inventory -i SOURCE ... --list` as a dict: every group, and each host's merged variables
    (the declared ones: facts a fact cache kept from an earlier play are left out)."""
    exe = environment_tool("ansible-inventory")
    if exe is None:
        raise ClusterError("ansible-inventory is not installed; install ansible-core in this environment")
    proc = subprocess.run([exe, *(arg for source in sources for arg in ("-i", source)), "--list"],
                          capture_output=True, text=True, timeout=INVENTORY_TIMEOUT_S, check=False,
                          env={**os.environ, "ANSIBLE_CACHE_PLUGIN": "memory"})
    if proc.returncode != 0:
        raise ClusterError(f"ansible-inventory could not read {', '.join(sources)}: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def group_hosts(doc: Mapping[str, Any], group: str) -> list[str]:
    """Hosts of `group` and its children, in inventory order, each once."""
    if group not in doc:
        groups = sorted(k for k in doc if k != "_meta")
        raise ClusterError(f"group {group!r} is not in the inventory; groups: {', '.join(groups)}")
    out: list[str] = []

    def walk(name: str, seen: frozenset[str]) -> None:
        entry = doc.get(name, {})
        for host in entry.get("hosts", []):
            if host not in out:
                out.append(host)
        for child in entry.get("children", []):
            if child not in seen:
                walk(child, seen | {child})

    walk(group, frozenset({group}))
    if not out:
        raise ClusterError(f"group {group!r} has no hosts")
    return out


def _connection(name: str, hv: Mapping[str, Any]) -> Connection:
    args = hv.get("ansible_ssh_common_args") or ""
    extra = hv.get("ansible_ssh_extra_args") or ""
    try:
        return Connection(host=str(hv.get("ansible_host") or name), port=int(hv.get("ansible_port") or 22),
                          user=str(hv.get("ansible_user") or "root"),
                          key_file=str(hv["ansible_ssh_private_key_file"]) if hv.get("ansible_ssh_private_key_file")
                          else None,
                          ssh_args=tuple(shlex.split(str(args))) + tuple(shlex.split(str(extra))))
    except ClusterError as exc:
        raise ClusterError(f"inventory host {name}: {exc}") from None


def _node(name: str, hv: Mapping[str, Any], conn: Connection, *, own_reach: bool = True) -> Node:
    host = str(hv.get("mpi_launcher_ssh_host") or conn.host) if own_reach else conn.host
    port = int(hv.get("mpi_launcher_ssh_port") or conn.port) if own_reach else conn.port
    try:
        return Node(name=name, ssh_host=host, ssh_port=port, connection=conn)
    except ClusterError as exc:
        raise ClusterError(f"inventory host {name}: {exc}") from None


def _no_templates(name: str, value: Any) -> Any:
    if "{{" in json.dumps(value):
        raise ClusterError(f"{name} holds a Jinja template ({value!r}); the CLI reads inventory values as "
                           "written, so give it a plain value (or run playbooks/cluster.yml, which templates it)")
    return value


def job_env(v: Mapping[str, Any]) -> dict[str, str]:
    """env_profiles_env + env_profiles_env_extra + the profile mpi_launcher_env_profile names +
    mpi_launcher_env, later ones winning. Login-shell variables are included because ranks started
    over non-interactive SSH never read /etc/profile.d."""
    env: dict[str, str] = {}
    env.update(v.get("env_profiles_env") or {})
    env.update(v.get("env_profiles_env_extra") or {})
    profile = v.get("mpi_launcher_env_profile") or ""
    if profile:
        profiles = v.get("env_profiles_profiles") or {}
        if profile not in profiles:
            raise ClusterError(f"mpi_launcher_env_profile {profile!r} is not in env_profiles_profiles "
                               f"({', '.join(sorted(profiles)) or 'none'}); add it or set the variable to ''")
        env.update(profiles[profile] or {})
    env.update(v.get("mpi_launcher_env") or {})
    return {str(k): str(_no_templates(str(k), val)) for k, val in env.items()}


def ranks_per_node(v: Mapping[str, Any]) -> int:
    """mpi_launcher_ranks_per_node, or 0 (the default): one rank per GPU the node lists, which a declared
    partition mode multiplies (validation/spec.py:with_partition_counts; CPX: 64 on 8 MI300X); 8 where the
    node declares no GPU count either."""
    declared = int(v.get("mpi_launcher_ranks_per_node") or 0)
    if declared:
        return declared
    listed = with_partition_counts(dict(v)).get("validation_gpu_count")
    return int(listed) if listed else 8


def cluster_from_inventory(doc: Mapping[str, Any], group: str,
                           defaults: Mapping[str, Any] | None = None) -> ClusterSpec:
    """Pure: the resolved inventory (ansible-inventory --list) -> ClusterSpec of `group`."""
    names = group_hosts(doc, group)
    hostvars = doc.get("_meta", {}).get("hostvars", {})
    base = dict(role_defaults() if defaults is None else defaults)
    first = {**base, **hostvars.get(names[0], {})}
    launch_node = str(first.get("mpi_launcher_launch_node") or names[0])
    if launch_node not in hostvars and launch_node not in names:
        raise ClusterError(f"mpi_launcher_launch_node {launch_node!r} is not an inventory host")
    v = {**base, **hostvars.get(launch_node, {})}
    method = str(v.get("mpi_launcher_method", "mpirun"))
    if method not in METHODS:
        raise ClusterError(f"mpi_launcher_method is {method!r}; use one of {', '.join(METHODS)}")
    nodes = []
    for name in names:
        hv = {**base, **hostvars.get(name, {})}
        nodes.append(_node(name, hv, _connection(name, hv)))
    if launch_node not in names:   # an srun login node outside the group: reachable, not a rank host
        hv = {**base, **hostvars[launch_node]}
        nodes.append(_node(launch_node, hv, _connection(launch_node, hv), own_reach=False))
    mca = {str(k): str(_no_templates(str(k), val)) for k, val in (v.get("mpi_launcher_mca") or {}).items()}
    return ClusterSpec(
        name=str(v.get("mpi_launcher_cluster_name") or group), nodes=tuple(nodes), method=method,
        launch_node=launch_node, ranks_per_node=ranks_per_node(v),
        socket_ifname=str(_no_templates("mpi_launcher_socket_ifname", v.get("mpi_launcher_socket_ifname") or "")),
        env=tuple(sorted(job_env(v).items())), mca=tuple(sorted(mca.items())),
        job_user=str(v.get("mpi_launcher_user") or "rocm-fleet-mpi"),
        config_dir=str(v.get("mpi_launcher_config_dir") or "/etc/rocm-fleet/cluster"),
        work_dir=str(v.get("mpi_launcher_work_dir") or "/var/lib/rocm-fleet/cluster"),
        mpirun=str(v.get("mpi_launcher_mpirun") or "mpirun"), srun=str(v.get("mpi_launcher_srun") or "srun"),
        srun_args=tuple(str(a) for a in v.get("mpi_launcher_srun_args") or ()))


def load_cluster(inventory: Path, group: str) -> tuple[ClusterSpec, list[str]]:
    """(spec, rank nodes) of `group` in the inventory at `inventory`."""
    doc = ansible_inventory(inventory)
    names = group_hosts(doc, group)
    return cluster_from_inventory(doc, group), names
