"""Mutated real outputs (dropped lines, truncation, random bytes) fed to the benchmark-tool parsers.

The only exception a parser may raise on any input is ParseError; anything else is a bug.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from validation.errors import ParseError
from validation.parsers import (
    babelstream,
    hipblaslt_bench,
    miopen_driver,
    nccl_tests,
    rccl_tests,
    rocblas_bench,
    rocm_bandwidth_test,
    rvs,
    transferbench,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PARSERS: dict[str, Callable[[str], Any]] = {
    "rccl-tests": rccl_tests.parse, "nccl-tests": nccl_tests.parse, "transferbench": transferbench.parse,
    "rocm-bandwidth-test": rocm_bandwidth_test.parse, "hipblaslt-bench": hipblaslt_bench.parse,
    "rocblas-bench": rocblas_bench.parse, "miopen-driver": miopen_driver.parse, "rvs": rvs.parse,
    "babelstream": babelstream.parse,
}
CASES = [pytest.param(tool, path, id=f"{path.parent.parent.name}/{tool}/{path.name}")
         for tool in PARSERS
         for kind in ("real", "derived")
         for path in sorted((FIXTURES / kind / tool).glob("*.txt"))]

NOISE = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2FFF), max_size=40)
# Characters that turn a number into an almost-number ("1.2.3", "1e", "-", "4*").
NUMERIC = st.text(alphabet="0123456789.-+eE*/NA ", min_size=1, max_size=3)


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        kind = draw(st.sampled_from(["drop", "truncate", "insert", "replace", "duplicate", "numeric"]))
        if kind == "drop" and lines:
            dropped = draw(st.sets(st.integers(min_value=0, max_value=len(lines) - 1), max_size=5))
            lines = [line for i, line in enumerate(lines) if i not in dropped]
        elif kind == "truncate":
            joined = "".join(lines)
            lines = joined[: draw(st.integers(min_value=0, max_value=len(joined)))].splitlines(keepends=True)
        elif kind == "insert":
            at = draw(st.integers(min_value=0, max_value=len(lines)))
            lines.insert(at, draw(NOISE) + "\n")
        elif kind == "replace" and lines:
            i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
            line = lines[i]
            j = draw(st.integers(min_value=0, max_value=len(line)))
            lines[i] = line[:j] + draw(NOISE) + line[j + 1:]
        elif kind == "numeric" and lines:
            i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
            j = draw(st.integers(min_value=0, max_value=len(lines[i])))
            lines[i] = lines[i][:j] + draw(NUMERIC) + lines[i][j:]
        elif kind == "duplicate" and lines:
            i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
            lines.insert(i, lines[i])
    return "".join(lines)


def test_every_fixture_directory_has_cases():
    assert {tool for tool in PARSERS} == {p.values[0] for p in CASES}


@pytest.mark.parametrize(("tool", "path"), CASES)
def test_mutated_fixture_raises_only_parse_error(tool: str, path: Path) -> None:
    parse = PARSERS[tool]

    @settings(max_examples=15, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(mutated(path.read_text()))
    def check(text: str) -> None:
        try:
            parse(text)
        except ParseError as exc:
            assert exc.tool == tool

    check()


@pytest.mark.parametrize("tool", sorted(PARSERS))
@settings(max_examples=30, deadline=None, database=None, derandomize=True)
@given(blob=st.binary(max_size=300))
def test_random_bytes_raise_only_parse_error(tool: str, blob: bytes) -> None:
    try:
        PARSERS[tool](blob.decode("utf-8", errors="replace"))
    except ParseError as exc:
        assert exc.tool == tool
