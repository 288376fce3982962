"""Which GPU a tool output shows, judged against the declared SKU profile.

A tool output proves something about a node only if it comes from the GPUs the profile is for:
an MI210's numbers judged as an MI250X, or an MI300X VF's as a bare-metal MI300X, are not evidence
of either. Every record that names its GPUs (a PCI device id, a market name, a gfx target, an SR-IOV
VBIOS) is resolved to the SKU names of validation/targets/data/*.yaml and compared with the
profile's own name:

- device id: the profiles' `selection.pci_device_ids` (0x74a1 -> mi300x, 0x74b5 -> mi300x-vf);
- market name: each profile's `gpu_name_pattern` metric (a regular expression with its source); a
  name that says "VF" ("AMD Instinct MI300X VF") is the family's `-vf` variant even where the device
  reports the bare-metal id;
- gfx target: each profile's `gfx_target` metric.

Where the tool shows them, the compute-unit count and the memory size are judged too: the CU count
against the profile's `compute_unit_count` (a halved count on the right device id is not that SKU's
GPU), the memory against the floor `vram_per_gpu_gb` and against the SKU's capacity as a ceiling (no
GPU reports more memory than its published capacity, so a 143,771 MiB GPU is not an 80 GB H100).

A name amd-smi cut to fit its column ("...Instinct MI300X OAM") is still searched for the profiles'
patterns: what is left of it names the model (`_model`).

An SR-IOV VBIOS or SKU string (MI3SRIOV) is named in the evidence but decides nothing: nodes with it
report the bare-metal id 0x74a1 and name in rocm-smi and rocminfo alike
(tests/fixtures/real/rocm-smi/mi300x-x4-thamada-gls-rocm-smi-a.txt, rocminfo/mi300x-x4-thamada-gls-rocminfo.txt),
so whether they are VFs cannot be told from them; the PCI id on the bus decides (mi300x-vf selection).

The partition mode a record shows (SPX/NPS1, CPX/NPS4) is judged against the profile's partition.
Pure apart from reading the packaged target data, like `load_targets`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from validation.judge import Verdict, judge_target
from validation.records import Status
from validation.targets import load_targets
from validation.targets.loader import list_skus
from validation.targets.model import EQUAL, LOWER_IS_BETTER, Target, TargetProfile
from validation.targets.partition import split_partition

_SRIOV = re.compile(r"SRIOV", re.IGNORECASE)
_VF_NAME = re.compile(r"\bVF\b")
# Names HIP prints when it has no marketing name for the device (hipblaslt-bench 600 on an MI300X:
# tests/fixtures/real/hipblaslt-bench/mi300x-superbench-test-hipblaslt-v600.txt); they name no SKU.
# A name in angle brackets ('<GPU Name>') is an author's redaction
# (tests/fixtures/real/rocm-bandwidth-test/mi250x-likely-gpu-cluster-networking-e.txt).
_GENERIC_NAMES = re.compile(r"^(?:AMD Radeon(?:\(TM\))? Graphics|Graphics|<[^>]*>)?$", re.IGNORECASE)
_GFX = re.compile(r"\b(gfx[0-9a-f]+)(?::\S*)?", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuIdentity:
    """What one tool output says about one GPU; None = not shown."""

    subject: str                      # "gpu3" or "gpu3 (0000:5c:00.0)"
    device_id: int | None = None      # PCI device id (0x74a1)
    name: str | None = None           # market / product name as printed
    gfx_target: str | None = None     # "gfx942"
    sriov_marker: str | None = None   # the VBIOS or SKU string that says SR-IOV
    partition: str | None = None      # "SPX/NPS1" as the tool prints it
    compute_units: int | None = None  # rocminfo "Compute Unit"
    vram_mib: int | None = None       # the GPU's total memory as the tool reports it, in MiB
    tool: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Sku:
    name: str
    family: str
    ids: tuple[int, ...]
    pattern: re.Pattern[str] | None
    gfx: str | None
    capacity_mib: int | None = None
    floor_gb: float | None = None


@functools.cache
def _catalog() -> tuple[_Sku, ...]:
    skus = []
    for entry in list_skus():
        profile = load_targets(entry.name)
        pattern = profile.get("gpu_name_pattern")
        gfx = profile.get("gfx_target")
        floor = profile.get("vram_per_gpu_gb")
        skus.append(_Sku(name=entry.name, family=entry.sku, ids=tuple(int(i, 16) for i in entry.pci_device_ids),
                         pattern=re.compile(str(pattern.value), re.IGNORECASE) if pattern and pattern.value else None,
                         gfx=str(gfx.value).lower() if gfx and gfx.value else None,
                         capacity_mib=capacity_mib(profile),
                         floor_gb=float(floor.value) if floor is not None and isinstance(floor.value, (int, float))
                         else None))
    return tuple(skus)


def resolve(gpu: GpuIdentity) -> tuple[set[str], list[str]]:
    """(the SKU names the evidence agrees on, the evidence in words). The device id decides when a
    profile knows it; a name must not point elsewhere; a name no profile recognises counts only when
    there is no id. An empty set means no profile fits (unknown GPU or contradicting evidence)."""
    catalog = _catalog()
    evidence: list[str] = []
    found: set[str] | None = None
    if gpu.device_id is not None:
        found = {s.name for s in catalog if gpu.device_id in s.ids}
        evidence.append(f"device id 0x{gpu.device_id:04x} ("
                        + ("/".join(sorted(found)) if found else "no profile has this id") + ")")
    if gpu.name and not _GENERIC_NAMES.match(_model(gpu.name)):
        by_name = {s.name for s in catalog if s.pattern is not None and s.pattern.search(_model(gpu.name))}
        evidence.append(f"name {gpu.name!r} (" + ("/".join(sorted(by_name)) if by_name else
                                                  "no profile's gpu_name_pattern matches") + ")")
        if found is None:
            found = by_name
        elif by_name:
            agreed = found & by_name
            if not agreed:  # the id and the name point at different profiles
                same_family = {s.family for s in catalog if s.name in found} & \
                    {s.family for s in catalog if s.name in by_name}
                # a VF can report the bare-metal id: the name's variant wins within one family
                found = by_name if same_family else set()
            else:
                found = agreed
    found = found or set()
    if gpu.name and _VF_NAME.search(gpu.name) and found:
        families = {s.family for s in catalog if s.name in found}
        variants = {s.name for s in catalog if s.family in families and s.name.endswith("-vf")}
        if variants:
            evidence.append("the name says SR-IOV virtual function")
            found = variants
    if gpu.sriov_marker:
        evidence.append(f"SR-IOV firmware {gpu.sriov_marker!r} (not decisive: such GPUs report the bare-metal id)")
    return found, evidence


def _model(name: str) -> str:
    """What names the model in a name as printed: amd-smi cuts a name wider than its column from the left
    ("...Instinct MI300X OAM", ROCm 7.0: tests/fixtures/real/amd-smi/
    mi300x-x8-rocm-install-docs-ray-default-view-truncated-names-7.0.0.txt), and the rest still names it."""
    return name.strip().removeprefix("...").strip()


def names_a_gpu(name: str | None) -> bool:
    """Whether a name as printed names a model at all (HIP's generic "AMD Radeon Graphics" does not)."""
    return bool(name) and not _GENERIC_NAMES.match(_model(name or ""))


def skus_with_gfx(gfx: str) -> set[str]:
    """The profiles whose gfx target is `gfx` (a family: gfx942 is mi300x, its variants and mi325x)."""
    return {s.name for s in _catalog() if s.gfx == gfx.lower()}


def vf_variants(found: set[str]) -> set[str]:
    """The SR-IOV variants of the families in `found` (mi300x -> mi300x-vf)."""
    families = {s.family for s in _catalog() if s.name in found}
    return {s.name for s in _catalog() if s.family in families and s.name.endswith("-vf")}


def judge(identities: Iterable[GpuIdentity], profile: TargetProfile) -> list[Verdict]:
    """One identity verdict per group of GPUs that show the same thing, one gfx verdict per group
    where the profile names a gfx target, one partition verdict per group where the tool shows a
    partition mode and the profile has one, and the CU count and memory size where the tool shows
    them. GPUs that show nothing get no verdict."""
    groups: dict[tuple[object, ...], list[GpuIdentity]] = {}
    for gpu in identities:
        key = (gpu.device_id, gpu.name, gpu.gfx_target, gpu.sriov_marker, gpu.partition, gpu.compute_units,
               gpu.vram_mib, gpu.tool)
        groups.setdefault(key, []).append(gpu)
    verdicts: list[Verdict] = []
    for members in groups.values():
        first = members[0]
        subject = _subjects(members)
        named = bool(first.name and not _GENERIC_NAMES.match(_model(first.name)))
        if first.device_id is not None or named:
            verdicts.append(_judge_sku(first, subject, profile))
        gfx = profile.get("gfx_target")
        if first.gfx_target and gfx is not None:
            verdicts.append(judge_target(gfx, f"{subject} ({first.tool})", first.gfx_target.lower()))
        if first.partition and profile.partition:
            verdicts.append(_judge_partition(first, subject, profile))
        cus = profile.get("compute_unit_count")
        if first.compute_units is not None and cus is not None:
            verdicts.append(judge_target(cus, f"{subject} ({first.tool})", first.compute_units))
        if first.vram_mib is not None:
            verdicts += _judge_memory(first.vram_mib, f"{subject} ({first.tool})", profile)
    return verdicts


def capacity_mib(profile: TargetProfile) -> int | None:
    """The SKU's published memory capacity in MiB where the profile judges memory, else None.

    The published sizes are binary: ROCm's GPU hardware specifications list "VRAM (GiB)" (MI300X 192,
    MI325X 256; https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html), and what the tools
    report stays just below them: 196592 MiB on MI300X (amd-smi, rocm-smi, rocminfo), 81559 MiB on an
    80 GB H100 and 143771 MiB on a 141 GB H200 (nvidia-smi, tests/fixtures/real/nvidia-smi)."""
    target = profile.get("vram_per_gpu_gb")
    if target is None or target.record_only or not isinstance(target.value, (int, float)):
        return None
    return int(target.value * 1024)


def _judge_memory(vram_mib: int, subject: str, profile: TargetProfile) -> list[Verdict]:
    """The floor (vram_per_gpu_gb, decimal GB) and the SKU's capacity as a ceiling: more memory than the
    SKU has is another SKU's GPU, named where a profile's capacity fits it."""
    verdicts: list[Verdict] = []
    floor = profile.get("vram_per_gpu_gb")
    if floor is not None:
        verdicts.append(judge_target(floor, subject, round(vram_mib * (1 << 20) / 1e9, 2)))
    ceiling = capacity_mib(profile)
    if ceiling is None:
        return verdicts
    target = Target(metric="gpu_identity_memory_mib", value=ceiling, unit="MiB", direction=LOWER_IS_BETTER,
                    source=f"{profile.name} has {_fmt_gb(floor)} GB ({ceiling} MiB); a GPU reports at most its "
                           f"published capacity ({floor.source if floor is not None else ''})")
    verdict = judge_target(target, subject, vram_mib)
    if verdict.status is Status.FAIL:
        fits = sorted(s.name for s in _catalog() if s.capacity_mib and vram_mib <= s.capacity_mib
                      and vram_mib * (1 << 20) / 1e9 >= (s.floor_gb or 0))
        where = f"it fits {'/'.join(fits)}" if fits else "no profile's capacity fits it"
        verdict = _with_reason(verdict, f"{subject} has {vram_mib} MiB, more than {profile.name}'s {ceiling} MiB "
                                        f"({_fmt_gb(floor)} GB): it is not a {profile.name}; {where} ({target.source})")
    verdicts.append(verdict)
    return verdicts


def _fmt_gb(target: Target | None) -> str:
    value = target.value if target is not None else None
    return f"{value:g}" if isinstance(value, (int, float)) else "?"


def _judge_sku(gpu: GpuIdentity, subject: str, profile: TargetProfile) -> Verdict:
    found, evidence = resolve(gpu)
    target = Target(metric="gpu_identity", value=profile.name, unit="sku", direction=EQUAL,
                    source=_profile_source(profile))
    shown = "/".join(sorted(found)) if found else "unknown"
    verdict = judge_target(target, f"{subject} ({gpu.tool})", profile.name if profile.name in found else shown)
    detail = "; ".join(evidence)
    if verdict.status is Status.PASS:
        return _with_reason(verdict, f"{subject} is {profile.name}: {detail}")
    hint = (f"judge with --profile {next(iter(found))}" if len(found) == 1 else
            "add a profile for it" if not found else f"one of {shown}")
    return _with_reason(verdict, f"{subject} ({gpu.tool}) is {shown}, declared {profile.name}: {detail}; {hint} "
                                 f"or fix the declared SKU ({target.source})")


def _judge_partition(gpu: GpuIdentity, subject: str, profile: TargetProfile) -> Verdict:
    compute, memory = split_partition(gpu.partition or "")
    want_compute, want_memory = split_partition(profile.partition or "")
    shown = "/".join(p for p in (compute, memory) if p)
    target = Target(metric="gpu_partition", value=profile.partition, unit="mode", direction=EQUAL,
                    source=f"the targets of {profile.name} are for {profile.partition} (--partition / inventory)")
    same = (compute in (None, want_compute)) and (memory in (None, want_memory))
    verdict = judge_target(target, f"{subject} ({gpu.tool})", profile.partition if same else shown)
    if verdict.status is Status.PASS:
        return verdict
    return _with_reason(verdict, f"{subject} ({gpu.tool}) runs in partition mode {shown}, the profile's targets are "
                                 f"for {profile.partition}; judge with --partition {shown} or set the mode back")


def _profile_source(profile: TargetProfile) -> str:
    ids = ", ".join(profile.pci_device_ids) or "none"
    pattern = profile.get("gpu_name_pattern")
    name = f"; name pattern {pattern.value!r}" if pattern is not None else ""
    return f"{profile.name} selection: PCI device ids {ids}{name} ({profile.source_file.rsplit('/', 1)[-1]})"


def _with_reason(verdict: Verdict, reason: str) -> Verdict:
    return Verdict(status=verdict.status, subject=verdict.subject, metric=verdict.metric, measured=verdict.measured,
                   unit=verdict.unit, target=verdict.target, reason=reason, code=verdict.code, hint=verdict.hint)


def _subjects(members: list[GpuIdentity]) -> str:
    names = [m.subject for m in members]
    if len(names) <= 4:
        return ", ".join(names)
    return f"{names[0]} .. {names[-1]} ({len(names)} GPUs)"


# --- identities from each tool's record -------------------------------------------------------

def from_rocminfo(record: object) -> list[GpuIdentity]:
    return [GpuIdentity(subject=f"gpu{i}" + (f" ({g.bdf})" if g.bdf else ""), device_id=g.chip_id or None,
                        name=g.marketing_name, gfx_target=g.gfx_target, compute_units=g.compute_units,
                        vram_mib=g.vram_kib // 1024 if g.vram_kib else None, tool="rocminfo")
            for i, g in enumerate(record.gpus)]  # type: ignore[attr-defined]


def from_rocm_smi(record: object) -> list[GpuIdentity]:
    out = []
    for g in record.gpus:  # type: ignore[attr-defined]
        marker = next((v for v in (g.card_sku, g.vbios_version) if v and _SRIOV.search(v)), None)
        name = g.name if g.name and not re.fullmatch(r"0x[0-9a-fA-F]+", g.name) else None
        device = g.device_id or (int(g.name, 16) if g.name and name is None else None)
        partition = "/".join(p for p in (g.compute_partition, g.memory_partition) if p) or None
        vram = g.vram_total_bytes >> 20 if g.vram_total_bytes else None
        out.append(GpuIdentity(subject=f"gpu{g.index}", device_id=device, name=name, gfx_target=g.gfx_version,
                               sriov_marker=marker, partition=partition, vram_mib=vram, tool="rocm-smi"))
    return out


def from_amd_smi(record: object) -> list[GpuIdentity]:
    out = []
    for g in record.gpus:  # type: ignore[attr-defined]
        name = g.market_name if g.market_name and _model(g.market_name) else None
        partition = "/".join(p for p in (g.compute_partition, g.memory_partition) if p) or None
        out.append(GpuIdentity(subject=f"gpu{g.index}" + (f" ({g.bdf})" if g.bdf else ""), device_id=g.device_id,
                               name=name, gfx_target=getattr(g, "gfx_target", None), partition=partition,
                               vram_mib=g.vram_total_mib, tool="amd-smi"))
    return out


def from_nvidia_smi(record: object) -> list[GpuIdentity]:
    return [GpuIdentity(subject=f"gpu{g.index}" + (f" ({g.bus_id})" if g.bus_id else ""),
                        device_id=getattr(g, "pci_device_id", None), name=g.name, vram_mib=g.memory_total_mib,
                        tool="nvidia-smi")
            for g in record.gpus]  # type: ignore[attr-defined]


def from_collective(record: object) -> list[GpuIdentity]:
    """rccl-tests / nccl-tests `# Rank N ... device D [bus] <name>` lines."""
    return [GpuIdentity(subject=f"rank{d.rank}", name=d.name or None, tool=record.tool)  # type: ignore[attr-defined]
            for d in record.devices]  # type: ignore[attr-defined]


def from_blas_bench(record: object) -> list[GpuIdentity]:
    """hipblaslt-bench / rocblas-bench `Device ID N : <name> gfx942:sramecc+:xnack-` lines."""
    out = []
    for d in record.devices:  # type: ignore[attr-defined]
        gfx = _GFX.search(d.name)
        name = _GFX.sub("", d.name).strip() or None
        out.append(GpuIdentity(subject=f"gpu{d.index}", name=name, gfx_target=gfx.group(1).lower() if gfx else None,
                               tool=record.tool))  # type: ignore[attr-defined]
    return out


def from_babelstream(record: object) -> list[GpuIdentity]:
    """BabelStream's `Using HIP device <name>` line of each rank."""
    return [GpuIdentity(subject="gpu" if d.rank is None else f"rank{d.rank}", name=d.name, tool="babelstream")
            for d in record.devices]  # type: ignore[attr-defined]
