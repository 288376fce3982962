"""Which watcher samples vouch for each number (issue 30). On the lent H100, with a site baseline, a
load in the middle of the run (and one doing only host<->device copies) left two numbers per case valid
and failing RF-MODEL-LOW as the hardware's: a ResNet configuration's p50/p99 latencies, recorded a few
milliseconds after its images/s, had an empty span of their own and were judged by the one sample before
it, taken after the load had gone. Numbers of one run share its window."""

from __future__ import annotations

from dataclasses import dataclass

from validation.checks.measuring import NodeMeasuring
from validation.probes import gpu_watch
from validation.probes.telemetry import GpuSample
from validation.records import GpuProcess

LOAD = GpuProcess(pid=4242, name="python3", gpu=0)


@dataclass
class Watcher:
    """The samples a real watcher would hold: one a second, a foreign process seen from 101 s to 103 s."""
    interval_s: float = 1.0

    def read(self) -> tuple[gpu_watch.WatchSample, ...]:
        return tuple(gpu_watch.WatchSample(t=float(t), gpus=(GpuSample(gpu=0, util_pct=100.0),),
                                           processes=(LOAD,) if 101 <= t <= 103 else (), ours=frozenset())
                     for t in range(95, 111))


def resnet_configuration(state: NodeMeasuring, done_at: float) -> list[dict]:
    """images/s, then its latencies and memory, recorded as test_model_probes.py records them."""
    entries = [{"metric": m, "subject": "gpu0", "value": v, "unit": u, "recorded_at": done_at + i * 0.002}
               for i, (m, v, u) in enumerate((("resnet50_bf16_eager_b256_images_s", 6308.0, "images/s"),
                                              ("resnet50_bf16_eager_b256_latency_p50_ms", 40.6, "ms"),
                                              ("resnet50_bf16_eager_b256_latency_p99_ms", 41.2, "ms"),
                                              ("resnet50_bf16_eager_b256_peak_memory_mib", 9120.0, "MiB")))]
    state.measurements.extend(entries)
    return entries


def test_a_runs_latencies_and_memory_share_its_window_and_its_verdict() -> None:
    state = NodeMeasuring(node="n1", allow_busy=False, watcher=Watcher())   # type: ignore[arg-type]
    entries = resnet_configuration(state, done_at=104.6)      # measured 100.0-104.6, beside the load
    state.watch_check("test_resnet50", 100.0, 104.7, 0)
    assert [e.get("valid") for e in entries] == [False] * 4, [e["watch"] for e in entries]
    assert all("pid 4242" in e["invalid_reason"] for e in entries)


def test_a_number_recorded_seconds_later_has_its_own_span() -> None:
    state = NodeMeasuring(node="n1", allow_busy=False, watcher=Watcher())   # type: ignore[arg-type]
    before = resnet_configuration(state, done_at=99.5)        # measured 96.0-99.5, before the load
    beside = resnet_configuration(state, done_at=104.6)       # the next configuration, 99.5-104.6, beside it
    state.watch_check("test_resnet50", 96.0, 104.7, 0)
    assert all("valid" not in e for e in before), [e["watch"] for e in before]
    assert all(e.get("valid") is False for e in beside)
