"""rocblas-bench parser on the real (trimmed) gemm outputs from superbench's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import rocblas_bench

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "rocblas-bench"


def test_fp64_row():
    r = rocblas_bench.parse((REAL / "mi100-likely-superbench-test-rocblas-fp64.txt").read_text())
    assert r.tool == "rocblas-bench" and r.devices == () and r.library_version is None
    (row,) = r.rows
    assert (row.trans_a, row.trans_b, row.m, row.n, row.k) == ("N", "T", 7680, 8192, 8192)
    assert row.batch_count is None and row.dtype is None  # plain gemm: type chosen by -r, not printed
    assert row.gflops == 10037.5 and row.time_us == 102694
    assert dict(row.columns)["lda"] == "8384" and len(row.columns) == 12


def test_fp16_xdlops_row_has_ldd_and_batch_count():
    (row,) = rocblas_bench.parse((REAL / "mi100-likely-superbench-test-rocblas-fp16-xdlops.txt").read_text()).rows
    assert (row.m, row.n, row.k, row.batch_count) == (7680, 8192, 8192, 1)
    assert row.gflops == 153728 and row.time_us == 6705.3
    assert dict(row.columns)["ldd"] == "8384" and len(row.columns) == 14


def test_non_numeric_gflops_raises_naming_the_column():
    text = (REAL / "mi100-likely-superbench-test-rocblas-fp64.txt").read_text().replace("10037.5", "fast")
    with pytest.raises(ParseError) as err:
        rocblas_bench.parse(text)
    assert err.value.line_no == 2 and "rocblas-Gflops" in str(err.value)


def test_hipblaslt_header_is_not_a_rocblas_result():
    text = "transA,transB,m,n,k,hipblaslt-Gflops,us\nN,N,1,1,1, 1.0, 2.0\n"
    with pytest.raises(ParseError, match="rocblas-Gflops"):
        rocblas_bench.parse(text)


@pytest.mark.parametrize("garbage", ["", "rocBLAS error: out of memory\n"], ids=["empty", "error-line"])
def test_garbage_raises_parse_error(garbage):
    with pytest.raises(ParseError):
        rocblas_bench.parse(garbage)
