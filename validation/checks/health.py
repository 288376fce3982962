"""The health mode: which checks it runs, and the state it keeps on the node between runs.

`rocm-fleet health` runs every check marked `health` (`pytest -m health`): checks that put no load
on a GPU and answer in seconds, so Slurm can run them as its HealthCheckProgram and around jobs.
Most are the smoke checks named in HEALTH_CHECKS (the plugin adds the marker to them); the rest
live in test_health.py and compare the node with what the previous health run saw: error
counters, the kernel log, the firmware. That comparison needs state, kept as one JSON document
per node in the state directory (`--rf-health-state`, default /var/lib/rocm-fleet/health), which
survives reboots; a check whose baseline is missing records one and passes ("first health run").
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any

# Smoke checks that need no load and answer quickly: presence and identity, driver, PCIe link,
# firmware consistency, configuration drift (THP, NUMA balancing, command line pending, holds).
HEALTH_CHECKS = frozenset({
    "test_amdgpu_driver_is_loaded",
    "test_kfd_device_node_is_present",
    "test_nvidia_smi_lists_every_declared_gpu",
    "test_gpus_on_the_pci_bus_are_the_declared_sku",
    "test_every_gpu_link_runs_at_its_full_pcie_speed_and_width",
    "test_firmware_is_the_same_on_every_gpu_and_matches_any_pins",
    "test_transparent_huge_pages_mode",
    "test_numa_balancing",
    "test_running_kernel_booted_with_the_parameters",
    "test_rocm_packages_are_held",
})
STATE_VERSION = 1


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class HealthState:
    """The node's health memory: `previous` as the last run left it, `current` what this run saw.
    Saved once at the end of the run (atomically), so an interrupted run changes nothing."""

    def __init__(self, directory: Path, node: str) -> None:
        self.path = directory / f"{node}.json"
        self.previous: dict[str, Any] = {}
        if self.path.is_file():
            try:
                doc = json.loads(self.path.read_text())
            except (OSError, json.JSONDecodeError):
                doc = {}
            if isinstance(doc, dict) and doc.get("version") == STATE_VERSION:
                self.previous = doc
        self.current: dict[str, Any] = {"version": STATE_VERSION, **{k: v for k, v in self.previous.items()
                                                                      if k != "version"}}

    def get(self, key: str) -> Any:
        return self.previous.get(key)

    def set(self, key: str, value: Any) -> None:
        self.current[key] = value

    def save(self) -> None:
        self.current["updated_at"] = now()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump(self.current, handle, indent=2, sort_keys=True)
            handle.write("\n")
        Path(tmp).replace(self.path)
