"""The real suite (`rocm-fleet validate --hosts local://`, quick tier) on a node whose GPU is busy.

No GPU exists here, so a stand-in `nvidia-smi` on PATH answers the two idle views with the outputs
recorded on the lent H200 while a second process ran bf16 matmuls on it (pid 487; see
tests/fixtures/real/nvidia-smi/SOURCES.md) and fails every other query as a missing field would.
Everything else — pytest, the plugin, the checks, the results document — is the real thing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nvidia-smi"
STANDIN = f"""#!{sys.executable}
import sys
args = " ".join(sys.argv[1:])
views = {{"--query-compute-apps": "h200-x1-rocm-fleet-busy-query-compute-apps.txt",
          "--query-gpu=index,pci.bus_id,utilization.gpu": "h200-x1-rocm-fleet-busy-query-gpu-util-mem-clocks.txt"}}
for key, name in views.items():
    if key in args:
        lines = open("{REAL}/" + name).read().splitlines()[1:]     # drop the recorded "$ command" line
        print("\\n".join(lines))
        sys.exit(0)
print("stand-in nvidia-smi: not recorded: " + args, file=sys.stderr)
sys.exit(2)
"""


def run_suite(tmp: Path, *extra: str) -> tuple[int, dict]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "nvidia-smi"
    tool.write_text(STANDIN)
    tool.chmod(0o755)
    spec = tmp / "spec.yml"
    spec.write_text("validation_gpu_vendor: nvidia\nvalidation_gpu_count: 1\nvalidation_target_sku: h200\n"
                    "node_tuning_state: absent\ngpu_access_state: absent\nenv_profiles_state: absent\n")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "validation", "validate", "--hosts", "local://", "--spec", str(spec),
                           "--tier", "quick", "--results", str(tmp / "r"), "--node-name", "busy", *extra],
                          capture_output=True, text=True, timeout=600, check=False, env=env)
    return proc.returncode, json.loads((tmp / "r" / "busy.json").read_text())


def check(doc: dict, name: str) -> dict:
    (found,) = [c for c in doc["checks"] if c["name"] == name]
    return found


@pytest.fixture(scope="module")
def busy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict]:
    return run_suite(tmp_path_factory.mktemp("busy"))


def test_the_preflight_fails_naming_the_gpu_the_process_and_what_it_holds(busy_run: tuple) -> None:
    rc, doc = busy_run
    assert rc == 1 and doc["complete"]
    pre = check(doc, "test_gpus_are_idle_before_measuring")
    assert pre["status"] == "fail" and pre["code"] == "RF-GPU-BUSY"
    assert "gpu0 before measuring: 1 process of someone else: pid 487 python3 (1002 MiB)" in pre["message"]
    assert "99 % utilization" in pre["message"] and pre["hint"].startswith("Someone else's work")
    assert doc["checks"][0]["name"] == "test_gpus_are_idle_before_measuring"       # before everything else


def test_every_measuring_check_is_skipped_saying_why(busy_run: tuple) -> None:
    _, doc = busy_run
    measuring = [c for c in doc["checks"] if c["tier"] in ("quick", "acceptance") and c["needs_gpu"]
                 and c["name"] not in ("test_gpus_are_idle_before_measuring", "test_gpus_stayed_idle_while_measuring",
                                       "test_every_gpu_and_link_keeps_up_with_its_siblings",
                                       "test_the_performance_numbers_were_judged")]
    assert len(measuring) > 20
    assert all(c["status"] == "skip" and "not measured: gpu0 busy with someone else's work" in c["message"]
               for c in measuring)
    post = check(doc, "test_gpus_stayed_idle_while_measuring")
    assert post["status"] == "skip" and "nothing was measured" in post["message"]
    judged = check(doc, "test_the_performance_numbers_were_judged")
    assert judged["status"] == "skip" and "no performance number was measured" in judged["message"]
    busy = [m for m in doc["measurements"] if m["metric"] == "idle_foreign_processes"]
    assert busy[0]["processes"] == [{"pid": 487, "name": "python3", "vram_mib": 1002.0}]


def test_allow_busy_measures_anyway_and_says_so(tmp_path: Path) -> None:
    _, doc = run_suite(tmp_path, "--allow-busy")
    pre = check(doc, "test_gpus_are_idle_before_measuring")
    assert pre["status"] == "skip" and "measuring anyway (--allow-busy)" in pre["message"]
    assert "pid 487 python3" in pre["message"]
    assert doc["provenance"]["allow_busy"] is True
    portable = [c for c in doc["checks"] if c["id"].startswith("test_portable_probes.py")]
    assert portable and not any("not measured" in (c["message"] or "") for c in portable)

