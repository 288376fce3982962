"""hipblaslt-bench GEMM results: device, shape, data types, GFLOPS and time per problem."""

from __future__ import annotations

from validation.parsers._blas_csv import BenchDevice, BlasBenchResult, GemmRow, parse_blas

TOOL = "hipblaslt-bench"

# Command lines are built by validation/probes/native_commands.py (RVS's shapes and types).
__all__ = ["TOOL", "BenchDevice", "BlasBenchResult", "GemmRow", "parse"]


def parse(text: str) -> BlasBenchResult:
    """Parse a hipblaslt-bench run (header `[0]transA,transB,...,hipblaslt-Gflops,us`)."""
    return parse_blas(TOOL, text, "hipblaslt-Gflops")

