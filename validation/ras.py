"""Judge the RAS signals an MI300-series GPU reports: CPER records, bad pages, PCIe AER and machine checks in
the kernel log, PCIe replay/NAK/recovery counters, xGMI error counters.

Pure: parsed records (validation/parsers/amd_smi_ras.py, amd_smi.py, dmesg.py) and, for the health mode,
what the previous run saw -> findings, each with its stable code (validation/codes.py), the GPU it names
and what was seen. Validate judges the node as it is now (`before=None`); the health mode judges what
changed since the last run (`before` from validation/checks/health.py's HealthState): a counter that went
down was reset (reboot, driver reload) and starts over.

Sources of each rule (docs/health.md says them for operators):
- CPER severities: UEFI CPER as the amdsmi RAS page (github.com/ROCm/amdsmi, conceptual/ras) lists
  them (fatal, non-fatal uncorrected, corrected, informational). A fatal record fails at once. AFIDs
  are named; AMD publishes their meaning and service action in its AFID Event List (docs.amd.com, AMD
  Field ID 70122), which no public source we found carries as text, so no AFID is mapped to an action
  here (AFID_SERVICE_ACTIONS is empty on purpose).
- Bad pages: amdgpu retires a page (R) or holds it pending (P) until the next driver load
  (drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c, gpu_vram_bad_pages). Its RMA threshold is computed per device
  from the module parameter bad_page_threshold (-1 default, -2 "determined by a formula") and the EEPROM
  size; for the default policy the driver raises an RMA event when the bad pages exceed 8 physical rows
  (Linux commit 334dc5fcc3f1, "drm/amdgpu: increase RAS bad page threshold"), a count in pages that AMD does
  not publish for MI300X. So the count is judged against a threshold only where the caller has one (a site
  value); otherwise it is recorded with that reason, pending pages fail, and growth fails in the health mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from validation.parsers import dmesg
from validation.parsers.amd_smi_ras import BadPages, CperEntry

# AFID -> AMD's published service action. Empty: see the module docstring.
AFID_SERVICE_ACTIONS: dict[int, str] = {}
AFID_LIST = "AMD's AFID Event List (docs.amd.com, AMD Field ID 70122)"
BAD_PAGE_THRESHOLD_BASIS = ("amdgpu computes its RMA threshold per device (bad_page_threshold, EEPROM size; "
                            "default policy: more than 8 physical rows, Linux 334dc5fcc3f1) and AMD publishes no "
                            "page count for MI300X")
PCIE_COUNTERS = ("replay_count", "replay_roll_over_count", "nak_sent_count", "nak_received_count",
                 "l0_to_recovery_count", "lc_perf_other_end_recovery")


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    code: str
    subject: str        # gpu3 (0000:05:00.0), or the device a kernel line names
    message: str


def gpu_name(index: int | None, bdfs: Mapping[int, str] | None = None) -> str:
    if index is None:
        return "the GPU"
    bdf = (bdfs or {}).get(index)
    return f"gpu{index} ({bdf})" if bdf else f"gpu{index}"


def _afids(afids: tuple[int, ...]) -> str:
    if not afids:
        return "no AFID"
    named = [f"AFID {a}" + (f": {AFID_SERVICE_ACTIONS[a]}" if a in AFID_SERVICE_ACTIONS else "") for a in afids]
    return ", ".join(named)


def cper_counts(entries: tuple[CperEntry, ...]) -> dict[str, dict[str, int]]:
    """Per GPU ("gpu0"): how many fatal and non-fatal (uncorrected or corrected) records there are."""
    counts: dict[str, dict[str, int]] = {}
    for e in entries:
        bucket = counts.setdefault(f"gpu{e.gpu}", {"fatal": 0, "nonfatal": 0})
        if e.severity == "fatal":
            bucket["fatal"] += 1
        elif e.severity in ("non-fatal uncorrected", "corrected"):
            bucket["nonfatal"] += 1
    return counts


def cper_findings(entries: tuple[CperEntry, ...], *, bdfs: Mapping[int, str] | None = None,
                  before: Mapping[str, Mapping[str, int]] | None = None) -> list[Finding]:
    """Fatal records (validate), or new fatal / non-fatal records since `before` (health mode)."""
    counts = cper_counts(entries)
    findings: list[Finding] = []
    for gpu in sorted(counts, key=lambda g: int(g[3:])):
        index = int(gpu[3:])
        mine = [e for e in entries if e.gpu == index]
        for kind, code in (("fatal", "RF-CPER-FATAL"), ("nonfatal", "RF-CPER-NONFATAL")):
            now = counts[gpu][kind]
            previous = None if before is None else (before.get(gpu) or {}).get(kind)
            if before is None:
                new = now if kind == "fatal" else 0          # validate: fatal records fail, others are recorded
            else:
                new = now - previous if previous is not None and now >= previous else now
            if new <= 0:
                continue
            shown = [e for e in mine if (e.severity == "fatal") == (kind == "fatal")][-new:]
            afids = sorted({a for e in shown for a in e.afids})
            grew = "" if before is None else f" since the last run ({previous or 0} -> {now})"
            findings.append(Finding(code=code, subject=gpu_name(index, bdfs), message=(
                f"{gpu_name(index, bdfs)}: {new} {'fatal' if kind == 'fatal' else 'non-fatal'} CPER record(s){grew}, "
                f"last {shown[-1].timestamp} {shown[-1].file_name}, {_afids(tuple(afids))}"
                + ("" if all(a in AFID_SERVICE_ACTIONS for a in afids) and afids else
                   f"; service action: see {AFID_LIST}"))))
    return findings


def bad_pages_findings(pages: tuple[BadPages, ...], *, bdfs: Mapping[int, str] | None = None,
                       threshold: int | None = None,
                       before: Mapping[str, Mapping[str, int | None]] | None = None) -> list[Finding]:
    """Pending pages and retired pages at/over `threshold` (RF-BAD-PAGES), retired pages grown since `before`
    below it (RF-BAD-PAGES-GREW), and a count printed N/A (RF-NOT-REPORTED)."""
    findings: list[Finding] = []
    for p in pages:
        name = gpu_name(p.gpu, bdfs)
        if p.retired is None or p.pending is None:
            findings.append(Finding(code="RF-NOT-REPORTED", subject=name, message=(
                f"{name}: bad pages not reported (amd-smi printed N/A: the driver's RAS is off or the GPU is a VF); "
                "a count the tool cannot read is no zero")))
            continue
        if p.pending:
            findings.append(Finding(code="RF-BAD-PAGES", subject=name, message=(
                f"{name}: {p.pending} page(s) pending retirement ({p.retired} retired)")))
        if threshold is not None and p.retired >= threshold:
            findings.append(Finding(code="RF-BAD-PAGES", subject=name, message=(
                f"{name}: {p.retired} retired pages >= threshold {threshold}")))
            continue
        previous = None if before is None else (before.get(f"gpu{p.gpu}") or {}).get("retired")
        if previous is not None and p.retired > previous:
            findings.append(Finding(code="RF-BAD-PAGES-GREW", subject=name, message=(
                f"{name}: retired pages {previous} -> {p.retired} (+{p.retired - previous}) since the last run"
                + (f", below the threshold {threshold}" if threshold is not None else
                   f" (no threshold judged: {BAD_PAGE_THRESHOLD_BASIS})"))))
    return findings


def counter_growth(current: Mapping[str, Mapping[str, int]],
                   before: Mapping[str, Mapping[str, int]] | None) -> list[str]:
    """'gpu0 replay_count 3 -> 5 (+2)' for every counter that grew; a counter that went down was reset."""
    grew: list[str] = []
    for gpu in sorted(current, key=lambda g: (len(g), g)):
        for name, value in sorted(current[gpu].items()):
            previous = ((before or {}).get(gpu) or {}).get(name)
            if previous is not None and value > previous:
                grew.append(f"{gpu} {name} {previous} -> {value} (+{value - previous})")
    return grew


def _device(bdf: str | None, gpu_bdfs: Mapping[str, int]) -> str:
    if bdf is None:
        return "the node"
    index = gpu_bdfs.get(bdf.lower())
    return f"gpu{index} ({bdf})" if index is not None else bdf


def kernel_findings(errors: tuple[dmesg.HardwareError, ...], *, gpu_bdfs: Mapping[str, int] | None = None,
                    nonfatal_fail: bool) -> list[Finding]:
    """AER fatal -> RF-PCIE-AER-FATAL, machine checks -> RF-MCE, non-fatal / corrected AER -> RF-PCIE-AER
    when `nonfatal_fail` (the health mode, on new lines), naming the GPU where the line's BDF is one."""
    findings: list[Finding] = []
    by_bdf = {k.lower(): v for k, v in (gpu_bdfs or {}).items()}
    groups: dict[tuple[str, str], list[dmesg.HardwareError]] = {}
    for e in errors:
        groups.setdefault((e.kind, _device(e.bdf, by_bdf)), []).append(e)
    for (kind, where), found in groups.items():
        first = found[0].line
        stamp = f"[{first.seconds}] " if first.seconds is not None else ""
        if kind == dmesg.AER_FATAL:
            code = "RF-PCIE-AER-FATAL"
        elif kind == dmesg.MCE:
            code = "RF-MCE"
        elif nonfatal_fail:
            code = "RF-PCIE-AER"
        else:
            continue
        what = {dmesg.AER_FATAL: "uncorrectable fatal PCIe error(s)", dmesg.AER_NONFATAL:
                "uncorrectable non-fatal PCIe error(s)", dmesg.AER_CORRECTED: "corrected PCIe error(s)",
                dmesg.MCE: "machine-check event report(s)"}[kind]
        findings.append(Finding(code=code, subject=where, message=f"{where}: {len(found)} {what}, first: "
                                                                   f"{stamp}{first.text[:160]}"))
    order = {"RF-PCIE-AER-FATAL": 0, "RF-MCE": 1, "RF-PCIE-AER": 2}
    return sorted(findings, key=lambda f: order[f.code])


def kernel_counts(errors: tuple[dmesg.HardwareError, ...]) -> dict[str, int]:
    counts = {dmesg.AER_FATAL: 0, dmesg.AER_NONFATAL: 0, dmesg.AER_CORRECTED: 0, dmesg.MCE: 0}
    for e in errors:
        counts[e.kind] += 1
    return counts


def as_state(pages: tuple[BadPages, ...]) -> dict[str, dict[str, Any]]:
    return {f"gpu{p.gpu}": {"retired": p.retired, "pending": p.pending} for p in pages}
