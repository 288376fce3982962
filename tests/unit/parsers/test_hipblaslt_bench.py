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


# --- hipBLASLt 100200 with --print_kernel_info (issue 31, class 5) ---------------------------------------------------

KERNEL_INFO = REAL / "mi350x-hipblaslt-tunning-helper-print-kernel-info-v100200-8192.txt"
ROTATING = REAL / "mi350x-hipblaslt-tunning-helper-print-kernel-info-rotating-v100200.txt"
DERIVED = REAL.parents[1] / "derived" / "hipblaslt-bench"


def test_print_kernel_info_lines_belong_to_the_row_above():
    r = hipblaslt_bench.parse(KERNEL_INFO.read_text())
    assert r.library_version == "100200" and r.truncated is False
    (row,) = r.rows
    assert (row.m, row.n, row.k, row.dtype, row.gflops) == (8192, 8192, 8192, "bf16_r", 1.29211e06)
    assert row.solution_index == 302286
    name = "Custom_Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x1_UserArgs_shortname0_gfx950"
    assert row.solution_name == row.kernel_name == name


def test_the_rotating_buffer_line_is_read_past():
    (row,) = hipblaslt_bench.parse(ROTATING.read_text()).rows
    assert (row.m, row.n, row.k, row.solution_index) == (2048, 4096, 10944, 302128)
    assert dict(row.columns)["rotating_buffer"] == "1002"


@pytest.mark.parametrize("name", ["mi350x-v100200-print-kernel-info-cut-after-solution-index.txt",
                                  "mi350x-v100200-print-kernel-info-cut-after-the-row.txt"])
def test_kernel_info_cut_short_marks_the_run_truncated(name):
    assert hipblaslt_bench.parse((DERIVED / name).read_text()).truncated is True


def test_kernel_info_without_a_row_is_refused():
    text = KERNEL_INFO.read_text().splitlines()
    del text[10]  # the result row: its kernel-info lines now follow the header
    with pytest.raises(ParseError, match="'--Solution index' line out of place"):
        hipblaslt_bench.parse("\n".join(text))
