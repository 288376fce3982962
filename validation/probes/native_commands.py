"""Command lines for the native ROCm tools of the quick tier: GEMM (hipblaslt-bench, rocblas-bench),
MIOpenDriver conv layers, rccl-tests collectives and the RVS conf we run. Pure: a case and options
in, an argv (or a conf's text) out.

The GEMM cases copy the shapes behind the MI300X targets (validation/targets/data/mi300x.yaml):

- RVS GST (https://github.com/ROCm/ROCmValidationSuite/blob/6d2e13f3/rvs/conf/MI300X/gst_single.conf)
  fp8/fp16/bf16 at m=4864 n=4096 k=8192, lda=ldb=8320, ldc=ldd=4992, transa=1 transb=0, `matrix_init` rand or trig,
  hot_calls 1000; SGEMM 3072³ and DGEMM 8192³ (lda=ldb=ldc=n), rand and trig.
- AMD system acceptance (https://github.com/ROCm/system-acceptance-docs/blob/23e73127/docs/gpus/mi300x.md):
  the three rocblas-bench commands (FP32 4000³, "BF16" = fp16-in/fp32-out strided batched, INT8 strided
  batched), verbatim.

RVS "rand" is "random integer" (the conf's own comment) -> `--initialization rand_int`; "trig" ->
`trig_float`. Both benches take `--device N`; MIOpenDriver has none and always uses device 0 of
what it sees, so it gets `HIP_VISIBLE_DEVICES=N` instead (`miopen_env`).
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from validation.parsers import miopen_driver
from validation.parsers.rccl_tests import collective_argv
from validation.probes.conv_shapes import RESNET50_SHAPES, ConvShape

# dtype -> hipblaslt-bench type name (gfx942 implements the FNUZ fp8 variant) and compute type.
HIPBLASLT_TYPES = {"fp8": "f8_fnuz_r", "fp16": "f16_r", "bf16": "bf16_r", "fp32": "f32_r", "fp64": "f64_r"}
HIPBLASLT_COMPUTE = {"fp8": "f32_r", "fp16": "f32_r", "bf16": "f32_r", "fp32": "f32_r", "fp64": "f64_r"}
# dtype -> rocblas-bench: plain gemm precision letter, or gemm_ex type (fp32 compute).
ROCBLAS_PRECISION = {"fp32": "s", "fp64": "d"}
ROCBLAS_EX_TYPES = {"fp16": "f16_r", "bf16": "bf16_r"}
INITIALIZATION = {"rand": "rand_int", "trig": "trig_float"}


@dataclass(frozen=True, slots=True, kw_only=True)
class GemmCase:
    """One GEMM problem as RVS GST writes it; `metric` is the target it is judged against."""

    name: str
    tool: str
    dtype: str
    init: str
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    ldd: int
    trans_a: str
    trans_b: str
    iterations: int
    cold_iterations: int
    metric: str


def _gst(dtype: str, init: str) -> GemmCase:
    return GemmCase(name=f"gst-{dtype}-{init}", tool="hipblaslt-bench", dtype=dtype, init=init,
                    m=4864, n=4096, k=8192, lda=8320, ldb=8320, ldc=4992, ldd=4992, trans_a="T", trans_b="N",
                    iterations=1000, cold_iterations=100, metric=f"gemm_{dtype}_{init}_tflops")


def _square(dtype: str, init: str, size: int, iterations: int, cold: int, metric: str) -> GemmCase:
    return GemmCase(name=f"gst-{dtype}-{init}-{size}", tool="rocblas-bench", dtype=dtype, init=init,
                    m=size, n=size, k=size, lda=size, ldb=size, ldc=size, ldd=size, trans_a="T", trans_b="N",
                    iterations=iterations, cold_iterations=cold, metric=metric)


# RVS GST gst_single.conf for MI300X, one case per action. The conf's two "bf16" actions set
# `data_type: fp16_r` (an upstream slip, UNCERTAIN which type the 581/552 targets were measured
# with); we run bf16 as the action names say. fp8/fp16/bf16 go through hipBLASLt as in RVS;
# SGEMM/DGEMM (`ops_type`) through rocBLAS.
GST_GEMM_CASES: tuple[GemmCase, ...] = (
    *(_gst(dtype, init) for dtype in ("fp8", "fp16", "bf16") for init in ("rand", "trig")),
    *(_square("fp32", init, 3072, 1000, 100, "gemm_fp32_tflops") for init in ("rand", "trig")),
    *(_square("fp64", init, 8192, 100, 10, "gemm_fp64_tflops") for init in ("rand", "trig")),
)

# AMD system acceptance https://github.com/ROCm/system-acceptance-docs/blob/23e73127/docs/gpus/mi300x.md,
# the rocBLAS GEMM benchmarks, verbatim (no -i/-j: rocblas-bench's defaults). The "BF16" card runs
# `--a_type h` (fp16 in, fp32 out).
ROCBLAS_ACCEPTANCE: dict[str, tuple[str, ...]] = {
    "rocblas_sgemm_4000_tflops": (
        "-f", "gemm", "-r", "s", "-m", "4000", "-n", "4000", "-k", "4000",
        "--lda", "4000", "--ldb", "4000", "--ldc", "4000", "--transposeA", "N", "--transposeB", "T"),
    "rocblas_hgemm_strided_batched_tflops": (
        "-f", "gemm_strided_batched_ex", "--transposeA", "N", "--transposeB", "T",
        "-m", "1024", "-n", "2048", "-k", "512",
        "--a_type", "h", "--lda", "1024", "--stride_a", "4096",
        "--b_type", "h", "--ldb", "2048", "--stride_b", "4096",
        "--c_type", "s", "--ldc", "1024", "--stride_c", "2097152",
        "--d_type", "s", "--ldd", "1024", "--stride_d", "2097152",
        "--compute_type", "s", "--alpha", "1.1", "--beta", "1", "--batch_count", "5"),
    "rocblas_int8_strided_batched_tops": (
        "-f", "gemm_strided_batched_ex", "--transposeA", "N", "--transposeB", "T",
        "-m", "1024", "-n", "2048", "-k", "512",
        "--a_type", "i8_r", "--lda", "1024", "--stride_a", "4096",
        "--b_type", "i8_r", "--ldb", "2048", "--stride_b", "4096",
        "--c_type", "i32_r", "--ldc", "1024", "--stride_c", "2097152",
        "--d_type", "i32_r", "--ldd", "1024", "--stride_d", "2097152",
        "--compute_type", "i32_r", "--alpha", "1.1", "--beta", "1", "--batch_count", "5"),
}


def _check_common(case: GemmCase, device: int) -> None:
    if device < 0:
        raise ValueError(f"device must be >= 0, got {device}")
    if case.init not in INITIALIZATION:
        raise ValueError(f"{case.name}: init {case.init!r} is not one of {', '.join(INITIALIZATION)}")
    if case.trans_a not in ("N", "T") or case.trans_b not in ("N", "T"):
        raise ValueError(f"{case.name}: trans_a/trans_b must be 'N' or 'T'")
    if min(case.m, case.n, case.k, case.iterations) < 1 or case.cold_iterations < 0:
        raise ValueError(f"{case.name}: m, n, k and iterations must be >= 1, cold iterations >= 0")
    min_lda = case.m if case.trans_a == "N" else case.k
    min_ldb = case.k if case.trans_b == "N" else case.n
    if case.lda < min_lda or case.ldb < min_ldb or min(case.ldc, case.ldd) < case.m:
        raise ValueError(f"{case.name}: leading dimensions below the minimum (lda >= {min_lda}, "
                         f"ldb >= {min_ldb}, ldc/ldd >= {case.m}); the bench would silently raise them")


def hipblaslt_gemm(case: GemmCase, *, device: int, binary: str = "hipblaslt-bench") -> list[str]:
    """hipblaslt-bench for one case on one GPU; A, B, C and D all in the case's dtype (RVS: fp8 in/out)."""
    _check_common(case, device)
    if case.dtype not in HIPBLASLT_TYPES:
        known = ", ".join(HIPBLASLT_TYPES)
        raise ValueError(f"{case.name}: hipblaslt-bench dtype {case.dtype!r} is not one of {known}")
    t = HIPBLASLT_TYPES[case.dtype]
    return [binary, "-m", str(case.m), "-n", str(case.n), "-k", str(case.k),
            "--lda", str(case.lda), "--ldb", str(case.ldb), "--ldc", str(case.ldc), "--ldd", str(case.ldd),
            "--transA", case.trans_a, "--transB", case.trans_b,
            "--a_type", t, "--b_type", t, "--c_type", t, "--d_type", t,
            "--compute_type", HIPBLASLT_COMPUTE[case.dtype], "--initialization", INITIALIZATION[case.init],
            "-i", str(case.iterations), "-j", str(case.cold_iterations), "--device", str(device)]


def rocblas_gemm(case: GemmCase, *, device: int, binary: str = "rocblas-bench") -> list[str]:
    """rocblas-bench for one case on one GPU: fp32/fp64 as `-f gemm -r s|d`, fp16/bf16 as gemm_ex."""
    _check_common(case, device)
    shape = ["-m", str(case.m), "-n", str(case.n), "-k", str(case.k),
             "--lda", str(case.lda), "--ldb", str(case.ldb), "--ldc", str(case.ldc),
             "--transposeA", case.trans_a, "--transposeB", case.trans_b]
    tail = ["--initialization", INITIALIZATION[case.init], "-i", str(case.iterations),
            "-j", str(case.cold_iterations), "--device", str(device)]
    if case.dtype in ROCBLAS_PRECISION:
        return [binary, "-f", "gemm", "-r", ROCBLAS_PRECISION[case.dtype], *shape, *tail]
    if case.dtype in ROCBLAS_EX_TYPES:
        t = ROCBLAS_EX_TYPES[case.dtype]
        return [binary, "-f", "gemm_ex", *shape, "--ldd", str(case.ldd), "--a_type", t, "--b_type", t,
                "--c_type", t, "--d_type", t, "--compute_type", "f32_r", *tail]
    known = ", ".join([*ROCBLAS_PRECISION, *ROCBLAS_EX_TYPES])
    raise ValueError(f"{case.name}: rocblas-bench dtype {case.dtype!r} is not one of {known} "
                     "(fp8: use hipblaslt-bench)")


def gemm_argv(case: GemmCase, *, device: int) -> list[str]:
    """The case's own tool."""
    return hipblaslt_gemm(case, device=device) if case.tool == "hipblaslt-bench" else rocblas_gemm(case, device=device)


def rocblas_acceptance(metric: str, *, device: int, binary: str = "rocblas-bench") -> list[str]:
    """One of AMD's acceptance rocblas-bench commands (keyed by its target metric), plus --device."""
    if metric not in ROCBLAS_ACCEPTANCE:
        raise ValueError(f"no acceptance command for {metric!r}; known: {', '.join(ROCBLAS_ACCEPTANCE)}")
    if device < 0:
        raise ValueError(f"device must be >= 0, got {device}")
    return [binary, *ROCBLAS_ACCEPTANCE[metric], "--device", str(device)]


# The same ResNet-50 layers as the PyTorch conv2d probe, so MIOpenDriver and
# torch.nn.functional.conv2d cross-check each other (MIOpenDriver's y x are our r s).
CONV_LAYERS: tuple[ConvShape, ...] = RESNET50_SHAPES
MIOPEN_OPERATIONS = {"fp32": "conv", "fp16": "convfp16", "bf16": "convbfp16"}
MIOPEN_DIRECTIONS = {"all": 0, "forward": 1, "backward_data": 2, "backward_weights": 4}


def miopen_conv(layer: ConvShape, *, dtype: str = "fp16", direction: str = "all", iterations: int = 10,
                binary: str = "MIOpenDriver") -> list[str]:
    """MIOpenDriver for one layer: verification on (-V 1), kernel timing on (-t 1)."""
    if dtype not in MIOPEN_OPERATIONS:
        raise ValueError(f"MIOpenDriver dtype {dtype!r} is not one of {', '.join(MIOPEN_OPERATIONS)}")
    if direction not in MIOPEN_DIRECTIONS:
        raise ValueError(f"direction {direction!r} is not one of {', '.join(MIOPEN_DIRECTIONS)}")
    return miopen_driver.argv(binary, operation=MIOPEN_OPERATIONS[dtype], n=layer.n, c=layer.c, h=layer.h,
                              w=layer.w, k=layer.k, y=layer.r, x=layer.s, pad=layer.pad, stride=layer.stride,
                              direction=MIOPEN_DIRECTIONS[direction], verify=True, iterations=iterations)


def miopen_env(gpu: int) -> dict[str, str]:
    """MIOpenDriver runs on device 0 of the devices it sees: show it only `gpu`."""
    if gpu < 0:
        raise ValueError(f"gpu must be >= 0, got {gpu}")
    return {"HIP_VISIBLE_DEVICES": str(gpu)}


COLLECTIVES = ("all_reduce", "all_gather", "alltoall")


def rccl_collective(collective: str, *, gpus: int, min_bytes: str = "8", max_bytes: str = "16G",
                    iters: int = 20, warmup_iters: int = 5) -> list[str]:
    """rccl-tests `<collective>_perf` on `gpus` GPUs of one process (-g), sizes x2, data check on (-c 1)."""
    if collective not in COLLECTIVES:
        raise ValueError(f"collective {collective!r} is not one of {', '.join(COLLECTIVES)}")
    return collective_argv(f"{collective}_perf", gpus=gpus, min_bytes=min_bytes, max_bytes=max_bytes,
                           step_factor=2, iters=iters, warmup_iters=warmup_iters, check=True, dtype=None, op=None)


def rvs_conf_all_gpus_at_once(conf: str) -> str:
    """The text of an RVS conf with `parallel: true` on every action, so that an action stresses all
    its GPUs together instead of one after the other.

    RVS defaults `parallel` to false (RVS_DEFAULT_PARALLEL), and GST's action then starts and joins
    each GPU's worker in turn
    (https://github.com/ROCm/ROCmValidationSuite/blob/06d0b3e6/gst.so/src/action.cpp,
    do_gpu_stress_test): the shipped gst_single.conf, which sets no `parallel`, costs its
    duration once per GPU. Every other key is kept as the conf has it.
    """
    try:
        doc = yaml.safe_load(conf)
    except yaml.YAMLError as exc:
        raise ValueError(f"not an RVS conf: {exc}") from exc
    actions = doc.get("actions") if isinstance(doc, dict) else None
    if not isinstance(actions, list) or not actions or not all(isinstance(a, dict) for a in actions):
        raise ValueError("not an RVS conf: it has no list of actions")
    for action in actions:
        action["parallel"] = True
    return yaml.safe_dump(doc, sort_keys=False)
