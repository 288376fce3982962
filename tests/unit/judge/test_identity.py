"""Which GPU an output shows, judged against the declared profile (issue 15, "Identity").

Expectations are typed from the fixtures: the MI210's JSON says device_id 0x740f, the VF's rocminfo
Chip ID 29877(0x74b5) and 'AMD Instinct MI300X VF', the MI100 JSON 'GPU ID' 0x738c, the rccl-tests
device lines 'AMD Instinct MI300X', the H100 -q log 'Device Id : 0x233010DE'.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from recorded_host import RecordedHost

from validation import extract, identity, parsers
from validation.checks import test_gpu_presence as presence
from validation.checks.outcome import CheckFailure
from validation.cli import main
from validation.records import Status
from validation.targets import load_targets

FIX = Path(__file__).resolve().parents[2] / "fixtures"
MI210_JSON = "real/amd-smi/mi210-device-metrics-exporter-test-static-json-gpu-data.txt"
VF_ROCMINFO = "real/rocminfo/mi300x-vf-msp-docs-amd-droplet-rocminfo-7.2.4.txt"
MI100_JSON = "real/rocm-smi/mi100-x6-telegraf-testdata-rocm571-json.txt"
RCCL_8X = "real/rccl-tests/mi300x-8gpu-hisohara-ai-scripts-aac8-allreduce.txt"


def identity_verdicts(tool: str, path: str, sku: str, gpus: int | None = None) -> list[Any]:
    record = parsers.parse(tool, (FIX / path).read_text())
    return [v for v in extract.verdicts_for(tool, record, load_targets(sku, gpu_count=gpus))
            if v.metric in ("gpu_identity", "gfx_target", "gpu_partition")]


def test_mi210_static_json_is_not_an_mi250x() -> None:
    (sku, gfx) = identity_verdicts("amd-smi", MI210_JSON, "mi250x", gpus=1)
    assert (sku.status, sku.code, sku.measured) == (Status.FAIL, "RF-SKU-MISMATCH", "unknown")
    assert "gpu0" in sku.reason and "device id 0x740f" in sku.reason and "'AMD Instinct MI210'" in sku.reason
    assert "declared mi250x" in sku.reason
    assert (gfx.status, gfx.measured) == (Status.PASS, "gfx90a")  # MI210 and MI250X are both gfx90a


@pytest.mark.parametrize("sku", ["h100", "mi325x", "mi300x"])
def test_mi300x_vf_rocminfo_fails_every_other_profile(sku: str) -> None:
    (v, *_) = identity_verdicts("rocminfo", VF_ROCMINFO, sku, gpus=1)
    assert (v.status, v.code, v.measured) == (Status.FAIL, "RF-SKU-MISMATCH", "mi300x-vf")
    assert "device id 0x74b5" in v.reason and f"declared {sku}" in v.reason and "--profile mi300x-vf" in v.reason


def test_mi300x_vf_rocminfo_passes_its_own_profile() -> None:
    verdicts = identity_verdicts("rocminfo", VF_ROCMINFO, "mi300x-vf", gpus=1)
    assert [(v.metric, v.status) for v in verdicts] == [("gpu_identity", Status.PASS), ("gfx_target", Status.PASS)]


def test_mi100_rocm_smi_json_is_not_an_mi250x() -> None:
    verdicts = identity_verdicts("rocm-smi", MI100_JSON, "mi250x", gpus=6)
    (v,) = [v for v in verdicts if v.metric == "gpu_identity"]
    assert (v.status, v.code) == (Status.FAIL, "RF-SKU-MISMATCH")
    assert v.subject.startswith("gpu0 .. gpu5 (6 GPUs)")
    assert "device id 0x738c" in v.reason and "Arcturus GL-XL [Instinct MI100]" in v.reason


def test_eight_mi300x_rccl_ranks_are_not_h100s() -> None:
    (v,) = identity_verdicts("rccl-tests", RCCL_8X, "h100")
    assert (v.status, v.code, v.measured) == (Status.FAIL, "RF-SKU-MISMATCH", "mi300x")
    assert v.subject.startswith("rank0 .. rank7 (8 GPUs)")


def test_eight_mi300x_rccl_ranks_are_mi300x() -> None:
    (v,) = identity_verdicts("rccl-tests", RCCL_8X, "mi300x")
    assert v.status is Status.PASS


def test_an_sriov_vbios_is_noted_but_the_bare_metal_device_id_decides() -> None:
    # rocm-smi on a MI3SRIOV VBIOS reports Device ID 0x74a1 (the bare-metal id) and SKU MI3SRIOV
    path = "real/rocm-smi/mi300x-x4-thamada-gls-rocm-smi-a.txt"
    (bare,) = [v for v in identity_verdicts("rocm-smi", path, "mi300x", gpus=4) if v.metric == "gpu_identity"]
    assert (bare.status, bare.measured) == (Status.PASS, "mi300x")
    assert "0x74a1" in bare.reason and "MI3SRIOV" in bare.reason and "not decisive" in bare.reason
    (vf,) = [v for v in identity_verdicts("rocm-smi", path, "mi300x-vf", gpus=4) if v.metric == "gpu_identity"]
    assert (vf.status, vf.measured) == (Status.FAIL, "mi300x")


def test_amd_smi_default_view_vf_name_is_the_vf_variant() -> None:
    path = "real/amd-smi/mi300x-vf-hipfile-docs-known-issues-default-view-7.2.1.txt"
    (v, *_) = identity_verdicts("amd-smi", path, "mi300x", gpus=1)
    assert (v.status, v.measured) == (Status.FAIL, "mi300x-vf")


def test_a_gpu_in_another_partition_mode_is_named() -> None:
    verdicts = identity_verdicts("amd-smi", "derived/amd-smi/mi300x-x8-amdsmi-7.0.0-default-view-gpu3-cpx-nps4.txt",
                                 "mi300x")
    bad = [v for v in verdicts if v.status is not Status.PASS]
    assert [(v.code, v.measured) for v in bad] == [("RF-PARTITION-MISMATCH", "CPX/NPS4")]
    assert bad[0].subject.startswith("gpu3 (0000:5c:00.0)")


def test_h100_query_log_is_not_an_h200_by_id_and_name() -> None:
    (v,) = identity_verdicts("nvidia-smi", "real/nvidia-smi/h100-sxm-x8-thamada-gls-nvidia-smi-a.txt", "h200")
    assert (v.status, v.measured) == (Status.FAIL, "h100")
    assert "device id 0x2330" in v.reason and "'NVIDIA H100 80GB HBM3'" in v.reason


def test_a_generic_hip_name_names_no_sku_and_the_gfx_target_is_still_judged() -> None:
    verdicts = identity_verdicts("hipblaslt-bench", "real/hipblaslt-bench/mi300x-superbench-test-hipblaslt-v600.txt",
                                 "mi300x")
    assert [(v.metric, v.status) for v in verdicts] == [("gfx_target", Status.PASS)]
    (gfx,) = identity_verdicts("hipblaslt-bench", "real/hipblaslt-bench/mi300x-superbench-test-hipblaslt-v600.txt",
                               "mi250x")
    assert (gfx.status, gfx.code, gfx.measured) == (Status.FAIL, "RF-SKU-MISMATCH", "gfx942")


def test_a_name_that_contradicts_the_device_id_is_a_mismatch() -> None:
    gpu = identity.GpuIdentity(subject="gpu0", device_id=0x74A1, name="NVIDIA H100 80GB HBM3", tool="test")
    found, evidence = identity.resolve(gpu)
    assert found == set()
    assert evidence == ["device id 0x74a1 (mi300x)", "name 'NVIDIA H100 80GB HBM3' (h100)"]


def test_judge_cli_fails_the_mi210_json_against_mi250x(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "--profile", "mi250x", "--gpus", "1", f"amd-smi:{FIX / MI210_JSON}"]) == 1
    assert "RF-SKU-MISMATCH" in capsys.readouterr().out


# --- the node checks --------------------------------------------------------------------------

def _fixtures(targets: Any) -> Any:
    """What the identity checks ask pytest for once there are GPUs to judge: the targets fixture."""
    return SimpleNamespace(getfixturevalue=lambda name: {"targets": targets}[name])


def test_node_check_skips_without_the_driver_instead_of_asking_for_targets() -> None:
    """A lab host has no GPU: the targets fixture (chosen from the GPUs on the bus) would fail, so the
    identity check skips first; test_gpu_presence fails for the missing driver with its own code."""
    class NoDriver(RecordedHost):
        def file(self, path: str) -> Any:
            return super().file(path) if path != "/sys/module/amdgpu" else SimpleNamespace(is_directory=False)

    def no_targets(name: str) -> Any:
        raise AssertionError(f"asked for {name}")

    with pytest.raises(pytest.skip.Exception, match="amdgpu is not loaded"):
        presence.test_rocminfo_gpus_are_the_declared_sku(NoDriver({}), {"validation_gpu_count": 8},
                                                         SimpleNamespace(getfixturevalue=no_targets))

def test_node_check_names_a_vf_rocminfo_on_a_node_declared_mi300x() -> None:
    host = RecordedHost({"rocminfo": VF_ROCMINFO})
    with pytest.raises(CheckFailure) as err:
        presence.test_rocminfo_gpus_are_the_declared_sku(host, {"validation_gpu_count": 1},
                                                         _fixtures(load_targets("mi300x", gpu_count=1)))
    assert err.value.code == "RF-SKU-MISMATCH"
    assert "mi300x-vf" in err.value.message and "gpu0" in err.value.message


def test_node_check_passes_the_vf_on_a_node_declared_mi300x_vf() -> None:
    host = RecordedHost({"rocminfo": VF_ROCMINFO})
    presence.test_rocminfo_gpus_are_the_declared_sku(host, {"validation_gpu_count": 1},
                                                     _fixtures(load_targets("mi300x-vf", gpu_count=1)))


def test_node_check_pci_bus_vf_id_is_not_the_bare_metal_sku() -> None:
    host = RecordedHost({}, pci="0000:83:00.0 0x038000 0x1002 0x74b5\n")
    spec = {"validation_target_sku": "mi300x", "validation_gpu_count": 1}
    with pytest.raises(CheckFailure) as err:
        presence.test_gpus_on_the_pci_bus_are_the_declared_sku(host, spec)
    assert err.value.code == "RF-SKU-MISMATCH" and "is mi300x-vf" in err.value.message


def test_node_check_pci_bus_unknown_id_fails_instead_of_raising() -> None:
    host = RecordedHost({}, pci="0000:03:00.0 0x038000 0x1002 0x740f\n")
    spec = {"validation_target_sku": "mi250x", "validation_gpu_count": 1}
    with pytest.raises(CheckFailure) as err:
        presence.test_gpus_on_the_pci_bus_are_the_declared_sku(host, spec)
    assert err.value.code == "RF-SKU-MISMATCH" and "1002:740f" in err.value.message.replace("0x", "")


def test_node_check_nvidia_h100_declared_h200_fails() -> None:
    host = RecordedHost({"nvidia-smi --query-gpu": "real/nvidia-smi/h100-ml-engineering-query-gpu-vbios-csv.txt"})
    with pytest.raises(CheckFailure) as err:
        presence.test_nvidia_smi_gpus_are_the_declared_sku(host, {"validation_gpu_count": 2,
                                                                  "validation_gpu_vendor": "nvidia"},
                                                           _fixtures(load_targets("h200", gpu_count=2)))
    assert err.value.code == "RF-SKU-MISMATCH" and "h100" in err.value.message


def test_babelstream_ranks_name_their_device() -> None:
    path = "real/babelstream/mi300x-x8-amd-acceptance-doc-mpiexec-truncated.txt"
    (ok,) = identity_verdicts("babelstream", path, "mi300x")
    (bad,) = identity_verdicts("babelstream", path, "mi325x")
    assert (ok.status, bad.status, bad.measured) == (Status.PASS, Status.FAIL, "mi300x")


def test_a_redacted_name_names_no_sku() -> None:
    gpu = identity.GpuIdentity(subject="gpu0", name="<GPU Name>", tool="rocm-bandwidth-test")
    assert identity.judge([gpu], load_targets("mi250x")) == []
