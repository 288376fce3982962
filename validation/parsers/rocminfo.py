"""Parse `rocminfo` output: the ROCk (KFD) state, the HSA agents, and per GPU its identity and pools.

A host without the amdgpu/KFD driver prints "ROCk module is NOT loaded, possibly no GPU devices"
and stops: that is a valid record (rocm_kernel_loaded=False, no agents), not a parse error.
A literal "[...]" line (an author's elision) marks the record truncated; agents after it keep
number=None because their "Agent N" header was cut away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._text import numbered, require_text

TOOL = "rocminfo"

_ROCK_LOADED = re.compile(r"^ROCk module (?:version (?P<version>\S+) )?is loaded$")
_ROCK_NOT_LOADED = re.compile(r"^ROCk module is NOT loaded")
_AGENT = re.compile(r"^Agent (\d+)$")
_POOL = re.compile(r"^Pool (\d+)$")
_ISA = re.compile(r"^ISA (\d+)$")
_DIMENSION = re.compile(r"^[xyz]\s+\d+\(0x[0-9a-fA-F]+\)$")
_KEY_VALUE = re.compile(r"^(?P<key>[^:]+?):(?P<value>.*)$")
_INT_HEX = re.compile(r"^(\d+)\(0x[0-9a-fA-F]+\)(?:\s*KB)?$")
_MARKERS = ("[...]", "...", "<snip>")
# Lines rocminfo (or the environment) prints before the HSA tables; kept as messages.
_MESSAGES = (
    re.compile(r"^libkmod: "),
    re.compile(r"^Error: could not get list of modules"),
    re.compile(r"^WSL environment detected"),
    re.compile(r"^WARNING:"),
    re.compile(r"^\S+ is member of \S+ group$"),
    re.compile(r"^Failed to get user name to check for \S+ group membership$"),
)
_ERRORS = (
    re.compile(r"^Unable to open /dev/kfd"),
    re.compile(r"^hsa api call failure at: "),
    re.compile(r"^Call returned HSA_STATUS_"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pool:
    """One memory pool of an agent, as `Segment` and `Size` print it."""

    segment: str
    size_kib: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Agent:
    """One HSA agent (CPU socket, GPU, or other device)."""

    number: int | None  # "Agent 3"; None when the header was elided
    name: str | None
    marketing_name: str | None
    vendor_name: str | None
    device_type: str | None  # "CPU", "GPU", ...
    uuid: str | None  # "GPU-8d1457e2c20f59d2"; CPUs print "CPU-XX"
    node: int | None
    chip_id: int | None  # 0x74a1 for MI300X
    compute_units: int | None
    bdf_id: int | None  # rocminfo's BDFID (bus << 8 | device << 3 | function)
    isa_names: tuple[str, ...]
    pools: tuple[Pool, ...]
    gfx_target: str | None  # "gfx942", from the agent name or its first ISA
    bdf: str | None  # "26:00.0" decoded from BDFID; None for CPUs (BDFID 0)
    vram_kib: int | None  # the GPU's coarse-grained global pool; None for non-GPUs


def _gfx_target(name: str | None, isa_names: list[str]) -> str | None:
    if name and name.startswith("gfx"):
        return name
    for isa in isa_names:
        match = re.search(r"--(gfx[0-9a-f]+)", isa)
        if match:
            return match.group(1)
    return None


def _bdf(bdf_id: int | None) -> str | None:
    if not bdf_id:
        return None
    bus, dev, fn = bdf_id >> 8, (bdf_id >> 3) & 0x1F, bdf_id & 0x7
    return f"{bus:02x}:{dev:02x}.{fn}"


def _vram_kib(device_type: str | None, pools: tuple[Pool, ...]) -> int | None:
    if device_type != "GPU":
        return None
    for pool in pools:
        if pool.segment == "GLOBAL; FLAGS: COARSE GRAINED":
            return pool.size_kib
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class RocminfoRecord:
    """The parsed `rocminfo` output."""

    rocm_kernel_loaded: bool
    rocm_kernel_version: str | None  # "6.8.5" from "ROCk module version 6.8.5 is loaded"
    runtime_version: str | None
    runtime_ext_version: str | None
    agents: tuple[Agent, ...]
    messages: tuple[str, ...]  # environment notes printed before the tables
    errors: tuple[str, ...]  # "Unable to open /dev/kfd ...", "hsa api call failure ..."
    truncated: bool  # an elision marker was seen, or a loaded run lacks "*** Done ***"

    @property
    def gpus(self) -> tuple[Agent, ...]:
        return tuple(a for a in self.agents if a.device_type == "GPU")

    @property
    def cpus(self) -> tuple[Agent, ...]:
        return tuple(a for a in self.agents if a.device_type == "CPU")


class _AgentBuilder:
    """Mutable collector for one agent while its lines are read."""

    def __init__(self, number: int | None) -> None:
        self.number = number
        self.fields: dict[str, tuple[str, int, str]] = {}
        self.pools: list[dict[str, str]] = []
        self.isas: list[str] = []

    def build(self) -> Agent:
        pools = tuple(Pool(segment=p.get("Segment", ""), size_kib=_size_kib(p.get("Size")))
                      for p in self.pools)
        device_type, bdf_id = self._text("Device Type"), self._int("BDFID")
        return Agent(
            number=self.number,
            name=self._text("Name"),
            marketing_name=self._text("Marketing Name"),
            vendor_name=self._text("Vendor Name"),
            device_type=device_type,
            uuid=self._text("Uuid"),
            node=self._int("Node"),
            chip_id=self._int("Chip ID"),
            compute_units=self._int("Compute Unit"),
            bdf_id=bdf_id,
            isa_names=tuple(self.isas),
            pools=pools,
            gfx_target=_gfx_target(self._text("Name"), self.isas),
            bdf=_bdf(bdf_id),
            vram_kib=_vram_kib(device_type, pools),
        )

    def _text(self, key: str) -> str | None:
        entry = self.fields.get(key)
        return entry[0] or None if entry else None

    def _int(self, key: str) -> int | None:
        entry = self.fields.get(key)
        if entry is None or not entry[0]:
            return None
        value, line_no, line = entry
        match = _INT_HEX.match(value)
        raw = match.group(1) if match else value
        if not raw.isdecimal():
            raise ParseError(TOOL, f"cannot read {key!r} from {value!r}", line_no=line_no, line=line,
                             expected=f"an integer for {key!r}, e.g. '304' or '29857(0x74a1)'")
        return int(raw)


def _size_kib(raw: str | None) -> int | None:
    if not raw:
        return None
    match = _INT_HEX.match(raw)
    return int(match.group(1)) if match else None


def parse(text: str) -> RocminfoRecord:
    """Parse rocminfo's stdout (stderr lines such as libkmod warnings are tolerated)."""
    require_text(TOOL, text)
    loaded: bool | None = None
    kernel_version = runtime = runtime_ext = None
    messages: list[str] = []
    errors: list[str] = []
    agents: list[_AgentBuilder] = []
    agent: _AgentBuilder | None = None
    section = ""  # "", "system", "agents"
    sub = ""  # "", "pool", "isa", "cache", "dims"
    done = elided = seen_content = False

    for line_no, raw in numbered(text):
        line = raw.rstrip()
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not stripped:
            continue
        if not seen_content and stripped.startswith("$ "):
            seen_content = True
            continue
        seen_content = True
        if done:
            raise ParseError(TOOL, "text after '*** Done ***'", line_no=line_no, line=line,
                             expected="nothing after the end marker",
                             hint="pass one rocminfo run per file")
        if m := _ROCK_LOADED.match(stripped):
            loaded, kernel_version = True, m.group("version")
            continue
        if _ROCK_NOT_LOADED.match(stripped):
            loaded = False
            continue
        if any(p.match(stripped) for p in _MESSAGES):
            messages.append(stripped)
            continue
        if any(p.match(stripped) for p in _ERRORS):
            errors.append(stripped)
            continue
        if set(stripped) <= {"="}:
            continue
        if stripped == "HSA System Attributes":
            section = "system"
            continue
        if stripped == "HSA Agents":
            section = "agents"
            continue
        if set(stripped) <= {"*"}:
            continue
        if stripped == "*** Done ***":
            done = True
            continue
        if stripped in _MARKERS:
            elided = True
            agent, sub = None, ""
            continue
        if m := _AGENT.match(stripped):
            if section != "agents":
                raise ParseError(TOOL, "agent before the 'HSA Agents' header", line_no=line_no, line=line,
                                 expected="'HSA Agents' before the first 'Agent N'")
            agent, sub = _AgentBuilder(int(m.group(1))), ""
            agents.append(agent)
            continue
        if _POOL.match(stripped) or _ISA.match(stripped):
            if agent is None:
                raise ParseError(TOOL, "pool or ISA outside an agent", line_no=line_no, line=line,
                                 expected="'Agent N' before its pools")
            if _POOL.match(stripped):
                agent.pools.append({})
                sub = "pool"
            else:
                sub = "isa"
            continue
        if _DIMENSION.match(stripped):
            continue
        m = _KEY_VALUE.match(stripped)
        if m is None:
            raise ParseError(TOOL, "unrecognised line", line_no=line_no, line=line,
                             expected="'Key: value', 'Agent N', 'Pool N', 'ISA N' or a ROCk status line")
        key, value = m.group("key").strip(), m.group("value").lstrip(":").strip()
        if section == "system" and indent == 0:
            if key == "Runtime Version":
                runtime = value
            elif key == "Runtime Ext Version":
                runtime_ext = value
            continue
        if section != "agents" and not elided:
            raise ParseError(TOOL, "field outside the system and agent sections", line_no=line_no, line=line,
                             expected="'HSA System Attributes' or 'HSA Agents' first")
        if agent is None:
            if indent != 2 or key != "Name":
                raise ParseError(TOOL, "field without an agent", line_no=line_no, line=line,
                                 expected="'Agent N' or an agent's '  Name:' line",
                                 hint="the output looks cut in the middle of an agent")
            agent = _AgentBuilder(None)
            agents.append(agent)
        if indent <= 2:
            sub = "cache" if key == "Cache Info" else ("dims" if key.endswith("per Dimension") else "")
            if key in agent.fields and key != "Features":
                raise ParseError(TOOL, f"field {key!r} repeated within one agent", line_no=line_no,
                                 line=line, expected="each agent field once",
                                 hint="two agents may have been pasted together without 'Agent N'")
            agent.fields[key] = (value, line_no, line)
        elif sub == "pool" and agent.pools:
            agent.pools[-1][key] = value
        elif sub == "isa" and key == "Name" and indent <= 6:
            agent.isas.append(value)

    if loaded is None and not agents:
        raise ParseError(TOOL, "no ROCk module status line and no HSA agents found",
                         expected="'ROCk module is loaded' or 'ROCk module is NOT loaded ...'",
                         hint="is this rocminfo output?")
    built = tuple(a.build() for a in agents)
    return RocminfoRecord(
        rocm_kernel_loaded=bool(loaded) if loaded is not None else bool(built),
        rocm_kernel_version=kernel_version,
        runtime_version=runtime,
        runtime_ext_version=runtime_ext,
        agents=built,
        messages=tuple(messages),
        errors=tuple(errors),
        truncated=elided or (bool(loaded) and not done and not errors),
    )
