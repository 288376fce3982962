"""Filters for roles/mpi_launcher: the cluster key's restricted authorized_keys line and the checks on
values that go into ssh_config and command lines.

The logic lives in validation/multinode/cluster_ssh.py (shared with `rocm-fleet cluster`, which reads
the same variables); this file only adapts it to Jinja.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from validation.multinode import cluster_ssh
    from validation.multinode.model import ClusterError
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from validation.multinode import cluster_ssh
    from validation.multinode.model import ClusterError


def own_addresses(reach_host: str, ipv4: list | None, ipv6: list | None) -> list[str]:
    return cluster_ssh.own_addresses(str(reach_host), ipv4 or [], ipv6 or [])


def sources_problem(sources: list) -> str:
    """'' when the from= list is usable, else why not."""
    try:
        cluster_ssh.check_sources(sources)
    except ClusterError as exc:
        return str(exc)
    return ""


def authorized_key(public_key: str, sources: list) -> str:
    return cluster_ssh.authorized_key_line(public_key, sources)


def settings_problems(values: dict) -> list[str]:
    return cluster_ssh.settings_problems(**values)


class FilterModule:
    def filters(self) -> dict:
        return {
            "rocm_fleet_cluster_own_addresses": own_addresses,
            "rocm_fleet_cluster_sources_problem": sources_problem,
            "rocm_fleet_cluster_authorized_key": authorized_key,
            "rocm_fleet_cluster_settings_problems": settings_problems,
        }
