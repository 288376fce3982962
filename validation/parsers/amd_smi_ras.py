"""Parse the RAS views of a GPU: `amd-smi ras --cper` (the CPER records amdgpu wrote, with their AFIDs),
`amd-smi bad-pages` (retired / pending / unreservable pages) and the sysfs file
`/sys/class/drm/card*/device/ras/gpu_vram_bad_pages` that amd-smi reads.

Formats, each with a real fixture (tests/fixtures/real/amd-smi/SOURCES.md, sysfs-ras/SOURCES.md):

- `ras --cper`, ROCm amd-smi: a table `timestamp gpu_id severity file_name list of afids`, one row per
  record, timestamp `2000/06/27 10:45:13`, severity upper case (FATAL); the AMD host (MxGPU) amd-smi
  prints the same columns with `07/10/2025 09:03:09` and lower case (fatal), and several AFIDs per row.
  Severities are CPER's (UEFI N.2.1, as the amdsmi RAS page, github.com/ROCm/amdsmi conceptual/ras, lists
  them): fatal, non-fatal uncorrected (recoverable), corrected, informational; amd-smi's `--severity` spells them
  fatal / nonfatal-uncorrected / nonfatal-corrected / all. No row at all means no record.
- `bad-pages`: a `GPU: N` tree with RETIRED / PENDING / UN_RES, each "No bad pages found.", "N/A", or
  one or more page entries (PAGE_ADDRESS, PAGE_SIZE, STATUS); amdsmi_cli/amdsmi_commands.py prints
  them so.
- sysfs `gpu_vram_bad_pages`: `0x%08x : 0x%08x : %1s` per page (pfn, size, R reserved / P pending /
  F unable to reserve), as drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c documents it.

This module registers no TOOL of its own: these views are amd-smi's, judged by validation/ras.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._text import command_and_body
from validation.parsers.amd_smi import TRUNCATION_MARKERS

TOOL_CPER = "amd-smi ras --cper"
TOOL_BAD_PAGES = "amd-smi bad-pages"
TOOL_SYSFS = "gpu_vram_bad_pages"

_CPER_HEADER = re.compile(r"^\s*timestamp\s+gpu_id\s+severity\s+file_name\s+list of afids\s*$", re.IGNORECASE)
_CPER_ROW = re.compile(r"^\s*(?P<when>\d{2,4}/\d{2}/\d{2,4} \d{2}:\d{2}:\d{2})\s+(?P<gpu>\d+)\s+"
                       r"(?P<severity>[A-Za-z_-]+)\s+(?P<file>\S+\.cper)(?:\s+(?P<afids>[\d ]+?))?\s*$")
_FOLLOW = ("Press CTRL + C to stop.", "...")
# amd-smi's severity words, and the CPER severity each one is
SEVERITIES = {"fatal": "fatal", "nonfatal-uncorrected": "non-fatal uncorrected",
              "non_fatal_uncorrected": "non-fatal uncorrected", "recoverable": "non-fatal uncorrected",
              "nonfatal-corrected": "corrected", "non_fatal_corrected": "corrected", "corrected": "corrected",
              "informational": "informational", "info": "informational"}
_SYSFS_LINE = re.compile(r"^0x(?P<pfn>[0-9a-fA-F]+) : 0x(?P<size>[0-9a-fA-F]+) : (?P<flag>[RPF])$")
_NO_PAGES = "No bad pages found."
_TOP = re.compile(r"^GPU: (\d+)$")
_KEY = re.compile(r"^\s+(?P<key>RETIRED|PENDING|UN_RES):\s*(?P<value>.*)$")
_PAGE_FIELD = re.compile(r"^\s+(?:PAGE_ADDRESS|PAGE_SIZE|STATUS|PAGE \d+|- )")


@dataclass(frozen=True, slots=True, kw_only=True)
class CperEntry:
    line_no: int
    timestamp: str          # as printed
    gpu: int
    severity: str           # fatal, non-fatal uncorrected, corrected, informational
    file_name: str
    afids: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CperRecord:
    command_line: str | None
    entries: tuple[CperEntry, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BadPages:
    """One GPU's page counts; None = printed N/A (the GPU or driver cannot say), never 0."""

    gpu: int | None
    retired: int | None
    pending: int | None
    unreservable: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BadPagesRecord:
    command_line: str | None
    gpus: tuple[BadPages, ...]
    truncated: bool


def parse_cper(text: str) -> CperRecord:
    """`amd-smi ras --cper [--severity ...] [--folder DIR]`: one entry per record; an empty table is no record."""
    command_line, body = command_and_body(TOOL_CPER, text, expected="the CPER table")
    entries: list[CperEntry] = []
    header = False
    for n, line in body:
        stripped = line.strip()
        if not stripped or stripped in _FOLLOW:
            continue
        if _CPER_HEADER.match(line):
            header = True
            continue
        m = _CPER_ROW.match(line)
        if m is None or not header:
            raise ParseError(TOOL_CPER, "unrecognised line in the CPER table", line_no=n, line=line,
                             expected="'timestamp gpu_id severity file_name list of afids' then one row per "
                                      "record ('2000/06/27 10:45:13  0  FATAL  fatal-1.cper  30')",
                             hint="save the whole output of `amd-smi ras --cper --severity all --folder DIR`")
        word = m.group("severity").lower()
        if word not in SEVERITIES:
            raise ParseError(TOOL_CPER, f"unknown CPER severity {m.group('severity')!r}", line_no=n, line=line,
                             expected=", ".join(sorted(SEVERITIES)))
        entries.append(CperEntry(line_no=n, timestamp=m.group("when"), gpu=int(m.group("gpu")),
                                 severity=SEVERITIES[word], file_name=m.group("file"),
                                 afids=tuple(int(a) for a in (m.group("afids") or "").split())))
    if not header:
        raise ParseError(TOOL_CPER, "no CPER table header", expected="'timestamp gpu_id severity file_name "
                         "list of afids'", hint="amd-smi older than 6.4 has no `ras --cper`; upgrade amd-smi-lib")
    return CperRecord(command_line=command_line, entries=tuple(entries))


def _count(value: str, extra: int) -> int | None:
    value = value.strip()
    if value == "N/A":
        return None
    if value == _NO_PAGES:
        return 0
    return extra + (1 if value else 0)


def parse_bad_pages(text: str) -> BadPagesRecord:
    """`amd-smi bad-pages`: per GPU the number of retired, pending and unreservable pages."""
    command_line, body = command_and_body(TOOL_BAD_PAGES, text, expected="'GPU: N' blocks")
    gpus: list[BadPages] = []
    current: dict[str, int | None] | None = None
    index: int | None = None
    key: str | None = None
    truncated = False

    def close() -> None:
        if current is not None:
            gpus.append(BadPages(gpu=index, retired=current.get("RETIRED"), pending=current.get("PENDING"),
                                 unreservable=current.get("UN_RES")))

    for n, line in body:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped in TRUNCATION_MARKERS:
            truncated = True
            continue
        if m := _TOP.match(line):
            close()
            current, index, key = {}, int(m.group(1)), None
            continue
        if current is not None and (m := _KEY.match(line)):
            key = m.group("key")
            value = m.group("value")
            current[key] = _count(value, 0) if value.strip() else 0
            continue
        if current is not None and key is not None and "PAGE_ADDRESS" in line:
            current[key] = (current.get(key) or 0) + 1       # one entry per page, counted by its address
            continue
        if current is not None and key is not None and _PAGE_FIELD.match(line):
            continue
        raise ParseError(TOOL_BAD_PAGES, "unrecognised line in a bad-pages view", line_no=n, line=line,
                         expected="'GPU: N', then RETIRED/PENDING/UN_RES with 'No bad pages found.', 'N/A' or "
                                  "page entries")
    close()
    if not gpus:
        raise ParseError(TOOL_BAD_PAGES, "no 'GPU: N' block", expected="at least one 'GPU: N' block")
    return BadPagesRecord(command_line=command_line, gpus=tuple(gpus), truncated=truncated)


def parse_vram_bad_pages(text: str) -> BadPages:
    """sysfs gpu_vram_bad_pages of one GPU: R lines are retired, P pending, F pages it could not reserve.
    An empty file is a GPU without bad pages."""
    counts = {"R": 0, "P": 0, "F": 0}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _SYSFS_LINE.match(line.strip())
        if m is None:
            raise ParseError(TOOL_SYSFS, "unrecognised bad-page line", line_no=n, line=line,
                             expected="'0x%08x : 0x%08x : R|P|F' (amdgpu_ras.c)")
        counts[m.group("flag")] += 1
    return BadPages(gpu=None, retired=counts["R"], pending=counts["P"], unreservable=counts["F"])
