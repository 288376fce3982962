"""validation/probes/hip_probe.py and hip/: compiler argv, output parser, real nvcc/hipcc builds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.probes import hip_probe
from validation.runner import run, which

HIP_DIR = Path(hip_probe.__file__).resolve().parent / "hip"

# Hand-typed in the format rf_probe.hip prints (its header comment); no GPU exists here to run it.
MI300X = 'name="AMD Instinct MI300X" arch=gfx942:sramecc+:xnack- n=16777216'
TWO_GPUS_OK = (
    f"RF_HIP gpu=0 {MI300X} result=ok max_abs_err=0 sum_err=0 ms=0.082000\n"
    f"RF_HIP gpu=1 {MI300X} result=ok max_abs_err=0 sum_err=0 ms=0.081500\n"
    "RF_HIP_SUMMARY platform=hip devices=2 ok=2 failed=0\n"
)
ONE_WRONG_ONE_ERROR = """\
RF_HIP gpu=0 name="NVIDIA H200" arch=sm_90 n=1024 result=fail max_abs_err=2 sum_err=14 ms=0.004000
RF_HIP gpu=1 result=error step=hipMalloc error="out of memory"
RF_HIP_SUMMARY platform=cuda devices=2 ok=0 failed=2
"""
# What the nvcc build printed on this GPU-less machine (rc 2), typed from the terminal.
NO_DRIVER = (
    "RF_HIP_SUMMARY platform=cuda devices=0 ok=0 failed=0 "
    'error="CUDA driver version is insufficient for CUDA runtime version"\n'
)

# What Debian bookworm's hipcc 5.2.3 build (--offload-arch=gfx90a) printed here, typed from the terminal.
HIP_NO_DEVICE = 'RF_HIP_SUMMARY platform=hip devices=0 ok=0 failed=0 error="hipErrorNoDevice"\n'


def test_hipcc_argv_builds_for_gfx942_offline() -> None:
    argv = hip_probe.hipcc_argv(Path("rf_probe.hip"), Path("out"))
    assert argv == ("hipcc", "--offload-arch=gfx942", "-O2", "-o", "out", "rf_probe.hip")


def test_nvcc_argv_compiles_the_hip_source_as_cuda() -> None:
    assert hip_probe.nvcc_argv(Path("rf_probe.hip"), Path("out")) == (
        "nvcc",
        "-x",
        "cu",
        "-O2",
        "-o",
        "out",
        "rf_probe.hip",
    )
    assert hip_probe.nvcc_argv(Path("s.hip"), Path("o"), arch="sm_90")[4] == "-arch=sm_90"


def test_hipcc_builds_for_the_amd_platform_even_where_nvcc_exists() -> None:
    assert hip_probe.build_env("hipcc") == {"HIP_PLATFORM": "amd"}
    assert hip_probe.build_env("hipcc", {"HIP_PLATFORM": "nvidia"}) == {"HIP_PLATFORM": "nvidia"}
    assert hip_probe.build_env("nvcc") == {}


def test_unknown_compiler_is_refused() -> None:
    with pytest.raises(ValueError, match="clang"):
        hip_probe.build_argv("clang", Path("out"))


def test_parse_two_good_gpus() -> None:
    out = hip_probe.parse(TWO_GPUS_OK)
    assert (out.platform, out.devices, out.ok, out.failed, out.error) == ("hip", 2, 2, 0, None)
    first = out.gpus[0]
    assert (first.gpu, first.result, first.name, first.arch) == (
        0,
        "ok",
        "AMD Instinct MI300X",
        "gfx942:sramecc+:xnack-",
    )
    assert (first.n, first.max_abs_err, first.sum_err, first.kernel_ms) == (16777216, 0.0, 0.0, 0.082)
    assert out.gpus[1].kernel_ms == 0.0815


def test_parse_keeps_a_wrong_result_and_a_failed_call_apart() -> None:
    out = hip_probe.parse(ONE_WRONG_ONE_ERROR)
    wrong, broken = out.gpus
    assert (wrong.result, wrong.max_abs_err, wrong.sum_err) == ("fail", 2.0, 14.0)
    assert (broken.result, broken.step, broken.error, broken.kernel_ms) == ("error", "hipMalloc", "out of memory", None)
    assert (out.ok, out.failed) == (0, 2)


def test_parse_no_device_summary_carries_the_runtime_error() -> None:
    out = hip_probe.parse(NO_DRIVER)
    assert (out.devices, out.gpus) == (0, ())
    assert out.error == "CUDA driver version is insufficient for CUDA runtime version"


def test_parse_the_hip_build_without_a_device() -> None:
    out = hip_probe.parse(HIP_NO_DEVICE)
    assert (out.platform, out.devices, out.ok, out.failed, out.error) == ("hip", 0, 0, 0, "hipErrorNoDevice")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(TWO_GPUS_OK.splitlines()[0] + "\n", "no RF_HIP_SUMMARY", id="truncated-before-summary"),
        pytest.param("", "empty input", id="empty"),
        pytest.param("hello\n" + NO_DRIVER, "unexpected line", id="foreign-line"),
        pytest.param(NO_DRIVER + TWO_GPUS_OK.splitlines()[0], "after the summary", id="text-after-summary"),
        pytest.param(TWO_GPUS_OK.replace("devices=2", "devices=3"), "3 devices", id="missing-gpu-line"),
        pytest.param(TWO_GPUS_OK.replace("ok=2 failed=0", "ok=1 failed=1"), "disagrees", id="bad-counts"),
        pytest.param(TWO_GPUS_OK.replace("result=ok", "result=maybe", 1), "unknown result", id="unknown-result"),
        pytest.param(TWO_GPUS_OK.replace("ms=0.082000", "ms=fast"), "cannot read ms", id="bad-number"),
        pytest.param(TWO_GPUS_OK.replace(" ms=0.082000", " ms=0.08 watts=700"), "unknown keys", id="new-key"),
        pytest.param(TWO_GPUS_OK.replace(" sum_err=0 ms=0.082000", " ms=0.08"), "missing keys", id="missing-key"),
        pytest.param(TWO_GPUS_OK.replace('name="AMD', "name=AMD"), "cannot read", id="unquoted-name"),
    ],
)
def test_parse_refuses_anything_unexpected(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as err:
        hip_probe.parse(text)
    assert err.value.tool == "rf-hip-probe"


def test_probe_source_uses_only_hip_names_outside_the_header() -> None:
    source = (HIP_DIR / "rf_probe.hip").read_text()
    code = re.sub(r"//.*", "", source)
    assert '#include "rf_hip_compat.h"' in source
    assert not re.search(r"\bcuda\w*|<<<|__HIP_PLATFORM|hip_runtime\.h", code), (
        "platform-specific code outside the header"
    )


def test_source_compiles_with_nvcc_through_the_portability_header(tmp_path: Path) -> None:
    if which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the CUDA build of the HIP probe cannot be tested here")
    binary = tmp_path / "rf_probe"
    build = run(hip_probe.nvcc_argv(hip_probe.SOURCE, binary), 300, cwd=tmp_path)
    assert build.ok, f"nvcc failed (rc {build.rc}):\n{build.stderr}"
    assert binary.is_file()
    ran = run([str(binary), "4096"], 60)
    out = hip_probe.parse(ran.stdout)
    assert out.platform == "cuda"
    if out.devices == 0:
        # Running the kernel needs a GPU; without one the binary must say so and exit 2.
        assert ran.rc == 2 and out.error, ran.stdout
    else:
        assert ran.rc == 0 and out.failed == 0, ran.stdout


def test_source_compiles_with_hipcc_for_gfx942(tmp_path: Path) -> None:
    if which("hipcc") is None:
        pytest.skip(
            "hipcc is not on PATH (Debian: apt install hipcc); offline gfx942 compilation is tested "
            "on a lab host. Running the binary needs an AMD GPU, which this test does not do."
        )
    binary = tmp_path / "rf_probe"
    build = run(hip_probe.hipcc_argv(hip_probe.SOURCE, binary), 600, env=hip_probe.build_env("hipcc"), cwd=tmp_path)
    if "invalid target ID 'gfx942'" in build.stderr:
        pytest.skip("this hipcc's clang predates gfx942 (Debian bookworm's hipcc 5.2); use trixie's hipcc 5.7+")
    assert build.ok, f"hipcc failed (rc {build.rc}):\n{build.stderr}"
    assert binary.is_file()
