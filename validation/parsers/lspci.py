"""Parse `lspci -vvv` (optionally `-nn`): per device its BDF, ids, NUMA node, PCIe link capability
and status, the "(downgraded)" flags lspci prints, and the DevSta error bits.

Indented detail lines are many and vary by device and pciutils version; only the ones named
below are read, the rest are accepted as long as they belong to a device block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._text import numbered, require_text

TOOL = "lspci"

_HEADER = re.compile(
    r"^(?P<bdf>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) "
    r"(?P<cls>[^:\[]+?)(?: \[(?P<code>[0-9a-fA-F]{4})\])?: (?P<desc>.*)$")
_IDS = re.compile(r"\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\](?:\s*\([^)]*\))*\s*$")
_REV = re.compile(r"\(rev (?P<rev>[0-9a-fA-F]+)\)")
_LINK = re.compile(r"Speed (?P<speed>[\d.]+)GT/s(?: \((?P<sflag>[^)]+)\))?, Width x(?P<width>\d+)"
                   r"(?: \((?P<wflag>[^)]+)\))?")
_LINK_UNKNOWN = re.compile(r"Speed unknown")
_FLAG = re.compile(r"(\w+)([+-])")
_MESSAGES = (re.compile(r"^lspci: "), re.compile(r"^pcilib: "))


@dataclass(frozen=True, slots=True, kw_only=True)
class PciLink:
    """One LnkCap or LnkSta line: speed in GT/s and lane count as lspci prints them."""

    speed_gt_s: float | None
    width: int | None
    speed_downgraded: bool | None = None  # lspci's "(downgraded)" vs "(ok)"; None when not printed
    width_downgraded: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PciDevice:
    """One device block of `lspci -vvv`."""

    bdf: str  # as printed: "03:00.0" or "0000:03:00.0"
    class_name: str
    class_code: int | None  # with -nn
    description: str
    vendor_id: int | None  # with -nn: [1002:74a1]
    device_id: int | None
    revision: str | None
    numa_node: int | None
    link_capability: PciLink | None
    link_status: PciLink | None
    device_status: dict[str, bool]  # DevSta flags: {"FatalErr": False, ...}
    fatal_error: bool | None  # DevSta FatalErr+; None without a PCIe capability block
    kernel_driver: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LspciRecord:
    """All device blocks of one lspci run."""

    devices: tuple[PciDevice, ...]
    messages: tuple[str, ...]  # e.g. "lspci: Unable to load libkmod resources: error -2"


def _link(raw: str, line_no: int, line: str, what: str) -> PciLink:
    if _LINK_UNKNOWN.search(raw):
        return PciLink(speed_gt_s=None, width=None)
    m = _LINK.search(raw)
    if m is None:
        raise ParseError(TOOL, f"cannot read {what}", line_no=line_no, line=line,
                         expected=f"'{what}: ... Speed <N>GT/s ..., Width x<N> ...'")

    def flag(value: str | None) -> bool | None:
        return None if value is None else value.strip() == "downgraded"

    return PciLink(speed_gt_s=float(m.group("speed")), width=int(m.group("width")),
                   speed_downgraded=flag(m.group("sflag")), width_downgraded=flag(m.group("wflag")))


class _Builder:
    def __init__(self, m: re.Match[str]) -> None:
        desc = m.group("desc")
        ids = _IDS.search(desc)
        rev = _REV.search(desc)
        self.values: dict[str, object] = {
            "bdf": m.group("bdf"), "class_name": m.group("cls").strip(),
            "class_code": int(m.group("code"), 16) if m.group("code") else None,
            "description": desc, "vendor_id": int(ids.group("vendor"), 16) if ids else None,
            "device_id": int(ids.group("device"), 16) if ids else None,
            "revision": rev.group("rev") if rev else None, "numa_node": None,
            "link_capability": None, "link_status": None, "device_status": {}, "kernel_driver": None,
        }

    def build(self) -> PciDevice:
        status = self.values["device_status"]
        fatal = status.get("FatalErr") if isinstance(status, dict) else None
        return PciDevice(**self.values, fatal_error=fatal)  # type: ignore[arg-type]


def parse(text: str) -> LspciRecord:
    """Parse `lspci -vvv [-nn]` output of one or more devices."""
    require_text(TOOL, text)
    devices: list[_Builder] = []
    messages: list[str] = []
    current: _Builder | None = None
    seen = False
    for line_no, raw in numbered(text):
        line = raw.rstrip()
        if not line.strip():
            continue
        if not seen and line.startswith("$ "):
            seen = True
            continue
        seen = True
        if any(p.match(line) for p in _MESSAGES):
            messages.append(line.strip())
            continue
        if m := _HEADER.match(line):
            current = _Builder(m)
            devices.append(current)
            continue
        if not line[0].isspace():
            raise ParseError(TOOL, "unrecognised line", line_no=line_no, line=line,
                             expected="a device header '<bus>:<dev>.<fn> <class>: <name>' "
                                      "or an indented detail")
        if current is None:
            raise ParseError(TOOL, "detail line before any device header", line_no=line_no, line=line,
                             expected="'<bus>:<dev>.<fn> <class>: <name>' first")
        stripped = line.strip()
        key, _, value = stripped.partition(":")
        if key == "NUMA node":
            if not value.strip().lstrip("-").isdecimal():
                raise ParseError(TOOL, "cannot read NUMA node", line_no=line_no, line=line,
                                 expected="'NUMA node: <int>'")
            current.values["numa_node"] = int(value)
        elif key == "LnkCap":
            current.values["link_capability"] = _link(value, line_no, line, "LnkCap")
        elif key == "LnkSta":
            current.values["link_status"] = _link(value, line_no, line, "LnkSta")
        elif key == "DevSta":
            current.values["device_status"] = {k: v == "+" for k, v in _FLAG.findall(value)}
        elif key == "Kernel driver in use":
            current.values["kernel_driver"] = value.strip() or None
    if not devices:
        raise ParseError(TOOL, "no device blocks found",
                         expected="'<bus>:<dev>.<fn> <class>: <name>' lines",
                         hint="is this lspci -vvv output?")
    return LspciRecord(devices=tuple(d.build() for d in devices), messages=tuple(messages))
