"""Does a job run on this node? The scheduler's own answer, asked before anything that would stop a job:
a reboot (roles/node_reboot, playbooks/remediate.yml), an amdgpu reload or a partition change
(roles/amdgpu_partition), an upgrade after its drain (roles/node_drain).

A drain flag is not that answer: Slurm's DRAIN stops new jobs and lets the running ones finish
(State=MIXED+DRAIN), and the health mode drains nodes mid-job on purpose. So each method asks what
holds the node now:

- slurm: the node's allocation (`scontrol show node`: ALLOCATED, MIXED, COMPLETING) and every user's
  jobs on it (`squeue --all --nodelist`); both, because squeue as a user other than root may hide other
  users' jobs (PrivateData=jobs) while the allocation is shown to everyone;
- kubernetes: the node's pods that are not done, other than DaemonSet and static (mirror) pods, which
  `kubectl drain` leaves in place by design;
- command: the operator's `node_drain_idle_command`, exit 0 for "no job", 1 for "jobs" (its first line
  says which), anything else for "cannot tell";
- none: no scheduler is declared, so there is nothing to ask.

Whatever cannot be asked (a command that failed, an output not understood) counts as occupied: the
caller then waits or skips the node, never acts on a guess. `probe_argv` builds the one command a
role runs (each poll is one task run), `why_occupied` reads its result.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from validation import slurm
from validation.errors import RocmFleetError

METHODS = ("none", "slurm", "kubernetes", "command")
SQUEUE_MARK = "#rocm-fleet: squeue"


def probe_argv(method: str, node: str, command: Sequence[str] = ()) -> list[str]:
    """The argv that asks `method` whether a job runs on `node` ([] for none)."""
    if method == "none":
        return []
    if method == "slurm":
        # one task per poll: both reads in one run, the node name checked and quoted by Python
        return ["sh", "-c", f"{shlex.join(slurm.show_argv(node))} && echo '{SQUEUE_MARK}' && "
                            f"{shlex.join(slurm.jobs_argv(node))}"]
    if method == "kubernetes":
        slurm.check_node(node)     # the same rule for a Kubernetes node name: a word, no option
        return ["kubectl", "get", "pods", "--all-namespaces", f"--field-selector=spec.nodeName={node}",
                "--output=json"]
    if method == "command":
        if not command:
            raise RocmFleetError("node_drain_method=command needs node_drain_idle_command (an argv that exits 0 when "
                                 "no job runs on the node, 1 when one does) before a reboot, reload or upgrade")
        return [str(word) for word in command]
    raise RocmFleetError(f"node_drain_method is {method!r}; give one of {', '.join(METHODS)}")


def _slurm(stdout: str, node: str) -> str | None:
    shown, mark, queued = stdout.partition(SQUEUE_MARK)
    if not mark:
        raise RocmFleetError("the Slurm probe printed no squeue part")
    return slurm.occupied(slurm.parse_show_node(shown, node), slurm.parse_jobs(queued))


def _kubernetes(stdout: str) -> str | None:
    try:
        pods = json.loads(stdout)["items"]
    except (ValueError, KeyError, TypeError) as exc:
        raise RocmFleetError(f"kubectl get pods printed no pod list ({exc})") from exc
    live = []
    for pod in pods:
        meta: dict[str, Any] = pod.get("metadata") or {}
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
            continue
        if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            continue
        live.append(f"{meta.get('namespace', '?')}/{meta.get('name', '?')}")
    if not live:
        return None
    more = f" and {len(live) - 5} more" if len(live) > 5 else ""
    return f"{len(live)} pod(s) run there: {', '.join(live[:5])}{more}"


def why_occupied(method: str, node: str, rc: int | None, stdout: str, stderr: str = "") -> str:
    """'' when no job runs on the node; otherwise one line saying what runs there, or why that cannot be
    told (which counts as occupied)."""
    if method == "none":
        return ""
    if rc is None or (rc != 0 and not (method == "command" and rc == 1)):
        told = (stderr or stdout).strip().splitlines()
        return (f"cannot tell whether a job runs on {node} ({method}: exit {rc}"
                f"{': ' + told[-1][:200] if told else ''})")
    try:
        if method == "slurm":
            why = _slurm(stdout, node)
        elif method == "kubernetes":
            why = _kubernetes(stdout)
        elif method == "command":
            lines = stdout.strip().splitlines()
            why = None if rc == 0 else (lines[0][:200] if lines else "node_drain_idle_command says a job runs there")
        else:
            raise RocmFleetError(f"node_drain_method is {method!r}; give one of {', '.join(METHODS)}")
    except RocmFleetError as exc:
        return f"cannot tell whether a job runs on {node} ({method}: {exc})"
    return why or ""
