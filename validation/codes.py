"""Every stable failure code with what to do about it: one table.

A FAIL, WARN, TIMEOUT or ERROR anywhere (a verdict, a check, a health run, a rollout record) carries
one of these codes and its hint, in the "Action:" style of AMD's acceptance documents. docs/codes.md is
generated from this table (`python -m validation.docgen codes`) and a unit test keeps them equal.
"""

from __future__ import annotations

_TUNE = "Re-run `ansible-playbook playbooks/site.yml --tags node_tuning` for this host."

CODES: dict[str, str] = {
    # --- measurements and devices (validation/judge.py and the verdicts built on it)
    "RF-GPU-MISSING": "Check `lspci -d 1002:<id>` / `amd-smi list` and `dmesg | grep amdgpu` for init "
                      "errors; power-cycle the node, reseat the OAM/UBB; RMA the GPU if it stays missing.",
    "RF-SLURM-GRES": "Slurm offers this node another number of GPUs than it lists (declared count times the "
                     "partitions of its mode): converge roles/slurm_gres (gres.conf and the node's Gres= in "
                     "slurm.conf), then restart slurmctld and slurmd; until then jobs get the wrong GPUs.",
    "RF-GPU-COUNT": "More GPUs than declared: fix the inventory (gpu count, partition mode) or the partition "
                    "setting (`amd-smi partition`).",
    "RF-SKU-MISMATCH": "The GPU (device id, market name, gfx target or SR-IOV VF) differs from the declared SKU: "
                       "judge with the profile the verdict names, or set validation_target_sku for the host or "
                       "group to the SKU actually installed.",
    "RF-PARTITION-MISMATCH": "The GPUs run in another partition mode than declared or than the targets were chosen "
                             "for: converge roles/amdgpu_partition (amdgpu_partition_compute/_memory; a reboot or a "
                             "driver reload returns the GPUs to SPX/NPS1), or judge with --partition <mode> "
                             "(inventory validation_partition).",
    "RF-CU-COUNT": "The GPU reports another compute-unit count than its SKU has in this partition mode: check the "
                   "compute partition (`amd-smi static --partition`; judge with --partition <mode>) and the device id; "
                   "a GPU of the declared SKU and mode with CUs missing is faulty: drain it and RMA.",
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
    "RF-XGMI-ERRORS": "xGMI error counters are non-zero: record `amd-smi metric --ecc-blocks` (XGMI_WAFL; "
                      "`rocm-smi --showxgmierr` on MI2xx), reset counters and re-test; reseat the UBB / RMA if "
                      "they grow.",
    # --- RAS signals (validation/ras.py; validate and the health mode's deltas)
    "RF-CPER-FATAL": "A fatal (uncorrectable) CPER record was written for the named GPU: drain the node at once; "
                     "save the records (`amd-smi ras --cper --severity all --folder DIR`) and the AFIDs "
                     "(`amd-smi ras --afid --cper-file FILE`), look each AFID up in AMD's AFID Event List "
                     "(docs.amd.com, AMD Field ID 70122) for its service action, and open a support case / RMA "
                     "with the .cper files.",
    "RF-CPER-NONFATAL": "Non-fatal (uncorrected-recoverable or corrected) CPER records grew on the named GPU: save "
                        "them (`amd-smi ras --cper --severity all --folder DIR`), look their AFIDs up in AMD's AFID "
                        "Event List, and watch the rate; drain and run the vendor diagnostics if they keep growing.",
    "RF-BAD-PAGES": "The named GPU has pages pending retirement, or its retired pages reached the bad-page threshold "
                    "(the count at which amdgpu raises its RMA event): drain the node; pending pages are retired at "
                    "the next driver load (reboot) - re-validate after it; at or over the threshold, RMA the GPU "
                    "with `amd-smi bad-pages` and the CPER records.",
    "RF-BAD-PAGES-GREW": "Retired pages grew on the named GPU since the last run, below the threshold: the memory "
                         "is degrading; record `amd-smi bad-pages` and `amd-smi metric --ecc`, keep the node in "
                         "service but plan an RMA if the count keeps growing.",
    "RF-PCIE-AER-FATAL": "An uncorrectable fatal PCIe error (AER) was reported for the named GPU or its port: "
                         "drain the node; collect `dmesg`, `lspci -vvv -s <bdf>` and the BMC SEL, cold-boot, "
                         "reseat the GPU/retimer cables; RMA the GPU or baseboard if it recurs.",
    "RF-PCIE-AER": "Non-fatal uncorrectable or corrected PCIe errors (AER) grew on the named device: check the "
                   "link (`lspci -vvv`: LnkSta, CESta/UESta), retimer and riser seating and BIOS/firmware; drain "
                   "and reseat if they keep growing.",
    "RF-MCE": "The kernel logged machine-check events: read them (`ras-mc-ctl --errors` with rasdaemon, "
              "`journalctl -k | grep -i 'hardware error'`, the BMC SEL) to find the CPU, DIMM or GPU bank; "
              "drain the node until the source is known.",
    "RF-PCIE-REPLAY": "PCIe replay, NAK or recovery counters grew on the named GPU (`amd-smi metric --pcie`): the "
                      "link is retrying transfers; check its speed/width, the retimer and riser cables and BIOS "
                      "PCIe settings; reseat, and RMA if the counters keep growing after a cold boot.",
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
    "RF-NOT-JUDGED": "No performance number of this node was judged: its SKU publishes no target for them, no "
                     "site baseline applied and it has no sibling GPUs to compare. Make a site baseline from "
                     "accepted nodes (`rocm-fleet baseline create RESULTS_DIR... -o baseline.yml`) and validate "
                     "with `--baseline baseline.yml` (or validation_baseline), or judge the node in a batch.",
    "RF-GPU-BUSY": "Someone else's work was on the GPU (the named processes, utilization or memory in use), so "
                   "its numbers would not be the hardware's: wait for the job to end or drain the node "
                   "(Slurm/Kubernetes), stop stray processes (`amd-smi process`, `rocm-smi --showpids`, "
                   "`nvidia-smi`), then re-run; `--allow-busy` measures anyway and says so in the results.",
    "RF-GPU-UNSEEN": "The GPU was in use (utilization, or memory the run cannot account for) while no process this "
                     "node can list held it: someone the node cannot see (another container, another pod on a "
                     "time-sliced GPU, a job in another PID namespace). Its numbers are not the hardware's and are "
                     "left out of baselines and batch medians. Find whose work it is from the host (`amd-smi "
                     "process` or `nvidia-smi` outside every container, the scheduler's and the container runtime's "
                     "view of the node), then re-run on an idle GPU. A reboot would kill that work: remediation "
                     "holds the node for a person instead.",
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
    # --- configuration and software checks (validation/checks)
    "RF-CONFIG-ROCM-VERSION": "Re-run `ansible-playbook playbooks/site.yml --tags rocm_repo,rocm` for this host.",
    "RF-CONFIG-COMPAT": "Declare a supported ROCm / amdgpu / OS combination (validation/data/rocm_compat.yml).",
    "RF-CONFIG-PACKAGE-HOLD": "A ROCm package is not held; re-run site.yml --tags rocm (rocm_hold_packages: true).",
    "RF-CONFIG-REPO": "Repository files differ from the spec; re-run site.yml --tags rocm_repo.",
    "RF-NO-AMD-GPU": "No AMD GPU is visible: amdgpu/ROCk is not loaded. Check `lspci -d 1002:`, "
                     "`dmesg | grep -i amdgpu`, `modprobe amdgpu`; on a lab host this is expected.",
    "RF-NO-KFD": "/dev/kfd is missing: the amdgpu driver did not initialise the compute interface; check dmesg.",
    "RF-TOOL-FAILED": "A tool failed to run; its output is in the results file.",
    "RF-CHECK-FAILED": "A check failed without a failure code of its own, so nothing more specific can be said: "
                       "most often the node's declared state lacks what the check needs (its message names it, e.g. "
                       "declare validation_target_sku when no GPU on the PCI bus names the SKU), else the check "
                       "itself broke (the results file keeps its error). Fix the declaration in the inventory and "
                       "re-run playbooks/validate.yml (it writes the node's spec), or report the check with its "
                       "message.",
    "RF-TOOL-MISSING": "A tool the check runs is not installed on the node: install the package the message "
                       "names (ROCm tools come with rocm_packages: re-run site.yml --tags rocm) and re-run.",
    "RF-FIRMWARE": "GPU firmware differs between GPUs or from the pinned set: update with AMD's firmware "
                   "bundle for this driver (amdgpu-dkms-firmware) and reboot; check validation_firmware_pins.",
    "RF-AMDGPU-KERNEL-ERRORS": "amdgpu logged errors: collect `dmesg`, check firmware/IFWI versions and RAS "
                               "counters; drain the node if they repeat.",
    "RF-NO-NVIDIA-GPU": "nvidia-smi does not answer: check the NVIDIA driver (`nvidia-smi`, dmesg NVRM lines).",
    "RF-NODE-UNREACHABLE": "The node does not answer over SSH (from the start of its checks, or it stopped during "
                           "the run): check that it is up (ping, ssh, "
                           "BMC console), then re-run validate.yml --limit NODE.",
    "RF-NODE-NO-RESULTS": "The node was targeted but delivered no results: the step that failed follows the "
                          "message where the run saw it (install, disk or timeout; else read the node's lines in the "
                          "play output), fix, and re-run validate.yml --limit NODE.",
    "RF-RESULTS-CONFLICT": "Two results documents claim the same node, or a results file's name is not a node "
                           "name: neither is trusted as that node's results. Find what wrote the second file (a copy "
                           "left from another run, another tool), remove it, and re-run validate.yml --limit NODE.",
    "RF-RESULTS-WRONG-NODE": "The results document fetched from this node (saved as <node>.json) names another node: "
                             "it counts for neither. Find what wrote it there (a copy from another node or run, a "
                             "mis-set --rf-node), remove it on the node, and re-run validate.yml --limit NODE.",
    "RF-VALIDATION-EXPIRED": "The node's last validation is older than its tier vouches for (its results' "
                             "valid_until, validation/validity.py): re-validate it (validate.yml --limit NODE, or "
                             "let the scheduled quick tier reach it); a node that keeps expiring is one the schedule "
                             "never finds idle.",
    "RF-PROBE-WRONG-RESULT": "A probe computed a wrong result on the named GPU: drain the node, re-run, and run "
                             "the vendor diagnostics (RVS/AGFHC or dcgmi diag) on that GPU; RMA if it repeats.",
    "RF-PROBE-UNSTABLE": "The probe's own samples on the named GPU scattered beyond its family's bound twice in a "
                         "row, so its number is not the hardware's speed: look for a foreign load (`amd-smi "
                         "process`, `rocm-smi --showpids`, `nvidia-smi`; other jobs on the node, a busy host CPU) "
                         "and for throttling (clocks, power cap, temperature: `amd-smi metric`, `nvidia-smi -q -d "
                         "PERFORMANCE`), then re-run on an idle node; if it stays unstable on an idle, cool GPU, "
                         "compare with its sibling GPUs and run the vendor diagnostics on it.",
    # --- host tuning, GPU access and environment drift (validation/checks/tuning_codes.py)
    "RF-TUNING-CMDLINE": "The kernel command line configuration differs from the spec; " + _TUNE,
    "RF-TUNING-REBOOT-PENDING": "The command line is configured but the running kernel booted without it: "
                                "regenerate the boot configuration (update-grub) if the run could not, then "
                                "reboot (node_tuning_reboot_ok: true lets site.yml do it).",
    "RF-TUNING-THP": "Transparent huge pages differ from the spec (changed by hand or by another tool); " + _TUNE,
    "RF-TUNING-SYSCTL": "A sysctl differs from the spec (changed by hand, or another sysctl.d file wins); " + _TUNE,
    "RF-TUNING-CSTATE": "CPU idle states differ from the spec; " + _TUNE
                        + " Check `systemctl status rocm-fleet-cpuidle` and `cpupower idle-info`.",
    "RF-GPU-ACCESS-GROUPS": "GPU groups or memberships differ from the spec; re-run site.yml --tags gpu_access "
                            "(users must log in again for new groups).",
    "RF-GPU-ACCESS-NEW-USERS": "/etc/adduser.conf does not give new users the GPU groups; "
                               "re-run site.yml --tags gpu_access.",
    "RF-GPU-ACCESS-UDEV": "GPU device group or mode differs from the spec; re-run site.yml --tags gpu_access, "
                          "then `udevadm trigger --subsystem-match=kfd --subsystem-match=drm`.",
    "RF-ENV-PROFILE": "An environment profile differs from the spec (edited by hand?); "
                      "re-run site.yml --tags env_profiles.",
    "RF-ENV-DEBUG": "A debug-only ROCm variable is in a profile; remove it, or set env_profiles_allow_debug: "
                    "true on hosts being debugged, and re-run site.yml --tags env_profiles.",
}
