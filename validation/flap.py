"""Flap control for the health mode: when a failing code drains the node, when a node is flapping, and
when a drained node may be resumed. The policy's defaults live here and nowhere else; operators
override the streak per code (`rocm-fleet health --drain-after CODE=N`, roles/node_health's
`node_health_drain_after`, which passes only what the inventory sets).

The rules, per failure code of a health run:

- **Streak.** A code drains the node after `drain_after` consecutive failing runs. Codes that can be
  transient (a job's process not yet gone, throttling under a hot neighbour, configuration drift that
  a converge is about to fix, a single new kernel-log line) wait DEFAULT_DRAIN_AFTER runs; fatal codes
  (AT_ONCE) drain on the first run, because waiting only sends more jobs onto a broken GPU. A code no
  one classified here keeps the behaviour the health mode had before flap control: at once. A check that
  fails without a code of its own counts as RF-CHECK-FAILED (`code_of`), classified as a streak code: it
  could not judge the node (an incomplete declaration, most often), which is a configuration problem.
  A run in which the code did not fail (it passed, or its check was skipped) ends its streak.
- **Below the streak** the run still fails (exit 1, the failure reported); only the drain waits.
- **Flapping.** A code that went fail -> pass -> fail at least FLAP_RETURNS times within the last
  FLAP_WINDOW_RUNS runs is flapping. A flapping code that fails drains the node at once, with
  "flapping" in the reason: a node that keeps dropping in and out of service kills a job each time.
- **Resume.** A node the policy drained is resumed once every code that drained it passes; a code that
  was flapping must pass RESUME_PASSES_AFTER_FLAP consecutive runs first (it passes between its
  failures by definition, so one pass proves nothing).
- **Fatal holds.** While Slurm shows the node drained, a code that drained it as fatal is never released
  by a pass: the RAS checks judge events (a new fatal AER line, a new fatal CPER record), so the run after
  the event passes because nothing *new* happened, not because the hardware is well. The node stays
  drained until remediation (a reboot and a passing re-validation, playbooks/remediate.yml) or a person
  resumes it; once Slurm shows it in service again, the policy forgets what held it. Without Slurm
  (`drained` unknown) a pass releases it as before: there is no drain to keep.

Pure: the history is a JSON-able dict the caller keeps in the node's health state
(validation/health_state.py) and `step` returns the next one. No I/O, no clock. What was kept is checked
before it is used (`read_history`): a part of the wrong shape is unknown (a code's streak starts over; an
unknown drain is read back from Slurm's reason with `held_from_reason`) and said, never a crash.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from validation.codes import CODES
from validation.errors import RocmFleetError
from validation.records import FAILING

DEFAULT_DRAIN_AFTER = 3
"""Three runs: at the role's 300 s interval a transient cause (a job's processes still exiting, a
throttle under a hot neighbour, a drift a converge is about to undo) has 10-15 minutes to clear, while
a real fault still leaves service within a quarter of an hour. Two would drain on two unlucky runs in
a row around a job's end; more would keep a broken node taking jobs for longer than a job's retry."""
AT_ONCE = 1
UNCLASSIFIED_DRAIN_AFTER = AT_ONCE
"""A code not in POLICY drains at once, as every code did before flap control: a new check waits for a
streak only after someone classified it here."""
FLAP_WINDOW_RUNS = 12
"""One hour of runs at the role's 300 s interval: long enough to see a pattern, short enough that a
node repaired in the morning is not called flapping in the afternoon."""
FLAP_RETURNS = 2
"""fail -> pass -> fail twice (three separate failing spells) within the window. One return can be a
coincidence (a job's cleanup racing the check twice); a third spell within the hour is a pattern."""
RESUME_PASSES_AFTER_FLAP = 3
"""A flapping code must pass three runs in a row (15 minutes at 300 s) before its node is resumed."""

FATAL_WORDS = "(fatal, at once)"
"""What a code that drained the node as fatal says in the reason (and in the history's held codes)."""

CHECK_FAILED = "RF-CHECK-FAILED"
"""What a failing check without a code of its own is counted under (never its test id)."""

ECC_CORRECTABLE_ONLY = "correctable only"
"""Written by the ECC-growth check (validation/checks/test_health.py) when only correctable counters
grew: RF-ECC is fatal unless its message carries this marker."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    drain_after: int
    why: str


def _fatal(why: str) -> Rule:
    return Rule(drain_after=AT_ONCE, why=why)


def _streak(why: str) -> Rule:
    return Rule(drain_after=DEFAULT_DRAIN_AFTER, why=why)


POLICY: dict[str, Rule] = {
    # --- fatal: drain at once
    "RF-GPU-MISSING": _fatal("a GPU fell off the bus; it does not come back without a power cycle"),
    "RF-NO-AMD-GPU": _fatal("no AMD GPU answers: every job on the node fails"),
    "RF-NO-NVIDIA-GPU": _fatal("no NVIDIA GPU answers: every job on the node fails"),
    "RF-NO-KFD": _fatal("/dev/kfd is gone: no ROCm job can start"),
    "RF-SKU-MISMATCH": _fatal("the node is not the hardware it is declared as; waiting does not change that"),
    "RF-PCIE-FATAL": _fatal("a fatal PCIe error was latched on a GPU's link"),
    "RF-ECC": _fatal(f"uncorrectable or deferred ECC errors grew (only correctable growth, marked "
                     f"'{ECC_CORRECTABLE_ONLY}', waits DEFAULT_DRAIN_AFTER runs)"),
    "RF-XGMI-ERRORS": _fatal("xGMI link errors corrupt collectives across the node's GPUs"),
    "RF-CPER-FATAL": _fatal("the GPU logged a fatal CPER record"),
    "RF-BAD-PAGES": _fatal("HBM pages are pending retirement (or retired pages reached the threshold)"),
    "RF-PCIE-AER-FATAL": _fatal("the kernel logged an uncorrectable (fatal) PCIe AER error"),
    "RF-MCE": _fatal("the kernel logged a machine-check event"),
    # --- can be transient: drain after DEFAULT_DRAIN_AFTER consecutive failing runs
    "RF-GPU-BUSY": _streak("a finished job's processes can take a run or two to exit"),
    "RF-GPU-UNSEEN": _streak("work the node cannot see (another container's) comes and goes with its job"),
    "RF-GPU-THROTTLED": _streak("throttling follows load and the room's cooling; it often clears by the next run"),
    "RF-TEMP-HIGH": _streak("an idle GPU still cooling down after a job reads hot for a run or two"),
    "RF-GPU-ACTIVITY-UNKNOWN": _streak("the GPU tool may be upgraded or restarted between runs"),
    "RF-TOOL-FAILED": _streak("a tool that fails once (busy driver, upgrade in progress) usually answers next run"),
    "RF-TIMEOUT": _streak("one slow run (a loaded node, a slow tool) is not a fault"),
    "RF-PCIE-DOWNGRADED": _streak("a link can read below its width or speed while it retrains or saves power"),
    "RF-FIRMWARE": _streak("firmware updates land in maintenance: a run or two before --accept-changes"),
    "RF-AMDGPU-KERNEL-ERRORS": _streak("one new amdgpu error line can be benign; new lines run after run are not"),
    "RF-CONFIG-PACKAGE-HOLD": _streak("configuration drift: a converge is likely on its way"),
    "RF-CONFIG-ROCM-VERSION": _streak("configuration drift: a converge is likely on its way"),
    "RF-TUNING-THP": _streak("configuration drift: a converge is likely on its way"),
    "RF-TUNING-SYSCTL": _streak("configuration drift: a converge is likely on its way"),
    "RF-TUNING-CMDLINE": _streak("configuration drift: a converge is likely on its way"),
    "RF-TUNING-REBOOT-PENDING": _streak("a reboot is pending: it is scheduled, not a fault"),
    "RF-TUNING-CSTATE": _streak("configuration drift: a converge is likely on its way"),
    "RF-CPER-NONFATAL": _streak("non-fatal CPER records in one run are corrected; run after run they are not"),
    "RF-BAD-PAGES-GREW": _streak("a page retired now and then is the design working; growth run after run is not"),
    "RF-PCIE-AER": _streak("a corrected AER error now and then is tolerated by the link; a stream of them is not"),
    "RF-PCIE-REPLAY": _streak("replay counters grow a little under load; growth run after run is a weak link"),
    CHECK_FAILED: _streak("a check without a code of its own could not judge the node, most often for an incomplete "
                          "declaration: a configuration problem, not a hardware fault"),
}


CODE = re.compile(r"RF-[A-Z0-9]+(?:-[A-Z0-9]+)*")
"""The shape of a failure code (whole match): what a Prometheus `code` label and a history key may be."""
_OVERRIDE = re.compile(rf"(?P<code>{CODE.pattern})=(?P<runs>[0-9]+)")

Wanted = Literal["drain", "keep", "resume"]


def known_codes() -> frozenset[str]:
    return frozenset(CODES)


def is_code(value: object) -> bool:
    return isinstance(value, str) and CODE.fullmatch(value) is not None


def code_of(check: Mapping[str, Any]) -> str:
    """The code a check's result counts under in the health mode: its own; a check without one that was
    stopped by its time limit, RF-TIMEOUT; any other, CHECK_FAILED."""
    code = check.get("code")
    if is_code(code):
        return str(code)
    return "RF-TIMEOUT" if check.get("status") == "timeout" else CHECK_FAILED


def label_code(check: Mapping[str, Any]) -> str:
    """A check's `code` for a label: code_of for a failing check, its own code (or "") for any other."""
    if check.get("status") in FAILING:
        return code_of(check)
    code = check.get("code")
    return str(code) if is_code(code) else ""


def parse_overrides(items: Iterable[str]) -> dict[str, int]:
    """`CODE=N` strings (from --drain-after) -> {code: runs}; a bad one raises with what to write."""
    out: dict[str, int] = {}
    known = known_codes()
    for item in items:
        found = _OVERRIDE.fullmatch(item.strip())
        if found is None:
            raise RocmFleetError(f"--drain-after {item!r}: expected CODE=N, a failure code and a whole number of "
                                 "runs >= 1 (e.g. RF-GPU-BUSY=2)")
        code, runs = found["code"], int(found["runs"])
        if runs < 1:
            raise RocmFleetError(f"--drain-after {item!r}: N is the number of consecutive failing runs before the "
                                 "drain; 1 drains at once, 0 is not a streak")
        if code not in known:
            raise RocmFleetError(f"--drain-after {item!r}: {code} is not a failure code of this suite; the codes "
                                 "are listed in docs/codes.md")
        if out.get(code, runs) != runs:
            raise RocmFleetError(f"--drain-after {code} given twice ({out[code]} and {runs}); give it once")
        out[code] = runs
    return out


def drain_after(code: str, overrides: Mapping[str, int], message: str = "") -> int:
    """Consecutive failing runs before `code` drains the node (an override wins over the policy)."""
    if code in overrides:
        return overrides[code]
    if code == "RF-ECC" and ECC_CORRECTABLE_ONLY in message:
        return DEFAULT_DRAIN_AFTER
    rule = POLICY.get(code)
    return rule.drain_after if rule else UNCLASSIFIED_DRAIN_AFTER


def is_fatal(code: str, overrides: Mapping[str, int], message: str = "") -> bool:
    """Drains at once because the policy calls it fatal (not because an override or no rule said 1)."""
    rule = POLICY.get(code)
    return code not in overrides and rule is not None and rule.drain_after == AT_ONCE and \
        drain_after(code, overrides, message) == AT_ONCE


def returns(recent: str) -> int:
    """How often a code went fail -> pass -> fail in `recent` ("P"/"F" per run, oldest first)."""
    return len(re.findall(r"F+P+(?=F)", recent))


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeStatus:
    code: str
    failing: bool           # failed in this run
    streak: int             # consecutive failing runs, this one included
    passes: int             # consecutive passing runs since its last failure
    drain_after: int
    fatal: bool
    flapping: bool
    returns: int            # fail -> pass -> fail within `recent`
    recent: str             # "P"/"F" per run, oldest first, at most FLAP_WINDOW_RUNS
    first_seen: str
    last_seen: str | None   # its last failing run
    triggered: bool         # failing now and past its rule: fatal, its streak reached, or flapping
    drains: bool            # triggered, or it drained the node before and is not released yet

    def describe(self) -> str:
        """The drain reason's words for this code."""
        if self.fatal and self.failing:
            return f"{self.code} {FATAL_WORDS}"
        if self.flapping:
            return f"{self.code} flapping ({self.returns + 1} failing spells in {len(self.recent)} runs)"
        return f"{self.code} failed {self.streak} consecutive run{'s' if self.streak != 1 else ''}"

    def waiting(self) -> str:
        """For a failing code below its streak: how far it is from draining the node."""
        return f"{self.code} failing {self.streak} of {self.drain_after} before drain"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    wanted: Wanted                  # drain (or re-word the drain), keep as it is, or resume
    reason: str                     # without slurm.REASON_PREFIX; empty unless wanted == "drain"
    drain: dict[str, str]           # code -> its words in the reason, while the policy holds the node out
    codes: tuple[CodeStatus, ...]   # every code with a history, sorted
    history: dict[str, Any]         # the next history to keep

    @property
    def waiting(self) -> tuple[CodeStatus, ...]:
        return tuple(c for c in self.codes if c.failing and c.code not in self.drain)

    @property
    def flapping(self) -> tuple[CodeStatus, ...]:
        return tuple(c for c in self.codes if c.flapping)


def _order(status: CodeStatus) -> tuple[int, str]:
    return (0 if status.fatal and status.failing else 1 if status.flapping else 2, status.code)


def step(history: Mapping[str, Any] | None, failures: Mapping[str, str], *, at: str,
         overrides: Mapping[str, int] | None = None, drained: bool | None = None) -> Decision:
    """One health run: `failures` maps each failing code to its message. Returns what the policy wants
    done with the node and the history to keep for the next run. `drained`: what Slurm shows before this
    run (True drained, whatever the reason; False in service; None no Slurm): a drained node keeps its
    fatal codes held, a node in service holds nothing."""
    overrides = overrides or {}
    history = history or {}
    before: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (history.get("codes") or {}).items()
                                          if isinstance(v, dict)}
    held: dict[str, str] = dict(history.get("drain") or {}) if drained is not False else {}
    statuses: list[CodeStatus] = []
    kept: dict[str, dict[str, Any]] = {}
    for code in sorted(set(before) | set(failures)):
        rec = before.get(code) or {"streak": 0, "passes": 0, "recent": "", "first_seen": at, "last_seen": None}
        failing = code in failures
        recent = (str(rec.get("recent", "")) + ("F" if failing else "P"))[-FLAP_WINDOW_RUNS:]
        streak = int(rec.get("streak", 0)) + 1 if failing else 0
        passes = 0 if failing else int(rec.get("passes", 0)) + 1
        last_seen = at if failing else rec.get("last_seen")
        message = failures.get(code, "")
        n = drain_after(code, overrides, message)
        back = returns(recent)
        flapping = back >= FLAP_RETURNS
        fatal = failing and is_fatal(code, overrides, message)
        triggered = failing and (fatal or streak >= n or flapping)
        fatal_hold = drained is True and str(held.get(code, "")).endswith(FATAL_WORDS)
        released = not failing and not fatal_hold and (not flapping or passes >= RESUME_PASSES_AFTER_FLAP)
        statuses.append(CodeStatus(code=code, failing=failing, streak=streak, passes=passes, drain_after=n,
                                   fatal=fatal, flapping=flapping, returns=back, recent=recent,
                                   first_seen=str(rec.get("first_seen") or at), last_seen=last_seen,
                                   triggered=triggered, drains=triggered or (code in held and not released)))
        if "F" in recent or code in held:       # a code that passed a whole window is forgotten
            kept[code] = {"streak": streak, "passes": passes, "recent": recent,
                          "first_seen": str(rec.get("first_seen") or at), "last_seen": last_seen}
    due = sorted((s for s in statuses if s.triggered), key=_order)
    still = [s for s in statuses if s.drains and not s.triggered]
    # a code that already holds the node keeps its words, so the reason (and Slurm) change only when a
    # new code joins; the streak goes on counting in the history
    drain = {s.code: held.get(s.code) or s.describe() for s in [*due, *still]}
    wanted: Wanted = "drain" if due else "keep" if still else "resume"
    reason = "; ".join(drain.values()) if due else ""
    return Decision(wanted=wanted, reason=reason, drain=drain if wanted != "resume" else {},
                    codes=tuple(statuses),
                    history={"codes": kept, "drain": drain if wanted != "resume" else {}})


_RECORD_TYPES: dict[str, tuple[type, ...]] = {"streak": (int,), "passes": (int,), "recent": (str,),
                                               "first_seen": (str,), "last_seen": (str, type(None))}


def _record_problem(record: object) -> str | None:
    """Why a code's kept record cannot be used, or None."""
    if not isinstance(record, Mapping):
        return f"a {type(record).__name__}, not a record"
    for key, types in _RECORD_TYPES.items():
        value = record.get(key)
        if key not in record or isinstance(value, bool) or not isinstance(value, types):
            return f"{key} is {value!r}" if key in record else f"no {key}"
    if record["streak"] < 0 or record["passes"] < 0 or set(record["recent"]) - {"P", "F"}:
        return f"streak {record['streak']}, passes {record['passes']}, recent {record['recent']!r}"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """A kept flap history, checked: what `step` may use, and what was unknown in it."""
    codes: dict[str, dict[str, Any]]
    drain: dict[str, str] | None        # the codes holding the node; None: unknown (no history, or unreadable)
    problems: tuple[str, ...]           # each part that was unknown, and what became of it

    def as_dict(self, held: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The history for `step`; `held` stands in for an unknown drain."""
        return {"codes": self.codes, "drain": dict(self.drain if self.drain is not None else held or {})}


def read_history(raw: object) -> History:
    """The kept history checked part by part: a part of the wrong shape is left out as unknown and said
    in `problems` (a code's record: its streak starts over; the drain: unknown, for the caller to read back
    from Slurm's reason), so a damaged file neither crashes a run nor stops the node from draining. A code
    kept under a check's test id (the health mode before RF-CHECK-FAILED) is not a code: its record starts
    over, and a drain it holds is held as CHECK_FAILED with its words."""
    if raw is None:
        return History(codes={}, drain=None, problems=())
    if not isinstance(raw, Mapping):
        return History(codes={}, drain=None, problems=(
            f"flap: a {type(raw).__name__}, not a history: unknown, every streak starts over",))
    problems: list[str] = []
    kept_codes = raw.get("codes", {})
    if not isinstance(kept_codes, Mapping):
        problems.append(f"flap.codes: a {type(kept_codes).__name__}, not records by code: every streak starts over")
        kept_codes = {}
    codes: dict[str, dict[str, Any]] = {}
    for code, record in kept_codes.items():
        why = "not a failure code" if not is_code(code) else _record_problem(record)
        if why:
            problems.append(f"flap.codes[{code!r}]: {why}: its streak starts over")
        else:
            codes[code] = dict(record)
    kept_drain = raw.get("drain", {})
    if not isinstance(kept_drain, Mapping) or not all(isinstance(w, str) for w in kept_drain.values()):
        problems.append(f"flap.drain: {kept_drain!r:.80} is not the words by code: unknown, the codes that hold the "
                        "node are read from Slurm's reason")
        return History(codes=codes, drain=None, problems=tuple(problems))
    drain: dict[str, str] = {}
    for code, words in kept_drain.items():
        if not is_code(code):
            problems.append(f"flap.drain[{code!r}]: not a failure code: held as {CHECK_FAILED}")
            drain.setdefault(CHECK_FAILED, words)
        else:
            drain[code] = words
    return History(codes=codes, drain=drain, problems=tuple(problems))


def held_from_reason(reason: str) -> dict[str, str]:
    """The codes a health-mode drain reason names (without its prefix), with their words: `step`'s drain
    when the kept one is unknown. Words that start with no code of this suite (cut by Slurm's length
    limit, another tool's) hold nothing."""
    held: dict[str, str] = {}
    for part in reason.split(";"):
        words = part.strip()
        found = CODE.match(words)
        if found and found.group() in CODES and words[found.end():found.end() + 1] in ("", " "):
            held.setdefault(found.group(), words)
    return held


def policy_table(overrides: Mapping[str, int]) -> list[dict[str, Any]]:
    """The policy in effect (for `rocm-fleet health --show-policy`): every classified or overridden code."""
    rows = []
    for code in sorted(set(POLICY) | set(overrides)):
        rule = POLICY.get(code)
        rows.append({"code": code, "drain_after": drain_after(code, overrides),
                     "fatal": is_fatal(code, overrides), "overridden": code in overrides,
                     "why": rule.why if rule else "not classified: drains at once unless overridden"})
    return rows
