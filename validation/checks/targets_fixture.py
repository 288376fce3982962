"""The `targets` fixture: this node's SKU profile, declared in the inventory or detected.

`validation_target_sku` names the SKU; without it the SKU is selected from the PCI device id of
the node's GPUs, the declared GPU count and partition. An unknown SKU fails loudly.
Overrides, in order (later wins): a site baseline (`--rf-baseline FILE` or the spec's
`validation_baseline`, made by `rocm-fleet baseline create`; applied only where it is stricter
than a published target or there is none), then the inventory's `validation_target_overrides`
(metric -> fields, each changed threshold with its own source).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from validation import baseline as site_baseline
from validation.checks import discovery
from validation.checks.facts import provenance
from validation.checks.node import node_name, results_for
from validation.targets import load_targets, select_sku
from validation.targets.model import TargetProfile


def load_baseline(request: pytest.FixtureRequest, spec: dict) -> dict[str, Any] | None:
    path = request.config.getoption("--rf-baseline")
    if path:
        return site_baseline.read(Path(path))
    declared = spec.get("validation_baseline")
    if declared:
        return site_baseline.check_document(declared, "the spec's validation_baseline")
    return None


@pytest.fixture(scope="module")
def targets(host: Any, spec: dict, request: pytest.FixtureRequest) -> TargetProfile:
    sku = spec.get("validation_target_sku")
    # the GPUs it holds: a partitioned node lists more (validation/spec.py:with_partition_counts), and the
    # profiles are chosen and counted by whole GPUs
    count = spec.get("validation_physical_gpu_count") or spec.get("validation_gpu_count")
    partition = spec.get("validation_partition")
    if not sku:
        device = discovery.main_device(discovery.pci_gpus(host))
        if device is None:
            pytest.fail("no GPU on the PCI bus to select a target profile from; declare validation_target_sku")
        vendor, device_id = device
        sku = select_sku(device_id, int(count or 0), partition, vendor=vendor)
    declared = spec.get("validation_target_overrides") or None
    base = load_baseline(request, spec)
    if base is None:
        return load_targets(sku, gpu_count=int(count) if count else None, partition=partition, overrides=declared)
    profile = load_targets(sku, gpu_count=int(count) if count else None, partition=partition)
    facts = provenance(host, site_baseline.COMPARED_FACTS)
    from_baseline, notes = site_baseline.overrides(base, profile, node_facts=facts)

    results = results_for(request.node, node_name(host, request.config.getoption("--rf-node")))
    if results is not None:
        results.doc["provenance"]["baseline"] = {
            "name": base.get("name"), "created_at": base.get("created_at"),
            "made_from": {k: v for k, v in (base.get("made_from") or {}).items() if k != "nodes"},
            "applied": sorted(from_baseline), "notes": notes}
        results.write()
    return load_targets(sku, gpu_count=int(count) if count else None, partition=partition,
                        overrides=site_baseline.merge(from_baseline, declared))
