"""Parse kernel log text (`dmesg`, `dmesg --level=...`, `journalctl -k`) into timestamped lines.

Formats: `[  123.456789] text` (dmesg's seconds since boot), `[Tue Mar  4 10:00:00 2025] text`
(`dmesg -T`), `Mar 04 10:00:00 host kernel: text` (journalctl -k; the monotonic seconds are then
unknown), and bare lines (`dmesg -t`). Lines of other processes in a journal excerpt are kept with
their source. `gpu_errors` picks the lines that say a GPU is in trouble: amdgpu at error level or
with an error word, and NVIDIA's `NVRM: Xid` reports and driver failures. `hardware_errors` picks the
platform's reports that name no driver: PCIe AER (fatal, non-fatal, corrected; from the AER driver's
`pcieport ...: AER: ... error received` lines and from firmware-first APEI/GHES `[Hardware Error]` PCIe
records) and machine checks (`mce: [Hardware Error]: Machine check events logged`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._text import command_and_body

TOOL = "dmesg"

_MONOTONIC = re.compile(r"^\[\s*(?P<s>\d+\.\d+)\]\s?(?P<text>.*)$")
_WALLCLOCK = re.compile(r"^\[(?P<when>\w{3} \w{3} +\d+ [\d:]+ \d{4})\]\s?(?P<text>.*)$")
_JOURNAL = re.compile(r"^(?P<when>\w{3} \d{2} [\d:]+) (?P<host>\S+) (?P<source>[^:\s]+):\s?(?P<text>.*)$")
# amdgpu lines that report a fault whatever level they were logged at (a plain dmesg has no levels)
_AMDGPU_ERROR = re.compile(r"\b(error|fail(ed|ure)?|timeout|timed out|fault|reset|hang|uncorrectable|poison|"
                           r"fatal|RAS)\b", re.IGNORECASE)
_XID = re.compile(r"NVRM: Xid \((?P<where>[^)]*)\): (?P<xid>\d+)")
# NVIDIA's driver reports a lost or failed GPU without an Xid too ("has fallen off the bus", "probe routine failed")
_NVRM_ERROR = re.compile(r"NVRM:.*\b(fallen off the bus|failed|error)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelLine:
    line_no: int
    seconds: float | None      # since boot; None where the format does not carry it
    when: str | None           # the wall-clock stamp as printed (-T, journalctl)
    source: str                # "kernel", or the journal's process name
    text: str


# The AER driver's summary line, every wording since 4.x: "AER: Uncorrected (Fatal) error received: id=00e4",
# "AER: Multiple Corrected error received: 0000:03:00.0", "AER: Uncorrectable (Non-Fatal) error message
# received from 0000:80:1b.4", "AER: Correctable error message received from 0000:00:03.0".
_AER = re.compile(r"^(?P<driver>\S+) (?P<port>(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): AER: (?:Multiple )?"
                  r"(?P<severity>Uncorrect(?:ed|able) \((?:Fatal|Non-Fatal)\)|Correct(?:ed|able)) error "
                  r"(?:message )?received(?:(?: from|:) (?P<source>(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]))?",
                  re.IGNORECASE)
# Firmware-first (APEI GHES) records: "{1}[Hardware Error]:  Error 0, type: fatal", then the section's
# "section_type: PCIe error" and "device_id: 0000:99:00.0" lines.
_GHES_ERROR = re.compile(r"^\{\d+\}\[Hardware Error\]:\s+Error \d+, type: (?P<type>fatal|recoverable|corrected)")
_GHES_SECTION = re.compile(r"^\{\d+\}\[Hardware Error\]:\s+section_type: (?P<section>.+)$")
_GHES_DEVICE = re.compile(r"^\{\d+\}\[Hardware Error\]:\s+device_id: "
                          r"(?P<bdf>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])")
_MCE = re.compile(r"^mce: \[Hardware Error\]: Machine check events logged")
AER_FATAL, AER_NONFATAL, AER_CORRECTED, MCE = "aer-fatal", "aer-nonfatal", "aer-corrected", "mce"


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareError:
    kind: str                  # aer-fatal, aer-nonfatal, aer-corrected, mce
    bdf: str | None            # the device the report names (the source, else the reporting port); None for mce
    line: KernelLine


@dataclass(frozen=True, slots=True, kw_only=True)
class DmesgRecord:
    command_line: str | None
    form: str                  # monotonic, wallclock, journal, plain
    lines: tuple[KernelLine, ...]


def parse(text: str) -> DmesgRecord:
    command_line, body = command_and_body(TOOL, text, expected="kernel log lines")
    lines: list[KernelLine] = []
    forms: set[str] = set()
    for n, line in body:
        if m := _MONOTONIC.match(line):
            forms.add("monotonic")
            lines.append(KernelLine(line_no=n, seconds=float(m.group("s")), when=None, source="kernel",
                                    text=m.group("text")))
        elif m := _WALLCLOCK.match(line):
            forms.add("wallclock")
            lines.append(KernelLine(line_no=n, seconds=None, when=m.group("when"), source="kernel",
                                    text=m.group("text")))
        elif (m := _JOURNAL.match(line)) and not line.startswith((" ", "\t")):
            forms.add("journal")
            lines.append(KernelLine(line_no=n, seconds=None, when=m.group("when"), source=m.group("source"),
                                    text=m.group("text")))
        elif line.startswith("-- ") and line.rstrip().endswith(" --"):
            continue    # journalctl's "-- Boot ... --" / "-- No entries --" markers
        elif lines and line.startswith((" ", "\t")):
            last = lines[-1]     # a continuation line belongs to the message above it
            lines[-1] = KernelLine(line_no=last.line_no, seconds=last.seconds, when=last.when, source=last.source,
                                   text=f"{last.text} {line.strip()}")
        else:
            forms.add("plain")
            lines.append(KernelLine(line_no=n, seconds=None, when=None, source="kernel", text=line))
    stamped = sorted(forms - {"plain"})
    if len(stamped) > 1:
        raise ParseError(TOOL, f"several kernel log formats in one text ({', '.join(stamped)})",
                         expected="one dmesg or journalctl output")
    form = stamped[0] if stamped else "plain"
    return DmesgRecord(command_line=command_line, form=form, lines=tuple(lines))


def gpu_errors(record: DmesgRecord, *, errors_only_log: bool = False) -> tuple[KernelLine, ...]:
    """The lines that report a GPU fault. `errors_only_log`: the text came from `dmesg --level=err,...`,
    so every amdgpu line in it is an error; otherwise an amdgpu line needs an error word."""
    out = []
    for line in record.lines:
        lower = line.text.lower()
        if _XID.search(line.text) or _NVRM_ERROR.search(line.text) or (
                "amdgpu" in lower and (errors_only_log or _AMDGPU_ERROR.search(line.text))):
            out.append(line)
    return tuple(out)


def _full_bdf(bdf: str) -> str:
    bdf = bdf.lower()
    return bdf if bdf.count(":") == 2 else f"0000:{bdf}"


def hardware_errors(record: DmesgRecord) -> tuple[HardwareError, ...]:
    """PCIe AER reports and machine checks, one per report (the AER driver's summary line; one GHES PCIe
    error section; one 'Machine check events logged' line), in log order."""
    out: list[HardwareError] = []
    ghes_type: str | None = None
    ghes_pcie = False
    for line in record.lines:
        text = line.text
        if m := _AER.match(text):
            severity = m.group("severity").lower()
            kind = AER_CORRECTED if severity.startswith("correct") else (
                AER_NONFATAL if "non-fatal" in severity else AER_FATAL)
            out.append(HardwareError(kind=kind, bdf=_full_bdf(m.group("source") or m.group("port")), line=line))
        elif _MCE.match(text):
            out.append(HardwareError(kind=MCE, bdf=None, line=line))
        elif m := _GHES_ERROR.match(text):
            ghes_type, ghes_pcie = m.group("type"), False
        elif (m := _GHES_SECTION.match(text)) and ghes_type is not None:
            ghes_pcie = m.group("section").strip().lower() == "pcie error"
        elif (m := _GHES_DEVICE.match(text)) and ghes_type is not None and ghes_pcie:
            kind = {"fatal": AER_FATAL, "recoverable": AER_NONFATAL}.get(ghes_type, AER_CORRECTED)
            out.append(HardwareError(kind=kind, bdf=_full_bdf(m.group("bdf")), line=line))
            ghes_type, ghes_pcie = None, False
    return tuple(out)
