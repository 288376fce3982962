"""hipblaslt-bench GEMM results: device, shape, data types, GFLOPS and time per problem."""

from __future__ import annotations

from validation.parsers._blas_csv import BenchDevice, BlasBenchResult, GemmRow, parse_blas

TOOL = "hipblaslt-bench"

__all__ = ["DTYPES", "TOOL", "BenchDevice", "BlasBenchResult", "GemmRow", "argv", "parse"]

# hipblaslt-bench precision names for the dtypes the acceptance targets use.
# gfx942 (MI300) implements the FNUZ fp8 variants, so fp8/bf8 map to the *_fnuz_r names.
DTYPES = {"fp32": "f32_r", "fp16": "f16_r", "bf16": "bf16_r", "fp8": "f8_fnuz_r", "bf8": "bf8_fnuz_r",
          "fp64": "f64_r", "int8": "i8_r"}
_COMPUTE = {"fp32": "f32_r", "fp16": "f32_r", "bf16": "f32_r", "fp8": "f32_r", "bf8": "f32_r",
            "fp64": "f64_r", "int8": "i32_r"}


def parse(text: str) -> BlasBenchResult:
    """Parse a hipblaslt-bench run (header `[0]transA,transB,...,hipblaslt-Gflops,us`)."""
    return parse_blas(TOOL, text, "hipblaslt-Gflops")


def argv(binary: str = "hipblaslt-bench", *, dtype: str, m: int, n: int, k: int, iterations: int = 100,
         cold_iterations: int = 10, trans_a: str = "N", trans_b: str = "T", initialization: str = "rand_int",
         device: int = 0) -> list[str]:
    """Command line for one GEMM `m x n x k` in `dtype` (a key of DTYPES) on `device`."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPES)}")
    if min(m, n, k, iterations) < 1 or cold_iterations < 0 or device < 0:
        raise ValueError(f"m, n, k and iterations must be >= 1 (got {m}, {n}, {k}, {iterations})")
    if trans_a not in "NT" or trans_b not in "NT" or len(trans_a) != 1 or len(trans_b) != 1:
        raise ValueError("trans_a/trans_b must be 'N' or 'T'")
    t = DTYPES[dtype]
    return [binary, "-m", str(m), "-n", str(n), "-k", str(k),
            "--transA", trans_a, "--transB", trans_b, "--a_type", t, "--b_type", t,
            "--c_type", t if dtype not in ("fp8", "bf8") else "f16_r",
            "--d_type", t if dtype not in ("fp8", "bf8") else "f16_r",
            "--compute_type", _COMPUTE[dtype], "--initialization", initialization,
            "-i", str(iterations), "-j", str(cold_iterations), "--device", str(device)]
