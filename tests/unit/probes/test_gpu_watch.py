"""The GPU watcher's parts (validation/probes/gpu_watch.py, watch_sampler.py) on recorded real views of the
lent H200 (tests/fixtures/real/nvidia-smi/SOURCES.md). The whole watcher inside the real suite, with views
that change mid-run: tests/unit/checks/test_watch_fault_matrix.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from validation.idle import Ownership
from validation.probes import gpu_activity, gpu_watch, telemetry

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nvidia-smi"


def view(name: str) -> str:
    return "\n".join((REAL / name).read_text().splitlines()[1:]) + "\n"     # without the recorded "$ command"


NVIDIA = gpu_watch.Views("nvidia-smi", ("nvidia-smi", "--query-gpu=..."), gpu_activity.NVIDIA_APPS_ARGV,
                         gpu_activity.nvidia_samples, "nvidia-smi")
BUSY_GPU = view("h200-x1-rocm-fleet-busy-query-gpu-util-mem-clocks.txt")
BUSY_APPS = view("h200-x1-rocm-fleet-busy-query-compute-apps.txt")      # pid 487 python3, 1002 MiB
IDLE_APPS = view("h200-x1-rocm-fleet-idle-query-compute-apps.txt")


def tick(t: float, apps: str = IDLE_APPS, gpu: str = BUSY_GPU, ours: tuple[int, ...] = (), **extra: Any) -> dict:
    return {"t": t, "views": {"gpus": {"rc": 0, "out": gpu, "err": ""}, "processes": {"rc": 0, "out": apps,
                                                                                     "err": ""}},
            "tool_pids": [], "ours": list(ours), **extra}


def samples(*ticks: dict) -> list[gpu_watch.WatchSample]:
    return [NVIDIA.parse(t) for t in ticks]


def test_a_foreign_process_is_named_with_when_it_was_seen() -> None:
    seen = samples(tick(100.0), tick(101.0, BUSY_APPS), tick(102.0, BUSY_APPS), tick(103.0))
    window = gpu_watch.window(seen, 100.5, 103.5, interval_s=1.0, owner=Ownership())
    (sighting,) = window.foreign
    assert (sighting.gpu, sighting.pid, sighting.name, sighting.vram_mib) == (0, 487, "python3", 1002.0)
    assert (sighting.first_t, sighting.last_t, sighting.samples) == (101.0, 102.0, 2)
    assert sighting.describe().startswith("gpu0 pid 487 python3 (1002 MiB) seen ")
    assert window.samples == 4 and window.max_gap_s == 1.0          # the sample at 100.0 is the state at 100.5
    assert window.power_capped_pct == {0: 100.0}                     # 0x4: the software power cap, recorded
    assert window.throttled == () and window.busy_pct_max == {0: 99.0}


def test_the_runs_own_processes_and_declared_names_are_not_foreign() -> None:
    seen = samples(tick(100.0, BUSY_APPS, ours=(487,)))
    assert gpu_watch.window(seen, 100.0, 101.0, interval_s=1.0, owner=Ownership()).foreign == ()
    seen = samples(tick(100.0, BUSY_APPS))
    assert gpu_watch.window(seen, 100.0, 101.0, interval_s=1.0,
                            owner=Ownership(ignored_names=frozenset({"python3"}))).foreign == ()


def test_the_state_a_window_began_in_is_the_last_sample_before_it_unless_that_is_stale() -> None:
    seen = samples(tick(100.0, BUSY_APPS), tick(105.0))
    recent = gpu_watch.window(seen, 102.0, 106.0, interval_s=1.0, owner=Ownership())
    assert [s.pid for s in recent.foreign] == [487] and recent.samples == 2
    stale = gpu_watch.window(seen, 104.5, 106.0, interval_s=1.0, owner=Ownership())
    assert stale.foreign == () and stale.samples == 1


def test_hardware_and_thermal_reductions_are_named_and_the_power_cap_is_not_one() -> None:
    capped = telemetry.GpuSample(gpu=0, throttled=False, power_capped=True, throttle_status="0x0000000000000004")
    hot = telemetry.GpuSample(gpu=0, throttled=True, throttle_status="0x0000000000000028")
    amd = telemetry.GpuSample(gpu=0, throttled=True, throttle_status="THROTTLED")
    assert gpu_watch.throttle_reasons(capped) == ()
    assert gpu_watch.throttle_reasons(hot) == ("HW slowdown", "SW thermal slowdown")
    # AMD's THROTTLE_STATUS also covers the package power limit: recorded, not a reduction by name
    assert gpu_watch.throttle_reasons(amd) == () and gpu_watch.unspecified_throttle(amd)
    assert not gpu_watch.unspecified_throttle(hot) and not gpu_watch.unspecified_throttle(capped)


def test_a_view_that_failed_or_is_hostile_becomes_an_error_and_vouches_for_nothing() -> None:
    failed = NVIDIA.parse({"t": 1.0, "views": {"gpus": {"rc": 9, "out": "", "err": "NVML: GPU is lost"},
                                               "processes": {"rc": 0, "out": "garbage\x1b[2J", "err": ""}}})
    assert failed.gpus == () and any("GPU is lost" in e for e in failed.errors) and not failed.watched
    window = gpu_watch.window([failed], 0.5, 1.5, interval_s=1.0, owner=Ownership())
    assert window.errors and window.foreign == () and (window.samples, window.watched) == (1, 0)
    broken = NVIDIA.parse({"t": 2.0, "views": {}, "tool_pids": [], "ours": [], "error": "UnicodeDecodeError(...)"})
    assert not broken.watched and "tick failed" in broken.errors[-1]


def test_a_process_is_seen_even_when_the_gpu_view_failed() -> None:
    lost = {"t": 1.0, "views": {"gpus": {"rc": 9, "out": "", "err": "NVML: GPU is lost"},
                                "processes": {"t": 1.2, "rc": 0, "out": BUSY_APPS, "err": ""}}}
    window = gpu_watch.window(samples(lost), 0.5, 1.5, interval_s=1.0, owner=Ownership(), gpus=[0])
    (sighting,) = window.foreign
    assert (sighting.pid, sighting.first_t) == (487, 1.2)          # dated by the process view's own moment
    assert window.watched == 0


def test_a_hostile_process_name_is_printed_as_text() -> None:
    apps = BUSY_APPS.replace("python3", "py\x1b]0;owned\x07thon")
    (sighting,) = gpu_watch.window(samples(tick(1.0, apps)), 1.0, 2.0, interval_s=1.0, owner=Ownership()).foreign
    assert "\x1b" not in sighting.describe() and "\x07" not in sighting.describe()


class FakeHost:
    """A testinfra-like host whose `mktemp` answers what a hostile node might."""

    def __init__(self, made: str) -> None:
        self.made, self.commands = made, []
        self.backend = type("B", (), {"NAME": "ssh"})()

    def run(self, command: str) -> Any:
        self.commands.append(command)
        return type("R", (), {"rc": 0, "stdout": self.made, "stderr": ""})()


@pytest.mark.parametrize("made", ["/var/x; rm -rf /", "/var/rocm-fleet-watch.abc$(id)", "", "relative/dir"])
def test_a_node_that_answers_mktemp_with_something_else_gets_no_watcher(made: str) -> None:
    host = FakeHost(made)
    watcher = gpu_watch.Watcher(host, NVIDIA)
    assert watcher.start() is False and "cannot make the watcher's directory" in (watcher.error or "")
    assert len(host.commands) == 1                         # nothing else ran with the answer in it


def test_the_sampler_stops_when_its_owner_is_gone(tmp_path: Path) -> None:
    owner = subprocess.Popen(["sleep", "30"])
    config = {"interval_s": 0.2, "out": str(tmp_path / "s.jsonl"), "stop": str(tmp_path / "stop"),
              "deadline": time.time() + 60, "owner_pid": owner.pid, "timeout_s": 5,
              "commands": {"gpus": ["true"], "processes": ["true"]}}
    (tmp_path / "c.json").write_text(json.dumps(config))
    sampler = subprocess.Popen([sys.executable, str(gpu_watch.SAMPLER), str(tmp_path / "c.json")])
    time.sleep(1.0)
    owner.kill()
    owner.wait()
    assert sampler.wait(timeout=10) == 0
    ticks = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert len(ticks) >= 3 and owner.pid in ticks[0]["ours"] and os.getpid() not in ticks[0]["ours"]
    assert all(t["views"]["gpus"]["rc"] == 0 for t in ticks)


def test_the_sampler_stops_on_its_stop_file(tmp_path: Path) -> None:
    config = {"interval_s": 0.2, "out": str(tmp_path / "s.jsonl"), "stop": str(tmp_path / "stop"),
              "deadline": time.time() + 60, "owner_pid": None, "timeout_s": 5,
              "commands": {"gpus": ["true"], "processes": ["no-such-tool-here"]}}
    (tmp_path / "c.json").write_text(json.dumps(config))
    sampler = subprocess.Popen([sys.executable, str(gpu_watch.SAMPLER), str(tmp_path / "c.json")])
    time.sleep(0.6)
    (tmp_path / "stop").touch()
    assert sampler.wait(timeout=5) == 0
    first = json.loads((tmp_path / "s.jsonl").read_text().splitlines()[0])
    assert first["views"]["processes"]["rc"] is None and first["ours"] == []


def test_a_tick_file_makes_the_sampler_take_its_next_sample_at_once(tmp_path: Path) -> None:
    # a 30 s interval: without the tick file the second sample would come half a minute later
    config = {"interval_s": 30.0, "out": str(tmp_path / "s.jsonl"), "stop": str(tmp_path / "stop"),
              "tick": str(tmp_path / "tick"), "deadline": time.time() + 60, "owner_pid": None, "timeout_s": 5,
              "commands": {"gpus": ["true"], "processes": ["true"]}}
    (tmp_path / "c.json").write_text(json.dumps(config))
    sampler = subprocess.Popen([sys.executable, str(gpu_watch.SAMPLER), str(tmp_path / "c.json")])
    try:
        deadline = time.time() + 10
        while not (tmp_path / "s.jsonl").exists() or not (tmp_path / "s.jsonl").read_text():
            assert time.time() < deadline, "no first sample"
            time.sleep(0.05)
        asked = time.time()
        (tmp_path / "tick").touch()
        while len((tmp_path / "s.jsonl").read_text().splitlines()) < 2:
            assert time.time() - asked < 5, "the tick file did not bring the next sample forward"
            time.sleep(0.05)
        second = json.loads((tmp_path / "s.jsonl").read_text().splitlines()[1])
        assert second["t"] >= asked - 0.01 and not (tmp_path / "tick").exists()
    finally:
        (tmp_path / "stop").touch()
        assert sampler.wait(timeout=5) == 0
