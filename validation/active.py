"""Active checks on a schedule: which idle nodes of a Slurm partition get a quick-tier run now.

Pure: argv builders, parsers of what Slurm prints, and the plan. validation/commands/active_checks.py
runs the commands and submits the jobs; roles/active_checks runs that command from a systemd timer on
the Slurm controller or a login node.

The policy (docs/active-checks.md):
- only a node whose Slurm state is exactly IDLE is chosen: any other base state (ALLOCATED, MIXED,
  COMPLETING, DOWN, FUTURE, UNKNOWN) and any flag beside IDLE (DRAIN, RESERVED, MAINTENANCE, PLANNED,
  NOT_RESPONDING, POWERED_DOWN, REBOOT_REQUESTED, COMPLETING, FAIL, ...) keeps it out: a node a user job
  runs on, the backfill scheduler has planned for, an administrator has taken out, or that is not up;
- at most ceil(P % x partition size) active checks at once, counting the active-check jobs (JOB_NAME) that
  are already pending or running in the partition: P = 10 on 95 nodes is 10, on 5 nodes 1 (never 0 for
  P > 0: a small partition still gets checked, one node at a time);
- an active-check job is one of JOB_NAME submitted under the planner's own uid (`jobs_argv`): any cluster
  user can name a job rocm-fleet-active, none can submit one under another uid (slurmctld takes the uid from
  the submitter's munge credential), so another user's job of that name neither fills the limit nor keeps a
  node from its check;
- a node that already has an active-check job, pending or running, is not chosen again;
- a node checked less than `recheck_after` ago is not due;
- among the due idle nodes, the one checked longest ago first (never checked before anything), then by
  name, so that the schedule walks the whole partition.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from validation import slurm
from validation.errors import RocmFleetError

JOB_NAME = "rocm-fleet-active"
ELIGIBLE = frozenset({"IDLE"})
# squeue's states of a job that still holds (or waits for) its node; a job that ended is not counted
LIVE_JOB_STATES = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
                   "SIGNALING", "STAGE_OUT")
NICE_MAX = 2147483645          # Slurm's largest --nice (NICE_OFFSET - 3)
_PARTITION = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
_QOS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
DEFAULT_NICE = 100000        # below every job that does not ask for a nice value of its own
DEFAULT_PREFIX = "/opt/rocm-fleet"              # the suite on the node (roles/validation_node)
DEFAULT_SPEC = "/etc/rocm-fleet/spec.yml"       # the node's declared state (roles/validation_node)
DEFAULT_RESULTS = "/var/lib/rocm-fleet/active"  # on the node: job-<id>/ per run, latest -> the last verdict
# sinfo's marks after a short state ("idle*"): each is a flag, so a marked node is never plainly idle
MARKS = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP", "!": "POWER_DOWN", "%": "POWERING_DOWN",
         "$": "MAINTENANCE", "@": "REBOOT_REQUESTED", "^": "REBOOT_ISSUED", "-": "PLANNED"}
_JOB_ID = re.compile(r"[0-9]+(?:_[0-9]+)?(?:\+[0-9]+)?")


class ActiveChecksError(RocmFleetError):
    """Bad input for the active-check schedule, or Slurm output it cannot read; one line, exit 2."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionNode:
    name: str
    states: frozenset[str]         # "idle+drain" -> {"IDLE", "DRAIN"}

    @property
    def idle(self) -> bool:
        return self.states == ELIGIBLE


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveJob:
    job_id: str
    state: str                     # squeue's long state: PENDING, RUNNING, ...
    node: str | None               # the node it runs on, or the one it asked for while pending


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    partition: str
    max_percent: float
    size: int                      # nodes in the partition
    limit: int                     # active checks allowed at once: ceil(P % x size)
    active: tuple[ActiveJob, ...]  # active-check jobs pending or running now
    chosen: tuple[str, ...]        # nodes to submit a check for now, in order
    skipped: tuple[tuple[str, str], ...]  # (node, why it is not chosen now)

    @property
    def free_slots(self) -> int:
        return max(0, self.limit - len(self.active))


# --------------------------------------------------------------------------- inputs
def check_partition(name: object) -> str:
    if not isinstance(name, str) or not _PARTITION.fullmatch(name):
        raise ActiveChecksError(f"--partition {name!r} is not a Slurm partition name (letters, digits, '.', '_', "
                                "'-', at most 64, not starting with '-' or '.'); pass the partition as slurm.conf "
                                "names it (PartitionName=)")
    return name


def check_qos(name: object) -> str:
    if not isinstance(name, str) or not _QOS.fullmatch(name):
        raise ActiveChecksError(f"--qos {name!r} is not a Slurm QOS name (letters, digits, '.', '_', '-', not "
                                "starting with '-' or '.'); pass the QOS as `sacctmgr show qos` names it")
    return name


def check_percent(value: object) -> float:
    """P: more than 0 and at most 100 (a number; a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 100:
        raise ActiveChecksError(f"--max-percent {value!r}: give more than 0 and at most 100 (percent of the "
                                "partition's nodes that may run an active check at once)")
    return float(value)


def max_at_once(size: int, percent: float) -> int:
    """ceil(percent % of size): the nodes that may run an active check at once. Rounded to 9 decimals
    first, so that 64.4 % of 250 nodes is 161, not the 162 that 250 * 64.4 / 100 = 161.00000000000003
    would give."""
    if size <= 0:
        return 0
    return math.ceil(round(size * check_percent(percent) / 100, 9))


# --------------------------------------------------------------------------- Slurm argv
def nodes_argv(partition: str) -> list[str]:
    """One line per node of the partition: its name and complete state ("idle+drain")."""
    return ["sinfo", "--noheader", "--Node", f"--partition={check_partition(partition)}",
            "--Format=NodeList:256 ,StateComplete:256"]


def jobs_argv(partition: str, uid: int) -> list[str]:
    """The active-check jobs of the partition that are pending or running, of user `uid` only (the planner's:
    it submits them; module docstring): id|state|nodes|requested nodes."""
    if isinstance(uid, bool) or not isinstance(uid, int) or uid < 0:
        raise ActiveChecksError(f"{uid!r} is not a user id (a number, 0 or more)")
    return ["squeue", "--noheader", f"--name={JOB_NAME}", f"--user={uid}", f"--partition={check_partition(partition)}",
            f"--states={','.join(LIVE_JOB_STATES)}", "--format=%i|%T|%N|%n"]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSpec:
    """What one active-check job runs on its node, and how it is submitted."""
    partition: str
    tier: str = "quick"
    time_limit_min: int = 60       # --time: the check's own limit; validate stops a minute before it
    pending_limit_min: int = 60    # a check that has not started by then is removed by Slurm (--deadline)
    nice: int = DEFAULT_NICE       # --nice
    qos: str | None = None         # a site's preemptible QOS (docs/active-checks.md)
    prefix: str = DEFAULT_PREFIX
    spec: str = DEFAULT_SPEC
    results: str = DEFAULT_RESULTS

    def checked(self) -> JobSpec:
        check_partition(self.partition)
        if self.tier not in ("smoke", "quick"):
            raise ActiveChecksError(f"--tier {self.tier!r}: an active check runs the smoke or the quick tier")
        if not 2 <= self.time_limit_min <= 24 * 60:
            raise ActiveChecksError(f"--time-limit {self.time_limit_min}: give 2 to 1440 minutes")
        if not 1 <= self.pending_limit_min <= 7 * 24 * 60:
            raise ActiveChecksError(f"--pending-limit {self.pending_limit_min}: give 1 to 10080 minutes")
        if not 0 <= self.nice <= NICE_MAX:
            raise ActiveChecksError(f"--nice {self.nice}: give 0 to {NICE_MAX} (higher is lower priority)")
        if self.qos is not None:
            check_qos(self.qos)
        for what, path in (("--node-prefix", self.prefix), ("--node-spec", self.spec),
                           ("--node-results", self.results)):
            if not PurePosixPath(path).is_absolute() or ".." in PurePosixPath(path).parts or "\n" in path:
                raise ActiveChecksError(f"{what} {path!r}: give an absolute path on the node, without '..'")
        return self


def sbatch_argv(job: JobSpec, node: str) -> list[str]:
    """sbatch for one node; the script comes on stdin (script_text), after `--`. Exclusive, so no user job
    shares the node with the check; low priority, so a user job waiting for the node goes first; short,
    so a user job that arrives during the check waits at most --time; never requeued; removed if it has
    not started within the pending limit (--deadline)."""
    job.checked()
    argv = ["sbatch", "--parsable", f"--partition={job.partition}", f"--nodelist={slurm.check_node(node)}",
            "--nodes=1", "--exclusive", f"--job-name={JOB_NAME}", f"--nice={job.nice}",
            f"--time={job.time_limit_min}", "--no-requeue", "--chdir=/", "--output=/dev/null",
            f"--deadline=now+{job.pending_limit_min + job.time_limit_min}minutes"]
    if job.qos:
        argv.append(f"--qos={job.qos}")
    return [*argv, "--"]


def script_text(job: JobSpec) -> str:
    """The job's batch script: the tier on the node into job-<id>/, then `latest` points at it when the run
    reached a verdict (exit 0 or 1); a run stopped by a signal (preempted, cancelled) keeps its partial
    results in its own directory and leaves `latest` at the previous verdict."""
    job.checked()
    q = shlex.quote
    timeout_s = (job.time_limit_min - 1) * 60
    return "\n".join([
        "#!/bin/sh",
        f"# rocm-fleet active check ({job.tier} tier), submitted by `rocm-fleet active-checks`",
        "set -u",
        f"dir={q(job.results)}",
        'run="job-${SLURM_JOB_ID:?not run by Slurm}"',
        'mkdir -p "$dir/$run" || exit 2',
        'exec >"$dir/$run/job.log" 2>&1',
        f"{q(job.prefix + '/venv/bin/rocm-fleet')} validate --hosts local:// --tier {q(job.tier)} "
        f'--spec {q(job.spec)} --results "$dir/$run" --timeout {timeout_s}',
        "rc=$?",
        'echo "rocm-fleet validate exit $rc"',
        'if [ "$rc" -le 1 ]; then',
        '  ln -sfn "$run" "$dir/.latest.$SLURM_JOB_ID" && mv -T "$dir/.latest.$SLURM_JOB_ID" "$dir/latest"',
        "  for old in \"$dir\"/job-*; do",
        '    [ "$old" = "$dir/$run" ] || rm -rf -- "$old"',
        "  done",
        "fi",
        'exit "$rc"',
        ""])


# --------------------------------------------------------------------------- parsers
def parse_nodes(text: str, partition: str) -> tuple[PartitionNode, ...]:
    """sinfo's `NodeList StateComplete` lines -> the partition's nodes, in the order printed."""
    nodes: dict[str, PartitionNode] = {}
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        if len(words) != 2:
            raise ActiveChecksError(f"sinfo for partition {partition}, line {number}: expected 'NODE STATE', got "
                                    f"{line.strip()[:200]!r}")
        name, state = words
        try:
            slurm.check_node(name)
        except RocmFleetError:
            raise ActiveChecksError(f"sinfo for partition {partition}, line {number}: {name[:80]!r} is not a node "
                                    "name") from None
        marks = {MARKS[c] for c in state[len(state.rstrip("".join(MARKS))):]}
        states = frozenset({s.upper() for s in state.rstrip("".join(MARKS)).split("+") if s} | marks)
        if not states - marks:
            raise ActiveChecksError(f"sinfo for partition {partition}, line {number}: no state for node {name}")
        nodes[name] = PartitionNode(name=name, states=states)
    return tuple(nodes.values())


def parse_jobs(text: str) -> tuple[ActiveJob, ...]:
    """squeue's `%i|%T|%N|%n` lines -> the active-check jobs with their node (allocated, else requested)."""
    jobs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.strip().split("|")
        if len(fields) != 4 or not _JOB_ID.fullmatch(fields[0]):
            raise ActiveChecksError(f"squeue line {number}: expected 'JOBID|STATE|NODES|REQUESTED', got "
                                    f"{line.strip()[:200]!r}")
        job_id, state, allocated, requested = fields
        node = next((n for n in (allocated, requested) if n and n not in ("(null)", "n/a")), None)
        jobs.append(ActiveJob(job_id=job_id, state=state.upper(), node=node))
    return tuple(jobs)


def parse_job_id(text: str) -> str:
    """`sbatch --parsable`: "JOBID" or "JOBID;CLUSTER"."""
    job_id = text.strip().split(";", 1)[0]
    if not _JOB_ID.fullmatch(job_id):
        raise ActiveChecksError(f"sbatch printed {text.strip()[:200]!r}, not a job id")
    return job_id


# --------------------------------------------------------------------------- the plan
def _why_not(node: PartitionNode) -> str:
    return f"not idle ({'+'.join(sorted(node.states))})"


def plan(partition: str, nodes: Iterable[PartitionNode], jobs: Iterable[ActiveJob], max_percent: float, *,
         last_checked: Mapping[str, dt.datetime | None], now: dt.datetime,
         recheck_after: dt.timedelta = dt.timedelta(0)) -> Plan:
    """Which nodes get an active check now (module docstring: the policy)."""
    check_partition(partition)
    percent = check_percent(max_percent)
    members = tuple(nodes)
    active = tuple(jobs)
    limit = max_at_once(len(members), percent)
    busy = {j.node: j for j in active if j.node}
    skipped: list[tuple[str, str]] = []
    due: list[tuple[dt.datetime | None, str]] = []
    for node in members:
        last = last_checked.get(node.name)
        if node.name in busy:
            job = busy[node.name]
            skipped.append((node.name, f"active check {job.job_id} {job.state.lower()}"))
        elif not node.idle:
            skipped.append((node.name, _why_not(node)))
        elif last is not None and now - last < recheck_after:
            skipped.append((node.name, f"checked {_ago(now - last)} ago (due after {_ago(recheck_after)})"))
        else:
            due.append((last, node.name))
    due.sort(key=lambda item: (item[0] is not None, item[0] or now, item[1]))
    slots = max(0, limit - len(active))
    chosen = tuple(name for _, name in due[:slots])
    skipped += [(name, f"at the limit: {len(active)} pending or running + {len(chosen)} chosen now, of {limit} at "
                       "once") for _, name in due[slots:]]
    return Plan(partition=partition, max_percent=percent, size=len(members), limit=limit, active=active,
                chosen=chosen, skipped=tuple(skipped))


def _ago(delta: dt.timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} h"
