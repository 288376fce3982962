"""Pick the SKU name for a node from what discovery saw: PCI vendor/device id, GPU count, partition.

The device id decides; the GPU count only breaks ties between entries that share an id; the
partition mode must be one the SKU has targets for. Anything unknown raises UnknownSkuError
(fail loudly: DCGM#55 and RVS#1263 show what silent skipping costs).
"""

from __future__ import annotations

from pathlib import Path

from validation.errors import TargetError, UnknownSkuError
from validation.targets.loader import INVENTORY_VARIABLE, list_skus, unknown_sku_message
from validation.targets.partition import matching_modes

AMD_VENDOR = "0x1002"
NVIDIA_VENDOR = "0x10de"


def select_sku(
    pci_device_id: str,
    gpu_count: int,
    partition: str | None,
    vendor: str = AMD_VENDOR,
    *,
    data_dir: Path | None = None,
) -> str:
    """The SKU name to pass to `load_targets`.

    pci_device_id: "0x74a1", "74a1" or "1002:74a1" (a vendor prefix overrides `vendor`).
    """
    vendor_id, device_id = _split_ids(pci_device_id, vendor)
    entries = list_skus(data_dir=data_dir)
    matches = [e for e in entries if e.vendor == vendor_id and device_id in e.pci_device_ids]
    if not matches:
        raise UnknownSkuError(unknown_sku_message(
            f"no target profile for PCI device {vendor_id[2:]}:{device_id[2:]}", data_dir=data_dir))
    if len(matches) > 1:
        by_count = [e for e in matches if e.gpu_count == gpu_count]
        if len(by_count) != 1:
            names = ", ".join(e.name for e in matches)
            raise UnknownSkuError(
                f"PCI device {vendor_id[2:]}:{device_id[2:]} with {gpu_count} GPUs matches {names}, and the "
                f"GPU count does not decide; set {INVENTORY_VARIABLE} for this host/group to one of them")
        matches = by_count
    entry = matches[0]
    if partition is not None and len(matching_modes(entry.partitions, partition)) != 1:
        modes = ", ".join(entry.partitions) or "none"
        raise UnknownSkuError(
            f"{entry.name} (PCI {vendor_id[2:]}:{device_id[2:]}) has no target set for partition "
            f"{partition!r}; known modes: {modes}. Add a partitions entry with a source to "
            f"{Path(entry.source_file).name}, or set {INVENTORY_VARIABLE} for this host/group.")
    return entry.name


def _split_ids(pci_device_id: str, vendor: str) -> tuple[str, str]:
    text = str(pci_device_id).strip().lower()
    if ":" in text:
        vendor, text = text.split(":", 1)
    return _hex(vendor, "vendor"), _hex(text, "PCI device id")


def _hex(value: str, what: str) -> str:
    text = str(value).strip().lower().removeprefix("0x")
    try:
        return f"0x{int(text, 16):04x}"
    except ValueError:
        raise TargetError(f"{what} {value!r} is not hexadecimal; "
                          "expected e.g. '0x74a1' or '1002:74a1'") from None
