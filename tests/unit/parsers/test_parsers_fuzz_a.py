"""Property: mutated real outputs make the discovery/health parsers return a record or raise
ParseError, never any other exception (dropped lines, truncation, replaced characters, inserted
bytes). FUZZ_EXAMPLES raises the example count for a longer local run."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from validation.errors import ParseError
from validation.parsers import amd_smi, dkms_status, lspci, nvidia_smi, rocm_smi, rocminfo, versions

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

PARSERS: dict[str, Callable[[str], Any]] = {
    "rocminfo": rocminfo.parse, "amd-smi": amd_smi.parse, "rocm-smi": rocm_smi.parse,
    "lspci": lspci.parse, "dkms-status": dkms_status.parse, "versions": versions.parse,
    "nvidia-smi": nvidia_smi.parse,
}


def _texts(tool: str) -> list[str]:
    paths = sorted((FIXTURES / "real" / tool).glob("*.txt"))
    paths += sorted((FIXTURES / "derived" / tool).glob("*.txt"))
    return [p.read_text(errors="replace") for p in paths]


@st.composite
def _mutated(draw: st.DrawFn, texts: list[str]) -> str:
    text = draw(st.sampled_from(texts))
    lines = text.splitlines(keepends=True)
    kind = draw(st.sampled_from(["drop", "truncate", "insert", "replace", "all"]))
    if kind in ("drop", "all") and lines:
        for _ in range(draw(st.integers(1, 5))):
            if lines:
                del lines[draw(st.integers(0, len(lines) - 1))]
    text = "".join(lines)
    if kind in ("truncate", "all") and text:
        text = text[: draw(st.integers(0, len(text)))]
    if kind in ("replace", "all") and text:
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(text) - 1))
            text = text[:at] + draw(st.characters()) + text[at + 1:]
    if kind in ("insert", "all"):
        for _ in range(draw(st.integers(1, 4))):
            junk = draw(st.binary(min_size=1, max_size=8)).decode("latin-1")
            at = draw(st.integers(0, len(text)))
            text = text[:at] + junk + text[at:]
    return text


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_mutated_real_outputs_raise_only_parse_error(tool: str) -> None:
    texts = _texts(tool)
    assert texts, f"no fixtures for {tool}"
    parse = PARSERS[tool]

    @settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "80")), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(_mutated(texts))
    def check(text: str) -> None:
        with contextlib.suppress(ParseError):
            parse(text)

    check()


# Real outputs the parsers refuse on purpose (each has its own test naming the reason).
REFUSED = {
    "amd-smi/mi300x-rocm-blogs-amd-smi-overview-static-json-jq-vram.txt",  # jq-filtered, no GPU identity
    "amd-smi/r9700-rocm-issue5706-metric-gpu0-json-head40-7.2.0.txt",  # cut by `head -n 40`: JSON never closes
    "amd-smi/mi300x-vf-msp-docs-default-view-unknown-trailer.txt",  # derived: a trailer amd-smi does not print
    "rocm-smi/mi100-x2-rccl-issue1129-sclk-unreadable.txt",  # derived: a clock that is not '(<n>Mhz)'
    "rocm-smi/mi210-rocm-blogs-dbrx-showproductname.txt",  # two lines pasted together in the source
}


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_every_fixture_parses_except_the_documented_refusals(tool: str) -> None:
    for kind in ("real", "derived"):
        for path in sorted((FIXTURES / kind / tool).glob("*.txt")):
            key = f"{tool}/{path.name}"
            if key in REFUSED:
                with pytest.raises(ParseError):
                    PARSERS[tool](path.read_text())
            else:
                assert PARSERS[tool](path.read_text()) is not None, key
