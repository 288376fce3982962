"""Command-line builders of the native quick-tier probes, checked against argv typed by hand from
the sources: RVS gst_single.conf (MI300X), AMD's acceptance rocblas-bench commands, MIOpenDriver
and rccl-tests flags."""

from __future__ import annotations

import dataclasses

import pytest

from validation.probes import native_commands as nc
from validation.targets import load_targets


def _case(name: str) -> nc.GemmCase:
    (case,) = [c for c in nc.GST_GEMM_CASES if c.name == name]
    return case


def test_gst_fp8_rand_is_the_rvs_shape_with_fp8_in_and_out_on_the_named_gpu() -> None:
    assert nc.hipblaslt_gemm(_case("gst-fp8-rand"), device=3) == [
        "hipblaslt-bench", "-m", "4864", "-n", "4096", "-k", "8192",
        "--lda", "8320", "--ldb", "8320", "--ldc", "4992", "--ldd", "4992",
        "--transA", "T", "--transB", "N",
        "--a_type", "f8_fnuz_r", "--b_type", "f8_fnuz_r", "--c_type", "f8_fnuz_r", "--d_type", "f8_fnuz_r",
        "--compute_type", "f32_r", "--initialization", "rand_int", "-i", "1000", "-j", "100", "--device", "3"]


def test_gst_bf16_trig_uses_trig_float_initialization() -> None:
    argv = nc.gemm_argv(_case("gst-bf16-trig"), device=0)
    assert argv[0] == "hipblaslt-bench"
    assert argv[argv.index("--a_type") + 1] == "bf16_r"
    assert argv[argv.index("--initialization") + 1] == "trig_float"


def test_gst_sgemm_and_dgemm_go_through_rocblas_with_rvs_leading_dimensions() -> None:
    assert nc.gemm_argv(_case("gst-fp32-rand-3072"), device=0) == [
        "rocblas-bench", "-f", "gemm", "-r", "s", "-m", "3072", "-n", "3072", "-k", "3072",
        "--lda", "3072", "--ldb", "3072", "--ldc", "3072", "--transposeA", "T", "--transposeB", "N",
        "--initialization", "rand_int", "-i", "1000", "-j", "100", "--device", "0"]
    assert nc.gemm_argv(_case("gst-fp64-trig-8192"), device=7) == [
        "rocblas-bench", "-f", "gemm", "-r", "d", "-m", "8192", "-n", "8192", "-k", "8192",
        "--lda", "8192", "--ldb", "8192", "--ldc", "8192", "--transposeA", "T", "--transposeB", "N",
        "--initialization", "trig_float", "-i", "100", "-j", "10", "--device", "7"]


def test_rocblas_fp16_goes_through_gemm_ex_with_fp32_compute() -> None:
    case = dataclasses.replace(_case("gst-fp16-rand"), tool="rocblas-bench")
    assert nc.rocblas_gemm(case, device=1) == [
        "rocblas-bench", "-f", "gemm_ex", "-m", "4864", "-n", "4096", "-k", "8192",
        "--lda", "8320", "--ldb", "8320", "--ldc", "4992", "--transposeA", "T", "--transposeB", "N",
        "--ldd", "4992", "--a_type", "f16_r", "--b_type", "f16_r", "--c_type", "f16_r", "--d_type", "f16_r",
        "--compute_type", "f32_r", "--initialization", "rand_int", "-i", "1000", "-j", "100", "--device", "1"]


def test_rocblas_refuses_fp8_and_points_to_hipblaslt() -> None:
    with pytest.raises(ValueError, match="use hipblaslt-bench"):
        nc.rocblas_gemm(_case("gst-fp8-trig"), device=0)


def test_leading_dimension_below_the_minimum_is_refused() -> None:
    bad = dataclasses.replace(_case("gst-fp16-rand"), lda=4096)       # transA=T needs lda >= k = 8192
    with pytest.raises(ValueError, match="lda >= 8192"):
        nc.hipblaslt_gemm(bad, device=0)


def test_negative_device_is_refused() -> None:
    with pytest.raises(ValueError, match="device"):
        nc.gemm_argv(_case("gst-fp16-rand"), device=-1)


def test_gst_cases_cover_every_rvs_action_and_each_metric_exists_for_mi300x() -> None:
    assert [c.name for c in nc.GST_GEMM_CASES] == [
        "gst-fp8-rand", "gst-fp8-trig", "gst-fp16-rand", "gst-fp16-trig", "gst-bf16-rand", "gst-bf16-trig",
        "gst-fp32-rand-3072", "gst-fp32-trig-3072", "gst-fp64-rand-8192", "gst-fp64-trig-8192"]
    profile = load_targets("mi300x")
    assert {c.metric for c in nc.GST_GEMM_CASES} <= set(profile.targets)
    assert {c.metric for c in nc.GST_GEMM_CASES if c.dtype == "fp8"} == {"gemm_fp8_rand_tflops", "gemm_fp8_trig_tflops"}


def test_rocblas_acceptance_bf16_card_is_amds_command_verbatim_plus_device() -> None:
    assert nc.rocblas_acceptance("rocblas_hgemm_strided_batched_tflops", device=4) == [
        "rocblas-bench", "-f", "gemm_strided_batched_ex", "--transposeA", "N", "--transposeB", "T",
        "-m", "1024", "-n", "2048", "-k", "512",
        "--a_type", "h", "--lda", "1024", "--stride_a", "4096",
        "--b_type", "h", "--ldb", "2048", "--stride_b", "4096",
        "--c_type", "s", "--ldc", "1024", "--stride_c", "2097152",
        "--d_type", "s", "--ldd", "1024", "--stride_d", "2097152",
        "--compute_type", "s", "--alpha", "1.1", "--beta", "1", "--batch_count", "5", "--device", "4"]
    assert nc.rocblas_acceptance("rocblas_sgemm_4000_tflops", device=0)[:5] == [
        "rocblas-bench", "-f", "gemm", "-r", "s"]


def test_unknown_acceptance_metric_is_refused() -> None:
    with pytest.raises(ValueError, match="known"):
        nc.rocblas_acceptance("gemm_fp8_rand_tflops", device=0)


def test_miopen_layer_runs_all_directions_verified_and_timed() -> None:
    (layer,) = [x for x in nc.CONV_LAYERS if x.name == "res2_3x3"]
    assert nc.miopen_conv(layer) == [
        "MIOpenDriver", "convfp16", "-n", "64", "-c", "64", "-H", "56", "-W", "56", "-k", "64",
        "-y", "3", "-x", "3", "-p", "1", "-q", "1", "-u", "1", "-v", "1", "-l", "1", "-j", "1", "-g", "1",
        "-F", "0", "-t", "1", "-i", "10", "-V", "1"]
    assert nc.miopen_conv(layer, dtype="bf16", direction="backward_weights")[1] == "convbfp16"
    assert nc.miopen_env(6) == {"HIP_VISIBLE_DEVICES": "6"}


def test_miopen_stem_layer_has_stride_two_and_pad_three() -> None:
    argv = nc.miopen_conv(nc.CONV_LAYERS[0])
    assert [argv[argv.index(f) + 1] for f in ("-c", "-H", "-y", "-u", "-v", "-p", "-q")] == \
        ["3", "224", "7", "2", "2", "3", "3"]


def test_miopen_unknown_direction_is_refused() -> None:
    with pytest.raises(ValueError, match="direction"):
        nc.miopen_conv(nc.CONV_LAYERS[0], direction="sideways")


def test_all_gather_on_eight_gpus_checks_data_up_to_16_gib() -> None:
    assert nc.rccl_collective("all_gather", gpus=8) == [
        "all_gather_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "8", "-n", "20", "-w", "5", "-c", "1"]
    assert nc.rccl_collective("alltoall", gpus=4)[0] == "alltoall_perf"


def test_unknown_collective_is_refused() -> None:
    with pytest.raises(ValueError, match="all_reduce, all_gather, alltoall"):
        nc.rccl_collective("broadcast", gpus=8)


# Two actions in the shape of RVS's rvs/conf/MI300X/gst_single.conf
# (https://github.com/ROCm/ROCmValidationSuite/blob/3b48aa30/rvs/conf/MI300X/gst_single.conf):
# no `parallel` key, `device: all`, comments above the actions.
GST_CONF = """\
# the shipped conf starts with a licence comment
actions:
- name: gst-1000Tflops-8K-fp8_r
  device: all
  module: gst
  duration: 30000
  matrix_size_a: 8192
  data_type: fp8_r
  transa: 1

- name: gst-70Tflops-8K-dgemm
  device: all
  module: gst
  duration: 30000
  ops_type: dgemm
  parallel: false
"""


def test_the_rvs_conf_we_run_stresses_every_gpu_of_each_action_together_and_keeps_the_rest() -> None:
    import yaml

    shipped = yaml.safe_load(GST_CONF)["actions"]
    ours = yaml.safe_load(nc.rvs_conf_all_gpus_at_once(GST_CONF))["actions"]
    assert [a.pop("parallel") for a in ours] == [True, True]
    shipped[1].pop("parallel")
    assert ours == shipped


@pytest.mark.parametrize("text", ["", "actions: []", "actions:\n- just a string", "[1, 2]", "actions: [unclosed"])
def test_a_file_that_is_not_an_rvs_conf_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="not an RVS conf"):
        nc.rvs_conf_all_gpus_at_once(text)
