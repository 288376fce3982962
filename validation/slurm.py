"""Slurm node state for the health mode: read it, drain a node with the failing codes as the reason,
and resume only a node the health mode drained itself.

Pure command builders and parsers; validation/commands/health.py runs them. Node names are
checked before they reach an argv (no shell is involved, and a name cannot start with `-`).
A drain reason starts with REASON_PREFIX: that is how a later passing run knows the drain was its
own, so a node an administrator drained for another reason is never resumed by it.

Remediation (validation/remediate.py, playbooks/remediate.yml) uses two more reasons. While it works on
a node the reason starts with REMEDIATE_PREFIX; a node it gives up on is held with PHYSICAL_PREFIX
("rocm-fleet: needs physical action: RF-..."). Neither starts with REASON_PREFIX, so the health mode
never resumes (nor re-drains) a node in either state: `decide` leaves any drain that is not its own alone.

A drain only stops new jobs: the ones already running go on (State=MIXED+DRAIN, `sinfo` says "draining").
Whatever reboots a node, reloads its driver or repartitions its GPUs asks `occupied` first: the
allocation Slurm shows for the node and the jobs `squeue` lists on it, of every user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import RocmFleetError

REASON_PREFIX = "rocm-fleet health: "
REMEDIATE_PREFIX = "rocm-fleet remediate: "
PHYSICAL_PREFIX = "rocm-fleet: needs physical action: "
REASON_MAX = 200
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_STATE = re.compile(r"(?:^|\s)State=(?P<state>\S+)")
_REASON = re.compile(r"(?:^|\s)Reason=(?P<reason>.*?)(?:\s+\[[^\]]*\])?\s*$", re.M)
DRAINED = frozenset({"DRAIN", "DRAINED", "DRAINING"})
ALLOCATED = frozenset({"ALLOCATED", "ALLOC", "MIXED", "MIX", "COMPLETING", "DRAINING"})
"""Node states (base state or flag) that mean a job holds some of the node or is still finishing on it."""
JOB_STATES = ("CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESIZING")
"""Job states in which a job still holds the node's resources (a suspended job keeps its memory; a
completing one runs its epilog)."""
_JOB = re.compile(r"^(?P<id>\S+)\|(?P<state>[A-Z_]+)\|(?P<user>\S*)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class SlurmNode:
    name: str
    states: frozenset[str]          # "IDLE+DRAIN" -> {"IDLE", "DRAIN"}
    reason: str | None

    @property
    def drained(self) -> bool:
        return bool(self.states & DRAINED)

    @property
    def drained_by_health(self) -> bool:
        return self.drained and (self.reason or "").startswith(REASON_PREFIX)

    @property
    def drained_by_remediation(self) -> bool:
        """Drained while remediation works on it (a run that was cut short leaves this reason)."""
        return self.drained and (self.reason or "").startswith(REMEDIATE_PREFIX)

    @property
    def needs_physical_action(self) -> bool:
        return self.drained and (self.reason or "").startswith(PHYSICAL_PREFIX)

    @property
    def allocated(self) -> bool:
        """Slurm still allocates some of the node to a job (or a job is completing there)."""
        return bool(self.states & ALLOCATED)


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    id: str
    state: str
    user: str


def parse_jobs(text: str) -> tuple[Job, ...]:
    """`squeue` as `jobs_argv` asks for it (`JOBID|STATE|USER` a line) -> the jobs; any other line is an
    error (a wrong reading here could reboot a node under a job)."""
    jobs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        found = _JOB.match(line.strip())
        if found is None:
            raise RocmFleetError(f"squeue printed a line that is not JOBID|STATE|USER: {line.strip()[:200]!r}")
        jobs.append(Job(id=found["id"], state=found["state"], user=found["user"]))
    return tuple(jobs)


def occupied(node: SlurmNode, jobs: tuple[Job, ...]) -> str | None:
    """Why the node may not be rebooted, reloaded or repartitioned now (None: no job runs there): its
    allocation in Slurm, and every job `squeue` lists on it, whoever runs it. A drain flag is not enough."""
    why = []
    if node.allocated:
        why.append(f"Slurm shows it {'+'.join(sorted(node.states))}")
    live = [j for j in jobs if j.state in JOB_STATES]
    if live:
        shown = ", ".join(f"{j.id} ({j.user or '?'}, {j.state})" for j in live[:5])
        more = f" and {len(live) - 5} more" if len(live) > 5 else ""
        why.append(f"{len(live)} job(s) run there: {shown}{more}")
    return "; ".join(why) or None


def check_node(name: str) -> str:
    if not _NODE.fullmatch(name):
        raise RocmFleetError(f"{name!r} is not a Slurm node name (letters, digits, '.', '_', '-'; not starting "
                             "with '-'); pass --slurm-node NAME")
    return name


def show_argv(node: str) -> list[str]:
    return ["scontrol", "--oneliner", "show", "node", check_node(node)]


def jobs_argv(node: str) -> list[str]:
    """Every user's jobs that hold the node (hidden partitions too), one `JOBID|STATE|USER` a line."""
    return ["squeue", "--all", "--noheader", "--format=%A|%T|%u", f"--states={','.join(JOB_STATES)}",
            f"--nodelist={check_node(node)}"]


def reason_text(prefix: str, text: str) -> str:
    """prefix + text on one line, at most REASON_MAX characters, cut between words: a code cut in half
    (the first half of RF-VRAM-LOW) would be read back as another code by remediation."""
    whole = " ".join((prefix + text).split())
    if len(whole) <= REASON_MAX:
        return whole
    cut = whole[:REASON_MAX]
    if whole[REASON_MAX] == " " or " " not in cut[len(prefix):]:
        return cut
    head, _, partial = cut.rpartition(" ")
    return head if len(partial) <= 40 else cut        # a code is short; a long word is cut where it is


def drain_argv(node: str, reason: str) -> list[str]:
    text = reason_text(REASON_PREFIX, reason)
    return ["scontrol", "update", f"NodeName={check_node(node)}", "State=DRAIN", f"Reason={text}"]


def reason_argv(node: str, prefix: str, text: str) -> list[str]:
    """Drain (or keep drained) with `prefix` + `text` as the whole reason, cut to REASON_MAX."""
    if prefix not in (REASON_PREFIX, REMEDIATE_PREFIX, PHYSICAL_PREFIX):
        raise RocmFleetError(f"{prefix!r} is not one of rocm-fleet's drain reason prefixes")
    reason = reason_text(prefix, text)
    return ["scontrol", "update", f"NodeName={check_node(node)}", "State=DRAIN", f"Reason={reason}"]


def resume_argv(node: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={check_node(node)}", "State=RESUME"]


def parse_show_node(text: str, node: str) -> SlurmNode:
    """`scontrol show node NAME` (one-line or the default view) -> its state set and reason."""
    state = _STATE.search(text)
    if state is None:
        raise RocmFleetError(f"scontrol shows no State= for node {node}: {text.strip()[:200]!r}")
    reason = _REASON.search(text)
    found = reason.group("reason").strip() if reason else None
    return SlurmNode(name=node, states=frozenset(state.group("state").split("+")),
                     reason=found if found and found != "(null)" else None)


def decide(wanted: str, node: SlurmNode, reason: str) -> str | None:
    """'drain', 'resume' or None, for what the health mode's flap policy wants (validation/flap.py:
    "drain" with this reason, "keep" the node as it is, or "resume" it) on a node in this state."""
    if wanted == "drain":
        if node.drained and not node.drained_by_health:
            return None                      # an administrator's drain: leave it and its reason alone
        wanted_reason = reason_text(REASON_PREFIX, reason)
        return None if node.drained and node.reason == wanted_reason else "drain"
    if wanted == "keep":
        return None                          # drained codes not yet released (a flapping code's passes)
    return "resume" if node.drained_by_health else None
