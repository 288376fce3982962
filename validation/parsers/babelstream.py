"""BabelStream (hip-stream, omp-stream, ...): banner facts and the per-kernel bandwidth table.

Several ranks launched by one `mpiexec` print into one stream. Lines tagged by Open MPI's
`--tag-output` ("[1,3]<stdout>:") are attributed to their rank; untagged interleaved output is kept in
printed order with `rank=None`, because nothing in it says which rank printed which table.
Bandwidths are stored in decimal MB/s (`mb_s`), converted from GBytes/MiBytes/GiBytes when the tool
was run with --mibibytes or printed GB/s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from validation.errors import ParseError
from validation.parsers._bench_text import COMMAND, is_elision, number
from validation.parsers._text import numbered, require_text

TOOL = "babelstream"

KERNELS = ("Copy", "Mul", "Add", "Triad", "Dot", "Nstream")
_TO_MB = {"MBytes/sec": 1.0, "GBytes/sec": 1000.0, "MiBytes/sec": 1.048576, "GiBytes/sec": 1073.741824}


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelRow:
    """`Copy  4255995.148  0.00101  0.00117  0.00106`: best bandwidth and min/max/average runtime."""

    function: str
    mb_s: float
    min_s: float
    max_s: float
    avg_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelTable:
    """One `Function MBytes/sec Min (sec) Max Average` table; `rank` is None where not attributable."""

    rank: int | None
    rows: tuple[KernelRow, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """`Init: 0.400851 s (=16071.943100 MBytes/sec)` or `Read: ...`."""

    rank: int | None
    phase: str
    seconds: float
    mb_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    """`Using HIP device NAME` with the `Driver:` and `Memory:` lines after it."""

    rank: int | None
    name: str
    driver: str | None
    memory: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BabelStreamResult:
    """A BabelStream run, or several interleaved ones (`processes` counts the banners printed)."""

    command: str | None
    version: str | None
    implementation: str | None
    iterations: int | None
    precision: str | None
    array_size_mb: float | None
    total_size_mb: float | None
    processes: int
    devices: tuple[Device, ...]
    timings: tuple[Timing, ...]
    tables: tuple[KernelTable, ...]
    validation_errors: tuple[str, ...]
    interleaved: bool
    truncated: bool


_TAG = re.compile(r"^\[\d+,(?P<rank>\d+)\]<std(?:out|err)>:\s?(?P<line>.*)$")
_BANNER = re.compile(r"^BabelStream$")
_FACT = re.compile(r"^(?P<key>Version|Implementation|Precision|Driver|Memory):\s*(?P<value>\S.*?)$")
_RUNNING = re.compile(r"^Running kernels (?P<n>\d+) times$")
_SIZE = re.compile(r"^(?P<key>Array|Total) size:\s*(?P<mb>[\d.]+) MB \(=[\d.]+ GB\)$")
_DEVICE = re.compile(r"^Using (?:HIP|CUDA|OpenCL|SYCL)? ?device (?P<name>\S.*?)$")
_TIMING = re.compile(r"^(?P<phase>Init|Read):\s*(?P<s>\S+) s \(=(?P<bw>\S+) (?P<unit>[MG]i?Bytes/sec)\)$")
_HEADER = re.compile(r"^Function\s+(?P<unit>[MG]i?Bytes/sec)\s+Min \(sec\)\s+Max\s+Average$")
_ROW = re.compile(r"^(?P<fn>[A-Z][a-z]+)\s+(?P<rest>\S.*)$")
_VALIDATION = re.compile(r"^Validation failed on .*$")
_REDUCTION = re.compile(r"^Reduction kernel config: .*$")


def parse(text: str) -> BabelStreamResult:
    """Parse BabelStream stdout, single or interleaved."""
    require_text(TOOL, text)
    facts: dict[str, str] = {}
    command = None
    processes = 0
    devices: list[Device] = []
    timings: list[Timing] = []
    tables: list[tuple[int | None, str, list[KernelRow]]] = []
    open_table: dict[int | None, tuple[int | None, str, list[KernelRow]]] = {}
    errors: list[str] = []
    truncated = False
    for line_no, raw in numbered(text):
        rank: int | None = None
        line = raw.strip()
        if m := _TAG.match(line):
            rank, line = int(m["rank"]), m["line"].strip()
        if not line:
            continue
        if is_elision(line):
            truncated = True
            open_table.pop(rank, None)
        elif m := COMMAND.match(line):
            command = m["cmd"]
        elif _BANNER.match(line):
            processes += 1
        elif m := _DEVICE.match(line):
            devices.append(Device(rank=rank, name=m["name"], driver=None, memory=None))
        elif m := _FACT.match(line):
            key, value = m["key"], m["value"]
            if key == "Precision":
                value = value.strip("*")  # a markdown artifact ("**double**") in documentation copies
            if key in ("Driver", "Memory"):
                _device_fact(devices, rank, key, value, line_no, raw)
            else:
                _set_fact(facts, key, value, line_no, raw)
        elif m := _RUNNING.match(line):
            _set_fact(facts, "iterations", m["n"], line_no, raw)
        elif m := _SIZE.match(line):
            number(TOOL, m["mb"], line_no, raw, f"{m['key']} size MB")
            _set_fact(facts, m["key"], m["mb"], line_no, raw)
        elif m := _TIMING.match(line):
            timings.append(Timing(rank=rank, phase=m["phase"].lower(),
                                  seconds=number(TOOL, m["s"], line_no, raw, f"{m['phase']} seconds"),
                                  mb_s=number(TOOL, m["bw"], line_no, raw, "bandwidth") * _TO_MB[m["unit"]]))
        elif m := _HEADER.match(line):
            tables.append((rank, m["unit"], []))
            open_table[rank] = tables[-1]
        elif (m := _ROW.match(line)) and m["fn"] in KERNELS:
            table = open_table.get(rank)
            if table is None:
                raise ParseError(TOOL, f"{m['fn']} row outside a result table", line_no=line_no, line=raw,
                                 expected="'Function  MBytes/sec  Min (sec)  Max  Average' first")
            table[2].append(_row(m["fn"], m["rest"], _TO_MB[table[1]], line_no, raw))
        elif _VALIDATION.match(line):
            errors.append(line)
        elif _REDUCTION.match(line):
            continue
        else:
            raise ParseError(TOOL, "line not understood", line_no=line_no, line=raw,
                             expected="a BabelStream banner line, 'Using ... device', 'Init:/Read:', "
                             "the 'Function MBytes/sec ...' header or a Copy/Mul/Add/Triad/Dot row")
    if not any(rows for _, _, rows in tables):
        raise ParseError(TOOL, "no kernel results found", expected="a 'Function MBytes/sec ...' table with rows",
                         hint="the run may have failed before its kernels; look at its stderr")
    return BabelStreamResult(
        command=command, version=facts.get("Version"), implementation=facts.get("Implementation"),
        iterations=int(facts["iterations"]) if "iterations" in facts else None, precision=facts.get("Precision"),
        array_size_mb=float(facts["Array"]) if "Array" in facts else None,
        total_size_mb=float(facts["Total"]) if "Total" in facts else None, processes=processes,
        devices=tuple(devices), timings=tuple(timings),
        tables=tuple(KernelTable(rank=r, rows=tuple(rows)) for r, _, rows in tables if rows),
        validation_errors=tuple(errors), interleaved=processes > 1, truncated=truncated)


def _set_fact(facts: dict[str, str], key: str, value: str, line_no: int, raw: str) -> None:
    if key in facts and facts[key] != value:
        raise ParseError(TOOL, f"{key} differs between processes ({facts[key]!r} vs {value!r})",
                         line_no=line_no, line=raw, expected="the same settings for every rank",
                         hint="parse each rank's output separately")
    facts[key] = value


def _device_fact(devices: list[Device], rank: int | None, key: str, value: str, line_no: int, raw: str) -> None:
    for i in range(len(devices) - 1, -1, -1):
        dev = devices[i]
        if dev.rank == rank and getattr(dev, key.lower()) is None:
            devices[i] = Device(rank=dev.rank, name=dev.name, driver=value if key == "Driver" else dev.driver,
                                memory=value if key == "Memory" else dev.memory)
            return
    raise ParseError(TOOL, f"'{key}:' without a 'Using ... device' line before it", line_no=line_no, line=raw,
                     expected="'Using HIP device NAME' first")


def _row(fn: str, rest: str, scale: float, line_no: int, raw: str) -> KernelRow:
    parts = rest.split()
    if len(parts) != 4:
        raise ParseError(TOOL, f"{fn} row has {len(parts)} numbers", line_no=line_no, line=raw,
                         expected="bandwidth, min, max and average runtime")
    bw, lo, hi, avg = (number(TOOL, p, line_no, raw, what) for p, what in
                       zip(parts, ("bandwidth", "min runtime", "max runtime", "average runtime"), strict=True))
    return KernelRow(function=fn, mb_s=bw * scale, min_s=lo, max_s=hi, avg_s=avg)


def argv(binary: str = "hip-stream", *, device: int = 0, iterations: int = 100,
         array_elements: int = 268435456, float_precision: bool = False) -> list[str]:
    """Command line for one BabelStream run on `device` (`-s` is the element count per array)."""
    if device < 0 or iterations < 2 or array_elements < 1024:
        raise ValueError(f"need device >= 0, iterations >= 2, array_elements >= 1024; got {device}, "
                         f"{iterations}, {array_elements}")
    return [binary, "--device", str(device), "-n", str(iterations), "-s", str(array_elements),
            *(["--float"] if float_precision else [])]
