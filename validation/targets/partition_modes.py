"""Which partition modes a GPU can be set to, how many logical GPUs each gives, and the steps that get a
node from its current mode to the declared one: the one rule roles/amdgpu_partition (through the
rocm_fleet.fleet.partition_plan filter) and the checks' GPU count use.

Sources (every rule below is one of them):
- The combinations are the amdgpu driver's own checks for 8-XCC parts (MI300X, MI325X: "aqua vanjaram"),
  https://github.com/ROCm/amdgpu/blob/1c5625e6e140f925e7bd040f2c83c294e92806fb/drivers/gpu/drm/amd/amdgpu/aqua_vanjaram.c
  (supp_xcp_modes SPX|DPX|QPX|CPX; compatible NPS: SPX NPS1, DPX NPS1/NPS2, QPX NPS1/NPS4, CPX NPS1/NPS4), as
  AMD SMI's "GPU partitioning" guide tabulates them for MI300X,
  https://rocm.docs.amd.com/projects/amdsmi/en/latest/conceptual/partition.html ("The number of memory
  partitions cannot exceed the number of accelerator partitions"; "NPS8 is defined in the API but not
  supported on MI300X"). Firmware may offer fewer: amd-smi refuses those at set time.
- Logical GPUs per GPU: validation/partition_counts.py.
- Order: memory first, then a driver reload (`modprobe -r amdgpu && modprobe amdgpu`; amd-smi stopped doing
  it itself in ROCm 7.0), then compute; on load the driver picks the compute mode from the memory mode
  (NPS1 SPX, NPS2 DPX, NPS4 CPX: aqua_vanjaram.c's auto mode), so a compute mode that differs from that is
  set after the reload. A compute change alone needs no reload. The guide's steps 3-6, same page.
- Modes do not survive a reboot or a driver reload ("The GPU will always revert back to this default SPX
  mode when the system is rebooted or when the amdgpu driver is unloaded and reloaded",
  https://github.com/ROCm/amdgpu-docs/blob/4be74b14ed1d46af3a59127720d0f6760e52fac5/docs/gpu-partitioning/mi300x/overview.rst),
  so the role writes a unit that applies them again at every boot (boot_script).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from validation.partition_counts import PER_GPU, logical_gpus
from validation.targets.partition import COMPUTE_MODES, MEMORY_MODES

_EIGHT_XCC = {"SPX": ("NPS1",), "DPX": ("NPS1", "NPS2"), "QPX": ("NPS1", "NPS4"), "CPX": ("NPS1", "NPS4")}
# SKU -> compute mode -> the memory modes it may be combined with
SETTABLE: dict[str, dict[str, tuple[str, ...]]] = {"mi300x": _EIGHT_XCC, "mi300x-hf": _EIGHT_XCC, "mi325x": _EIGHT_XCC}
# the compute mode the driver picks when it loads in a memory mode (aqua_vanjaram.c, 8 XCCs)
AUTO_COMPUTE = {"NPS1": "SPX", "NPS2": "DPX", "NPS4": "CPX"}
SOURCE = "https://rocm.docs.amd.com/projects/amdsmi/en/latest/conceptual/partition.html"


@dataclass(frozen=True)
class Step:
    """One change: `amd-smi set` of `kind` ("memory" or "compute") to `mode`; `reload`: the driver must be
    reloaded after it for the change to take effect."""

    kind: str
    mode: str
    reload: bool

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "mode": self.mode, "reload": self.reload}


def problems(sku: str, compute: str, memory: str) -> list[str]:
    """Why `compute`/`memory` cannot be declared for `sku` (empty: it can). Both empty: nothing declared."""
    if not compute and not memory:
        return []
    if not compute or not memory:
        return [f"amdgpu_partition_compute {compute!r} and amdgpu_partition_memory {memory!r}: declare both "
                "(e.g. CPX and NPS4) or neither"]
    found = []
    if compute not in COMPUTE_MODES:
        found.append(f"amdgpu_partition_compute {compute!r} is none of {', '.join(COMPUTE_MODES)}")
    if memory not in MEMORY_MODES:
        found.append(f"amdgpu_partition_memory {memory!r} is none of {', '.join(MEMORY_MODES)}")
    if found:
        return found
    modes = SETTABLE.get(sku)
    if modes is None:
        return [f"partition modes cannot be set on {sku or 'an undeclared SKU'}: only "
                f"{', '.join(sorted(SETTABLE))} have them (validation_target_sku)"]
    if compute not in modes:
        return [f"{sku} has no compute partition {compute}; it has {', '.join(modes)} ({SOURCE})"]
    if memory not in modes[compute]:
        allowed = [f"{c}/{m}" for c, ms in modes.items() for m in ms]
        return [f"{sku} cannot run {compute} with {memory}: the number of memory partitions cannot exceed the "
                f"number of compute partitions; it runs {', '.join(allowed)} ({SOURCE})"]
    return []


def plan(current: Sequence[Mapping[str, str]], compute: str, memory: str) -> list[Step]:
    """The changes from `current` (one {"compute", "memory"} per physical GPU, as amd-smi reports its primary
    partitions) to the declared modes, in the order the driver accepts them. Empty: nothing to change."""
    if not compute or not memory:
        return []
    memories = {g.get("memory") for g in current}
    computes = {g.get("compute") for g in current}
    steps: list[Step] = []
    if memories != {memory}:
        steps.append(Step("memory", memory, reload=True))
        computes = {AUTO_COMPUTE.get(memory, "")}
    if computes != {compute}:
        steps.append(Step("compute", compute, reload=False))
    return steps


BOOT_SCRIPT = """#!/bin/sh
# Managed by rocm-fleet (roles/amdgpu_partition). Local changes are overwritten on the next run.
# Sets the declared GPU partition modes at boot, before any GPU user (rocm-fleet-partition.service): a reboot
# or a driver reload returns the GPUs to their default modes. The order is validation/targets/partition_modes.py's
# plan(): memory first, then an amdgpu reload, then compute where the driver picked another on load.
set -eu
want_compute={compute}
want_memory={memory}
modes() {{
  timeout 120 amd-smi static --partition | awk '
    /(ACCELERATOR|COMPUTE)_PARTITION:/ {{ c = $2 }}
    /MEMORY_PARTITION:/ {{ m = $2 }}
    /PARTITION_ID: 0$/ {{ print c "/" m }}' | sort -u
}}
now=$(modes)
if [ "$(printf '%s\\n' "$now" | cut -d/ -f2 | sort -u)" != "$want_memory" ]; then
  echo "rocm-fleet-partition: memory partition ${{now:-unknown}} -> $want_memory, then an amdgpu reload"
  echo Y | timeout 300 amd-smi set --memory-partition "$want_memory"
  timeout 300 modprobe -r amdgpu
  timeout 300 modprobe amdgpu
  now=$(modes)
fi
if [ "$(printf '%s\\n' "$now" | cut -d/ -f1 | sort -u)" != "$want_compute" ]; then
  echo "rocm-fleet-partition: compute partition ${{now:-unknown}} -> $want_compute"
  timeout 300 amd-smi set --gpu all --compute-partition "$want_compute"
  now=$(modes)
fi
if [ "$now" != "$want_compute/$want_memory" ]; then
  echo "rocm-fleet-partition: the GPUs run ${{now:-unknown}}, declared $want_compute/$want_memory" >&2
  exit 1
fi
echo "rocm-fleet-partition: the GPUs run $want_compute/$want_memory"
"""


def boot_script(compute: str, memory: str) -> str:
    """The script rocm-fleet-partition.service runs at boot: plan()'s order for the declared modes, from whatever
    the GPUs came up in. Refuses modes that are not modes (they reach a shell script)."""
    if compute not in COMPUTE_MODES or memory not in MEMORY_MODES:
        raise ValueError(f"{compute!r}/{memory!r} is not a compute/memory partition mode")
    return BOOT_SCRIPT.format(compute=compute, memory=memory)


__all__ = ["AUTO_COMPUTE", "BOOT_SCRIPT", "PER_GPU", "SETTABLE", "Step", "boot_script", "logical_gpus", "plan",
           "problems"]
