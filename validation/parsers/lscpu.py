"""Parse `lscpu` (the default "Key: value" view): sockets and the NUMA nodes that hold CPUs.

Both layouts are accepted: the flat one and util-linux 2.38+'s sectioned one ("NUMA:" with
indented keys). A NUMA node with an empty CPU list (CXL or other memory-only node) is kept in
`numa_cpus` with an empty string, and left out of `cpu_numa_nodes`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._text import command_and_body

TOOL = "lscpu"

_LINE = re.compile(r"^\s*(?P<key>[^:]+?):\s*(?P<value>.*)$")
_NODE = re.compile(r"^NUMA node(?P<node>\d+) CPU\(s\)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class LscpuRecord:
    command_line: str | None
    architecture: str | None
    model_name: str | None
    cpus: int | None
    sockets: int | None
    numa_node_count: int | None  # "NUMA node(s)"
    numa_cpus: dict[int, str]  # node -> CPU list as printed ("0-47,96-143")

    @property
    def cpu_numa_nodes(self) -> tuple[int, ...]:
        """The NUMA nodes that have CPUs, sorted."""
        return tuple(sorted(node for node, cpus in self.numa_cpus.items() if cpus))


def parse(text: str) -> LscpuRecord:
    command_line, body = command_and_body(TOOL, text, expected="lscpu output")
    fields: dict[str, str] = {}
    numa: dict[int, str] = {}
    for n, line in body:
        m = _LINE.match(line)
        if m is None:
            if fields.get("Flags") is not None and line.startswith(" "):
                continue  # a wrapped flags line
            raise ParseError(TOOL, "unrecognised line", line_no=n, line=line, expected="'Key: value'",
                             hint="pass the default `lscpu` view, not -e/-p/-J")
        key, value = m.group("key").strip(), m.group("value").strip()
        if node := _NODE.match(key):
            numa[int(node.group("node"))] = value
        else:
            fields.setdefault(key, value)
    if "Architecture" not in fields and "CPU(s)" not in fields:
        raise ParseError(TOOL, "no 'Architecture' or 'CPU(s)' line", expected="lscpu's Key: value lines",
                         hint="is this lscpu output?")
    return LscpuRecord(command_line=command_line, architecture=fields.get("Architecture"),
                       model_name=fields.get("Model name"), cpus=_int(fields.get("CPU(s)")),
                       sockets=_int(fields.get("Socket(s)")), numa_node_count=_int(fields.get("NUMA node(s)")),
                       numa_cpus=numa)


def _int(raw: str | None) -> int | None:
    return int(raw) if raw is not None and raw.isdecimal() else None
