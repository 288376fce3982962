"""`rocm-fleet judge` on a saved amd-smi / rocm-smi / nvidia-smi view that lists processes or shows load
(issue 30 item 5): every busy GPU is WARN RF-GPU-BUSY naming the GPU, pid, name, memory and utilization;
an idle view says nothing; performance outputs judged with a busy view say so; names cannot drive the
terminal. Driven through the real CLI (`python -m validation judge`), expected texts typed from the
fixtures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parents[2] / "fixtures"
ROOT = FIX.parents[1]
RVS_VIEW = FIX / "real/amd-smi/mi300x-x8-amdsmi-changelog-7.0.0-default-view-processes-rvs.txt"
RVS_98_ALL = FIX / "derived/amd-smi/mi300x-x8-amdsmi-7.0.0-default-view-rvs-98pct-all-gpus.txt"
IDLE_VIEW = FIX / "real/amd-smi/mi300x-x8-rocm-install-docs-ray-default-view-27.0.0.txt"
H200_BUSY_TABLE = FIX / "real/nvidia-smi/h200-x1-rocm-fleet-busy-table.txt"
H200_IDLE_TABLE = FIX / "real/nvidia-smi/h200-x1-rocm-fleet-idle-table.txt"
H200_BUSY_APPS = FIX / "real/nvidia-smi/h200-x1-rocm-fleet-busy-query-compute-apps.txt"
ALLREDUCE = FIX / "real/rccl-tests/mi300x-8gpu-hisohara-ai-scripts-aac8-allreduce.txt"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "validation", "judge", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120, check=False)


def busy_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if "RF-GPU-BUSY" in line]


def test_an_idle_view_has_no_busy_verdict() -> None:
    for profile, view in (("mi300x", IDLE_VIEW), ("h200", H200_IDLE_TABLE)):
        done = cli("--profile", profile, view)
        assert done.returncode == 0, done.stdout + done.stderr
        assert busy_lines(done.stdout) == [] and done.stdout.rstrip().endswith(f"overall: PASS against {profile}")


def test_a_busy_nvidia_smi_table_names_the_gpu_pid_name_memory_and_utilization() -> None:
    done = cli("--profile", "h200", H200_BUSY_TABLE)
    assert done.returncode == 0 and "overall: WARN against h200" in done.stdout
    lines = busy_lines(done.stdout)
    assert len(lines) == 3 and all(line.lstrip().startswith("WARN") for line in lines)
    assert "gpu0 in this saved view: 1 process of someone else: pid 487 python3 (1002 MiB)" in lines[0]
    assert "gpu0 in this saved view: 99 % utilization; allowed: at most 10 %" in lines[1]
    assert "gpu0 in this saved view: 1011 MiB of memory in use; allowed: at most 256 MiB" in lines[2]
    assert cli("--profile", "h200", "--strict", H200_BUSY_TABLE).returncode == 1


def test_a_process_list_without_gpu_indices_names_the_gpu_by_bus_id() -> None:
    done = cli("--profile", "h200", H200_BUSY_APPS)
    (line,) = busy_lines(done.stdout)
    assert done.returncode == 0
    assert "gpu 0000:00:06.0 in this saved view: 1 process of someone else: pid 487 python3 (1002 MiB)" in line


def test_rocm_smi_showpids_names_the_process_for_the_node() -> None:
    done = cli("--profile", "mi250x", FIX / "real/rocm-smi/mi250x-x8gcd-rocm-issue3364-showpids-colabfold.txt")
    (line,) = busy_lines(done.stdout)
    assert done.returncode == 0
    assert "node (the view names no GPU) in this saved view: 1 process of someone else: pid 3458806 " \
           "colabfold_batch (1196.01 MiB)" in line


@pytest.mark.parametrize("view, utilization", [
    (RVS_VIEW, ["98", "83", "34", "12", "11", "23", "36", "47"]),      # the real view: rvs on 8 GPUs, GPU 0 at 98 %
    (RVS_98_ALL, ["98"] * 8),                                          # derived: all eight at 98 %
], ids=["real-rvs-8-gpus", "derived-rvs-98pct-8-gpus"])
def test_rvs_on_eight_gpus_is_reported_for_every_gpu(view: Path, utilization: list[str]) -> None:
    done = cli("--profile", "mi300x", view)
    assert done.returncode == 0 and "overall: WARN against mi300x" in done.stdout
    lines = busy_lines(done.stdout)
    for gpu, pct in enumerate(utilization):
        assert sum(f"gpu{gpu} in this saved view: 1 process of someone else: pid 2427396 rvs (" in line
                   for line in lines) == 1, gpu
        assert sum(f"gpu{gpu} in this saved view: {pct} % utilization;" in line for line in lines) == 1, gpu
    # VRAM_MEM '2.3 GB' on GPU 2 is 2.3 x 1024 MiB
    assert any("gpu2 in this saved view: 1 process of someone else: pid 2427396 rvs (2355.2 MiB)" in line
               for line in lines)


def test_performance_numbers_judged_beside_a_busy_view_say_so() -> None:
    done = cli("--profile", "mi300x", "--json", RVS_VIEW, ALLREDUCE)
    doc = json.loads(done.stdout)
    view, rccl = doc["files"]
    assert done.returncode == 0 and doc["status"] == "warn"
    assert "notes" not in view
    (note,) = rccl["notes"]
    assert note.startswith(f"taken beside a busy view: {RVS_VIEW} shows gpu0 .. gpu7 (8 GPUs) busy")
    assert {v["status"] for v in rccl["verdicts"]} == {"pass"}      # the numbers are still judged as measured
    text = cli("--profile", "mi300x", ALLREDUCE, RVS_VIEW).stdout   # order on the command line does not matter
    assert "NOTE" in text.split(f"{ALLREDUCE} (rccl-tests)")[1].split(str(RVS_VIEW))[0]


def test_performance_numbers_beside_an_idle_view_carry_no_note() -> None:
    doc = json.loads(cli("--profile", "mi300x", "--json", IDLE_VIEW, ALLREDUCE).stdout)
    assert doc["status"] == "pass" and all("notes" not in f for f in doc["files"])


def test_a_process_name_cannot_drive_the_terminal(tmp_path: Path) -> None:
    # the real busy compute-apps CSV with its process name replaced by escapes: a bell, a window title (an OSC
    # ended by ESC-backslash, which the parsers' ANSI stripping leaves), a terminal reset (ESC c), a C1 CSI clear-screen
    view = tmp_path / "apps.csv"
    view.write_text(H200_BUSY_APPS.read_text().replace("python3", "py\x07\x1b]0;owned\x1b\\\x1bc\x9b2J"),
                    encoding="utf-8")
    done = cli("--profile", "h200", f"nvidia-smi:{view}")
    (line,) = busy_lines(done.stdout)
    assert not any(c in done.stdout for c in "\x1b\x9b\x07"), repr(done.stdout)
    assert "pid 487 py\\x07\\x1b]0;owned\\x1b\\\\x1bc\\x9b2J (1002 MiB)" in line
