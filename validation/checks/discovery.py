"""What the node has: GPUs on the PCI bus (vendor, device id), read through testinfra."""

from __future__ import annotations

from collections import Counter
from typing import Any

GPU_VENDORS = {"0x1002": "amd", "0x10de": "nvidia"}
# PCI classes of GPUs and accelerators: VGA 0x0300, 3D 0x0302, display other 0x0380, processing accelerator 0x1200
GPU_CLASSES = ("0x0300", "0x0302", "0x0380", "0x1200")

_LIST = ("for d in /sys/bus/pci/devices/*; do "
         "printf '%s %s %s %s\\n' \"${d##*/}\" \"$(cat $d/class)\" \"$(cat $d/vendor)\" \"$(cat $d/device)\"; done")


def pci_gpus(host: Any) -> list[tuple[str, str, str]]:
    """(bdf, vendor id, device id) of every GPU-class device of a known GPU vendor."""
    out = host.run(_LIST)
    found = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1][:6] in GPU_CLASSES and parts[2] in GPU_VENDORS:
            found.append((parts[0], parts[2], parts[3]))
    return found


def main_device(gpus: list[tuple[str, str, str]]) -> tuple[str, str] | None:
    """The most common (vendor, device id), or None when the bus shows no GPU."""
    if not gpus:
        return None
    (vendor, device), _ = Counter((v, d) for _, v, d in gpus).most_common(1)[0]
    return vendor, device
