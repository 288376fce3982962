"""Every real fixture of a judged tool, classified for issue 15's "no false FAIL on healthy real
outputs": healthy and complete against its own SKU, a view taken under load, cut by its author, without a
judged number, the one exception, or no profile / refused. The SKU and GPU count of each come from its SOURCES.md row
(tests/fixtures/real/<tool>/). Used by tests/unit/judge/test_healthy_fixtures.py and
tests/unit/judge/test_judge_truncation_fuzz.py."""

from __future__ import annotations

# (tool, fixture, own SKU, GPU count) -> exit 0, status pass (or skip where nothing has a threshold)
HEALTHY: list[tuple[str, str, str, int | None]] = [
    ("rocm-smi", "mi300x-augmxnt-mi300-testing-concise.txt", "mi300x", 8),
    ("rocm-smi", "mi300x-augmxnt-vllm-collect-env-showtopo.txt", "mi300x", 8),
    ("rocm-smi", "mi300x-ml-engineering-amd-debug.txt", "mi300x", 8),
    ("rocm-smi", "mi300x-rocm-blogs-grok1.txt", "mi300x", 8),
    ("rocm-smi", "mi300x-rocm-blogs-llama-lora-showproductname.txt", "mi300x", 1),
    ("rocm-smi", "mi300x-x1-thamada-gls-concise.txt", "mi300x", 1),
    ("rocm-smi", "mi300x-x4-thamada-gls-concise.txt", "mi300x", 4),
    ("rocm-smi", "mi250x-x8gcd-rocm-issue3364-concise-legacy-during-run.txt", "mi250x", 8),
    ("rocm-smi", "mi308x-x8-ms-swift-amd-support-showtopo.txt", "mi308x", 8),
    ("rocm-smi", "mi308x-x8-ms-swift-amd-support-concise.txt", "mi308x", 8),
    ("rocm-smi", "mi308x-x8-ms-swift-amd-support-use-meminfo-vram.txt", "mi308x", 8),
    ("rocminfo", "mi300x-augmxnt-mi300-testing-00-system-info.txt", "mi300x", 8),
    ("rocminfo", "mi300x-vf-msp-docs-amd-droplet-rocminfo-7.2.4.txt", "mi300x-vf", 1),
    ("rocminfo", "mi300x-x4-thamada-gls-rocminfo.txt", "mi300x", 4),
    ("amd-smi", "mi300x-hipfile-docs-known-issues-default-view-7.1.1.txt", "mi300x", 1),
    ("amd-smi", "mi300x-k8s-dra-driver-docs-default-view-guest-passthrough-7.0.0.txt", "mi300x", 1),
    ("amd-smi", "mi300x-vf-hipfile-docs-known-issues-default-view-7.2.1.txt", "mi300x-vf", 1),
    ("amd-smi", "mi300x-x8-amdsmi-changelog-6.1.0-monitor-ptumv.txt", "mi300x", 8),
    ("amd-smi", "mi300x-x8-amdsmi-changelog-6.1.0-topology.txt", "mi300x", 8),
    ("amd-smi", "mi300x-x8-amdsmi-changelog-6.1.0-xgmi.txt", "mi300x", 8),
    ("amd-smi", "mi300x-x8-rocm-install-docs-ray-default-view-27.0.0.txt", "mi300x", 8),
    ("amd-smi", "mi300x-x8-rocm-install-docs-ray-default-view-truncated-names-7.0.0.txt", "mi300x", 8),
    ("nvidia-smi", "h100-jdh4-job-data-2023-della-nvidia-smi-a.txt", "h100", 1),
    ("nvidia-smi", "h100-sxm-x8-thamada-gls-nvidia-smi-a.txt", "h100", 8),
    ("nccl-tests", "h100-16gpu-2node-a3mega-ztan-allreduce.txt", "h100", 16),
    ("nvidia-smi", "h200-x1-rocm-fleet-burnin-clocks-event-reasons-load.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-idle-q-utilization-memory-clock-performance-pids.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-idle-query-gpu-util-mem-clocks.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-idle-table.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-thamada-gls-nvidia-smi-a.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-thamada-gls-nvidia-smi.txt", "h200", 1),
    ("nvidia-smi-topo", "h100-x8-ml-engineering-network-topo-m.txt", "h100", 8),
    ("rccl-tests", "mi300x-8gpu-hisohara-ai-scripts-aac8-allreduce.txt", "mi300x", None),
    ("rccl-tests", "mi300x-8gpu-rocm-blogs-rccl-xgmi-allreduce.txt", "mi300x", None),
    ("rccl-tests", "mi300x-16gpu-2node-hisohara-ai-scripts-aac10-allreduce-rocm642.txt", "mi300x", None),
    ("transferbench", "mi300x-x8-rocm-blogs-rccl-xgmi-a2a-64M-8cu.txt", "mi300x", None),
    ("transferbench", "mi300x-x8-transferbench-docs-presets-p2p.txt", "mi300x", None),
    ("hipblaslt-bench", "mi300x-superbench-test-hipblaslt-v600.txt", "mi300x", None),
    ("hipblaslt-bench", "mi300x-superbench-test-hipblaslt-v1500.txt", "mi300x", None),
]

# Healthy machines whose saved view was taken while something ran on their GPUs (processes listed,
# utilization or memory in use above the idle ceilings): exit 0, status warn, and every verdict that is
# neither PASS nor SKIP is WARN RF-GPU-BUSY (validation/saved_activity.py, docs/judging.md). The view's
# other verdicts (count, SKU, ECC) still pass.
UNDER_LOAD: list[tuple[str, str, str, int | None]] = [
    ("rocm-smi", "mi300x-rocm-blogs-llama-lora-concise-under-load.txt", "mi300x", 1),
    ("rocm-smi", "mi300x-x4-thamada-gls-rocm-smi-a.txt", "mi300x", 4),
    ("amd-smi", "mi300x-rocm-blogs-amd-smi-overview-monitor-putm.txt", "mi300x", 8),
    ("amd-smi", "mi300x-vf-amdsmi-issue130-monitor-6.4.0.txt", "mi300x-vf", 1),
    ("amd-smi", "mi300x-vf-amdsmi-issue130-monitor-process-6.4.0.txt", "mi300x-vf", 1),
    ("amd-smi", "mi300x-vf-amdsmi-issue130-process-6.4.0.txt", "mi300x-vf", 1),
    ("amd-smi", "mi300x-vf-msp-docs-default-view-trailer-7.2.4.txt", "mi300x-vf", 1),
    ("amd-smi", "mi300x-x8-amdsmi-changelog-7.0.0-default-view-processes-rvs.txt", "mi300x", 8),
    ("nvidia-smi", "h100-gpu-operator-runbook-table-tritonserver.txt", "h100", 1),
    ("nvidia-smi", "h100-k8s-gang-worker0-table-74gb-no-procs.txt", "h100", 1),
    ("nvidia-smi", "h100-mig-gpu-operator-runbook-table-mig-process.txt", "h100", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-burnin-query-gpu-end.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-burnin-query-gpu-load.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-busy-q-utilization-memory-clock-performance-pids.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-busy-query-gpu-util-mem-clocks.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-busy-table.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-own-context-query-gpu.txt", "h200", 1),
    ("nvidia-smi", "h200-x8-exp23-release-note-query-gpu-before-load.txt", "h200", 8),
    ("nvidia-smi", "h200-x1-rocm-fleet-busy-query-compute-apps.txt", "h200", 1),
    ("nvidia-smi", "h200-x1-rocm-fleet-own-context-query-compute-apps.txt", "h200", 1),
    ("nvidia-smi", "h200-x8-exp23-release-note-query-compute-apps-after.txt", "h200", 8),
    ("nvidia-smi", "h200-x8-exp23-release-note-query-compute-apps-before-not-found.txt", "h200", 8),
    ("rocm-smi", "mi250x-x8gcd-rocm-issue3364-showpids-colabfold.txt", "mi250x", 8),
]

# Healthy machines whose published output was cut by its author ("[output truncated]", "[...]", "...",
# <SNIP>): never a pass, an ERROR naming the cut (SOURCES.md marks each "truncated").
CUT: list[tuple[str, str, str]] = [
    ("amd-smi", "mi3xx-x2-amdsmi-changelog-6.3.0-metric-pcie.txt", "mi300x"),
    ("amd-smi", "mi300x-amdsmi-changelog-7.1.0-metric-elided-xgmi-err-na.txt", "mi300x"),
    ("amd-smi", "mi300x-rocm-blogs-amd-smi-overview-firmware.txt", "mi300x"),
    ("amd-smi", "mi300x-rocm-blogs-amd-smi-overview-list.txt", "mi300x"),
    ("amd-smi", "mi300x-rocm-blogs-amd-smi-overview-metric.txt", "mi300x"),
    ("amd-smi", "mi300x-rocm-blogs-amd-smi-overview-static.txt", "mi300x"),
    ("amd-smi", "mi300x-rocm-blogs-amd-smi-overview-topology.txt", "mi300x"),
    ("amd-smi", "mi300x-rocm-blogs-amd-smi-overview-xgmi.txt", "mi300x"),
    ("rocminfo", "mi300x-ml-engineering-amd-debug-snippet.txt", "mi300x"),
    ("nvidia-smi", "h100-ml-engineering-query-gpu-vbios-csv.txt", "h100"),
    ("rvs", "mi300x-system-acceptance-docs-gm-single.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-gpup-props.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-gst-ext.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-gst-single.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-iet-single.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-pbqt-peers.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-pebb-bandwidth.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-peqt.txt", "mi300x"),
    ("babelstream", "mi300x-x8-amd-acceptance-doc-mpiexec-truncated.txt", "mi300x"),
    ("transferbench", "mi250x-likely-gpu-cluster-networking-p2p-4M.txt", "mi250x"),
    ("rocm-bandwidth-test", "mi250x-likely-gpu-cluster-networking-A.txt", "mi250x"),
]

# Outputs with nothing the profile has a target for (exit 2, "holds no measurement"): a process list that
# lists nothing and names no GPU (a CSV cut after its header reads the same), a one-GPU topology,
# RVS/rocm-bandwidth-test views without a published number.
NOTHING_TO_JUDGE: list[tuple[str, str, str]] = [
    ("nvidia-smi", "h200-x1-rocm-fleet-idle-query-compute-apps.txt", "h200"),
    ("rvs", "mi300x-system-acceptance-docs-gpup-iolink.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-mem-bandwidth-grep.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-pbqt-bandwidth.txt", "mi300x"),
    ("rvs", "mi300x-system-acceptance-docs-pebb-distance.txt", "mi300x"),
    ("rocm-bandwidth-test", "mi250x-likely-gpu-cluster-networking-e.txt", "mi250x"),
    ("rocm-bandwidth-test", "mi250x-likely-gpu-cluster-networking-s0-d4.txt", "mi250x"),
    ("nvidia-smi-topo", "h200-x1-rocm-fleet-device-topo-m.txt", "h200"),
]

# The one exception among healthy, complete outputs of a profiled SKU: not a FAIL, but no pass either.
EXCEPTIONS: dict[tuple[str, str, str], str] = {
    ("miopen-driver", "mi300x-x8-miopen-wrapper-proof-flagoff-convfp16.txt", "mi300x"):
        "MIOpenDriver ran with -V 0 (verification off), so no phase has a verification line: ERROR "
        "RF-NOT-REPORTED 'verification was off (-V 0); run with -V 1' by design, not a false FAIL",
}

# GPUs no profile exists for, lab machines without a GPU, and outputs the parsers refuse on purpose.
NO_PROFILE_OR_REFUSED = {
    "rocm-smi": [
        "lab-debian12-vm-nogpu-rocm-smi.txt",
        "mi100-x2-rccl-issue1129-alldevices-f-P-t-u-g-6.0.0.txt",
        "mi100-x6-telegraf-testdata-rocm571-json.txt",
        "mi210-rocm-blogs-affinity-concise.txt",
        "mi210-rocm-blogs-affinity-showtoponuma.txt",
        "mi210-rocm-blogs-dbrx-showproductname.txt",
        "mi210-rocm-blogs-vit-inference-showproductname.txt",
        "mi250-rocm-blogs-llama2-lora-concise-legacy.txt",
        "mi300a-rocm-issue4411-comment1-showpids-kfd-open.txt",
        "mi300a-rocm-issue4411-showpidgpus-6.3.3.txt",
        "mi300a-rocm-issue4411-showpids-daemon-6.3.3.txt",
        "mi300a-x4-rocm-issue4411-comment6-showpids-kfd-open-6.3.1.txt",
        "r9700-rocm-issue5706-comment22-concise-gpu100-7.2.txt",
        "w6800-rocm-issue2595-showpids-unknown-5.6.0.txt",
    ],
    "rocminfo": [
        "lab-debian12-vm-nogpu-rocminfo.txt",
        "mi210-rocm-blogs-roc-profiling-sysinfo.txt",
    ],
    "amd-smi": [
        "unknown-amdsmi-changelog-6.1.0-metric-P-pcie-l0-recovery-1.txt",     # unknown GPU (PCIe Gen4): no SKU
        # CPX/NPS1: the mi300x profile has no target set for that mode (SPX/NPS1, DPX/NPS2, CPX/NPS4); an excerpt
        "mi300x-x8-amdgpu-docs-quick-start-static-partition-cpx-nps1-6.4.0.txt",
        "mi210-device-metrics-exporter-test-static-json-gpu-data.txt",
        "mi300a-amdsmi-cli-readme-static.txt",
        "mi300a-x4-rocm-issue4411-process-none-6.3.1.txt",
        "mi300x-rocm-blogs-amd-smi-overview-static-json-jq-vram.txt",
        "r9700-rocm-issue5706-metric-gpu0-json-head40-7.2.0.txt",
        "r9700-x2-rocm-issue5706-default-view-processes-7.2.0.txt",
        "r9700-x2-rocm-issue5706-process-json-7.2.0.txt",
        "rx9070xt-x2-rocm-issue5812-default-view-7.1.1.txt",
        "ryzen-ai-apu-blog-metric-7x.txt",
        "ryzen-ai-apu-blog-monitor-putm-7x.txt",
        "unknown-16gb-amdsmi-changelog-6.2.0-monitor-q-rvs.txt",
        "unknown-2gpu-pcie-amdsmi-changelog-6.1.1-topology-json.txt",
        "unknown-amdsmi-changelog-6.1.0-metric-power-json.txt",
        "unknown-amdsmi-changelog-6.2.0-process-json-two-procs.txt",
        "unknown-amdsmi-changelog-6.2.0-process-name-na.txt",
        "unknown-amdsmi-changelog-6.2.0-sudo-process-transferbench.txt",
        "unknown-amdsmi-docs-ras-metric-ecc.txt",
        "unknown-xgmi-amdsmi-changelog-6.1.2-metric-ecc-blocks-xgmi-wafl.txt",
        "unknown-mi3xx-amdsmi-changelog-6.1.0-metric-usage-wrapped.txt",
        "unknown-mi3xx-cpx-amdsmi-changelog-6.3.0-metric-usage-xcp.txt",
        "unknown-mi3xx-cpx-amdsmi-changelog-7.0.0-metric-usage-after.txt",
        "unknown-mi3xx-cpx-amdsmi-changelog-7.0.0-metric-usage-before.txt",
    ],
    "nvidia-smi": [
        "a100-sxm4-x2-xtuner-doc-table-empty-process-box.txt",
        "gb10-llm-d-gpu-kind-query-compute-apps-2-vllm.txt",
        "l40s-triton-deploy-doc-query-compute-apps-3procs.txt",
        "l40s-triton-deploy-doc-query-gpu-mem.txt",
        "rtxpro6000-hami-mig-doc-query-compute-apps-header-only.txt",
        "rtx3090-x4-garylvov-dev-env-q-d-power-580.txt",
        "v100-sxm2-x8-data-on-eks-bionemo-table-8procs.txt",
    ],
    "nvidia-smi-topo": [
        "a100-x8-ml-engineering-network-topo-m.txt",
    ],
    "lspci": [
        "cx7-lenovo-sd665n-lspci-s-03-vvv.txt",
        "lab-debian12-vm-lspci-vvv-nn.txt",
    ],
    "rccl-tests": [
        "mi325x-hisohara-ai-scripts-aac11-allreduce-multi-grep.txt",  # grep-filtered: refused
    ],
    "nccl-tests": [
        "a100-8gpu-superbench-testdata-nccl-allgather.txt",
        "a100-8gpu-superbench-testdata-nccl-allreduce.txt",
        "a100-8gpu-superbench-testdata-nccl-alltoall.txt",
    ],
    "hipblaslt-bench": [
        "mi350x-hipblaslt-tunning-helper-print-kernel-info-rotating-v100200.txt",
        "mi350x-hipblaslt-tunning-helper-print-kernel-info-v100200-8192.txt",
    ],
    "rocblas-bench": [
        "mi100-likely-superbench-test-rocblas-fp16-xdlops.txt",
        "mi100-likely-superbench-test-rocblas-fp64.txt",
    ],
}
