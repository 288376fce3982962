"""From a parsed tool record to verdicts: which metric each number is, and for which GPU or link.

The one place that knows how a tool's record maps onto the target metrics in
validation/targets/data/*.yaml. Used by `rocm-fleet judge` (saved outputs) and by the native
probes of the validation suite. Pure: records and a profile in, verdicts out.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from validation.judge import Verdict, judge_links, judge_no_dip, judge_target, judge_value
from validation.records import LinkBandwidth
from validation.targets.model import TargetProfile

GIB = 1 << 30


def _endpoint(name: str) -> str:
    """TransferBench 'G0'/'GPU 00'/'C0' -> 'gpu0'/'cpu0'; names already like 'gpu3' pass through."""
    text = name.strip().lower().replace(" ", "")
    for prefix, kind in (("gpu", "gpu"), ("cpu", "cpu"), ("g", "gpu"), ("c", "cpu"), ("f", "gpu")):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return f"{kind}{int(text[len(prefix):])}"
    return text


def collective(record: Any, profile: TargetProfile) -> list[Verdict]:
    """rccl-tests / nccl-tests: bus bandwidth at the target sizes, #wrong, no dip as sizes grow."""
    subject = f"{record.tool} {record.ranks or len(record.devices) or '?'} ranks"
    verdicts: list[Verdict] = []
    by_size = {row.size_bytes: row for row in record.rows}
    for metric, size in (("allreduce_busbw_8g_gb_s", 8 * GIB), ("allreduce_busbw_16g_gb_s", 16 * GIB)):
        if metric in profile and size in by_size:
            at = f"{subject} @ {size // GIB} GiB in-place"
            verdicts.append(judge_value(metric, at, by_size[size].in_place.busbw_gb_s, profile))
    if "allreduce_avg_busbw_gb_s" in profile and record.avg_busbw_gb_s is not None:
        verdicts.append(judge_value("allreduce_avg_busbw_gb_s", subject, record.avg_busbw_gb_s, profile))
    wrong = [(row.size_bytes, m.wrong) for row in record.rows for m in (row.out_of_place, row.in_place)
             if m.wrong is not None]
    if wrong:
        worst = max(w for _, w in wrong)
        at = next(size for size, w in wrong if w == worst)
        verdicts.append(judge_value("collective_wrong_count", f"{subject} @ {at} B", worst, profile))
    if record.rows:
        verdicts.append(judge_no_dip("collective_busbw_dip_max_fraction", subject,
                                     [(row.size_bytes, row.in_place.busbw_gb_s) for row in record.rows], profile))
    return verdicts


def transferbench(record: Any, profile: TargetProfile) -> list[Verdict]:
    """Every GPU pair of an a2a / p2p run against the per-link xGMI limit; CPU<->GPU against theirs."""
    links: list[LinkBandwidth] = []
    if record.summary is not None:
        links += list(record.summary.links)
    if record.unidirectional is not None:
        links += list(record.unidirectional.links)
    named = [LinkBandwidth(src=_endpoint(link.src), dst=_endpoint(link.dst), gb_s=link.gb_s) for link in links]
    gpu_pairs = [link for link in named if link.src.startswith("gpu") and link.dst.startswith("gpu")
                 and link.src != link.dst]
    to_gpu = [link for link in named if link.src.startswith("cpu") and link.dst.startswith("gpu")]
    to_cpu = [link for link in named if link.src.startswith("gpu") and link.dst.startswith("cpu")]
    verdicts: list[Verdict] = []
    if gpu_pairs:
        verdicts += judge_links(gpu_pairs, "xgmi_pair_gb_s", profile)
    if to_gpu:
        verdicts += judge_links(to_gpu, "tb_cpu_to_gpu_gb_s", profile)
    if to_cpu:
        verdicts += judge_links(to_cpu, "tb_gpu_to_cpu_gb_s", profile)
    return verdicts


def rocm_bandwidth_test(record: Any, profile: TargetProfile) -> list[Verdict]:
    """rocm-bandwidth-test -a matrices: CPU<->GPU and GPU<->GPU against Azure NHC's limits."""
    from validation.parsers import rocm_bandwidth_test as rbt

    names = rbt.endpoint_names(record.devices)
    verdicts: list[Verdict] = []
    for matrix in record.matrices:
        if "uni" not in matrix.kind.lower():
            continue
        links = [link for link in rbt.links(matrix, names) if link.src != link.dst]
        cpu_gpu = [link for link in links if "cpu" in (link.src[:3], link.dst[:3])]
        gpu_gpu = [link for link in links if link.src.startswith("gpu") and link.dst.startswith("gpu")]
        if cpu_gpu:
            verdicts += judge_links(cpu_gpu, "rbt_cpu_gpu_gb_s", profile)
        if gpu_gpu:
            verdicts += judge_links(gpu_gpu, "rbt_gpu_gpu_gb_s", profile)
    return verdicts


def babelstream(record: Any, profile: TargetProfile) -> list[Verdict]:
    """BabelStream kernels per rank (MBytes/sec -> GB/s)."""
    verdicts: list[Verdict] = []
    for table in record.tables:
        subject = "gpu" if table.rank is None else f"gpu{table.rank}"
        for row in table.rows:
            metric = f"babelstream_{row.function.lower()}_gb_s"
            if metric in profile:
                verdicts.append(judge_value(metric, subject, row.mb_s / 1000, profile))
    return verdicts


def _gpu_count(found: int, subject: str, profile: TargetProfile, missing: list[int] | None = None) -> Verdict:
    if missing:
        subject = f"{subject}, missing {', '.join(f'gpu{i}' for i in missing)}"
    return judge_value("gpu_count", subject, found, profile)


def rocm_smi(record: Any, profile: TargetProfile) -> list[Verdict]:
    """GPU count (missing indices named when the others are numbered) from any rocm-smi view."""
    indices = sorted(g.index for g in record.gpus)
    declared = profile.get("gpu_count")
    expected = int(declared.value) if declared is not None and declared.value is not None else None
    missing = sorted(set(range(expected)) - set(indices)) if expected else []
    return [_gpu_count(len(indices), "node (rocm-smi)", profile, missing)]


def rocminfo(record: Any, profile: TargetProfile) -> list[Verdict]:
    return [_gpu_count(len(record.gpus), "node (rocminfo GPU agents)", profile)]


def amd_smi(record: Any, profile: TargetProfile) -> list[Verdict]:
    """ECC counters per GPU where the view reports them, else the GPU count."""
    verdicts: list[Verdict] = []
    for gpu in record.gpus:
        subject = f"gpu{gpu.index}"
        if gpu.ecc_uncorrectable is not None:
            verdicts.append(judge_value("ecc_uncorrectable_count", subject, gpu.ecc_uncorrectable, profile))
        if gpu.ecc_correctable is not None:
            verdicts.append(judge_value("ecc_correctable_count", subject, gpu.ecc_correctable, profile))
    return verdicts or [_gpu_count(len(record.gpus), "node (amd-smi)", profile)]


def lspci(record: Any, profile: TargetProfile) -> list[Verdict]:
    """Every PCIe link that trained below its own capability fails, naming the device; AMD GPUs
    are also judged against the SKU's Gen5 x16 target."""
    verdicts: list[Verdict] = []
    speed_t, width_t = profile.get("pcie_link_speed_gt_s"), profile.get("pcie_link_width")
    for dev in record.devices:
        cap, sta = dev.link_capability, dev.link_status
        if cap is None or sta is None or speed_t is None or width_t is None:
            continue
        subject = f"{dev.bdf} {dev.description[:40]}"
        for target, have, own in ((speed_t, sta.speed_gt_s, cap.speed_gt_s), (width_t, sta.width, cap.width)):
            if own is not None:
                mine = dataclasses.replace(target, value=own, record_only=False, tolerance=0.0, warn=0.0,
                                           source=f"the device's own LnkCap ({own:g} {target.unit})")
                verdicts.append(judge_target(mine, subject, have))
            if dev.vendor_id == 0x1002 and not target.record_only:
                verdicts.append(judge_target(target, subject, have))
        if dev.fatal_error:
            verdicts.append(judge_value("pcie_fatal_error_count", subject, 1, profile))
    return verdicts


_GST_ACTION = re.compile(r"(?P<init>rand|trig)-(?P<dtype>fp8|fp16|bf16)$|(?P<blas>sgemm|dgemm)$")


def rvs(record: Any, profile: TargetProfile) -> list[Verdict]:
    """RVS GST: the best GFLOPS of each action on each GPU against our own copy of the target
    (RVS's own `met:` flag is not trusted)."""
    best: dict[tuple[str, int], float] = {}
    for sample in record.gst:
        key = (sample.action, sample.gpu_id)
        best[key] = max(best.get(key, 0.0), sample.gflops)
    verdicts: list[Verdict] = []
    for (action, gpu_id), gflops in sorted(best.items()):
        m = _GST_ACTION.search(action)
        if m is None:
            continue
        if m["blas"]:
            metric = "gemm_fp32_tflops" if m["blas"] == "sgemm" else "gemm_fp64_tflops"
        else:
            metric = f"gemm_{m['dtype']}_{m['init']}_tflops"
        if metric in profile:
            verdicts.append(judge_value(metric, f"gpu id {gpu_id} ({action})", gflops / 1000, profile))
    # IET power samples are not judged here: each IET action names its own target (iet-620W-...,
    # iet-750W-...), and ramp-up samples below it are normal; the acceptance tier judges the sustained value.
    return verdicts


JUDGES: dict[str, Callable[[Any, TargetProfile], list[Verdict]]] = {
    "rvs": rvs,
    "rocm-smi": rocm_smi,
    "rocminfo": rocminfo,
    "amd-smi": amd_smi,
    "lspci": lspci,
    "rccl-tests": collective,
    "nccl-tests": collective,
    "transferbench": transferbench,
    "rocm-bandwidth-test": rocm_bandwidth_test,
    "babelstream": babelstream,
}


def verdicts_for(tool: str, record: Any, profile: TargetProfile) -> list[Verdict]:
    if tool not in JUDGES:
        raise KeyError(tool)
    return JUDGES[tool](record, profile)
