"""Property: mutated real `nvidia-smi topo -m` and `lscpu` outputs make their parsers return a
record or raise ParseError, never any other exception (dropped lines, truncation, replaced and
inserted characters)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from validation.errors import ParseError
from validation.parsers import lscpu, nvidia_smi_topo

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PARSERS: dict[str, Callable[[str], Any]] = {"nvidia-smi-topo": nvidia_smi_topo.parse, "lscpu": lscpu.parse}


def _texts(tool: str) -> list[str]:
    paths = sorted((FIXTURES / "real" / tool).glob("*.txt")) + sorted((FIXTURES / "derived" / tool).glob("*.txt"))
    return [p.read_text() for p in paths]


@st.composite
def _mutated(draw: st.DrawFn, texts: list[str]) -> str:
    lines = draw(st.sampled_from(texts)).splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 3))):
        if lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
    text = "".join(lines)
    text = text[: draw(st.integers(0, len(text)))] if draw(st.booleans()) else text
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        junk = draw(st.sampled_from(["\t", " ", "X", "NV", "-1", "\n", ":", draw(st.characters())]))
        text = text[:at] + junk + text[at:]
    return text


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_mutated_real_outputs_raise_only_parse_error(tool: str) -> None:
    texts = _texts(tool)
    assert texts, f"no fixtures for {tool}"

    @settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_mutated(texts))
    def check(text: str) -> None:
        with contextlib.suppress(ParseError):
            PARSERS[tool](text)

    check()


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_every_fixture_of_the_tool_parses(tool: str) -> None:
    for text in _texts(tool):
        assert PARSERS[tool](text) is not None
