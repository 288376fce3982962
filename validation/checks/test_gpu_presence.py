"""Every declared GPU is present and the compute driver is up (smoke tier, needs a GPU)."""

from __future__ import annotations

from typing import Any

import pytest

from validation import identity
from validation.checks.outcome import CheckFailure, expect, fail_on_verdicts, require
from validation.checks.tools import run_tool, skip_unless_driver_loaded
from validation.errors import ParseError, UnknownSkuError
from validation.parsers import nvidia_smi, rocminfo
from validation.spec import gpu_vendor

pytestmark = [pytest.mark.smoke, pytest.mark.gpu]


def _declared_gpus(spec: dict, vendor: str = "amd") -> int:
    count = spec.get("validation_gpu_count")
    if count is None:
        pytest.skip("spec declares no validation_gpu_count")
    declared_vendor = gpu_vendor(spec)
    if declared_vendor != vendor:
        pytest.skip(f"spec declares {declared_vendor} GPUs; this check is for {vendor}")
    return int(count)


def _rocminfo(host: Any) -> rocminfo.RocminfoRecord:
    run = run_tool(host, "rocminfo", timeout_s=60)
    try:
        return rocminfo.parse(run.stdout + run.stderr)
    except ParseError as exc:
        raise CheckFailure("RF-TOOL-FAILED", f"rocminfo output not understood: {exc}") from exc


def _nvidia_query(host: Any, command: str) -> nvidia_smi.NvidiaSmiRecord:
    run = run_tool(host, command, timeout_s=60)
    expect(run.rc == 0, "RF-NO-NVIDIA-GPU",
           f"nvidia-smi failed (rc {run.rc}): {(run.stderr or run.stdout).strip()[:300]}")
    try:
        return nvidia_smi.parse(run.stdout)
    except ParseError as exc:
        raise CheckFailure("RF-TOOL-FAILED", f"nvidia-smi output not understood: {exc}") from exc


def test_amdgpu_driver_is_loaded(host: Any, spec: dict) -> None:
    """The amdgpu driver is loaded."""
    declared = _declared_gpus(spec)
    loaded = host.file("/sys/module/amdgpu").is_directory
    expect(loaded, "RF-NO-AMD-GPU",
           f"no AMD GPU present: the amdgpu module is not loaded (spec declares {declared} GPUs)")


def test_kfd_device_node_is_present(host: Any, spec: dict) -> None:
    """/dev/kfd, the GPU compute interface, is present."""
    _declared_gpus(spec)
    expect(host.file("/dev/kfd").exists, "RF-NO-KFD",
           "/dev/kfd does not exist: no AMD GPU compute interface (amdgpu/ROCk not loaded)")


def test_rocminfo_lists_every_declared_gpu(host: Any, spec: dict) -> None:
    """rocminfo lists every declared GPU."""
    declared = _declared_gpus(spec)
    record = _rocminfo(host)
    if not record.rocm_kernel_loaded:
        expect(False, "RF-NO-AMD-GPU",
               f"no AMD GPU present: rocminfo says the ROCk module is not loaded; spec declares {declared} GPUs")
    found = len(record.gpus)
    expect(found == declared, "RF-GPU-MISSING",
           f"rocminfo lists {found} GPU agents, spec declares {declared}: "
           f"{', '.join(g.marketing_name or '?' for g in record.gpus) or 'none'}")


def test_nvidia_smi_lists_every_declared_gpu(host: Any, spec: dict) -> None:
    """NVIDIA nodes of a mixed fleet: discovery through nvidia-smi's query CSV."""
    declared = _declared_gpus(spec, vendor="nvidia")
    record = _nvidia_query(host, "nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total --format=csv")
    found = len(record.gpus)
    expect(found == declared, "RF-GPU-MISSING",
           f"nvidia-smi lists {found} GPUs, spec declares {declared}: "
           f"{', '.join(f'{g.index}:{g.name}' for g in record.gpus) or 'none'}")


def test_gpus_on_the_pci_bus_are_the_declared_sku(host: Any, spec: dict) -> None:
    """The SKU selected from the PCI device id, GPU count and partition equals the declared one."""
    from validation.checks import discovery
    from validation.targets import select_sku

    declared = spec.get("validation_target_sku")
    if not declared:
        pytest.skip("spec declares no validation_target_sku; the targets fixture selects it from the bus")
    vendor, device_id = require(discovery.main_device(discovery.pci_gpus(host)),
                                "RF-NO-AMD-GPU" if gpu_vendor(spec) == "amd"
                                else "RF-NO-NVIDIA-GPU", f"no GPU on the PCI bus; spec declares {declared}")
    try:
        whole = spec.get("validation_physical_gpu_count") or spec.get("validation_gpu_count")   # not the listed count
        found = select_sku(device_id, int(whole or 0), spec.get("validation_partition"),
                           vendor=vendor)
    except UnknownSkuError as exc:
        expect(False, "RF-SKU-MISMATCH", f"PCI device {vendor}:{device_id} is none of the known SKUs, the spec "
                                         f"declares {declared}: {exc}")
        return
    # the variant counts: an SR-IOV VF (mi300x-vf) is judged against other targets than bare metal
    expect(found == str(declared).lower(), "RF-SKU-MISMATCH",
           f"PCI device {vendor}:{device_id} is {found}, the spec declares {declared}")


def test_rocminfo_gpus_are_the_declared_sku(host: Any, spec: dict, request: pytest.FixtureRequest) -> None:
    """Every GPU agent's Chip ID, Marketing Name and gfx target fit the declared profile (an SR-IOV VF
    names itself 'VF'; its Chip ID may still be the bare-metal one)."""
    _declared_gpus(spec)
    skip_unless_driver_loaded(host, "amd")
    record = _rocminfo(host)
    expect(record.gpus, "RF-NO-AMD-GPU", "rocminfo lists no GPU agent, so which GPU this is cannot be checked")
    # the targets (selected from the GPUs on the bus) only once there are GPUs to judge
    fail_on_verdicts(identity.judge(identity.from_rocminfo(record), request.getfixturevalue("targets")))


def test_nvidia_smi_gpus_are_the_declared_sku(host: Any, spec: dict, request: pytest.FixtureRequest) -> None:
    """NVIDIA nodes: every GPU's name and PCI device id fit the declared profile (h100, h200)."""
    _declared_gpus(spec, vendor="nvidia")
    skip_unless_driver_loaded(host, "nvidia")
    record = _nvidia_query(host, "nvidia-smi --query-gpu=index,name,pci.bus_id,pci.device_id --format=csv")
    fail_on_verdicts(identity.judge(identity.from_nvidia_smi(record), request.getfixturevalue("targets")))
