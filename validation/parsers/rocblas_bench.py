"""rocblas-bench GEMM results (`-f gemm` / `gemm_ex`): shape, GFLOPS and time per problem."""

from __future__ import annotations

from validation.parsers._blas_csv import BenchDevice, BlasBenchResult, GemmRow, parse_blas

TOOL = "rocblas-bench"

__all__ = ["PRECISIONS", "TOOL", "BenchDevice", "BlasBenchResult", "GemmRow", "argv", "parse"]

# rocblas-bench `-r` precision letters.
PRECISIONS = {"fp64": "d", "fp32": "s", "fp16": "h", "bf16": "bf16_r", "int8": "i8_r"}


def parse(text: str) -> BlasBenchResult:
    """Parse a rocblas-bench run (header `transA,transB,M,N,K,...,rocblas-Gflops,us`)."""
    return parse_blas(TOOL, text, "rocblas-Gflops")


def argv(binary: str = "rocblas-bench", *, dtype: str, m: int, n: int, k: int, iterations: int = 100,
         cold_iterations: int = 10, trans_a: str = "N", trans_b: str = "T", device: int = 0) -> list[str]:
    """Command line for one GEMM; fp16/bf16/int8 go through gemm_ex with fp32 (int32) compute."""
    if dtype not in PRECISIONS:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(PRECISIONS)}")
    if min(m, n, k, iterations) < 1 or cold_iterations < 0 or device < 0:
        raise ValueError(f"m, n, k and iterations must be >= 1 (got {m}, {n}, {k}, {iterations})")
    if trans_a not in ("N", "T") or trans_b not in ("N", "T"):
        raise ValueError("trans_a/trans_b must be 'N' or 'T'")
    lda = m if trans_a == "N" else k
    ldb = k if trans_b == "N" else n
    common = ["-m", str(m), "-n", str(n), "-k", str(k), "--transposeA", trans_a, "--transposeB", trans_b,
              "--lda", str(lda), "--ldb", str(ldb), "--ldc", str(m), "-i", str(iterations),
              "-j", str(cold_iterations), "--device", str(device)]
    if dtype in ("fp64", "fp32"):
        return [binary, "-f", "gemm", "-r", PRECISIONS[dtype], *common]
    compute = "i32_r" if dtype == "int8" else "f32_r"
    io = "f16_r" if dtype == "fp16" else PRECISIONS[dtype]
    return [binary, "-f", "gemm_ex", "--a_type", io, "--b_type", io, "--c_type", io, "--d_type", io,
            "--compute_type", compute, *common, "--ldd", str(m)]
