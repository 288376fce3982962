"""The idle pre-flight: reading a node's GPU activity from real tool outputs, and judging it.

The nvidia-smi outputs were recorded on the lent H200 (tests/fixtures/real/nvidia-smi/SOURCES.md):
idle, with a second process running bf16 matmuls (pid 487), and with the querying process itself
holding a CUDA context (pid 538). RecordedHost answers the reader's commands from those files: it
stands in for the node because no GPU exists here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded_host import RecordedHost

from validation import idle
from validation.probes import gpu_activity
from validation.records import GpuProcess, Status
from validation.targets import load_targets

NV = "real/nvidia-smi/h200-x1-rocm-fleet-"
QUERY = "nvidia-smi --query-gpu=index,pci.bus_id,utilization.gpu"
APPS = "nvidia-smi --query-compute-apps"


def read(answers: dict[str, str], tools: set[str] | None = None) -> gpu_activity.ActivityReading:
    host = RecordedHost(answers, tools=tools if tools is not None else {"nvidia-smi"})
    return gpu_activity.read_activity(gpu_activity.host_run(host), gpu_activity.host_which(host), interval_s=0)


def by_metric(verdicts: list) -> dict[str, idle.Verdict]:
    return {v.metric: v for v in verdicts}


@pytest.fixture(scope="module")
def h200() -> object:
    return load_targets("h200", gpu_count=1)


def test_a_second_process_running_matmuls_makes_gpu0_busy_and_is_named(h200: object) -> None:
    reading = read({QUERY: f"{NV}busy-query-gpu-util-mem-clocks.txt", APPS: f"{NV}busy-query-compute-apps.txt"})
    (gpu,) = reading.gpus
    assert gpu.gpu == 0 and gpu.bus_id == "0000:00:06.0"
    assert gpu.busy_pct == (99.0, 99.0, 99.0) and gpu.vram_used_mib == 1011
    assert gpu.processes == (GpuProcess(pid=487, name="python3", bus_id="00000000:00:06.0", vram_mib=1002.0,
                                        gpu_uuid="GPU-c1f2f058-dae2-fbbb-624f-2489d59a7d91"),)
    verdicts = by_metric(idle.judge_activity(reading.gpus, h200, idle.Ownership()))
    procs = verdicts["idle_foreign_processes"]
    assert procs.status is Status.FAIL and procs.code == "RF-GPU-BUSY"
    assert "gpu0 before measuring: 1 process of someone else: pid 487 python3 (1002 MiB)" in procs.reason
    assert verdicts["idle_gpu_busy_pct"].status is Status.FAIL and "99 % utilization" in verdicts[
        "idle_gpu_busy_pct"].reason
    assert verdicts["idle_vram_used_mib"].status is Status.FAIL and "1011 MiB of memory in use" in verdicts[
        "idle_vram_used_mib"].reason
    assert verdicts["idle_throttled"].status is Status.PASS      # 0x4 is the software power cap, not a fault
    assert set(idle.busy_gpus(verdicts.values())) == {"gpu0"}


def test_an_idle_h200_passes_every_idle_verdict(h200: object) -> None:
    reading = read({QUERY: f"{NV}idle-query-gpu-util-mem-clocks.txt", APPS: f"{NV}idle-query-compute-apps.txt"})
    verdicts = idle.judge_activity(reading.gpus, h200, idle.Ownership())
    assert reading.complete and [v.status for v in verdicts] == [Status.PASS] * 4
    assert idle.busy_gpus(verdicts) == {}


def test_this_runs_own_context_is_not_someone_elses_work(h200: object) -> None:
    reading = read({QUERY: f"{NV}idle-query-gpu-util-mem-clocks.txt",
                    APPS: f"{NV}own-context-query-compute-apps.txt"})
    (gpu,) = reading.gpus          # the apps view names no bus: a process without one is on every GPU
    assert [p.pid for p in gpu.processes] == [538]
    mine = by_metric(idle.judge_activity(reading.gpus, h200, idle.Ownership(pids=frozenset({538}))))
    assert mine["idle_foreign_processes"].status is Status.PASS
    theirs = by_metric(idle.judge_activity(reading.gpus, h200, idle.Ownership()))
    assert theirs["idle_foreign_processes"].status is Status.FAIL and "pid 538 python3 (612 MiB)" in theirs[
        "idle_foreign_processes"].reason


def test_own_memory_is_subtracted_and_an_unlisted_own_context_is_not_judged(h200: object) -> None:
    gpu = idle.GpuActivity(gpu=0, busy_pct=(3.0,), vram_used_mib=621.0, throttled=False,
                           processes=(GpuProcess(pid=538, name="python3", vram_mib=612.0),))
    ours = by_metric(idle.judge_activity([gpu], h200, idle.Ownership(pids=frozenset({538}))))
    assert ours["idle_vram_used_mib"].status is Status.PASS and ours["idle_vram_used_mib"].measured == 9.0
    hidden = idle.GpuActivity(gpu=0, busy_pct=(0.0,), vram_used_mib=621.0, throttled=False)
    unlisted = by_metric(idle.judge_activity([hidden], h200, idle.Ownership(context_unlisted=True)))
    assert unlisted["idle_vram_used_mib"].status is Status.SKIP
    assert "another PID namespace" in unlisted["idle_vram_used_mib"].reason
    listed = by_metric(idle.judge_activity([hidden], h200, idle.Ownership()))
    assert listed["idle_vram_used_mib"].status is Status.FAIL      # 621 MiB > 256 MiB with nobody to own it


def test_a_process_named_in_the_ignore_list_does_not_make_the_gpu_busy(h200: object) -> None:
    gpu = idle.GpuActivity(gpu=0, busy_pct=(0.0,), vram_used_mib=0.0, throttled=False,
                           processes=(GpuProcess(pid=9, name="dcgm-exporter", vram_mib=0.0),))
    ok = by_metric(idle.judge_activity([gpu], h200, idle.Ownership(ignored_names=frozenset({"dcgm-exporter"}))))
    assert ok["idle_foreign_processes"].status is Status.PASS
    busy = by_metric(idle.judge_activity([gpu], h200, idle.Ownership()))
    assert busy["idle_foreign_processes"].status is Status.FAIL


def test_hardware_slowdown_on_an_idle_gpu_is_its_own_failure(h200: object) -> None:
    reading = read({QUERY: "derived/nvidia-smi/h200-x1-idle-query-gpu-hw-slowdown.txt",
                    APPS: f"{NV}idle-query-compute-apps.txt"})
    verdicts = by_metric(idle.judge_activity(reading.gpus, h200, idle.Ownership()))
    assert verdicts["idle_throttled"].status is Status.FAIL and verdicts["idle_throttled"].code == "RF-GPU-THROTTLED"
    assert "0x0000000000000009" in verdicts["idle_throttled"].reason
    assert idle.busy_gpus(verdicts.values()) == {}         # throttled is not busy: the GPU may still be measured


def test_a_sku_without_an_idle_memory_reading_records_memory_and_still_judges_processes() -> None:
    mi325x = load_targets("mi325x")
    gpu = idle.GpuActivity(gpu=3, busy_pct=(0.0,), vram_used_mib=4000.0, throttled=False,
                           processes=(GpuProcess(pid=77, name=None, gpu=3, vram_mib=4000.0),))
    verdicts = by_metric(idle.judge_activity([gpu], mi325x, idle.Ownership()))
    assert verdicts["idle_vram_used_mib"].status is Status.SKIP
    assert verdicts["idle_foreign_processes"].status is Status.FAIL
    assert "gpu3 before measuring: 1 process of someone else: pid 77 (name not readable) (4000 MiB)" in verdicts[
        "idle_foreign_processes"].reason


def test_no_tool_on_the_node_is_an_unreadable_reading_not_an_idle_one() -> None:
    reading = read({}, tools=set())
    assert reading.gpus == () and not reading.complete
    assert "none of amd-smi, rocm-smi or nvidia-smi" in reading.errors[0]


def test_an_amd_tool_that_lists_itself_is_recognised_by_its_pid() -> None:
    text, pids = gpu_activity._strip_self(f"{gpu_activity.SELF_MARKER} 4242\nGPU: 0\n")
    assert pids == {4242} and text == "GPU: 0\n"
    assert gpu_activity._self_reporting(("amd-smi", "process", "--json"))[:2] == ("sh", "-c")


def test_own_pids_follow_the_parent_chain(tmp_path: Path) -> None:
    for pid, ppid, comm in ((10, 1, "pytest"), (11, 10, "nvidia-smi"), (12, 11, "a) b"), (13, 1, "other")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({comm}) S {ppid} 0 0\n")
    (tmp_path / "self").mkdir()
    assert gpu_activity.own_pids(tmp_path, me=10) == frozenset({10, 11, 12})


@pytest.mark.parametrize(("subject", "involved"), [("gpu3", True), ("host -> gpu3", True), ("gpu5 -> gpu3", True),
                                                    ("gpu1 -> gpu2", False), ("gpu30", False), ("node", True)])
def test_which_measurements_involve_a_busy_gpu(subject: str, involved: bool) -> None:
    assert idle.names_gpu(subject, {"gpu3": "busy"}) is involved


def test_an_amd_smi_process_view_names_the_process_holding_an_mi300x() -> None:
    """amd-smi 25.3 on an MI300X VF (ROCm/amdsmi#130): one process, name not readable, 1.9 GB of VRAM;
    the metric view of the ROCm blogs' overview shows GPU 0 at 100 %."""
    host = RecordedHost({"amd-smi metric": "real/amd-smi/mi300x-rocm-blogs-amd-smi-overview-metric.txt",
                         "amd-smi process": "real/amd-smi/mi300x-vf-amdsmi-issue130-process-6.4.0.txt"},
                        tools={"amd-smi"})
    reading = gpu_activity.read_activity(gpu_activity.host_run(host), gpu_activity.host_which(host), interval_s=0)
    verdicts = by_metric(idle.judge_activity(reading.gpus[:1], load_targets("mi300x"), idle.Ownership()))
    procs = verdicts["idle_foreign_processes"]
    assert procs.status is Status.FAIL and procs.code == "RF-GPU-BUSY"
    assert "pid 2266127 (name not readable) (1945.6 MiB)" in procs.reason       # 1.9 GB as amd-smi's GiB
    assert verdicts["idle_gpu_busy_pct"].status is Status.FAIL
    assert verdicts["idle_vram_used_mib"].status is Status.ERROR     # this metric view carries no memory in use


def test_a_rocm_smi_pid_list_without_gpu_indices_makes_every_gpu_busy() -> None:
    """rocm-smi --showpids on an MI250X node (ROCm/ROCm#3364): colabfold_batch holds '8' GPUs, a count,
    not which ones; the process is put on every GPU rather than on none."""
    host = RecordedHost({"rocm-smi --showtemp": "real/rocm-smi/mi100-x6-telegraf-testdata-rocm571-json.txt",
                         "rocm-smi --showpids": "real/rocm-smi/mi250x-x8gcd-rocm-issue3364-showpids-colabfold.txt"},
                        tools={"rocm-smi"})
    reading = gpu_activity.read_activity(gpu_activity.host_run(host), gpu_activity.host_which(host), interval_s=0)
    assert len(reading.gpus) == 6 and all([p.pid for p in g.processes] == [3458806] for g in reading.gpus)
    busy = idle.busy_gpus(idle.judge_activity(reading.gpus, load_targets("mi250x"), idle.Ownership()))
    assert sorted(busy) == [f"gpu{i}" for i in range(6)] and "colabfold_batch" in busy["gpu0"]


def test_a_busy_gpu_whose_work_no_listed_process_does_is_someone_the_node_cannot_see(h200: object) -> None:
    # issue 41: the load's utilization and memory (busy query) with the process view of an idle GPU, as a run in
    # its own PID namespace reads a neighbour's matmuls from outside it: an empty list is not an idle GPU
    reading = read({QUERY: f"{NV}busy-query-gpu-util-mem-clocks.txt", APPS: f"{NV}idle-query-compute-apps.txt"})
    (gpu,) = reading.gpus
    assert gpu.processes == () and gpu.busy_pct == (99.0, 99.0, 99.0)
    verdicts = by_metric(idle.judge_activity(reading.gpus, h200, idle.Ownership()))
    assert verdicts["idle_foreign_processes"].status is Status.PASS
    busy = verdicts["idle_gpu_busy_pct"]
    assert busy.status is Status.FAIL and busy.code == "RF-GPU-UNSEEN", busy
    assert "99 % utilization" in busy.reason and "someone it cannot see" in busy.reason
    assert set(idle.busy_gpus(verdicts.values())) == {"gpu0"}         # measuring is skipped, as for RF-GPU-BUSY
    # a view of load alone (no process view in it) cannot say whose: it stays RF-GPU-BUSY
    alone = by_metric(idle.judge_activity(reading.gpus, h200, idle.Ownership(), processes_listed=False))
    assert alone["idle_gpu_busy_pct"].code == "RF-GPU-BUSY" and "cannot see" not in alone["idle_gpu_busy_pct"].reason


def test_a_busy_gpu_with_a_listed_foreign_process_stays_rf_gpu_busy(h200: object) -> None:
    reading = read({QUERY: f"{NV}busy-query-gpu-util-mem-clocks.txt", APPS: f"{NV}busy-query-compute-apps.txt"})
    verdicts = idle.judge_activity(reading.gpus, h200, idle.Ownership())
    assert {v.code for v in verdicts if v.status is Status.FAIL} == {"RF-GPU-BUSY"}
