"""Remediation of nodes this project drained: which failure codes a reboot may fix, how many attempts a
node gets in a window, and what the node's remediation record holds.

The policy is coded here once; `rocm-fleet remediate` (validation/commands/remediate.py) applies it on
the node and playbooks/remediate.yml drives it. Pure functions: the clock and the file system come in
as arguments (`now`, a document already read), except `load` / `save`, which read and write the
record itself.

Every failure code falls in one class:

- REBOOT: transient; a reboot clears what causes it (a process left holding a GPU, throttling, a hung
  device, errors in the kernel log, runtime configuration drift that the boot re-applies). Each try
  counts against the node's attempts.
- ONCE: worth one reboot (a GPU that fell off the bus, a fatal CPER record or PCIe AER error, a
  machine check); the same code again after a reboot means hardware, and the node is held at once.
- PHYSICAL: a reboot cannot fix it (bad pages over the threshold, corrupted results, fewer compute
  units or less memory than the SKU has); the node is held without a reboot.

A code missing from the table is treated as REBOOT: a reboot is cheap next to a visit, and the node's
attempts bound how often it is tried.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from validation.errors import RocmFleetError
from validation.files import write_atomically

SCHEMA_VERSION = 1
CODE = re.compile(r"RF-[A-Z0-9-]+")
EVENTS_KEPT = 200

REBOOT, ONCE, PHYSICAL = "reboot", "once", "physical"

# code -> (class, why); the why goes into the Slurm reason's detail and the docs (docs/remediate.md).
POLICY: dict[str, tuple[str, str]] = {
    # transient: a reboot clears the cause
    "RF-GPU-BUSY": (REBOOT, "a process left holding a GPU ends with the reboot"),
    "RF-GPU-ACTIVITY-UNKNOWN": (REBOOT, "the GPU activity could not be read; a reboot restarts the driver"),
    "RF-GPU-THROTTLED": (REBOOT, "throttling while idle; a reboot resets clocks and power state"),
    "RF-TEMP-HIGH": (REBOOT, "hot while idle; a reboot clears a stuck fan or power state"),
    "RF-TIMEOUT": (REBOOT, "a check hung (a hung device); a reboot resets it"),
    "RF-TOOL-FAILED": (REBOOT, "a tool failed to talk to the driver; a reboot reloads it"),
    "RF-NO-KFD": (REBOOT, "/dev/kfd is missing; a reboot loads amdgpu again"),
    "RF-AMDGPU-KERNEL-ERRORS": (REBOOT, "amdgpu errors in the kernel log; a reboot resets the GPUs"),
    "RF-CPER-NONFATAL": (REBOOT, "non-fatal CPER records; a reboot clears the error state"),
    "RF-PCIE-AER": (REBOOT, "correctable PCIe AER errors; a reboot retrains the links"),
    "RF-PCIE-REPLAY": (REBOOT, "PCIe replay counters grew; a reboot retrains the links"),
    "RF-TUNING-THP": (REBOOT, "runtime drift; the boot applies the persisted setting"),
    "RF-TUNING-SYSCTL": (REBOOT, "runtime drift; the boot applies the persisted setting"),
    "RF-TUNING-REBOOT-PENDING": (REBOOT, "a written kernel command line waits for a reboot"),
    # worth one reboot; the same code after it means hardware
    "RF-GPU-MISSING": (ONCE, "a GPU missing after a reboot stays missing"),
    "RF-CPER-FATAL": (ONCE, "fatal CPER records repeated after a reboot"),
    "RF-PCIE-AER-FATAL": (ONCE, "an uncorrectable PCIe error repeated after a reboot"),
    "RF-PCIE-FATAL": (ONCE, "FatalErr+ on the link repeated after a reboot"),
    "RF-PCIE-DOWNGRADED": (ONCE, "the link trained below Gen5 x16 again after a reboot"),
    "RF-MCE": (ONCE, "machine checks repeated after a reboot"),
    "RF-ECC": (ONCE, "ECC errors repeated after a reboot"),
    "RF-XGMI-ERRORS": (ONCE, "xGMI link errors repeated after a reboot"),
    "RF-BAD-PAGES-GREW": (ONCE, "retired pages kept growing after a reboot"),
    "RF-BAD-PAGES": (ONCE, "pages pending retirement are retired when the driver loads again (the code's hint); "
                           "pending again after the reboot, or at the bad-page threshold, the GPU is due for RMA"),
    # a reboot cannot fix it
    "RF-RCCL-WRONG": (PHYSICAL, "wrong collective results (data corruption)"),
    "RF-BURNIN-ECC-UNCORRECTABLE": (PHYSICAL, "uncorrectable ECC errors under load"),
    "RF-BURNIN-WRONG-RESULT": (PHYSICAL, "wrong results under load (data corruption)"),
    "RF-PROBE-WRONG-RESULT": (PHYSICAL, "a probe computed wrong results (data corruption)"),
    "RF-VRAM-LOW": (PHYSICAL, "less memory than the SKU has"),
    "RF-CU-COUNT": (PHYSICAL, "compute units missing"),
    "RF-SKU-MISMATCH": (PHYSICAL, "another GPU than declared is installed"),
    "RF-GPU-UNSEEN": (PHYSICAL, "someone's work the node cannot see runs on a GPU (another container or pod): a "
                                "person must find whose, and a reboot would kill it"),
    "RF-CHECK-FAILED": (PHYSICAL, "a check failed without a code of its own (a declaration missing, such as no SKU): "
                                  "a reboot cannot fix the inventory; fix it, converge, then resume the node"),
}
UNLISTED = (REBOOT, "not in the policy table: a reboot is tried, bounded by the node's attempts")


def classify(code: str) -> tuple[str, str]:
    """(class, why) of a failure code."""
    return POLICY.get(code, UNLISTED)


def codes_in(text: str) -> tuple[str, ...]:
    """The failure codes named in a text (a Slurm reason), in order, each once."""
    return tuple(dict.fromkeys(CODE.findall(text or "")))


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    number: int
    run_id: str
    started: dt.datetime
    codes: tuple[str, ...]               # what the node was drained for
    result: str                          # pending | passed | failed | interrupted
    codes_after: tuple[str, ...] = ()    # what still failed after the reboot
    rebooted: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    action: str                          # reboot | hold | resume | retry
    why: str
    codes: tuple[str, ...]
    attempt: int = 0                     # this attempt's number within the window (reboot), or the last one


def in_window(attempts: Iterable[Attempt], now: dt.datetime, window_hours: float) -> list[Attempt]:
    since = now - dt.timedelta(hours=window_hours)
    return [a for a in attempts if a.started > since]


def check_limits(max_attempts: object, window_hours: object) -> tuple[int, float]:
    """The attempts and the window as numbers; a RocmFleetError naming the value and the fix otherwise."""
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise RocmFleetError(f"max attempts is {max_attempts!r}; give a whole number >= 1 "
                             "(rocm_fleet_remediate_max_attempts)")
    if isinstance(window_hours, bool) or not isinstance(window_hours, int | float) or not window_hours > 0:
        raise RocmFleetError(f"window is {window_hours!r} hours; give a number > 0 (rocm_fleet_remediate_window_hours)")
    return max_attempts, float(window_hours)


def _hold_for(codes: Sequence[str], earlier: Iterable[Attempt]) -> str | None:
    """Why these codes need physical action now (None: a reboot may still fix them)."""
    physical = [c for c in codes if classify(c)[0] == PHYSICAL]
    if physical:
        return "; ".join(f"{c}: {classify(c)[1]}" for c in physical)
    seen_before = {c for a in earlier if a.rebooted is not False for c in (*a.codes, *a.codes_after)}
    repeated = [c for c in codes if classify(c)[0] == ONCE and c in seen_before]
    if repeated:
        return "; ".join(f"{c}: {classify(c)[1]}" for c in repeated)
    return None


def plan_before(codes: Sequence[str], attempts: Sequence[Attempt], *, now: dt.datetime, max_attempts: int,
                window_hours: float) -> Plan:
    """For a node drained for `codes`: reboot it (attempt n of max_attempts) or hold it for physical action."""
    recent = in_window(attempts, now, window_hours)
    why = _hold_for(codes, recent)
    if why:
        return Plan(action="hold", why=why, codes=tuple(codes), attempt=len(recent))
    if len(recent) >= max_attempts:
        return Plan(action="hold", codes=tuple(codes), attempt=len(recent),
                    why=f"{len(recent)} remediation attempt(s) in the last {window_hours:g} h did not fix it")
    return Plan(action="reboot", codes=tuple(codes), attempt=len(recent) + 1,
                why="; ".join(sorted({classify(c)[1] for c in codes})) or UNLISTED[1])


def plan_after(attempt: Attempt, passed: bool, codes_after: Sequence[str], attempts: Sequence[Attempt], *,
               now: dt.datetime, max_attempts: int, window_hours: float) -> Plan:
    """After the reboot and the checks: resume, hold for physical action, or leave drained for a later try."""
    if passed:
        return Plan(action="resume", why="passed after the reboot", codes=(), attempt=attempt.number)
    codes = tuple(codes_after) or attempt.codes
    earlier = [a for a in in_window(attempts, now, window_hours) if a.number <= attempt.number]
    why = _hold_for(codes, earlier)
    if why:
        return Plan(action="hold", why=why, codes=codes, attempt=attempt.number)
    if len(earlier) >= max_attempts:
        return Plan(action="hold", codes=codes, attempt=attempt.number,
                    why=f"{len(earlier)} remediation attempt(s) in the last {window_hours:g} h did not fix it")
    return Plan(action="retry", codes=codes, attempt=attempt.number,
                why=f"attempt {attempt.number}/{max_attempts} failed; the next run tries again")


# --- the node's record ----------------------------------------------------------------------------

def _time(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def attempts_of(doc: Mapping[str, Any]) -> list[Attempt]:
    """The attempts a record holds; a RocmFleetError for one that is not this schema."""
    try:
        return [Attempt(number=int(a["number"]), run_id=str(a["run_id"]), started=_time(a["started"]),
                        codes=tuple(a["codes"]), result=str(a["result"]), codes_after=tuple(a.get("codes_after", ())),
                        rebooted=a.get("rebooted"))
                for a in doc.get("attempts", [])]
    except (KeyError, TypeError, ValueError) as exc:
        raise RocmFleetError(f"the remediation record has an attempt that is not schema {SCHEMA_VERSION}: {exc}; "
                             "move the file aside (the node then starts with no attempts)") from exc


def attempt_doc(a: Attempt) -> dict[str, Any]:
    return {"number": a.number, "run_id": a.run_id, "started": a.started.isoformat(timespec="seconds"),
            "codes": list(a.codes), "result": a.result, "codes_after": list(a.codes_after), "rebooted": a.rebooted}


def new_record(node: str) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "node": node, "attempts": [], "events": []}


def with_event(doc: dict[str, Any], now: dt.datetime, event: str, reason: str, detail: str = "") -> dict[str, Any]:
    """The record with one more entry of the drain history (the oldest go beyond EVENTS_KEPT)."""
    events = [*doc.get("events", []), {"time": now.isoformat(timespec="seconds"), "event": event, "reason": reason,
                                       "detail": detail}]
    return {**doc, "events": events[-EVENTS_KEPT:]}


def with_attempts(doc: dict[str, Any], attempts: Sequence[Attempt]) -> dict[str, Any]:
    return {**doc, "attempts": [attempt_doc(a) for a in attempts]}


def load(path: Path, node: str) -> dict[str, Any]:
    """The node's record, or a new one where there is none yet."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return new_record(node)
    except (OSError, ValueError) as exc:
        raise RocmFleetError(f"cannot read the remediation record {path}: {exc}; move it aside (the node then starts "
                             "with no attempts)") from exc
    if not isinstance(doc, dict) or doc.get("schema_version") != SCHEMA_VERSION:
        raise RocmFleetError(f"{path} is not a schema {SCHEMA_VERSION} remediation record; move it aside")
    attempts_of(doc)
    return doc


def save(path: Path, doc: Mapping[str, Any]) -> None:
    """Write the record atomically (a reboot right after leaves the old or the new one, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    write_atomically(path, json.dumps(doc, indent=2) + "\n", mode=0o644, durable=True)
