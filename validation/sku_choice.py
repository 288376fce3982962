"""Which target profile saved outputs call for, chosen from what they show (`judge` without --profile).

The outputs' GPUs are resolved the way identity verdicts resolve them (validation/identity.py): the PCI
device id decides where a profile knows it, a market name must agree, and a gfx target alone names only
a family. A profile is chosen when every GPU that names its SKU names the same one, and the partition
mode is known (shown by the tool, given with --partition, or the GPUs are whole). Anything else is
refused with the candidates, so that no verdict rests on a guessed profile:

- a family: a gfx target alone (hipblaslt-bench's "AMD Radeon Graphics gfx942") fits mi300x, its
  variants and mi325x;
- a VF: an SR-IOV VBIOS (MI3SRIOV) with the bare-metal id and name may be the bare-metal part or its
  VF (the identity module's docstring gives the evidence);
- a partitioned GPU: a CU count below the whole GPU's (rocminfo "Compute Unit: 38" on an MI300X in CPX,
  https://github.com/ROCm/ROCm/issues/4750) without the memory mode, or a mode no profile has;
- different SKUs in one call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from validation import identity
from validation.errors import RocmFleetError, TargetError
from validation.targets import load_targets
from validation.targets.loader import list_skus
from validation.targets.partition import matching_modes, normalize_partition

# tool -> the identities its record shows (the same functions the identity verdicts use)
IDENTITIES: dict[str, Callable[[Any], list[identity.GpuIdentity]]] = {
    "rocminfo": identity.from_rocminfo,
    "rocm-smi": identity.from_rocm_smi,
    "amd-smi": identity.from_amd_smi,
    "nvidia-smi": identity.from_nvidia_smi,
    "rccl-tests": identity.from_collective,
    "nccl-tests": identity.from_collective,
    "hipblaslt-bench": identity.from_blas_bench,
    "rocblas-bench": identity.from_blas_bench,
    "babelstream": identity.from_babelstream,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    profile: str
    partition: str | None
    evidence: str          # what decided it, in words


def choose(outputs: Iterable[tuple[str, str, Any]], *, partition: str | None = None) -> Choice:
    """The one profile (and partition mode) that (file, tool, record) outputs show; RocmFleetError with
    the candidates when they show none, several, or a partitioned GPU whose mode is not known."""
    skus: dict[str, list[str]] = {}      # SKU name -> where it was seen
    modes: set[str] = set()              # partition modes the tools print
    cus: dict[int, list[str]] = {}       # CU counts -> where
    family_only: dict[frozenset[str], list[str]] = {}
    unknown: list[str] = []
    for file, tool, record in outputs:
        for gpu in IDENTITIES.get(tool, lambda _r: [])(record):
            where = f"{file}: {gpu.subject} ({tool})"
            if gpu.device_id is None and not identity.names_a_gpu(gpu.name):
                if gpu.gfx_target:
                    family = frozenset(identity.skus_with_gfx(gpu.gfx_target))
                    family_only.setdefault(family, []).append(f"{where}: gfx target {gpu.gfx_target}")
                continue
            found, evidence = identity.resolve(gpu)
            if not found:
                unknown.append(f"{where}: {'; '.join(evidence)}")
                continue
            if gpu.sriov_marker:
                found |= identity.vf_variants(found)
            for name in found:
                skus.setdefault(name, []).append(f"{where}: {'; '.join(evidence)}")
            if gpu.partition:
                modes.add(gpu.partition)
            if gpu.compute_units is not None:
                cus.setdefault(gpu.compute_units, []).append(where)
    if not skus and unknown:
        raise RocmFleetError(f"the outputs show a GPU no profile fits ({unknown[0]}); pass --profile with the SKU "
                             "the node should be, or add a profile for this GPU")
    if not skus:
        families = {name for family in family_only for name in family}
        if families:
            first_seen = next(iter(family_only.values()))[0]
            raise RocmFleetError(f"the outputs name only a GPU family ({first_seen}), which fits "
                                 f"{', '.join(sorted(families))}; pass --profile with one of them")
        raise RocmFleetError("no output names its GPU (PCI device id, market name or gfx target), so no profile can "
                             "be chosen from them; pass --profile (see `rocm-fleet targets list`)")
    if len(skus) > 1:
        shown = "; ".join(f"{sku} ({at[0]}{f' and {len(at) - 1} more' if len(at) > 1 else ''})"
                          for sku, at in sorted(skus.items()))
        raise RocmFleetError(f"the outputs fit more than one profile: {shown}; pass --profile with the one "
                             "the node should be (a VF, a partitioned GPU or mixed GPUs cannot be told apart here)")
    (name, seen_at), = skus.items()
    for family, seen in family_only.items():
        if name not in family:
            raise RocmFleetError(f"the outputs show {name} ({seen_at[0]}) and a GPU of another family ({seen[0]}); "
                                 "judge them separately")
    mode = _partition(name, partition, modes, cus)
    return Choice(profile=name, partition=mode, evidence=seen_at[0] + (f" and {len(seen_at) - 1} more GPU(s)"
                                                                       if len(seen_at) > 1 else ""))


def _partition(name: str, given: str | None, modes: set[str], cus: dict[int, list[str]]) -> str | None:
    entry = next(e for e in list_skus() if e.name == name)
    if given is not None:
        return given
    whole = load_targets(name).get("compute_unit_count")
    split_by_cus = sorted(c for c in cus if whole is not None and isinstance(whole.value, int) and c < whole.value)
    if len(modes) > 1:
        raise RocmFleetError(f"the outputs show GPUs of {name} in several partition modes "
                             f"({', '.join(sorted(modes))}); judge each mode with its own --partition")
    if modes:
        shown = next(iter(modes))
        try:
            fits = matching_modes(list(entry.partitions), shown)
            exact = normalize_partition(shown)
        except TargetError:
            fits, exact = [], ""
        if exact and fits == [exact]:
            return None if exact == entry.default_partition else exact
        raise RocmFleetError(f"the outputs show {name} in partition mode {shown}; the profile has "
                             f"{', '.join(entry.partitions) or 'no partition modes'}: pass --profile {name} "
                             f"--partition <mode> with one of them, or add the mode to its targets")
    if split_by_cus:
        count = split_by_cus[0]
        candidates = [m for m in entry.partitions
                      if (t := load_targets(name, partition=m).get("compute_unit_count")) is not None
                      and t.value == count]
        raise RocmFleetError(f"the outputs show {name} GPUs with {count} compute units ({cus[count][0]}), a "
                             f"partition of the whole GPU's {whole.value if whole else '?'}, and not the memory "
                             f"mode; pass --profile {name} --partition with one of "
                             f"{', '.join(candidates) or 'the modes its targets have'} (compute and memory mode, "
                             "as `amd-smi static --partition` shows them)")
    return None
