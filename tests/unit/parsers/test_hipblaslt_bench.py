"""hipblaslt-bench parser on the real MI300X output embedded in superbench's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import hipblaslt_bench

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "hipblaslt-bench"
V600 = REAL / "mi300x-superbench-test-hipblaslt-v600.txt"


def test_version_and_device_lines():
    r = hipblaslt_bench.parse(V600.read_text())
    assert r.tool == "hipblaslt-bench"
    assert r.library_version == "600" and r.git_version == "52776da"
    (dev,) = r.devices
    assert dev.index == 0 and dev.name == "AMD Radeon Graphics gfx942:sramecc+:xnack-"
    assert (dev.memory_gb, dev.max_sclk_mhz, dev.max_mclk_mhz, dev.compute_capability) == (206.1, 2100, 1300, "9.4")
    assert r.command is None


def test_result_row_shape_dtype_gflops_and_time():
    (row,) = hipblaslt_bench.parse(V600.read_text()).rows
    assert (row.trans_a, row.trans_b, row.m, row.n, row.k, row.batch_count) == ("N", "N", 896, 896, 896, 1)
    assert row.dtype == "fp16_r" and row.compute_type == "f32_r"
    assert row.gflops == 58624.5 and row.time_us == 24.54
    assert len(row.columns) == 23
    assert dict(row.columns)["activation_type"] == "none" and dict(row.columns)["stride_a"] == "802816"
    assert row.line_no == 12


def test_row_with_fewer_values_than_header_raises():
    text = V600.read_text().replace(", 58624.5, 24.54", ", 58624.5")
    with pytest.raises(ParseError) as err:
        hipblaslt_bench.parse(text)
    assert err.value.line_no == 12 and "22 values for 23 header columns" in str(err.value)


def test_header_without_rows_is_an_error_not_an_empty_result():
    text = "\n".join(V600.read_text().splitlines()[:11])
    with pytest.raises(ParseError, match="no result rows"):
        hipblaslt_bench.parse(text)


@pytest.mark.parametrize("garbage", ["", "hipBLASLt version: 600\n", "N,N,1,2,3\n"],
                         ids=["empty", "banner-only", "row-without-header"])
def test_garbage_raises_parse_error(garbage):
    with pytest.raises(ParseError):
        hipblaslt_bench.parse(garbage)
