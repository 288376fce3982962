"""The GPU watcher on a remote node over real SSH (issue 30): the sampler runs on the lab host itself,
the controller reads only what is new, and nothing is left behind.

Lab hosts have no GPU, so the host gets a stand-in `nvidia-smi` (Python, on the host) that prints the
views recorded on the lent H200 (tests/fixtures/real/nvidia-smi/SOURCES.md): idle, or with
someone else's python3 (pid 487, 1002 MiB) while /etc/rocm-fleet-standin/busy exists. Everything
else is the real thing: testinfra's ansible backend over the lab's SSH, validation/probes/gpu_watch.py
on the controller and validation/probes/watch_sampler.py on the node.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import testinfra

from validation.idle import Ownership
from validation.lab import Lab
from validation.probes import gpu_activity, gpu_watch

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "nvidia-smi"
VIEWS = {"gpu": "h200-x1-rocm-fleet-idle-query-gpu-util-mem-clocks.txt",
         "idle": "h200-x1-rocm-fleet-idle-query-compute-apps.txt",
         "busy": "h200-x1-rocm-fleet-busy-query-compute-apps.txt"}
STANDIN = """#!/usr/bin/python3
import os, sys
args = " ".join(sys.argv[1:])
views = "/etc/rocm-fleet-standin"
if "--query-gpu=" in args and "clocks_event_reasons.active" in args:
    name = "gpu"
elif "--query-compute-apps" in args:
    name = "busy" if os.path.exists(views + "/busy") else "idle"
else:
    print("stand-in nvidia-smi: not recorded: " + args, file=sys.stderr)
    sys.exit(2)
lines = open(f"{views}/{name}.txt").read().splitlines()
print("\\n".join(lines[1:]))
"""


@pytest.fixture
def node(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    assert lab.info is not None
    # testinfra's ansible backend reads the inventory with ansible-inventory, beside this Python
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    name = lab.info.hosts[0].name
    setup = ["mkdir -p /etc/rocm-fleet-standin", "rm -f /etc/rocm-fleet-standin/busy"]
    for key, fixture in VIEWS.items():
        setup.append(f"printf %s {shlex.quote((REAL / fixture).read_text())} > /etc/rocm-fleet-standin/{key}.txt")
    setup.append(f"printf %s {shlex.quote(STANDIN)} > /usr/local/bin/nvidia-smi && chmod 755 /usr/local/bin/nvidia-smi")
    done = lab.run(name, ["sh", "-c", " && ".join(setup)])           # podman exec: the argv as it is
    assert done.returncode == 0, done.stderr
    yield testinfra.get_host(f"ansible://{name}", ansible_inventory=str(lab.info.inventory))
    lab.run(name, ["sh", "-c", "rm -rf /etc/rocm-fleet-standin /usr/local/bin/nvidia-smi"])


def test_the_sampler_runs_on_the_node_sees_a_process_arrive_and_leaves_nothing_behind(node: object) -> None:
    # An earlier test in the session may have installed ROCm on this host, and a node with rocm-smi is
    # watched through rocm-smi (views_for's order); this test is about the sampler, so it sees the stand-in only.
    found = gpu_activity.host_which(node)
    views = gpu_watch.views_for(gpu_activity.host_run(node), lambda tool: found(tool) if tool == "nvidia-smi" else None)
    assert views is not None and views.source == "nvidia-smi"
    watcher = gpu_watch.Watcher(node, views, interval_s=0.5)
    assert watcher.start(), watcher.error
    directory = watcher.directory
    try:
        start = time.time()
        samples = watcher.wait_past(start + 1.0, limit_s=20)
        log = node.run(f"cat {directory}/sampler.log; ls -la {directory}").stdout          # type: ignore[attr-defined]
        assert len(samples) >= 2 and all(s.watched for s in samples), log
        node.run("touch /etc/rocm-fleet-standin/busy")                              # type: ignore[attr-defined]
        busy_from = time.time()
        samples = watcher.wait_past(busy_from + 1.5, limit_s=20)
        window = gpu_watch.window(samples, busy_from, time.time(), interval_s=0.5, owner=Ownership())
        (sighting,) = window.foreign
        assert (sighting.gpu, sighting.pid, sighting.name) == (0, 487, "python3")
        before = gpu_watch.window(samples, start, busy_from - 0.6, interval_s=0.5, owner=Ownership())
        assert before.samples >= 1 and before.foreign == ()
        # every tick was read once: the offsets add up to the file's size on the node
        size = node.run(f"wc -c < {directory}/samples.jsonl").stdout.strip()        # type: ignore[attr-defined]
        watcher.read()
        assert int(size) <= watcher._offset
    finally:
        watcher.stop()
    time.sleep(1.5)
    assert node.run(f"test -e {directory}").rc == 1                               # type: ignore[attr-defined]
    assert node.run("pgrep -f rocm-fleet-watch").rc == 1                          # type: ignore[attr-defined]
