"""MIOpenDriver (conv, convfp16, convbfp16, ...): command, chosen algorithms, kernel times, stats, verification.

A run prints one "MIOpen <Phase> Conv. Algorithm" and one "GPU Kernel Time <Phase> Conv. Elapsed" line per
phase it ran (Forward, Backward Data, Backward Weights), a `stats:` header with one `stats:` row per
phase, and, with verification on (`-V 1`), one "... Verifies OK" (or FAILED) line per phase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._bench_text import COMMAND, integer, is_elision, number
from validation.parsers._text import numbered, require_text

TOOL = "miopen-driver"

OPERATIONS = ("conv", "convfp16", "convbfp16", "convint8")


@dataclass(frozen=True, slots=True, kw_only=True)
class Algorithm:
    """`MIOpen Forward Conv. Algorithm: 1, Solution: 85/ConvDirectNaiveConvFwd`."""

    phase: str
    algorithm: int
    solution_id: int | None
    solution_name: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """`GPU Kernel Time Forward Conv. Elapsed: 0.006936 ms (average)` (clock "gpu_kernel" or "wall")."""

    phase: str
    clock: str
    elapsed_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Stats:
    """One `stats:` row; `gflops` and `gb_s` are the tool's GFLOPs and GB/s columns."""

    name: str
    flop_count: int | None
    bytes_read: int | None
    bytes_written: int | None
    gflops: float | None
    gb_s: float | None
    time_ms: float | None
    columns: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Verification:
    """A phase's verification line; `passed` is False for FAILED."""

    phase: str
    passed: bool
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MiopenRun:
    """One MIOpenDriver invocation."""

    command: str | None
    operation: str | None
    args: tuple[tuple[str, str], ...]
    prng_seed: int | None
    system: tuple[tuple[str, str], ...]
    algorithms: tuple[Algorithm, ...]
    timings: tuple[Timing, ...]
    stats: tuple[Stats, ...]
    verifications: tuple[Verification, ...]
    truncated: bool


_PHASE = r"(?P<phase>Forward|Backward Data|Backward Weights|Backward)"
_ECHO = re.compile(r"^(?:\S*/)?MIOpenDriver\s+(?P<op>\w+)(?P<args>(?:\s+\S+)*)\s*$")
_SEED = re.compile(r"^PRNG seed:\s*(?P<seed>\d+)$")
_SYSTEM = re.compile(r"^Timestamp:\s*.+$")
_ALGO = re.compile(rf"^MIOpen {_PHASE} Conv\. Algorithm:\s*(?P<algo>\d+)"
                   r"(?:,\s*Solution:\s*(?P<sid>\d+)/(?P<sname>\S+))?$")
_TIME = re.compile(rf"^(?P<clock>GPU Kernel Time|Wall-clock Time) {_PHASE} Conv\. Elapsed:\s*(?P<ms>\S+) ms"
                   r"(?: \(average\))?$")
_VERIFY = re.compile(r"^(?P<dir>Forward|Backward) Conv(?:olution|\.)?(?: (?P<what>Data|Weights))?\s+"
                     r"(?P<verdict>Verifies OK|FAILED)\b.*$")
_STATS = re.compile(r"^stats:\s*(?P<rest>.*)$")


def _phase(raw: str) -> str:
    return raw.lower().replace(" ", "_")


def parse(text: str) -> MiopenRun:
    """Parse one MIOpenDriver run's stdout."""
    require_text(TOOL, text)
    command = operation = None
    args: tuple[tuple[str, str], ...] = ()
    seed: int | None = None
    system: tuple[tuple[str, str], ...] = ()
    algorithms: list[Algorithm] = []
    timings: list[Timing] = []
    stats: list[Stats] = []
    verifications: list[Verification] = []
    header: list[str] | None = None
    truncated = False
    for line_no, raw in numbered(text):
        line = raw.strip()
        if not line:
            continue
        if is_elision(line):
            truncated = True
        elif m := COMMAND.match(line):
            command = m["cmd"]
        elif m := _ECHO.match(line):
            operation, args = m["op"], _args(m["args"].split(), line_no, raw)
            command = command or line
        elif m := _SEED.match(line):
            seed = int(m["seed"])
        elif _SYSTEM.match(line):
            system = _system(line, line_no, raw)
        elif m := _ALGO.match(line):
            algorithms.append(Algorithm(phase=_phase(m["phase"]), algorithm=int(m["algo"]),
                                        solution_id=int(m["sid"]) if m["sid"] else None, solution_name=m["sname"]))
        elif m := _TIME.match(line):
            timings.append(Timing(phase=_phase(m["phase"]),
                                  clock="gpu_kernel" if m["clock"].startswith("GPU") else "wall",
                                  elapsed_ms=number(TOOL, m["ms"], line_no, raw, "elapsed ms")))
        elif m := _VERIFY.match(line):
            phase = _phase(f"{m['dir']} {m['what']}" if m["what"] else m["dir"])
            verifications.append(Verification(phase=phase, passed=m["verdict"] == "Verifies OK",
                                              text=line))
        elif m := _STATS.match(line):
            cells = [c.strip() for c in m["rest"].split(",")]
            if cells and cells[0] == "name":
                header = cells
            elif header is None:
                raise ParseError(TOOL, "a stats row before the stats header", line_no=line_no, line=raw,
                                 expected="'stats: name, n, c, ...' first")
            else:
                stats.append(_stats(header, cells, line_no, raw))
        else:
            raise ParseError(TOOL, "line not understood", line_no=line_no, line=raw,
                             expected="the echoed command, 'MIOpen ... Algorithm', 'GPU Kernel Time ... Elapsed', "
                             "a 'stats:' line or a verification line")
    if not algorithms and not timings and not stats and not verifications:
        raise ParseError(TOOL, "no algorithm, timing, stats or verification lines",
                         expected="MIOpenDriver conv output", hint="did the driver fail? look at its stderr")
    return MiopenRun(command=command, operation=operation, args=args, prng_seed=seed, system=system,
                     algorithms=tuple(algorithms), timings=tuple(timings), stats=tuple(stats),
                     verifications=tuple(verifications), truncated=truncated)


def _args(tokens: list[str], line_no: int, raw: str) -> tuple[tuple[str, str], ...]:
    if len(tokens) % 2:
        raise ParseError(TOOL, "echoed command has a flag without a value", line_no=line_no, line=raw,
                         expected="'-flag value' pairs")
    pairs = tuple(zip(tokens[::2], tokens[1::2], strict=True))
    for flag, _ in pairs:
        if not flag.startswith("-"):
            raise ParseError(TOOL, f"{flag!r} is not a flag", line_no=line_no, line=raw, expected="'-flag value' pairs")
    return pairs


def _system(line: str, line_no: int, raw: str) -> tuple[tuple[str, str], ...]:
    out = []
    for part in line.split(";"):
        key, sep, value = part.partition(":")
        if not sep:
            raise ParseError(TOOL, f"system field {part.strip()!r} has no ':'", line_no=line_no, line=raw,
                             expected="'Key: value; Key: value'")
        out.append((key.strip(), value.strip()))
    return tuple(out)


def _stats(header: list[str], cells: list[str], line_no: int, raw: str) -> Stats:
    if len(cells) != len(header):
        raise ParseError(TOOL, f"stats row has {len(cells)} values for {len(header)} columns", line_no=line_no,
                         line=raw, expected=f"{len(header)} comma-separated values")
    cols = dict(zip(header, cells, strict=True))

    def num(key: str, what: str) -> float | None:
        return number(TOOL, cols[key], line_no, raw, what) if key in cols else None

    def whole(key: str) -> int | None:
        return integer(TOOL, cols[key], line_no, raw, key) if key in cols else None

    return Stats(name=cols["name"], flop_count=whole("flopCnt"), bytes_read=whole("bytesRead"),
                 bytes_written=whole("bytesWritten"), gflops=num("GFLOPs", "GFLOPs"), gb_s=num("GB/s", "GB/s"),
                 time_ms=num("timeMs", "timeMs"), columns=tuple(zip(header, cells, strict=True)))


def argv(binary: str = "MIOpenDriver", *, operation: str = "convfp16", n: int, c: int, h: int, w: int, k: int,
         y: int, x: int, pad: int = 0, stride: int = 1, dilation: int = 1, group: int = 1,
         direction: int = 0, verify: bool = True, iterations: int = 10) -> list[str]:
    """Command line for one 2-D conv layer. `direction`: 0 all, 1 forward, 2 backward data, 4 backward weights."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown MIOpenDriver operation {operation!r}; known: {', '.join(OPERATIONS)}")
    if min(n, c, h, w, k, y, x, stride, dilation, group, iterations) < 1 or pad < 0:
        raise ValueError("conv sizes, stride, dilation, group and iterations must be >= 1, pad >= 0")
    if direction not in (0, 1, 2, 4):
        raise ValueError(f"direction must be 0, 1, 2 or 4, got {direction}")
    return [binary, operation, "-n", str(n), "-c", str(c), "-H", str(h), "-W", str(w), "-k", str(k),
            "-y", str(y), "-x", str(x), "-p", str(pad), "-q", str(pad), "-u", str(stride), "-v", str(stride),
            "-l", str(dilation), "-j", str(dilation), "-g", str(group), "-F", str(direction),
            "-t", "1", "-i", str(iterations), "-V", "1" if verify else "0"]
