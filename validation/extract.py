"""From a parsed tool record to verdicts: which metric each number is, and for which GPU or link.

The one place that knows how a tool's record maps onto the target metrics in
validation/targets/data/*.yaml. Used by `rocm-fleet judge` (saved outputs) and by the native
probes of the validation suite. Pure: records and a profile in, verdicts out.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import shlex
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from validation import identity, saved_activity, topology
from validation.judge import Verdict, judge_incomplete, judge_links, judge_no_dip, judge_target, judge_value
from validation.records import LinkBandwidth, Status
from validation.targets.model import TargetProfile

GIB = 1 << 30


def _endpoint(name: str) -> str:
    """TransferBench 'G0'/'GPU 00'/'C0' -> 'gpu0'/'cpu0'; names already like 'gpu3' pass through."""
    text = name.strip().lower().replace(" ", "")
    for prefix, kind in (("gpu", "gpu"), ("cpu", "cpu"), ("g", "gpu"), ("c", "cpu"), ("f", "gpu")):
        if text.startswith(prefix) and text[len(prefix):].isdigit():
            return f"{kind}{int(text[len(prefix):])}"
    return text


# Which half of the rccl-tests table each collective's size targets read: AMD's all_reduce number
# is in-place busBW; CVS's all_gather/alltoall rows are read out-of-place (UNCERTAIN for CVS).
_COLLECTIVE_TARGETS = {
    "all_reduce": ("allreduce", "in_place"),
    "all_gather": ("allgather", "out_of_place"),
    "alltoall": ("alltoall", "out_of_place"),
}


def collective_name(record: Any) -> str | None:
    """all_reduce / all_gather / alltoall / ... from the command's `<name>_perf` binary; without a
    command, a run whose rows carry a reduction op is taken as all_reduce, anything else is unknown."""
    for token in _tokens(record.command):
        base = PurePath(token).name
        if base.endswith("_perf"):
            return base.removesuffix("_perf")
    return "all_reduce" if {row.redop for row in record.rows} - {None, "none"} else None


# allreduce_avg_busbw_gb_s is defined over 1 KiB..2 GiB (ROCm/gpu-operator cluster-validation-config.yaml
# PHASE2: all_reduce "Avg bus bandwidth" over 1K-2G, see validation/targets/data/mi300x.yaml). rccl-tests'
# "# Avg bus bandwidth" averages every size and both halves of the table it ran (nccl-tests src/common.cu
# adds each busBw and counts it), so a run over other sizes reports another quantity: the average is
# recomputed over exactly these sizes when the run has every one of them, otherwise it is recorded only.
AVG_BUSBW_WINDOW = (1 << 10, 2 * GIB)


def _skip(metric: str, subject: str, value: float | None, profile: TargetProfile, unit: str, why: str) -> Verdict:
    """A measurement recorded, not judged, because the run's configuration is not the target's."""
    return Verdict(status=Status.SKIP, subject=subject, metric=metric, measured=value, unit=unit,
                   target=profile.get(metric), reason=f"record only: {subject} {metric} {value} {unit}; {why}")


def _window_average(record: Any, low: int, high: int) -> tuple[float | None, str]:
    """(mean busBW of both halves over every power-of-two size in [low, high], why not) ."""
    by_size = {row.size_bytes: row for row in record.rows}
    sizes = [1 << k for k in range(low.bit_length() - 1, high.bit_length())]
    missing = [s for s in sizes if s not in by_size]
    if missing:
        span = (f"{_size_text(record.rows[0].size_bytes)}..{_size_text(record.rows[-1].size_bytes)}"
                if record.rows else "no sizes")
        return None, (f"the run covers {span}, the target's average is over {_size_text(low)}..{_size_text(high)} "
                      f"(missing {_size_text(missing[0])}{' and more' if len(missing) > 1 else ''})")
    values = [m.busbw_gb_s for s in sizes for m in (by_size[s].out_of_place, by_size[s].in_place)]
    return round(sum(values) / len(values), 3), ""


def _size_text(size: int) -> str:
    for unit, factor in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def collective(record: Any, profile: TargetProfile) -> list[Verdict]:
    """rccl-tests / nccl-tests: the GPUs named in the device list, bus bandwidth at the target sizes,
    the average over the target's size window, #wrong, no dip as sizes grow."""
    name = collective_name(record)
    subject = f"{record.tool} {name or 'collective'} {record.ranks or len(record.devices) or '?'} ranks"
    verdicts: list[Verdict] = identity.judge(identity.from_collective(record), profile)
    by_size = {row.size_bytes: row for row in record.rows}
    prefix, half = _COLLECTIVE_TARGETS.get(name or "", (None, "in_place"))
    # bus bandwidth depends on the GPU count (ROCm/rccl#1270): a target chosen for another count than the
    # run's ranks measures another configuration, so it is recorded (the judge CLI picks the run's count)
    other_count = (f"the run has {record.ranks} ranks, the profile's targets are for {profile.gpu_count} GPUs; "
                   f"judge with --gpus {record.ranks}" if record.ranks and profile.gpu_count
                   and record.ranks != profile.gpu_count else "")
    for metric, size in ((f"{prefix}_busbw_8g_gb_s", 8 * GIB), (f"{prefix}_busbw_16g_gb_s", 16 * GIB)):
        if prefix and metric in profile and size in by_size:
            at = f"{subject} @ {size // GIB} GiB {half.replace('_', '-')}"
            value = getattr(by_size[size], half).busbw_gb_s
            verdicts.append(_skip(metric, at, value, profile, "GB/s", other_count) if other_count else
                            judge_value(metric, at, value, profile))
    if name == "all_reduce" and "allreduce_avg_busbw_gb_s" in profile and record.rows:
        low, high = AVG_BUSBW_WINDOW
        at = f"{subject} avg over {_size_text(low)}..{_size_text(high)}"
        average, why = _window_average(record, low, high)
        if average is not None and other_count:
            verdicts.append(_skip("allreduce_avg_busbw_gb_s", at, average, profile, "GB/s", other_count))
        elif average is None:
            target = profile.get("allreduce_avg_busbw_gb_s")
            verdicts.append(Verdict(status=Status.SKIP, subject=at, metric="allreduce_avg_busbw_gb_s",
                                    measured=record.avg_busbw_gb_s, unit="GB/s", target=target,
                                    reason=f"record only: {why}; the tool's own average "
                                           f"{record.avg_busbw_gb_s} GB/s is over the sizes it ran"))
        else:
            verdicts.append(judge_value("allreduce_avg_busbw_gb_s", at, average, profile))
    wrong = [(row.size_bytes, m.wrong) for row in record.rows for m in (row.out_of_place, row.in_place)
             if m.wrong is not None]
    if wrong:
        worst = max(w for _, w in wrong)
        at = next(size for size, w in wrong if w == worst)
        verdicts.append(judge_value("collective_wrong_count", f"{subject} @ {at} B", worst, profile))
    if record.rows:
        # CVS check_bw_dip reads alltoall out-of-place and every other collective in-place, and only at the
        # sizes it has reference numbers for: here the sizes the profile has this collective's targets at
        dip_half = "out_of_place" if name == "alltoall" else "in_place"
        references = [size for metric, size in ((f"{prefix}_busbw_8g_gb_s", 8 * GIB),
                                                (f"{prefix}_busbw_16g_gb_s", 16 * GIB)) if prefix and metric in profile]
        verdicts.append(judge_no_dip("collective_busbw_dip_max_fraction", subject,
                                     [(row.size_bytes, getattr(row, dip_half).busbw_gb_s) for row in record.rows],
                                     profile, reference_sizes=references))
    return verdicts


# The per-link limits come from TransferBench's healthcheck (src/TransferBench.cpp RunHealthCheck, see the
# targets' sources): GPU-executed copies of 64 MiB, 8 CUs per xGMI pair (all pairs at once), 7-10 CUs for
# CPU<->GPU. A run is held to a limit when it measured the same direction with a GPU executor, at least
# 64 MiB and at least as many CUs: a pair copied alone with more CUs and bytes only reads higher on a
# healthy link. Anything else is recorded with the reason: the p2p preset lets the CPU execute CPU->GPU
# copies (USE_REMOTE_READ=0), which read 29-40 GB/s on a healthy MI300X node
# (tests/fixtures/real/transferbench/mi300x-x8-transferbench-docs-presets-p2p.txt), below the 45 GB/s that
# a GPU executor is held to.
_TB_HEALTHCHECK_BYTES = 64 << 20
_TB_MIN_CUS = {"xgmi_pair_gb_s": 8, "tb_cpu_to_gpu_gb_s": 7, "tb_gpu_to_cpu_gb_s": 7}


def _tb_setting(record: Any, *names: str) -> str | None:
    for setting in record.settings:
        if setting.name in names:
            return setting.value
    return None


def _tb_config_mismatch(record: Any, metric: str) -> str | None:
    """Why this run did not measure `metric` the way its source did, or None when it did."""
    nbytes = record.summary.bytes_per_transfer if record.summary is not None else record.bytes_per_direction
    cus_text = _tb_setting(record, "NUM_SUB_EXEC", "NUM_GPU_SE")
    cus = int(cus_text) if cus_text and cus_text.isdigit() else None
    remote_read = _tb_setting(record, "USE_REMOTE_READ") == "1"
    if metric == "tb_cpu_to_gpu_gb_s" and not remote_read:
        executor = "the CPU executes CPU->GPU copies (USE_REMOTE_READ=0: the source executes)"
    elif metric == "tb_gpu_to_cpu_gb_s" and remote_read:
        executor = "the CPU executes GPU->CPU copies (USE_REMOTE_READ=1: the destination executes)"
    else:
        executor = ""
    reasons = [executor] if executor else []
    if nbytes is None or nbytes < _TB_HEALTHCHECK_BYTES:
        reasons.append(f"it moved {_size_text(nbytes) if nbytes else 'an unknown size'} per transfer")
    if cus is None or cus < _TB_MIN_CUS[metric]:
        reasons.append(f"it used {cus_text or 'an unknown number of'} CUs per transfer")
    if not reasons:
        return None
    need = "8 CUs, all pairs at once" if metric == "xgmi_pair_gb_s" else "7-10 CUs"
    return (f"{'; '.join(reasons)}; the limit is for GPU-executed copies of at least 64 MiB with {need} "
            "(TransferBench healthcheck)")


def _recorded_links(links: list[LinkBandwidth], metric: str, profile: TargetProfile, why: str) -> list[Verdict]:
    target = profile.get(metric)
    worst: dict[tuple[str, str], float] = {}
    for link in links:
        key = (link.src, link.dst)
        worst[key] = min(worst.get(key, link.gb_s), link.gb_s)
    return [Verdict(status=Status.SKIP, subject=f"{src} -> {dst}", metric=metric, measured=gb_s, unit="GB/s",
                    target=target, reason=f"record only: {src} -> {dst} {metric} {gb_s} GB/s; {why}")
            for (src, dst), gb_s in worst.items()]


def transferbench(record: Any, profile: TargetProfile) -> list[Verdict]:
    """Every GPU pair of an a2a run against the per-link xGMI limit, CPU<->GPU against theirs, where
    the run's configuration is the one the limit was measured with; other runs are recorded."""
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
    for found, metric in ((gpu_pairs, "xgmi_pair_gb_s"), (to_gpu, "tb_cpu_to_gpu_gb_s"),
                          (to_cpu, "tb_gpu_to_cpu_gb_s")):
        if not found:
            continue
        why = _tb_config_mismatch(record, metric)
        verdicts += judge_links(found, metric, profile) if why is None else _recorded_links(found, metric, profile,
                                                                                             why)
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
    """BabelStream kernels per rank (MBytes/sec -> GB/s), and the device each rank names."""
    verdicts: list[Verdict] = identity.judge(identity.from_babelstream(record), profile)
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


def _declared_gpus(profile: TargetProfile) -> int | None:
    declared = profile.get("gpu_count")
    return int(declared.value) if declared is not None and isinstance(declared.value, (int, float)) else None


def rocm_smi(record: Any, profile: TargetProfile) -> list[Verdict]:
    """GPU count (missing indices named when the others are numbered) and which GPUs they are from any
    rocm-smi view that lists the GPUs; with --showtopo matrices also every GPU pair's link type, hops and
    weight (validation/topology.py). The process views (--showpids, --showpidgpus) list no GPU and are
    not judged."""
    if record.view in ("showpids", "showpidgpus"):
        return []
    in_links = {i for link in record.links for i in (link.src_gpu, link.dst_gpu)}
    indices = sorted({g.index for g in record.gpus} | in_links)
    expected = _declared_gpus(profile)
    missing = sorted(set(range(expected)) - set(indices)) if expected else []
    verdicts = [_gpu_count(len(indices), "node (rocm-smi)", profile, missing)]
    verdicts += identity.judge(identity.from_rocm_smi(record), profile)
    if record.links:
        verdicts += topology.judge_links(topology.from_rocm_smi(record), profile, gpu_count=expected)
    return verdicts


def rocminfo(record: Any, profile: TargetProfile) -> list[Verdict]:
    return [_gpu_count(len(record.gpus), "node (rocminfo GPU agents)", profile),
            *identity.judge(identity.from_rocminfo(record), profile)]


def amd_smi(record: Any, profile: TargetProfile) -> list[Verdict]:
    """The GPU count (missing indices named), which GPUs they are, their memory (validation/identity.py),
    and ECC and xGMI error counters per GPU where the view reports them (a counter printed N/A is not
    reported, never a zero), from every view that lists GPUs."""
    verdicts: list[Verdict] = []
    indices = sorted({gpu.index for gpu in record.gpus})
    chosen = _amd_smi_gpu_filter(record.command_line)
    if indices and chosen:
        verdicts.append(_skip("gpu_count", "node (amd-smi)", len(indices), profile, "count",
                              f"the view shows only the GPUs its command chose ({chosen}), not the node's"))
    elif indices:
        expected = _declared_gpus(profile)
        missing = sorted(set(range(expected)) - set(indices)) if expected else []
        verdicts.append(_gpu_count(len(indices), "node (amd-smi)", profile, missing))
    for gpu in record.gpus:
        subject = f"gpu{gpu.index}"
        for metric, value, name in (("ecc_uncorrectable_count", gpu.ecc_uncorrectable, "ecc_uncorrectable"),
                                    ("ecc_correctable_count", gpu.ecc_correctable, "ecc_correctable")):
            if value is not None or name in gpu.not_available:
                verdicts.append(_counter(metric, subject, value, profile, f"amd-smi printed {name} as N/A"))
        verdicts += _xgmi_errors(gpu, subject, profile)
    verdicts = verdicts or [_gpu_count(0, "node (amd-smi)", profile)]
    verdicts += identity.judge(identity.from_amd_smi(record), profile)
    if record.links:  # `amd-smi topology`: every GPU pair's link (validation/topology.py)
        verdicts += topology.judge_links(topology.from_amd_smi(record), profile, gpu_count=_declared_gpus(profile))
    return verdicts


# amdsmi_xgmi_status_t as amd-smi metric prints it (XGMI_ERR): one error, more than one
_XGMI_STATUS_COUNT = {"NO_ERRORS": 0, "ERROR": 1, "MULTIPLE_ERRORS": 2}
# Why an MI300-series XGMI_ERR of N/A is judged from the XGMI_WAFL RAS block instead
XGMI_WAFL_BASIS = ("MI300X/MI325X (gfx942) and MI355 (gfx950) cannot read xgmi_error (EINVAL, XGMI_ERR N/A) and "
                   "report xGMI faults as RAS errors on the XGMI_WAFL block, ROCm/rocm-systems#11468")


def _counter(metric: str, subject: str, value: int | None, profile: TargetProfile, why: str) -> Verdict:
    """An error counter: judged when reported; when printed N/A, ERROR not reported (never a zero)."""
    verdict = judge_value(metric, subject, value, profile)
    if value is None and verdict.code == "RF-NOT-REPORTED":
        verdict = dataclasses.replace(verdict, reason=f"{subject} {metric}: not reported ({why}); a counter the "
                                                      "tool cannot read is no zero")
    return verdict


def _xgmi_errors(gpu: Any, subject: str, profile: TargetProfile) -> list[Verdict]:
    """XGMI_ERR where amd-smi reads it; the XGMI_WAFL RAS counters (correctable + uncorrectable) where the
    view shows them; an XGMI_ERR of N/A with no XGMI_WAFL counters is not reported."""
    verdicts: list[Verdict] = []
    status = gpu.xgmi_error_status
    if status is not None:
        count = _XGMI_STATUS_COUNT.get(status.upper())
        verdict = judge_value("xgmi_error_count", f"{subject} XGMI_ERR", count, profile)
        verdicts.append(dataclasses.replace(verdict, measured=status, reason=f"{verdict.reason} (XGMI_ERR {status})")
                        if count is not None else Verdict(
                            status=Status.ERROR, subject=f"{subject} XGMI_ERR", metric="xgmi_error_count",
                            measured=status, unit="", target=profile.get("xgmi_error_count"), code="RF-BAD-MEASUREMENT",
                            reason=f"{subject} XGMI_ERR {status!r} is none of {', '.join(_XGMI_STATUS_COUNT)}"))
    wafl = [gpu.xgmi_wafl_correctable, gpu.xgmi_wafl_uncorrectable]
    wafl_na = {"xgmi_wafl_correctable", "xgmi_wafl_uncorrectable"} & set(gpu.not_available)
    if any(v is not None for v in wafl) or wafl_na:
        total = None if wafl_na or None in wafl else sum(v for v in wafl if v is not None)
        verdict = _counter("xgmi_error_count", f"{subject} XGMI_WAFL", total, profile,
                           "amd-smi printed the XGMI_WAFL RAS counters as N/A")
        if total is not None:
            verdict = dataclasses.replace(verdict, reason=f"{verdict.reason} (XGMI_WAFL correctable "
                                          f"{wafl[0]}, uncorrectable {wafl[1]}; {XGMI_WAFL_BASIS})")
        verdicts.append(verdict)
    elif "xgmi_error_status" in gpu.not_available:
        verdicts.append(_counter("xgmi_error_count", f"{subject} XGMI_ERR", None, profile,
                                 f"amd-smi printed XGMI_ERR as N/A: {XGMI_WAFL_BASIS}; read them with "
                                 "`amd-smi metric --ecc-blocks`"))
    return verdicts


def _amd_smi_gpu_filter(command_line: str | None) -> str:
    """`-g 0` / `--gpu 0 1` / `--gpu=all` of a saved amd-smi command: the GPUs it chose ("" = every GPU)."""
    tokens = _tokens(command_line)
    for i, token in enumerate(tokens):
        flag, _, value = token.partition("=")
        if flag in ("-g", "--gpu"):
            chosen = [value] if value else list(itertools.takewhile(lambda t: not t.startswith("-"), tokens[i + 1:]))
            return "" if [c.lower() for c in chosen] in ([], ["all"]) else f"{flag} {' '.join(chosen)}"
    return ""


def nvidia_smi(record: Any, profile: TargetProfile) -> list[Verdict]:
    """The default table, -q and --query-gpu CSV: GPU count, which GPU it is (name, PCI device id, memory
    size: validation/identity.py) and uncorrectable ECC errors where the view shows them.
    A process list (--query-compute-apps) names no GPU and is not judged here."""
    if record.view == "apps":
        return []
    verdicts = [_gpu_count(len(record.gpus), "node (nvidia-smi)", profile)]
    verdicts += identity.judge(identity.from_nvidia_smi(record), profile)
    for gpu in record.gpus:
        subject = f"gpu{gpu.index}" + (f" ({gpu.bus_id})" if gpu.bus_id else "")
        if "ecc_uncorrectable_count" in profile and (gpu.ecc_uncorrectable_volatile is not None
                                                     or "ecc_uncorrectable_volatile" in gpu.not_available):
            verdicts.append(_counter("ecc_uncorrectable_count", subject, gpu.ecc_uncorrectable_volatile, profile,
                                     "nvidia-smi printed the volatile uncorrectable ECC count as N/A or Off: "
                                     "ECC is off or unsupported"))
    return verdicts


def nvidia_topology(record: Any, profile: TargetProfile) -> list[Verdict]:
    """`nvidia-smi topo -m`: every GPU pair's connection (NV18 on H100/H200 SXM)."""
    return topology.judge_links(topology.from_nvidia_topo(record), profile, gpu_count=_declared_gpus(profile))


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
            # A conf whose action names carry no dtype/init we know (newer RVS releases name them
            # gst-1000Tflops-8K-fp8_r, ...): its shape is not the one our targets were measured with.
            metric = "gemm_other_shape_tflops"
        elif m["blas"]:
            metric = "gemm_fp32_tflops" if m["blas"] == "sgemm" else "gemm_fp64_tflops"
        else:
            metric = f"gemm_{m['dtype']}_{m['init']}_tflops"
        verdicts.append(_recorded(metric, f"gpu id {gpu_id} ({action})", gflops / 1000, profile, "TFLOPS"))
    # IET power samples are not judged here: each IET action names its own target (iet-620W-...,
    # iet-750W-...), and ramp-up samples below it are normal; the acceptance tier judges the sustained value.
    return verdicts


def _tokens(command: str | None) -> list[str]:
    """A saved command line as argv (quotes honoured where they balance)."""
    try:
        return shlex.split(command or "")
    except ValueError:
        return (command or "").split()


def _options(command: str | None) -> dict[str, str]:
    """`--flag value` / `-f value` pairs of a command line (the last one wins)."""
    tokens = _tokens(command)
    return {flag: value for flag, value in itertools.pairwise(tokens)
            if flag.startswith("-") and not value.startswith("--")}


def _recorded(metric: str, subject: str, value: float | None, profile: TargetProfile, unit: str) -> Verdict:
    """A measurement with no published threshold: the profile's record-only target where it has one,
    else a SKIP that still carries the value (a SKU file without the metric is not an error here)."""
    if metric in profile:
        return judge_value(metric, subject, value, profile)
    return Verdict(status=Status.SKIP, subject=subject, metric=metric, measured=value, unit=unit, target=None,
                   reason=f"record only: {subject} {metric} {value} {unit}; profile {profile.name} has no target")


# Type names as the benches print or take them -> our dtype names.
_GEMM_DTYPES = {"f8_fnuz_r": "fp8", "f8_r": "fp8", "fp8_r": "fp8", "f8": "fp8",
                "f16_r": "fp16", "fp16_r": "fp16", "h": "fp16",
                "bf16_r": "bf16", "f32_r": "fp32", "fp32_r": "fp32", "s": "fp32",
                "f64_r": "fp64", "fp64_r": "fp64", "d": "fp64", "i8_r": "int8", "int8": "int8"}
GST_SHAPE = (4864, 4096, 8192)


def _gemm_metric(tool: str, dtype: str | None, shape: tuple[int, int, int], batch: int | None,
                 init: str) -> str:
    """The target a GEMM row is judged against: the RVS GST shapes and AMD's acceptance commands."""
    single = batch in (None, 1)
    if dtype in ("fp8", "fp16", "bf16") and shape == GST_SHAPE and single:
        return f"gemm_{dtype}_{init}_tflops"
    if dtype == "fp32" and shape == (3072, 3072, 3072) and single:
        return "gemm_fp32_tflops"
    if dtype == "fp64" and shape == (8192, 8192, 8192) and single:
        return "gemm_fp64_tflops"
    if dtype == "fp64" and shape == (28000, 28000, 28000) and single:
        return "gemm_fp64_stress_tflops"
    if tool == "rocblas-bench" and dtype == "fp32" and shape == (4000, 4000, 4000) and single:
        return "rocblas_sgemm_4000_tflops"
    if tool == "rocblas-bench" and shape == (1024, 2048, 512) and batch == 5:
        if dtype == "fp16":
            return "rocblas_hgemm_strided_batched_tflops"
        if dtype == "int8":
            return "rocblas_int8_strided_batched_tops"
    return "gemm_other_shape_tflops"


def gemm_bench(record: Any, profile: TargetProfile) -> list[Verdict]:
    """hipblaslt-bench / rocblas-bench: TFLOPS of each row against the target of its dtype, shape and
    initialization. The GPU, the initialization and (for plain rocBLAS gemm) the dtype come from the
    command line (`$ ...` in a saved log; the probe passes its argv); without one the GPU is "gpu"
    and the initialization is the benches' default, random."""
    opts = _options(record.command)
    device = opts.get("--device", "0" if record.command else "")
    init_flag = opts.get("--initialization")
    init = "trig" if init_flag == "trig_float" else "rand"
    init_note = init if init_flag else f"{init} (tool default)"
    verdicts: list[Verdict] = identity.judge(identity.from_blas_bench(record), profile)
    for row in record.rows:
        cols = dict(row.columns)
        type_name = (cols.get("a_type") or opts.get("--a_type") or opts.get("-r") or opts.get("--precision")
                     or row.dtype)
        dtype = _GEMM_DTYPES.get((type_name or "").lower())
        shape = (row.m, row.n, row.k)
        metric = _gemm_metric(record.tool, dtype, shape, row.batch_count, init)
        batch = f" x{row.batch_count}" if row.batch_count not in (None, 1) else ""
        subject = (f"gpu{device} {record.tool} {dtype or type_name or 'dtype?'} {init_note} "
                   f"{row.m}x{row.n}x{row.k}{batch}")
        unit = "TOPS" if metric.endswith("_tops") else "TFLOPS"
        verdicts.append(_recorded(metric, subject, row.gflops / 1000, profile, unit))
    return verdicts


def _layer(args: tuple[tuple[str, str], ...]) -> str:
    a = dict(args)
    if not a:
        return "layer?"
    return (f"n{a.get('-n', '?')} c{a.get('-c', '?')} {a.get('-H', '?')}x{a.get('-W', '?')} "
            f"k{a.get('-k', '?')} {a.get('-y', '?')}x{a.get('-x', '?')} u{a.get('-u', '1')} p{a.get('-p', '0')}")


def miopen(record: Any, profile: TargetProfile) -> list[Verdict]:
    """MIOpenDriver conv: per phase kernel time and TFLOPS (recorded; no published target) and the
    tool's own verification, which must pass for every phase that ran (`-V 1`)."""
    args = dict(record.args)
    subject = f"gpu {record.operation or 'conv'} {_layer(record.args)}"
    verdicts: list[Verdict] = []
    for timing in record.timings:
        if timing.clock == "gpu_kernel":
            verdicts.append(_recorded("miopen_conv_time_ms", f"{subject} {timing.phase}", timing.elapsed_ms,
                                      profile, "ms"))
    for stats in record.stats:
        if stats.gflops is not None:
            verdicts.append(_recorded("miopen_conv_tflops", f"{subject} {stats.name}", stats.gflops / 1000,
                                      profile, "TFLOPS"))
    verified = {v.phase for v in record.verifications}
    for v in record.verifications:
        verdict = judge_value("miopen_verify_failed_count", f"{subject} {v.phase}", 0 if v.passed else 1, profile)
        if not v.passed:
            verdict = dataclasses.replace(verdict, reason=f"{verdict.reason}; MIOpenDriver: {v.text}")
        verdicts.append(verdict)
    ran = [t.phase for t in record.timings if t.phase not in verified] or (
        [] if record.verifications else [a.phase for a in record.algorithms])
    for phase in dict.fromkeys(ran):
        why = "verification was off (-V 0); run with -V 1" if args.get("-V") == "0" else "no verification line"
        missing = judge_value("miopen_verify_failed_count", f"{subject} {phase}", None, profile)
        verdicts.append(dataclasses.replace(missing, reason=f"{missing.reason}: {why}"))
    return verdicts


JUDGES: dict[str, Callable[[Any, TargetProfile], list[Verdict]]] = {
    "rvs": rvs,
    "rocm-smi": rocm_smi,
    "rocminfo": rocminfo,
    "amd-smi": amd_smi,
    "nvidia-smi": nvidia_smi,
    "nvidia-smi-topo": nvidia_topology,
    "lspci": lspci,
    "rccl-tests": collective,
    "nccl-tests": collective,
    "transferbench": transferbench,
    "rocm-bandwidth-test": rocm_bandwidth_test,
    "babelstream": babelstream,
    "hipblaslt-bench": gemm_bench,
    "rocblas-bench": gemm_bench,
    "miopen-driver": miopen,
}


def incompleteness(tool: str, record: Any) -> str | None:
    """What is missing from a record that the tool did not finish writing (None when it is whole)."""
    if tool in ("rccl-tests", "nccl-tests"):
        parts = []
        if not record.complete:
            last = record.rows[-1].size_bytes if record.rows else None
            declared = record.max_bytes
            parts.append("no closing '# Avg bus bandwidth' line"
                         + (f"; the table stops at {_size_text(last)}" if last is not None else "")
                         + (f" of the {_size_text(declared)} its header declares" if declared and last is not None
                            and last < declared else ""))
        if record.rows_elided:
            parts.append("an elision marker inside the run hides result rows")
        return "; ".join(parts) or None
    if getattr(record, "truncated", False):
        count = len(getattr(record, "gpus", ()) or ())
        seen = f" after {count} GPU(s)" if count else ""
        return f"the output was cut{seen} (an elision marker or a missing closing line)"
    return None


def verdicts_for(tool: str, record: Any, profile: TargetProfile) -> list[Verdict]:
    """The verdicts for one parsed output; a cut-short output adds an ERROR that names what is missing,
    so the output as a whole can never pass."""
    if tool not in JUDGES:
        raise KeyError(tool)
    verdicts = JUDGES[tool](record, profile)
    missing = incompleteness(tool, record)
    if missing is not None:
        verdicts.append(judge_incomplete(f"{tool} output", missing))
    return verdicts


# Outputs whose numbers are performance: judged beside a saved view that shows busy GPUs, they carry a
# note saying so (docs/judging.md, "A view taken under load").
PERFORMANCE_TOOLS = frozenset({"rvs", "rccl-tests", "nccl-tests", "transferbench", "rocm-bandwidth-test",
                               "babelstream", "hipblaslt-bench", "rocblas-bench", "miopen-driver"})


def saved_verdicts(tool: str, record: Any, profile: TargetProfile) -> list[Verdict]:
    """What `rocm-fleet judge` gives a saved output: verdicts_for, and for an amd-smi / rocm-smi /
    nvidia-smi view what its GPUs were doing (validation/saved_activity.py: processes and load, WARN
    RF-GPU-BUSY where busy). The node checks call verdicts_for: their own run is on the GPU, and
    validation/idle.py judges it knowing which processes are the run's."""
    return verdicts_for(tool, record, profile) + saved_activity.judge(tool, record, profile)
