"""Every declared GPU is present and the compute driver is up (smoke tier, needs a GPU)."""

from __future__ import annotations

from typing import Any

import pytest

from validation.checks.outcome import expect
from validation.checks.tools import run_tool
from validation.errors import ParseError
from validation.parsers import nvidia_smi, rocminfo

pytestmark = [pytest.mark.smoke, pytest.mark.gpu]


def _declared_gpus(spec: dict, vendor: str = "amd") -> int:
    count = spec.get("validation_gpu_count")
    if count is None:
        pytest.skip("spec declares no validation_gpu_count")
    declared_vendor = spec.get("validation_gpu_vendor", "amd")
    if declared_vendor != vendor:
        pytest.skip(f"spec declares {declared_vendor} GPUs; this check is for {vendor}")
    return int(count)


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
    run = run_tool(host, "rocminfo", timeout_s=60)
    try:
        record = rocminfo.parse(run.stdout + run.stderr)
    except ParseError as exc:
        expect(False, "RF-TOOL-FAILED", f"rocminfo output not understood: {exc}")
        return
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
    run = run_tool(host, "nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total --format=csv", timeout_s=60)
    expect(run.rc == 0, "RF-NO-NVIDIA-GPU",
           f"nvidia-smi failed (rc {run.rc}): {(run.stderr or run.stdout).strip()[:300]}")
    try:
        record = nvidia_smi.parse(run.stdout)
    except ParseError as exc:
        expect(False, "RF-TOOL-FAILED", f"nvidia-smi output not understood: {exc}")
        return
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
    device = discovery.main_device(discovery.pci_gpus(host))
    expect(device is not None, "RF-NO-AMD-GPU" if spec.get("validation_gpu_vendor", "amd") == "amd"
           else "RF-NO-NVIDIA-GPU", f"no GPU on the PCI bus; spec declares {declared}")
    vendor, device_id = device
    found = select_sku(device_id, int(spec.get("validation_gpu_count") or 0), spec.get("validation_partition"),
                       vendor=vendor)
    expect(found.split("-")[0] == str(declared).split("-")[0], "RF-SKU-MISMATCH",
           f"PCI device {vendor}:{device_id} is {found}, the spec declares {declared}")
