"""nccl-tests (`all_reduce_perf`, ...) on NVIDIA nodes of a mixed fleet; same table as rccl-tests.

Older builds print an `error` column (maximum deviation) instead of `#wrong`; both are read.
"""

from __future__ import annotations

from validation.parsers._collective_table import (
    CollectiveRun,
    FilteredSection,
    Measurement,
    RankDevice,
    SizeRow,
    parse_sections,
    parse_table,
)
from validation.parsers.rccl_tests import collective_argv

TOOL = "nccl-tests"

__all__ = ["TOOL", "CollectiveRun", "FilteredSection", "Measurement", "RankDevice", "SizeRow", "argv",
           "parse", "parse_filtered"]


def parse(text: str) -> CollectiveRun:
    """One run's stdout -> CollectiveRun; a grep-filtered multi-run log raises ParseError with a hint."""
    return parse_table(TOOL, text)


def parse_filtered(text: str) -> tuple[FilteredSection, ...]:
    """A grep-filtered log of several runs -> rows per section."""
    return parse_sections(TOOL, text)


def argv(binary: str = "all_reduce_perf", *, gpus: int, min_bytes: str = "8", max_bytes: str = "16G",
         step_factor: int = 2, iters: int = 20, warmup_iters: int = 5, check: bool = True,
         dtype: str | None = None, op: str | None = None) -> list[str]:
    """Command line for one collective test on `gpus` GPUs per process (`-g`)."""
    return collective_argv(binary, gpus=gpus, min_bytes=min_bytes, max_bytes=max_bytes,
                           step_factor=step_factor, iters=iters, warmup_iters=warmup_iters, check=check,
                           dtype=dtype, op=op)
