"""Newer output formats (issue 15, "Format drift"): the preamble and schemas of ROCm 6.4 -> 7.x tools are
read, not refused or half read. Values typed from the fixtures (SOURCES.md rows name their origin)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from validation.cli import main
from validation.errors import ParseError
from validation.parsers import hipblaslt_bench, rocm_smi

ROOT = Path(__file__).resolve().parents[3]
FIX = ROOT / "tests" / "fixtures"


def test_hipblaslt_1500_query_device_preamble_and_34_column_table() -> None:
    rec = hipblaslt_bench.parse((FIX / "real/hipblaslt-bench/mi300x-superbench-test-hipblaslt-v1500.txt").read_text())
    assert (rec.library_version, rec.git_version) == ("1500", "8c69191d")
    (dev,) = rec.devices
    assert (dev.index, dev.name, dev.memory_gb, dev.compute_capability) == (0, "gfx942:sramecc+:xnack-", 205.6, "9.4")
    (row,) = rec.rows
    assert (row.m, row.n, row.k, row.dtype, row.compute_type) == (4096, 4096, 4096, "f16_r", "f32_r")
    assert (row.gflops, row.time_us) == (678209.0, 202.65)


def test_hipblaslt_1500_is_judged_not_refused(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIX / "real/hipblaslt-bench/mi300x-superbench-test-hipblaslt-v1500.txt"
    assert main(["judge", "--profile", "mi300x", f"hipblaslt-bench:{path}"]) == 0
    assert "678.209" in capsys.readouterr().out


def test_rocm_smi_pre_61_json_clock_keys_are_read() -> None:
    rec = rocm_smi.parse((FIX / "real/rocm-smi/mi100-x6-telegraf-testdata-rocm571-json.txt").read_text())
    assert {(g.sclk_mhz, g.mclk_mhz) for g in rec.gpus} == {(300.0, 1200.0)}


def test_rocm_smi_60_text_current_clock_level_is_read() -> None:
    rec = rocm_smi.parse((FIX / "real/rocm-smi/mi100-x2-rccl-issue1129-alldevices-f-P-t-u-g-6.0.0.txt").read_text())
    assert [g.sclk_mhz for g in rec.gpus] == [1502.0, 1502.0]


def test_rocm_smi_rejects_a_clock_it_cannot_read() -> None:
    text = (FIX / "derived/rocm-smi/mi100-x2-rccl-issue1129-sclk-unreadable.txt").read_text()
    with pytest.raises(ParseError, match="cannot read a clock") as err:
        rocm_smi.parse(text)
    assert err.value.line_no == 14


# --- docs/fixture-versions.md lists every real output the parsers are tested on ------------------

@pytest.mark.parametrize("tool", ["amd-smi", "rocm-smi", "rocminfo", "nvidia-smi", "hipblaslt-bench", "rccl-tests"])
def test_the_versions_table_names_every_real_fixture(tool: str) -> None:
    doc = (ROOT / "docs" / "fixture-versions.md").read_text()
    section = re.search(rf"(?ms)^## `{re.escape(tool)}`\n(.*?)(?=^## |\Z)", doc)
    assert section, f"docs/fixture-versions.md has no '## `{tool}`' section"
    missing = [p.name for p in sorted((FIX / "real" / tool).glob("*.txt")) if p.name not in section.group(1)]
    assert not missing, f"docs/fixture-versions.md `{tool}` table lacks {missing}"
