"""Which recorded numbers the post-flight needs a watcher sample for (issue 30). On the lent H200 at
3360e7f every idle quick-tier run failed RF-GPU-ACTIVITY-UNKNOWN for one number: gpu_numa_node, which the
topology check records in 0.06 s between two one-second samples. Someone else's work changes a
throughput or a latency, not which NUMA node a GPU sits on."""

from __future__ import annotations

from validation.checks.test_gpu_idle import needs_watching

# recorded as validation/checks/test_topology.py and the GEMM check write them (from the H200 run)
NUMA = {"metric": "gpu_numa_node", "subject": "gpu0", "value": 0, "unit": "node", "status": "pass"}
GEMM = {"metric": "torch_matmul_bf16_tflops", "subject": "gpu0", "value": 661.7, "unit": "TFLOPS"}
LATENCY = {"metric": "hip_kernel_launch_us", "subject": "gpu0", "value": 4.1, "unit": "us"}


def test_a_throughput_needs_a_sample_and_a_topology_fact_does_not() -> None:
    assert needs_watching(GEMM)
    assert not needs_watching(NUMA)


def test_nothing_without_a_value_and_no_idle_reading_needs_one() -> None:
    assert not needs_watching({**GEMM, "value": None})
    assert not needs_watching({**GEMM, "metric": "idle_gpu_busy_pct", "unit": "%"})


def test_every_number_a_measuring_check_took_needs_one_whatever_its_unit() -> None:
    # the scaling check's efficiency (%) gets a window from the plugin like any measuring check's number
    efficiency = {"metric": "scaling_matmul_bf16_8192_efficiency_n1", "subject": "gpu0", "value": 100.0,
                  "unit": "%", "watch": {"samples": 0, "watched": 0}}
    assert needs_watching(efficiency)
    assert not needs_watching({k: v for k, v in efficiency.items() if k != "watch"})
