"""Pure judging: a measurement and a target profile in, a Verdict out. No I/O, no clock.

Rules (see validation/targets/model.py for the threshold arithmetic):
- higher_is_better: below the floor FAIL; within `warn` above the floor WARN; else PASS.
- lower_is_better: above the ceiling FAIL; within `warn` below the ceiling WARN; else PASS.
- equal: anything but the value FAIL (error counters must be 0, the GPU count must match).
- record-only targets give SKIP with the measured value kept and "record only: <why>".
- a missing measurement (None) is ERROR "not reported", never PASS; a metric the profile does not
  know is ERROR too; a timeout is TIMEOUT, never folded into FAIL.
Every non-PASS verdict carries a stable code from CODES and that code's remediation hint.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from validation.codes import CODES
from validation.records import LinkBandwidth, Status, worst
from validation.targets.model import EQUAL, HIGHER_IS_BETTER, Target, TargetProfile

# metric-name prefix -> code for a measurement on the failing side of its threshold (first match wins)
_CODE_BY_PREFIX: tuple[tuple[str, str], ...] = (
    ("pci_device_id", "RF-SKU-MISMATCH"),
    ("gpu_identity", "RF-SKU-MISMATCH"),
    ("gpu_name_pattern", "RF-SKU-MISMATCH"),
    ("gfx_target", "RF-SKU-MISMATCH"),
    ("compute_unit_count", "RF-CU-COUNT"),
    ("gpu_partition", "RF-PARTITION-MISMATCH"),
    ("idle_throttled", "RF-GPU-THROTTLED"),
    ("idle_temperature", "RF-TEMP-HIGH"),
    ("idle_", "RF-GPU-BUSY"),
    ("torch_matmul_", "RF-GEMM-LOW"),
    ("scaling_matmul_", "RF-GEMM-LOW"),
    ("torch_device_copy", "RF-HBM-LOW"),
    ("torch_h2d", "RF-BW-HOST-LOW"),
    ("torch_d2h", "RF-BW-HOST-LOW"),
    ("torch_conv2d", "RF-MIOPEN-LOW"),
    ("resnet50_", "RF-MODEL-LOW"),
    ("scaling_resnet50", "RF-MODEL-LOW"),
    ("burnin_wrong", "RF-BURNIN-WRONG-RESULT"),
    ("burnin_temperature", "RF-BURNIN-TEMP-HIGH"),
    ("burnin_power", "RF-BURNIN-POWER-HIGH"),
    ("burnin_ecc_uncorrectable", "RF-BURNIN-ECC-UNCORRECTABLE"),
    ("burnin_ecc_correctable", "RF-BURNIN-ECC-CORRECTABLE"),
    ("burnin_throttled", "RF-BURNIN-THROTTLED"),
    ("burnin_sustained", "RF-BURNIN-SUSTAINED-DROP"),
    ("burnin_", "RF-GEMM-LOW"),
    ("vram_", "RF-VRAM-LOW"),
    ("pcie_fatal", "RF-PCIE-FATAL"),
    ("pcie_link_", "RF-PCIE-DOWNGRADED"),
    ("gemm_", "RF-GEMM-LOW"),
    ("rocblas_", "RF-GEMM-LOW"),
    ("dcgm_sm_stress", "RF-GEMM-LOW"),
    ("babelstream_", "RF-HBM-LOW"),
    ("hbm_", "RF-HBM-LOW"),
    ("rvs_mem_", "RF-HBM-LOW"),
    ("tb_local_", "RF-HBM-LOW"),
    ("tb_memset", "RF-HBM-LOW"),
    ("dcgm_memory", "RF-HBM-LOW"),
    ("tb_cpu_to_gpu", "RF-BW-HOST-LOW"),
    ("tb_gpu_to_cpu", "RF-BW-HOST-LOW"),
    ("tb_bidir", "RF-BW-HOST-LOW"),
    ("rbt_cpu_gpu", "RF-BW-HOST-LOW"),
    ("nvbandwidth_h2d", "RF-BW-HOST-LOW"),
    ("nvbandwidth_d2h", "RF-BW-HOST-LOW"),
    ("xgmi_pair", "RF-BW-XGMI-LOW"),
    ("rbt_gpu_gpu", "RF-BW-XGMI-LOW"),
    ("tb_a2a", "RF-BW-XGMI-LOW"),
    ("tb_p2p", "RF-BW-XGMI-LOW"),
    ("tb_example", "RF-BW-XGMI-LOW"),
    ("tb_scaling", "RF-BW-XGMI-LOW"),
    ("nvbandwidth_p2p", "RF-BW-NVLINK-LOW"),
    ("allreduce_", "RF-RCCL-BUSBW-LOW"),
    ("allgather_", "RF-RCCL-BUSBW-LOW"),
    ("alltoall_", "RF-RCCL-BUSBW-LOW"),
    ("miopen_verify", "RF-MIOPEN-VERIFY"),
    ("miopen_", "RF-MIOPEN-LOW"),
    ("collective_wrong", "RF-RCCL-WRONG"),
    ("collective_busbw_dip", "RF-RCCL-DIP"),
    ("ecc_", "RF-ECC"),
    ("xgmi_error", "RF-XGMI-ERRORS"),
    ("iet_power", "RF-POWER-LOW"),
    ("dcgm_targeted_power", "RF-POWER-LOW"),
    ("gpu_temperature", "RF-TEMP-HIGH"),
    ("ib_", "RF-NET-LOW"),
    ("rdma_port", "RF-NET-RAIL-DOWN"),
    ("rdma_gid", "RF-NET-GID"),
    ("topology_link_type", "RF-TOPO-LINK-TYPE"),
    ("topology_hops", "RF-TOPO-HOPS"),
    ("topology_weight", "RF-TOPO-WEIGHT"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """One judgement. `measured` is kept for every status, SKIP included; `code`/`hint` empty on PASS."""

    status: Status
    subject: str
    metric: str
    measured: float | str | None
    unit: str
    target: Target | None
    reason: str
    code: str = ""
    hint: str = ""


def failure_code(metric: str, target: Target | None = None, measured: float | str | None = None) -> str:
    """The stable code for `metric` measured on the failing side of its target."""
    if metric == "gpu_count":
        expected = target.value if target is not None else None
        if isinstance(measured, (int, float)) and isinstance(expected, (int, float)):
            return "RF-GPU-MISSING" if measured < expected else "RF-GPU-COUNT"
        return "RF-GPU-MISSING"
    for prefix, code in _CODE_BY_PREFIX:
        if metric.startswith(prefix):
            return code
    if target is not None and target.direction == EQUAL:
        return "RF-MISMATCH"
    if target is not None and target.direction != HIGHER_IS_BETTER:
        return "RF-ABOVE-TARGET"
    return "RF-BELOW-TARGET"


def judge_value(metric: str, subject: str, measured: float | str | None, profile: TargetProfile) -> Verdict:
    """Judge one measurement of `metric` for `subject` ("gpu3", "node", "gpu5 -> gpu2")."""
    target = profile.get(metric)
    if target is None:
        return _verdict(Status.ERROR, subject, metric, measured, None, "RF-NO-TARGET",
                        f"{subject} {metric}: no target in profile {profile.name}")
    return judge_target(target, subject, measured)


def judge_target(target: Target, subject: str, measured: float | str | None) -> Verdict:
    """Judge one measurement against one target."""
    metric, unit = target.metric, target.unit
    if measured is None:
        return _verdict(Status.ERROR, subject, metric, None, target, "RF-NOT-REPORTED",
                        f"{subject} {metric}: not reported (target {_target_text(target)})")
    if isinstance(measured, bool) or not isinstance(measured, (int, float, str)):
        return _verdict(Status.ERROR, subject, metric, None, target, "RF-BAD-MEASUREMENT",
                        f"{subject} {metric}: measurement {measured!r} is not a number")
    if isinstance(measured, float) and not math.isfinite(measured):
        return _verdict(Status.ERROR, subject, metric, measured, target, "RF-BAD-MEASUREMENT",
                        f"{subject} {metric}: measurement {measured!r} is not a finite number")
    shown = _fmt(measured)
    if target.record_only or target.threshold is None:
        return _verdict(Status.SKIP, subject, metric, measured, target, "",
                        f"record only: {subject} {metric} {shown} {unit}; no threshold ({target.source})")
    threshold = target.threshold
    if target.direction == EQUAL or isinstance(threshold, str):
        if _same(measured, threshold):
            return _verdict(Status.PASS, subject, metric, measured, target, "",
                            f"{subject} {metric} {shown} {unit} == {_fmt(threshold)} {unit}")
        code = failure_code(metric, target, measured)
        return _verdict(Status.FAIL, subject, metric, measured, target, code,
                        f"{subject} {metric} {shown} {unit} != expected {_fmt(threshold)} {unit} "
                        f"({target.source})")
    if isinstance(measured, str):
        return _verdict(Status.ERROR, subject, metric, measured, target, "RF-BAD-MEASUREMENT",
                        f"{subject} {metric}: measurement {measured!r} is not a number")
    code = failure_code(metric, target, measured)
    warn_line = target.warn_line
    if target.direction == HIGHER_IS_BETTER:
        if measured < threshold:
            return _verdict(Status.FAIL, subject, metric, measured, target, code,
                            f"{subject} {metric} {shown} {unit} < floor {_fmt(threshold)} {unit} "
                            f"({target.source})")
        if warn_line is not None and measured < warn_line:
            return _verdict(Status.WARN, subject, metric, measured, target, code,
                            f"{subject} {metric} {shown} {unit} < warn line {_fmt(warn_line)} {unit} "
                            f"(floor {_fmt(threshold)} {unit}; {target.source})")
        return _verdict(Status.PASS, subject, metric, measured, target, "",
                        f"{subject} {metric} {shown} {unit} >= floor {_fmt(threshold)} {unit}")
    if measured > threshold:
        return _verdict(Status.FAIL, subject, metric, measured, target, code,
                        f"{subject} {metric} {shown} {unit} > ceiling {_fmt(threshold)} {unit} "
                        f"({target.source})")
    if warn_line is not None and measured > warn_line:
        return _verdict(Status.WARN, subject, metric, measured, target, code,
                        f"{subject} {metric} {shown} {unit} > warn line {_fmt(warn_line)} {unit} "
                        f"(ceiling {_fmt(threshold)} {unit}; {target.source})")
    return _verdict(Status.PASS, subject, metric, measured, target, "",
                    f"{subject} {metric} {shown} {unit} <= ceiling {_fmt(threshold)} {unit}")


def judge_count(metric: str, subject: str, count: int | None, profile: TargetProfile) -> Verdict:
    """Error counters and other equality metrics (ECC, xGMI errors, #wrong, GPU count)."""
    return judge_value(metric, subject, count, profile)


def judge_incomplete(subject: str, missing: str) -> Verdict:
    """A tool output that is cut short: ERROR naming what is missing, so the file can never pass."""
    return _verdict(Status.ERROR, subject, "output_complete", None, None, "RF-INCOMPLETE-OUTPUT",
                    f"{subject} is incomplete: {missing}; nothing in it can pass")


def judge_timeout(metric: str, subject: str, seconds: float, profile: TargetProfile | None = None) -> Verdict:
    """The tool behind `metric` hit its time limit; TIMEOUT, never FAIL."""
    target = profile.get(metric) if profile is not None else None
    return _verdict(Status.TIMEOUT, subject, metric, None, target, "RF-TIMEOUT",
                    f"{subject} {metric}: timed out after {_fmt(float(seconds))} s; no measurement")


def judge_links(
    links: Iterable[LinkBandwidth],
    metric: str,
    profile: TargetProfile,
    *,
    expected_pairs: Iterable[tuple[str, str]] | None = None,
) -> list[Verdict]:
    """One verdict per directed pair ("gpu5 -> gpu2"), in the order given; self-links are skipped.

    A pair measured twice keeps the lower (worse) reading. With `expected_pairs`, every pair that
    was not measured becomes an ERROR "not reported" so a missing GPU cannot pass by absence.
    """
    best: dict[tuple[str, str], float] = {}
    for link in links:
        if link.src == link.dst:
            continue
        key = (link.src, link.dst)
        best[key] = min(best[key], link.gb_s) if key in best else link.gb_s
    verdicts = [judge_value(metric, f"{src} -> {dst}", gb_s, profile) for (src, dst), gb_s in best.items()]
    for src, dst in expected_pairs or ():
        if src != dst and (src, dst) not in best:
            verdicts.append(judge_value(metric, f"{src} -> {dst}", None, profile))
    return verdicts


def all_pairs(endpoints: Iterable[str]) -> list[tuple[str, str]]:
    """Every ordered pair of distinct endpoints: 8 GPUs -> 56 pairs."""
    names = list(endpoints)
    return [(a, b) for a in names for b in names if a != b]


# Why a dip at one size that the next size recovers from is not a failure (judge_no_dip).
DIP_RECOVERY_BASIS = (
    "a one-size dip that the next larger size recovers from is tolerated: rccl-tests changes protocol and "
    "algorithm at fixed sizes, AMD's published healthy 8xMI300X all_reduce (ROCm/rocm-blogs "
    "blogs/software-tools-optimization/mi300x-rccl-xgmi; tests/fixtures/real/rccl-tests/"
    "mi300x-8gpu-rocm-blogs-rccl-xgmi-allreduce.txt) drops 105.35 -> 56.92 GB/s in-place at 4 MiB and reads "
    "169.37 GB/s at 8 MiB, and CVS's later check_bw_dip compares only the sizes it has reference numbers for "
    "(ROCm/cvs cvs/lib/rccl_lib.py)")

# CVS check_bw_dip holds the target fraction (5 %) only between the sizes it has reference numbers for;
# outside them the one published line is CVS's own RCCL report, which flags a drop of more than 10 % from
# the previous size (html_lib.py build_rccl_result_default_table, bw_dip_threshold=10.0). A drop between
# the two that lasts (a multi-node plateau at the largest sizes) is named, not failed.
DIP_REPORT_FLAG = 0.10
DIP_OUTSIDE_REFERENCE_BASIS = (
    "outside the reference sizes CVS's check_bw_dip does not apply (ROCm/cvs cvs/lib/rccl_lib.py: "
    "'Only validates message sizes specified in the reference'); a drop there fails only beyond the 10% "
    "that CVS's RCCL report flags (ROCm/cvs cvs/lib/html_lib.py build_rccl_result_default_table, "
    "bw_dip_threshold=10.0)")


def judge_no_dip(
    metric: str,
    subject: str,
    series: Iterable[tuple[int, float | None]],
    profile: TargetProfile,
    *,
    series_unit: str = "GB/s",
    reference_sizes: Iterable[int] = (),
) -> Verdict:
    """Bus bandwidth must not drop as the size grows (CVS check_bw_dip), with CVS's scope.

    series: (size_bytes, value) points. Between two consecutive `reference_sizes` (the sizes the
    profile has a bus-bandwidth target for) a drop of more than the target fraction (e.g.
    collective_busbw_dip_max_fraction, 0.05) fails, as in CVS. Between other sizes a drop that the
    next size recovers from is tolerated (DIP_RECOVERY_BASIS); one that lasts, or comes at the last
    size, fails beyond DIP_REPORT_FLAG and is named below it (DIP_OUTSIDE_REFERENCE_BASIS).
    """
    target = profile.get(metric)
    if target is None:
        return _verdict(Status.ERROR, subject, metric, None, None, "RF-NO-TARGET",
                        f"{subject} {metric}: no target in profile {profile.name}")
    points = sorted((size, value) for size, value in series if value is not None)
    if len(points) < 2:
        return _verdict(Status.ERROR, subject, metric, None, target, "RF-NOT-REPORTED",
                        f"{subject} {metric}: fewer than two sizes reported; cannot check for dips")
    if target.record_only or not isinstance(target.threshold, (int, float)):
        return judge_target(target, subject, round(_worst_drop(points), 6))
    limit = float(target.threshold)
    references = {size for size, _ in points} & set(reference_sizes)
    ref_points = [p for p in points if p[0] in references]
    failing: list[str] = []
    named: list[str] = []
    tolerated: list[str] = []
    for prev, cur in pairwise(ref_points):
        drop = _drop(prev, cur)
        if drop > limit:
            failing.append(f"{_step(prev, cur, series_unit)} (-{drop * 100:.1f}%, reference sizes)")
    for i in range(1, len(points)):
        prev, cur = points[i - 1], points[i]
        drop = _drop(prev, cur)
        if drop <= limit or (prev[0] in references and cur[0] in references):
            continue
        after = points[i + 1] if i + 1 < len(points) else None
        if after is not None and after[1] >= prev[1] * (1 - limit):
            tolerated.append(f"{_step(prev, cur, series_unit)}, back to {_fmt(after[1])} {series_unit} at "
                             f"{_size(after[0])}")
        elif drop > DIP_REPORT_FLAG:
            failing.append(f"{_step(prev, cur, series_unit)} (-{drop * 100:.1f}%)")
        else:
            named.append(f"{_step(prev, cur, series_unit)} (-{drop * 100:.1f}%)")
    drop_fraction = round(_worst_drop(points), 6)
    scope = (f"no drop over {_fmt(limit)} between the reference sizes {', '.join(_size(s) for s in sorted(references))}"
             if len(references) > 1 else "the run has no two reference sizes for check_bw_dip to compare")
    if failing:
        return _verdict(Status.FAIL, subject, metric, drop_fraction, target, failure_code(metric, target),
                        f"{subject} {metric}: bandwidth dips as size grows: {'; '.join(failing)}; allowed drop "
                        f"{_fmt(limit)} at the reference sizes, {_fmt(DIP_REPORT_FLAG)} elsewhere "
                        f"({target.source}; {DIP_OUTSIDE_REFERENCE_BASIS})")
    notes = [scope]
    if named:
        notes.append(f"lasting drops within {_fmt(DIP_REPORT_FLAG)}, named not failed: {'; '.join(named)} "
                     f"({DIP_OUTSIDE_REFERENCE_BASIS})")
    if tolerated:
        notes.append(f"tolerated: {'; '.join(tolerated)} ({DIP_RECOVERY_BASIS})")
    return _verdict(Status.PASS, subject, metric, drop_fraction, target, "",
                    f"{subject} {metric}: {'; '.join(notes)}")


def _drop(prev: tuple[int, float], cur: tuple[int, float]) -> float:
    return (prev[1] - cur[1]) / prev[1] if prev[1] > 0 else 0.0


def _worst_drop(points: list[tuple[int, float]]) -> float:
    return max([0.0, *(_drop(a, b) for a, b in pairwise(points))])


def aggregate(verdicts: Iterable[Verdict]) -> Status:
    """The worst status of a group. An empty group is ERROR: no verdict is never a pass."""
    statuses = [v.status for v in verdicts]
    if not statuses:
        return Status.ERROR
    return worst(statuses)


# ---------------------------------------------------------------------------------------------


def _verdict(status: Status, subject: str, metric: str, measured: float | str | None, target: Target | None,
             code: str, reason: str) -> Verdict:
    return Verdict(status=status, subject=subject, metric=metric, measured=measured,
                   unit=target.unit if target is not None else "", target=target, reason=reason,
                   code=code, hint=CODES.get(code, "") if code else "")


def _same(measured: float | str, expected: float | str) -> bool:
    if isinstance(expected, str) or isinstance(measured, str):
        return _norm_id(str(measured)) == _norm_id(str(expected))
    return float(measured) == float(expected)


def _norm_id(text: str) -> str:
    text = text.strip().lower()
    if ":" in text:
        text = text.split(":")[-1]
    try:
        return f"0x{int(text.removeprefix('0x'), 16):04x}"
    except ValueError:
        return text


def _fmt(value: float | str) -> str:
    if isinstance(value, (str, int)):
        return str(value)
    text = f"{value:.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _step(prev: tuple[int, float], cur: tuple[int, float], unit: str) -> str:
    return f"{_fmt(prev[1])} -> {_fmt(cur[1])} {unit} from {_size(prev[0])} to {_size(cur[0])}"


def _size(size_bytes: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= factor and size_bytes % factor == 0:
            return f"{size_bytes // factor} {unit}"
    return f"{size_bytes} B"


def _target_text(target: Target) -> str:
    if target.record_only or target.threshold is None:
        return "record only"
    return f"{_fmt(target.threshold)} {target.unit}, {target.source}"
