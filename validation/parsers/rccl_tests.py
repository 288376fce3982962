"""rccl-tests (`all_reduce_perf`, `all_gather_perf`, ...): header facts, per-size rows, averages.

The table is the one nccl-tests prints; both parse through `_collective_table`.

    >>> run = parse(open("all_reduce.log").read())
    >>> run.rows[-1].out_of_place.busbw_gb_s
"""

from __future__ import annotations

from pathlib import PurePath

from validation.parsers._collective_table import (
    CollectiveRun,
    FilteredSection,
    Measurement,
    RankDevice,
    SizeRow,
    parse_sections,
    parse_table,
)

TOOL = "rccl-tests"

__all__ = ["TOOL", "CollectiveRun", "FilteredSection", "Measurement", "RankDevice", "SizeRow", "argv",
           "parse", "parse_filtered"]


def parse(text: str) -> CollectiveRun:
    """One run's stdout -> CollectiveRun; a grep-filtered multi-run log raises ParseError with a hint."""
    return parse_table(TOOL, text)


def parse_filtered(text: str) -> tuple[FilteredSection, ...]:
    """A grep-filtered log of several runs ("====== 2-node ======" + rows) -> rows per section."""
    return parse_sections(TOOL, text)


def argv(binary: str = "all_reduce_perf", *, gpus: int, min_bytes: str = "8", max_bytes: str = "16G",
         step_factor: int = 2, iters: int = 20, warmup_iters: int = 5, check: bool = True,
         dtype: str | None = None, op: str | None = None) -> list[str]:
    """Command line for one collective test on `gpus` GPUs per process (`-g`).

    `check` turns on result validation (`-c 1`) so that `#wrong` is a real count, not N/A.
    """
    return collective_argv(binary, gpus=gpus, min_bytes=min_bytes, max_bytes=max_bytes,
                           step_factor=step_factor, iters=iters, warmup_iters=warmup_iters, check=check,
                           dtype=dtype, op=op)


def collective_argv(binary: str, *, gpus: int, min_bytes: str, max_bytes: str, step_factor: int,
                    iters: int, warmup_iters: int, check: bool, dtype: str | None,
                    op: str | None) -> list[str]:
    """Shared by the rccl-tests and nccl-tests builders (same binaries, same flags)."""
    if not PurePath(binary).name.endswith("_perf"):
        raise ValueError(f"{binary!r} is not a collective test binary; expected e.g. all_reduce_perf")
    if gpus < 1 or step_factor < 2 or iters < 1 or warmup_iters < 0:
        raise ValueError(f"need gpus >= 1, step_factor >= 2, iters >= 1, warmup_iters >= 0; got "
                         f"gpus={gpus} step_factor={step_factor} iters={iters} warmup_iters={warmup_iters}")
    out = [binary, "-b", min_bytes, "-e", max_bytes, "-f", str(step_factor), "-g", str(gpus),
           "-n", str(iters), "-w", str(warmup_iters), "-c", "1" if check else "0"]
    if dtype is not None:
        out += ["-d", dtype]
    if op is not None:
        out += ["-o", op]
    return out
