"""From native-tool records to verdicts: GEMM per dtype/init/shape, MIOpen per layer and phase,
all_gather/alltoall bus bandwidth and #wrong. Real fixtures as recorded; derived ones as their
SOURCES.md rows describe (values below typed from reading the files)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from validation import extract, parsers
from validation.cli import main
from validation.records import Status
from validation.targets import load_targets

FIX = Path(__file__).resolve().parents[2] / "fixtures"
MI300X = load_targets("mi300x")


def verdicts(tool: str, path: str, command: str | None = None) -> list:
    """The measurement verdicts; the GPU identity ones (the A100 fixtures are not MI300X) are tested in
    test_identity.py."""
    record = parsers.parse(tool, (FIX / path).read_text())
    if command is not None:
        record = dataclasses.replace(record, command=command)
    return [v for v in extract.verdicts_for(tool, record, MI300X)
            if v.metric not in ("gpu_identity", "gfx_target", "gpu_partition")]


# --- GEMM ----------------------------------------------------------------------------------------

def test_hipblaslt_896_cube_has_no_target_and_is_recorded_only() -> None:
    (v,) = verdicts("hipblaslt-bench", "real/hipblaslt-bench/mi300x-superbench-test-hipblaslt-v600.txt")
    assert (v.status, v.metric) == (Status.SKIP, "gemm_other_shape_tflops")
    assert v.measured == pytest.approx(58.6245)            # 58624.5 GFLOPS
    assert "fp16" in v.subject and "896x896x896" in v.subject


def test_slow_fp16_at_the_gst_shape_fails_the_trig_target_naming_gpu5() -> None:
    (v,) = verdicts("hipblaslt-bench", "derived/hipblaslt-bench/mi300x-v600-fp16-trig-gst-shape-58tflops-gpu5.txt")
    assert (v.status, v.metric, v.code) == (Status.FAIL, "gemm_fp16_trig_tflops", "RF-GEMM-LOW")
    assert v.subject.startswith("gpu5 hipblaslt-bench fp16 trig 4864x4096x8192")
    assert "496.85" in v.reason                           # 523 x 0.95


def test_random_initialization_is_judged_against_the_rand_target() -> None:
    rand = ("$ hipblaslt-bench -m 4864 -n 4096 -k 8192 --a_type f16_r --initialization rand_int --device 2")
    (v,) = verdicts("hipblaslt-bench", "derived/hipblaslt-bench/mi300x-v600-fp16-trig-gst-shape-58tflops-gpu5.txt",
                    command=rand.removeprefix("$ "))
    assert (v.metric, v.status) == ("gemm_fp16_rand_tflops", Status.FAIL)
    assert v.subject.startswith("gpu2 ") and "607.05" in v.reason   # 639 x 0.95


def test_plain_rocblas_gemm_takes_its_dtype_from_the_command() -> None:
    path = "real/rocblas-bench/mi100-likely-superbench-test-rocblas-fp64.txt"
    (unknown,) = verdicts("rocblas-bench", path)
    assert "dtype?" in unknown.subject
    (v,) = verdicts("rocblas-bench", path, command="rocblas-bench -f gemm -r d -m 7680 -n 8192 -k 8192 --device 6")
    assert v.subject == "gpu6 rocblas-bench fp64 rand (tool default) 7680x8192x8192"
    assert (v.metric, v.status, v.measured) == ("gemm_other_shape_tflops", Status.SKIP, pytest.approx(10.0375))


# --- MIOpen --------------------------------------------------------------------------------------

def test_miopen_run_without_verification_records_time_and_reports_verification_missing() -> None:
    vs = verdicts("miopen-driver", "real/miopen-driver/mi300x-x8-miopen-wrapper-proof-flagoff-convfp16.txt")
    by_metric = {v.metric: v for v in vs}
    time = by_metric["miopen_conv_time_ms"]
    assert (time.status, time.measured) == (Status.SKIP, 0.006936)
    assert time.subject == "gpu convfp16 n1 c1 8x8 k1 3x3 u1 p1 forward"
    assert by_metric["miopen_conv_tflops"].measured == 0
    missing = by_metric["miopen_verify_failed_count"]
    assert (missing.status, missing.code) == (Status.ERROR, "RF-NOT-REPORTED")
    assert "-V 0" in missing.reason


def test_miopen_forward_verification_failure_fails_the_layer_with_the_tools_line() -> None:
    vs = verdicts("miopen-driver", "derived/miopen-driver/mi300x-x8-flagoff-convfp16-verify-on-forward-failed.txt")
    (failed,) = [v for v in vs if v.status is Status.FAIL]
    assert (failed.metric, failed.measured, failed.code) == ("miopen_verify_failed_count", 1, "RF-MIOPEN-VERIFY")
    assert failed.subject == "gpu convfp16 n1 c1 8x8 k1 3x3 u1 p1 forward"
    assert "Forward Convolution FAILED: 0.0371 > 0.0082" in failed.reason
    assert not [v for v in vs if v.status is Status.ERROR]


def test_judge_cli_exits_1_on_the_miopen_verification_failure(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIX / "derived/miopen-driver/mi300x-x8-flagoff-convfp16-verify-on-forward-failed.txt"
    assert main(["judge", "--profile", "mi300x", "--json", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"][0]["tool"] == "miopen-driver"


# --- collectives ---------------------------------------------------------------------------------

def test_all_gather_with_one_wrong_element_is_data_corruption() -> None:
    vs = verdicts("nccl-tests", "derived/nccl-tests/a100-8gpu-allgather-wrong-column-1-wrong-256m.txt")
    (wrong,) = [v for v in vs if v.status is Status.FAIL]
    assert (wrong.metric, wrong.code, wrong.measured) == ("collective_wrong_count", "RF-RCCL-WRONG", 1)
    assert "268435456" in wrong.subject


def test_all_gather_bus_bandwidth_is_read_out_of_place_and_recorded_for_eight_gpus() -> None:
    vs = verdicts("nccl-tests", "real/nccl-tests/a100-8gpu-superbench-testdata-nccl-allgather.txt",
                  command="all_gather_perf -b 8 -e 8G -f 2 -g 8")
    by_metric = {v.metric: v for v in vs}
    assert by_metric["allgather_busbw_8g_gb_s"].measured == 223.39
    assert by_metric["allgather_busbw_8g_gb_s"].status is Status.SKIP
    assert "out-of-place" in by_metric["allgather_busbw_8g_gb_s"].subject
    assert not [m for m in by_metric if m.startswith("allreduce_")]
    assert by_metric["collective_busbw_dip_max_fraction"].status is Status.PASS


def test_alltoall_at_32_gpus_is_judged_against_the_cvs_4_node_number() -> None:
    text = (FIX / "real/nccl-tests/a100-8gpu-superbench-testdata-nccl-alltoall.txt").read_text()
    # the CVS number is for 32 ranks: the 8-rank A100 table stands in for a 32-rank run (ranks set to match,
    # since a target for another GPU count than the run's is recorded, not judged)
    record = dataclasses.replace(parsers.parse("nccl-tests", text), command="alltoall_perf -b 1 -e 8G -f 2 -g 8",
                                 ranks=32)
    (v,) = [v for v in extract.collective(record, load_targets("mi300x", gpu_count=32))
            if v.metric == "alltoall_busbw_8g_gb_s"]
    assert (v.status, v.measured) == (Status.FAIL, 224.31)  # < 294 (CVS history, 4 nodes)


def test_collective_without_a_command_or_reduction_gets_no_size_target() -> None:
    vs = verdicts("nccl-tests", "real/nccl-tests/a100-8gpu-superbench-testdata-nccl-alltoall.txt")
    assert [v.metric for v in vs] == ["collective_busbw_dip_max_fraction"]


def test_collective_name_comes_from_the_binary_or_the_reduction_column() -> None:
    mi300x = parsers.parse("rccl-tests", (FIX / "real/rccl-tests/mi300x-8gpu-hisohara-ai-scripts-aac8-allreduce.txt")
                           .read_text())
    a100 = parsers.parse("nccl-tests", (FIX / "real/nccl-tests/a100-8gpu-superbench-testdata-nccl-allreduce.txt")
                         .read_text())
    assert extract.collective_name(mi300x) == "all_reduce"     # mpirun ... ./rccl-tests/build/all_reduce_perf
    assert a100.command is None and extract.collective_name(a100) == "all_reduce"   # redop "sum"
    assert extract.collective_name(dataclasses.replace(a100, command="alltoall_perf -g 8")) == "alltoall"


# --- the check's run-and-judge path, with a stand-in binary that prints a derived output ----------

def _stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, output: Path, rc: int) -> None:
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\ncat '{output}'\nexit {rc}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")


def test_failed_verification_exit_is_judged_not_reported_as_a_tool_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from validation.checks.outcome import CheckFailure
    from validation.checks.test_native_probes import run_and_judge
    from validation.probes import native_commands as nc

    _stand_in(tmp_path, monkeypatch, "MIOpenDriver",
              FIX / "derived/miopen-driver/mi300x-x8-flagoff-convfp16-verify-on-forward-failed.txt", rc=1)
    recorded: list[tuple] = []
    with pytest.raises(CheckFailure) as failure:
        run_and_judge("miopen-driver", nc.miopen_conv(nc.CONV_LAYERS[1]), MI300X,
                      lambda *a, **k: recorded.append((a, k)), gpu=3, env=nc.miopen_env(3))
    assert failure.value.code == "RF-MIOPEN-VERIFY"
    assert "gpu3 convfp16 n1 c1 8x8 k1 3x3 u1 p1 forward" in str(failure.value)
    assert "Forward Convolution FAILED" in str(failure.value)
    assert {a[0] for a, _ in recorded} == {"miopen_conv_time_ms", "miopen_conv_tflops", "miopen_verify_failed_count"}


def test_non_zero_exit_with_clean_verdicts_is_a_tool_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from validation.checks.outcome import CheckFailure
    from validation.checks.test_native_probes import run_and_judge
    from validation.probes import native_commands as nc

    _stand_in(tmp_path, monkeypatch, "hipblaslt-bench",
              FIX / "real/hipblaslt-bench/mi300x-superbench-test-hipblaslt-v600.txt", rc=2)
    with pytest.raises(CheckFailure) as failure:
        run_and_judge("hipblaslt-bench", nc.gemm_argv(nc.GST_GEMM_CASES[0], device=0), MI300X, lambda *a, **k: None,
                      gpu=0)
    assert failure.value.code == "RF-TOOL-FAILED" and "exited 2" in str(failure.value)
