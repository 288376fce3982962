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

from validation.records import LinkBandwidth, Status, worst
from validation.targets.model import EQUAL, HIGHER_IS_BETTER, Target, TargetProfile

# Stable failure codes -> remediation hint ("Action:" style of the AMD acceptance docs).
CODES: dict[str, str] = {
    "RF-GPU-MISSING": "Check `lspci -d 1002:<id>` / `amd-smi list` and `dmesg | grep amdgpu` for init "
                      "errors; power-cycle the node, reseat the OAM/UBB; RMA the GPU if it stays missing.",
    "RF-GPU-COUNT": "More GPUs than declared: fix the inventory (gpu count, partition mode) or the partition "
                    "setting (`amd-smi partition`).",
    "RF-SKU-MISMATCH": "The GPU (device id, market name, gfx target or SR-IOV VF) differs from the declared SKU: "
                       "judge with the profile the verdict names, or set validation_target_sku for the host or "
                       "group to the SKU actually installed.",
    "RF-PARTITION-MISMATCH": "The GPUs run in another partition mode than the targets were chosen for: judge with "
                             "--partition <mode> (inventory validation_partition), or set the mode the node should "
                             "have (`amd-smi set --memory-partition/--compute-partition`, then reload amdgpu).",
    "RF-INCOMPLETE-OUTPUT": "The tool output is cut short (truncated, no closing line, fewer rows than its own header "
                            "declares): nothing in it can pass. Re-run the tool and save its whole output (no head/"
                            "grep, enough disk, no timeout), then judge again.",
    "RF-VRAM-LOW": "Less memory than the SKU has: check the memory partition mode and amdgpu errors in "
                   "dmesg; RMA if retired pages / bad HBM are reported.",
    "RF-PCIE-DOWNGRADED": "Link trained below Gen5 x16: check BIOS PCIe settings and firmware, reseat the "
                          "GPU/retimer cables; RMA if it persists after a cold boot.",
    "RF-PCIE-FATAL": "`FatalErr+` in lspci: collect `lspci -vvv` and dmesg, update BIOS/IFWI, reseat; RMA if "
                     "it recurs.",
    "RF-GEMM-LOW": "GEMM below target: check clocks, power cap and temperature (`amd-smi metric`), that no "
                   "other process uses the GPU, and the ROCm/hipBLASLt version; re-run once idle; RMA if one "
                   "GPU stays low.",
    "RF-HBM-LOW": "HBM bandwidth below target: check the memory partition (NPS1), ECC/retired pages and "
                  "clocks; re-run; RMA if one GPU stays low.",
    "RF-BW-HOST-LOW": "Host<->GPU bandwidth low: check the PCIe link (speed/width), NUMA pinning "
                      "(`numactl`), IOMMU passthrough (`iommu=pt`) and BIOS settings; re-run TransferBench.",
    "RF-BW-XGMI-LOW": "GPU<->GPU (xGMI) bandwidth low on the named pair: check xGMI error counters and "
                      "firmware versions, reseat the UBB; RMA if the same link stays low.",
    "RF-BW-NVLINK-LOW": "GPU<->GPU (NVLink) bandwidth low on the named pair: check `nvidia-smi nvlink -s` "
                        "and fabric manager; RMA if the same link stays low.",
    "RF-RCCL-BUSBW-LOW": "Collective bus bandwidth low: check every xGMI link first (TransferBench p2p), the "
                         "RCCL version and env (NCCL_*/RCCL_*), and that all GPUs took part; re-run at the "
                         "target size.",
    "RF-RCCL-WRONG": "rccl-tests reported #wrong > 0 (data corruption): drain the node, run RVS/AGFHC to "
                     "isolate the GPU, RMA.",
    "RF-RCCL-DIP": "Bus bandwidth drops as messages grow: look for a weak link or throttling at that size; "
                   "re-run with the same sizes to rule out noise.",
    "RF-MIOPEN-VERIFY": "MIOpenDriver's result for the named layer and phase differs from its reference beyond "
                        "tolerance: re-run that command (it is in the results) on this GPU and on a healthy one; "
                        "if only this GPU fails, drain it and run RVS GST/MEM on it; RMA if it repeats.",
    "RF-MIOPEN-LOW": "MIOpen conv slower than the target: check clocks and power (`amd-smi metric`), the MIOpen "
                     "find-db / kernel cache and the ROCm version; re-run once idle.",
    "RF-ECC": "ECC errors reported: record `amd-smi metric --ecc`, drain the node; uncorrectable errors mean "
              "RMA.",
    "RF-XGMI-ERRORS": "xGMI error counters are non-zero: record `rocm-smi --showxgmierr`, reset counters and "
                      "re-test; reseat the UBB / RMA if they grow.",
    "RF-POWER-LOW": "Could not reach the power target: check the power cap, PSU redundancy and BMC power "
                    "limits; re-run IET.",
    "RF-TEMP-HIGH": "GPU too hot: check fans, airflow and inlet temperature (BMC); re-check when idle.",
    "RF-NET-LOW": "Network bandwidth low: check the NIC link, firmware, cabling and the GPU-NIC affinity.",
    "RF-NET-RAIL-DOWN": "A declared RDMA rail is missing or not PORT_ACTIVE: check `rdma link`, `ibv_devinfo -d "
                        "<dev>`, the NIC driver and firmware (dmesg), the cable and the switch port; if the rail "
                        "list changed on purpose, update --rails / NCCL_IB_HCA in the inventory.",
    "RF-NET-GID": "The declared RoCE GID index is empty, not RoCE v2, or differs between nodes: check that the "
                  "rail's netdev has its IP address (`ip addr`, GIDs follow addresses), the RoCE mode "
                  "(`cat /sys/class/infiniband/<dev>/ports/<port>/gid_attrs/types/<index>`) and that "
                  "NCCL_IB_GID_INDEX in the inventory matches what the NICs populate.",
    "RF-NET-RAIL-RUN": "ib_write_bw did not complete between the named nodes on the named rail: read the run's "
                       ".log (device not found, connection refused, GID/address errors), check the rail on both "
                       "nodes with `ibv_devinfo`, and that the perftest TCP port is open between them.",
    "RF-TOPO-LINK-TYPE": "A GPU pair is linked over the wrong fabric (PCIE instead of XGMI, fewer NVLinks): check "
                         "`amd-smi xgmi` / `rocm-smi --showxgmierr` (NVIDIA: `nvidia-smi nvlink -s`, fabric "
                         "manager), dmesg for xGMI/NVLink training errors and the BIOS xGMI settings (width x16, "
                         "speed); cold-boot, reseat the UBB/baseboard, RMA if the same pair stays down.",
    "RF-TOPO-HOPS": "A GPU pair is more hops apart than the SKU's topology: the direct link between them is down "
                    "and traffic is routed through a third device; treat it like a wrong link type (check xGMI/"
                    "NVLink status and errors, cold-boot, reseat, RMA).",
    "RF-TOPO-WEIGHT": "The link weight differs from the sourced value: compare `rocm-smi --showtopo` with a healthy "
                      "node of the same SKU and ROCm version; a changed weight usually means a changed link type.",
    "RF-TOPO-MISSING": "A declared GPU is absent from the topology: see RF-GPU-MISSING (lspci, dmesg, power-cycle, "
                       "reseat, RMA).",
    "RF-NUMA-GPU": "A GPU sits on an unexpected NUMA node: check the BIOS NUMA-per-socket (NPS) setting and ACPI "
                   "SRAT after a BIOS update, and which slot/riser the GPU is in (`cat /sys/bus/pci/devices/<bdf>/"
                   "numa_node`, `lscpu`); if the new layout is intended, declare validation_gpu_numa_nodes.",
    "RF-NUMA-NIC": "A NIC sits on an unexpected NUMA node (GPUDirect RDMA then crosses sockets): check the slot/"
                   "riser and BIOS NPS setting (`cat /sys/class/net/<if>/device/numa_node`); if intended, update "
                   "validation_nic_numa_nodes.",
    "RF-BURNIN-WRONG-RESULT": "The burn-in matmul on the named GPU returned a result that differs from its own "
                              "reference (silent data corruption): drain the node, re-run the burn-in and the "
                              "vendor diagnostics (RVS GST/MEM, AGFHC or dcgmi diag) on that GPU; RMA if it repeats.",
    "RF-BURNIN-GPU-ERROR": "The burn-in worker on the named GPU raised a device error (HIP/CUDA error, out of memory) "
                           "or hung: check dmesg (amdgpu / NVRM Xid lines), kill stray GPU processes, re-run; RMA "
                           "if the GPU keeps failing.",
    "RF-BURNIN-TEMP-HIGH": "Too hot under sustained load: check fans, airflow, inlet temperature and the heatsink/"
                           "cold plate (BMC sensors), compare with the node's other GPUs; re-run after fixing "
                           "cooling.",
    "RF-BURNIN-POWER-HIGH": "Power above the board limit under load: check the power cap (`amd-smi static --limit`"
                            " / `nvidia-smi -q -d POWER`), BMC power limits and firmware; re-run.",
    "RF-BURNIN-ECC-UNCORRECTABLE": "Uncorrectable ECC errors appeared during the burn-in: record `amd-smi metric "
                                   "--ecc` / `nvidia-smi -q -d ECC`, drain the node, RMA the GPU.",
    "RF-BURNIN-ECC-CORRECTABLE": "Correctable ECC errors grew during the burn-in beyond the allowed count: record "
                                 "the counters and bad pages (`amd-smi bad-pages`, `nvidia-smi -q -d "
                                 "ROW_REMAPPER`), re-run; RMA if they keep growing.",
    "RF-BURNIN-THROTTLED": "Clocks were held down by heat or hardware slowdown for too much of the burn-in: check "
                           "cooling and power delivery, and the throttle reasons (`amd-smi metric`, `nvidia-smi -q "
                           "-d PERFORMANCE`).",
    "RF-BURNIN-SUSTAINED-DROP": "Throughput at the end of the burn-in fell too far below its start (thermal "
                                "throttling): check temperatures and clocks in the telemetry, cooling and power "
                                "caps; re-run.",
    "RF-BURNIN-NO-TELEMETRY": "No telemetry during the burn-in, so its gates could not be judged: install amd-smi "
                              "(amd-smi-lib) or rocm-smi (NVIDIA: nvidia-smi) on the node and check that it runs "
                              "as the validating user.",
    "RF-GPU-BUSY": "Someone else's work was on the GPU (the named processes, utilization or memory in use), so "
                   "its numbers would not be the hardware's: wait for the job to end or drain the node "
                   "(Slurm/Kubernetes), stop stray processes (`amd-smi process`, `rocm-smi --showpids`, "
                   "`nvidia-smi`), then re-run; `--allow-busy` measures anyway and says so in the results.",
    "RF-GPU-ACTIVITY-UNKNOWN": "Nothing on the node could say whether its GPUs are idle, so no number from it can be "
                               "trusted as the hardware's: install amd-smi (amd-smi-lib) or rocm-smi (NVIDIA: the "
                               "driver's nvidia-smi), check that it runs as the validating user, then re-run.",
    "RF-GPU-THROTTLED": "Clocks were held down by a thermal or hardware reason while the GPU was idle: check "
                        "cooling, inlet temperature and power delivery (BMC), `amd-smi metric` / `nvidia-smi -q "
                        "-d PERFORMANCE`; re-run once it clears; RMA if it persists on an idle, cool GPU.",
    "RF-MODEL-LOW": "Model throughput below target: check clocks, power cap and temperature, that no other "
                    "process uses the GPU, and the PyTorch/ROCm versions; compare with the node's other GPUs.",
    "RF-SIBLING-GAP": "This GPU or link is slower than the node's other GPUs or links by more than the allowed "
                      "gap: re-run the named probe on it; if it stays behind, check its clocks, power cap, "
                      "temperature and error counters (and for a link, both ends), reseat, RMA if it persists.",
    "RF-BATCH-GAP": "This node's GPU or link is slower than the same SKU across the batch by more than the "
                    "allowed gap: compare its BIOS, firmware, ROCm/driver versions and tuning with a node at "
                    "the batch median, check cooling and power limits, re-run; RMA if it stays behind.",
    "RF-BELOW-TARGET": "Below target: compare with the same metric on a healthy node and re-run.",
    "RF-ABOVE-TARGET": "Above the allowed maximum: compare with a healthy node and re-run.",
    "RF-MISMATCH": "Value differs from the expected one: check the node against its declared spec.",
    "RF-NOT-REPORTED": "The tool did not report this value: check its log for errors or truncation, then "
                       "re-run it.",
    "RF-BAD-MEASUREMENT": "The measurement is not a finite number: check the parser input and re-run the "
                          "tool.",
    "RF-NO-TARGET": "No target for this metric in the SKU profile: add it (with a source) to "
                    "validation/targets/data/<sku>.yaml, or as an inventory override.",
    "RF-TIMEOUT": "The tool ran past its time limit: check for a hung GPU (`dmesg`, `amd-smi`), kill stray "
                  "processes, re-run with a longer timeout only if the GPU is healthy.",
}

# metric-name prefix -> code for a measurement on the failing side of its threshold (first match wins)
_CODE_BY_PREFIX: tuple[tuple[str, str], ...] = (
    ("pci_device_id", "RF-SKU-MISMATCH"),
    ("gpu_identity", "RF-SKU-MISMATCH"),
    ("gpu_name_pattern", "RF-SKU-MISMATCH"),
    ("gfx_target", "RF-SKU-MISMATCH"),
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


def judge_missing(metric: str, subject: str, profile: TargetProfile | None = None) -> Verdict:
    """A measurement the tool should have produced but did not."""
    target = profile.get(metric) if profile is not None else None
    return _verdict(Status.ERROR, subject, metric, None, target, "RF-NOT-REPORTED",
                    f"{subject} {metric}: not reported")


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


def judge_no_dip(
    metric: str,
    subject: str,
    series: Iterable[tuple[int, float | None]],
    profile: TargetProfile,
    *,
    series_unit: str = "GB/s",
) -> Verdict:
    """A value must not drop by more than the target fraction as the size grows (CVS check_bw_dip).

    series: (size_bytes, value) points; the dip target (e.g. collective_busbw_dip_max_fraction,
    0.05) is the largest allowed relative drop from one size to the next larger one. A drop that the
    size after it recovers from (back to at least (1 - fraction) x the value before the drop) is
    tolerated and named in the reason (DIP_RECOVERY_BASIS); a drop at the last size, or one that
    lasts two sizes or more, counts.
    """
    target = profile.get(metric)
    if target is None:
        return _verdict(Status.ERROR, subject, metric, None, None, "RF-NO-TARGET",
                        f"{subject} {metric}: no target in profile {profile.name}")
    points = sorted((size, value) for size, value in series if value is not None)
    if len(points) < 2:
        return _verdict(Status.ERROR, subject, metric, None, target, "RF-NOT-REPORTED",
                        f"{subject} {metric}: fewer than two sizes reported; cannot check for dips")
    limit = target.threshold if isinstance(target.threshold, (int, float)) else None
    worst_drop, worst_at = 0.0, (points[0], points[0])
    dips: list[str] = []
    tolerated: list[str] = []
    for i in range(1, len(points)):
        prev, cur = points[i - 1], points[i]
        if prev[1] <= 0:
            continue
        drop = (prev[1] - cur[1]) / prev[1]
        if limit is not None and drop > limit:
            after = points[i + 1] if i + 1 < len(points) else None
            if after is not None and after[1] >= prev[1] * (1 - limit):
                tolerated.append(f"{_step(prev, cur, series_unit)}, back to {_fmt(after[1])} {series_unit} at "
                                 f"{_size(after[0])}")
                continue
            dips.append(f"{_step(prev, cur, series_unit)} (-{drop * 100:.1f}%)")
        if drop > worst_drop:
            worst_drop, worst_at = drop, (prev, cur)
    drop_fraction = round(worst_drop, 6)
    verdict = judge_target(target, subject, drop_fraction)
    if verdict.status in (Status.FAIL, Status.WARN):
        detail = "; ".join(dips) if dips else _step(*worst_at, series_unit)
        verdict = _verdict(verdict.status, subject, metric, drop_fraction, target, verdict.code,
                           f"{subject} {metric}: bandwidth dips as size grows: {detail}; allowed drop "
                           f"{_fmt(float(target.value or 0))} ({target.source})")
    elif tolerated:
        verdict = _verdict(verdict.status, subject, metric, drop_fraction, target, verdict.code,
                           f"{verdict.reason}; tolerated: {'; '.join(tolerated)} ({DIP_RECOVERY_BASIS})")
    return verdict


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
