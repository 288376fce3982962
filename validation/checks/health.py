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

# Smoke checks that need no load and answer quickly: presence and identity, driver, PCIe link,
# firmware consistency, configuration drift (THP, NUMA balancing, command line pending, holds).
HEALTH_CHECKS = frozenset({
    "test_amdgpu_driver_is_loaded",
    "test_kfd_device_node_is_present",
    "test_nvidia_smi_lists_every_declared_gpu",
    "test_gpus_on_the_pci_bus_are_the_declared_sku",
    "test_every_gpu_link_runs_at_its_full_pcie_speed_and_width",
    "test_firmware_is_the_same_on_every_gpu_and_matches_any_pins",
    "test_gpus_run_the_declared_partition_modes",
    "test_transparent_huge_pages_mode",
    "test_numa_balancing",
    "test_running_kernel_booted_with_the_parameters",
    "test_rocm_packages_are_held",
})
