"""rocblas-bench GEMM results (`-f gemm` / `gemm_ex`): shape, GFLOPS and time per problem."""

from __future__ import annotations

from validation.parsers._blas_csv import BenchDevice, BlasBenchResult, GemmRow, parse_blas

TOOL = "rocblas-bench"

# Command lines are built by validation/probes/native_commands.py (RVS's and AMD acceptance's).
__all__ = ["TOOL", "BenchDevice", "BlasBenchResult", "GemmRow", "parse"]


def parse(text: str) -> BlasBenchResult:
    """Parse a rocblas-bench run (header `transA,transB,M,N,K,...,rocblas-Gflops,us`)."""
    return parse_blas(TOOL, text, "rocblas-Gflops")

