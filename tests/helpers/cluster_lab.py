"""What the multi-node lab tests share: a cluster inventory from a lab's, the mirror-only package
source, the CLI's JSON, and a search for leftover processes (playbooks: ansible_run.run_playbook)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from validation.cli import main
from validation.lab import Lab

KEYRING = "/etc/apt/keyrings/rocm-fleet-lab.asc"
MIRROR_LIST = "/etc/apt/sources.list.d/rocm-fleet-lab.list"
SERVICE_PORTS = 8          # a lab's block: Slurm's slurmctld and one slurmd a host, a test's TCP servers
SERVICE_RANGE = (17000, 33000)


def service_ports(lab: Lab) -> int:
    """The first of SERVICE_PORTS loopback ports that belong to this lab's services (slurmctld, slurmd,
    a test's TCP server), apart from every other running lab's, also of this checkout (labs run side by
    side). The lab's hosts hold their SSH ports while it runs, so no two running labs share a first SSH
    port; the block is SERVICE_PORTS ports per SSH port from 17000 on."""
    assert lab.info is not None
    first = lab.info.hosts[0].port
    base = SERVICE_RANGE[0] + SERVICE_PORTS * (first - 2000)
    if first > 2000 and base + SERVICE_PORTS <= SERVICE_RANGE[1]:
        return base
    raise AssertionError(f"the lab's first SSH port {first} is outside 2001-3999: give the module's *_PORT_BASE "
                         "environment variable a base in that range")


def cluster_inventory(lab: Lab, path: Path, group_vars: dict[str, Any]) -> Path:
    """The lab's inventory with `group_vars` added to its host group, written to `path`."""
    assert lab.info is not None
    doc = yaml.safe_load(lab.info.inventory.read_text())
    doc["all"]["children"]["gpu_nodes"]["children"]["lab"]["vars"].update(group_vars)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def mirror_only_play(lab: Lab) -> dict[str, Any]:
    """A play that makes the lab mirror the hosts' only package source (the Debian archive line goes)."""
    assert lab.info is not None and lab.info.mirror is not None
    mirror = lab.info.mirror
    return {"name": "The lab mirror as the only package source", "hosts": "lab", "become": True,
            "gather_facts": False,
            "tasks": [
                {"name": "Drop the Debian archive line",
                 "ansible.builtin.file": {"path": "/etc/apt/sources.list", "state": "absent"}},
                {"name": "Fetch the mirror's signing key",
                 "ansible.builtin.get_url": {"url": mirror.key_url, "dest": KEYRING, "mode": "0644"}},
                {"name": "Point apt at the mirror",
                 "ansible.builtin.copy": {"dest": MIRROR_LIST, "mode": "0644",
                                          "content": f"deb [signed-by={KEYRING}] {mirror.url}/rocm/apt/"
                                                     f"{mirror.versions[0]} trixie main\n"}},
                {"name": "Refresh apt's lists", "ansible.builtin.apt": {"update_cache": True}}]}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    """`rocm-fleet ARGV` in-process: (exit code, its JSON output or {"text": output})."""
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith("{") else {"text": out}


def leftovers(lab: Lab, hosts: list[str], pattern: str) -> dict[str, str]:
    """host -> processes matching `pattern` (pgrep -f), other than the pgrep itself."""
    out = {}
    for host in hosts:
        # one quoted word: ssh hands its arguments to the remote shell joined by spaces
        found = lab.ssh(host, [shlex.join(["pgrep", "-a", "-f", pattern])])
        # pgrep -f also matches the ssh'd shell that runs pgrep itself; keep only other commands
        lines = [ln for ln in found.stdout.splitlines() if "pgrep" not in ln]
        if lines:
            out[host] = "\n".join(lines)
    return out
