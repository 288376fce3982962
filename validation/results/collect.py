"""What the controller needs from a node's validation run, in one answer from the node.

playbooks/validate.yml starts `rocm-fleet validate` on the node as an Ansible async job and follows
it with `rocm-fleet progress --node N --wait S --collect JOB_FILE` (one long poll per window). Once
the job has exited, that same command answers with the job's exit status, the tail of its stderr
and whether the run wrote its results document; the controller then fetches the document and the
JUnit XML. Before, that took an async_status and a stat per node, and a run that could not start
was noticed only when no progress file had appeared after 120 s.

JOB_FILE is the job's `results_file`. Ansible's async wrapper keeps `{"started": true, "finished":
false, ...}` there while the job runs, then replaces it with the module's result (`rc`, `stderr`,
...) or, when the job ran past its limit, `{"msg": "Timeout exceeded", "failed": true}`; like
`async_status`, a file without `started` is a finished job (tests/fixtures/real/ansible-async/).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from validation.results import progress

STDERR_TAIL = 1500


def _json(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}                              # not written yet, or replaced as we read it
    return found if isinstance(found, dict) else {}


def stale(stderr: str) -> dict[str, Any]:
    """What a node's start found out of date, `{"install": why, "spec": bool}`: the role's start and follow
    scripts (roles/validation_node/vars/main.yml) exit 3 with `{"stale": {...}}` as the last line of their
    stderr. {} where that line is anything else (the node was current, or the run failed otherwise)."""
    lines = stderr.splitlines()
    last = lines[-1] if lines else ""
    if not last.startswith('{"stale"'):
        return {}
    try:
        found = json.loads(last)["stale"]
    except (ValueError, KeyError, TypeError):
        return {}
    return found if isinstance(found, dict) else {}


def job_finished(job: dict[str, Any]) -> bool:
    """async_status's rule: a job file without `started` holds the finished job's result."""
    return bool(job) and ("started" not in job or bool(job.get("finished")))


def wait_for_job(job_file: Path, seconds: float, *, interval_s: float = 0.1) -> dict[str, Any]:
    """The job file's content as soon as the job has exited, else after `seconds` (`{}` while unwritten)."""
    deadline = time.monotonic() + seconds
    while True:
        job = _json(job_file)
        if job_finished(job) or time.monotonic() >= deadline:
            return job
        time.sleep(interval_s)


def collect(directory: Path, node: str, job_file: Path, seconds: float, *,
            interval_s: float = 0.1) -> dict[str, Any]:
    """The node's progress document (`{}` while there is none) with a `collected` key:
    `job` (`finished`, `rc`, `stderr`) and `document` (whether the run has written its results
    document). Returns as soon as the job has exited, or after `seconds`."""
    job = wait_for_job(job_file, seconds, interval_s=interval_s)
    finished = job_finished(job)
    doc = progress.read_progress(progress.progress_path(directory, node)) or {}
    return {**doc, "collected": {
        "job": {"finished": finished,
                "rc": job.get("rc") if finished else None,
                "stderr": str(job.get("stderr") or job.get("msg") or "")[-STDERR_TAIL:] if finished else ""},
        "document": (directory / f"{node}.json").is_file(),
    }}


def main(argv: list[str] | None = None) -> int:
    """`python -m validation.results.collect JOB_FILE SECONDS`: exit 0 as soon as the job has exited, 3
    after SECONDS without. A node converging itself runs it from the bundle's checkout (roles/self_converge),
    where the suite is not installed: standard library only."""
    args = sys.argv[1:] if argv is None else argv
    try:
        job_file, seconds = Path(args[0]), float(args[1])
        if len(args) != 2 or not 0 < seconds <= 3600:
            raise ValueError
    except (IndexError, ValueError):
        print("usage: python -m validation.results.collect JOB_FILE SECONDS (0 < SECONDS <= 3600)", file=sys.stderr)
        return 2
    return 0 if job_finished(wait_for_job(job_file, seconds)) else 3


if __name__ == "__main__":
    sys.exit(main())
