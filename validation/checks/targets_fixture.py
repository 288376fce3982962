"""The `targets` fixture: this node's SKU profile, declared in the inventory or detected.

`validation_target_sku` names the SKU; without it the SKU is selected from the PCI device id of
the node's GPUs, the declared GPU count and partition. An unknown SKU fails loudly.
`validation_target_overrides` (metric -> fields, each changed threshold with its own source)
comes from the same inventory.
"""

from __future__ import annotations

from typing import Any

import pytest

from validation.checks import discovery
from validation.targets import load_targets, select_sku
from validation.targets.model import TargetProfile


@pytest.fixture(scope="module")
def targets(host: Any, spec: dict) -> TargetProfile:
    sku = spec.get("validation_target_sku")
    count = spec.get("validation_gpu_count")
    partition = spec.get("validation_partition")
    if not sku:
        device = discovery.main_device(discovery.pci_gpus(host))
        if device is None:
            pytest.fail("no GPU on the PCI bus to select a target profile from; declare validation_target_sku")
        vendor, device_id = device
        sku = select_sku(device_id, int(count or 0), partition, vendor=vendor)
    return load_targets(sku, gpu_count=int(count) if count else None, partition=partition,
                        overrides=spec.get("validation_target_overrides") or None)
