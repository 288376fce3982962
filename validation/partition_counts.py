"""How many GPUs a node lists in a compute partition mode: one rule for the declared state (validation/spec.py
derives the logical GPU count from it), the partition role's rules (validation/targets/partition_modes.py)
and everything that counts GPUs after them (the checks, RCCL's ranks, Slurm's GRES).

Per GPU: SPX 1, DPX 2, QPX 4, CPX 8 (one per XCD) on the 8-XCD parts, whatever the memory mode: amdsmi's
amdsmi_accelerator_partition_profile_t ("On MI300X: SPX=>1, DPX=>2, QPX=>4, CPX=>8",
https://rocm.docs.amd.com/projects/amdsmi/en/docs-7.1.1/doxygen/docBin/html/structamdsmi__accelerator__partition__profile__t.html);
"an 8xMI300X system in CPX mode reports 64 (IDs 0-63)"
(https://rocm.docs.amd.com/projects/amdsmi/en/latest/conceptual/partition.html).
"""

from __future__ import annotations

_EIGHT_XCD = {"SPX": 1, "DPX": 2, "QPX": 4, "CPX": 8}
PER_GPU: dict[str, dict[str, int]] = {"mi300x": _EIGHT_XCD, "mi300x-hf": _EIGHT_XCD, "mi325x": _EIGHT_XCD}


def logical_gpus(sku: str, physical: int, compute: str) -> int:
    """The GPUs the node lists (rocminfo, amd-smi, Slurm) with `physical` GPUs in compute mode `compute`
    ("" or a SKU without partitions: the physical count)."""
    if not compute:
        return physical
    return physical * PER_GPU.get(str(sku).lower(), {}).get(str(compute).upper(), 1)
