"""Issue 39 item 13: a health check that fails without a failure code of its own (the example: a node that
declares its GPUs but no SKU, while no GPU on its PCI bus names one) gets a stable code, RF-CHECK-FAILED,
that waits for its streak like configuration drift instead of draining at once, and the Prometheus
textfile's `code` label only ever carries a code. At d11d023 the test id stood in for the code: it drained
the node at once as "a code not listed" and became the textfile's `code` label.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from validation import flap
from validation.codes import CODES

NO_SKU = ("validation_gpu_count: 8\nvalidation_gpu_vendor: amd\nrocm_packages: []\n"
          "node_tuning_thp_enabled: keep\nnode_tuning_thp_defrag: keep\nnode_tuning_numa_balancing: keep\n"
          "node_tuning_pci_realloc: keep\nnode_tuning_iommu: keep\nnode_tuning_vendor_iommu: keep\n"
          "node_tuning_modprobe_blacklist: []\nnode_tuning_cmdline_thp: keep\n")
PROCESS_CHECK = "test_health.py::test_no_process_is_left_holding_a_gpu"
CODE_LABEL = re.compile(r'code="([^"]*)"')


def health(tmp_path: Path, spec_text: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], str]:
    spec = tmp_path / "spec.yml"
    spec.write_text(spec_text)
    textfile = tmp_path / "prom" / "rocm_fleet_health.prom"
    run = subprocess.run([sys.executable, "-m", "validation", "health", "--spec", str(spec), "--state-dir",
                          str(tmp_path / "state"), "--node-name", "node1", "--textfile", str(textfile), "--json",
                          *extra], capture_output=True, text=True, timeout=120, check=False)
    return run, textfile.read_text() if textfile.exists() else ""


def assert_only_codes_label_code(text: str) -> None:
    labels = set(CODE_LABEL.findall(text))
    assert all(label == "" or label in CODES for label in labels), sorted(labels)


def test_a_check_failing_without_a_code_gets_rf_check_failed_and_waits_for_its_streak(tmp_path: Path) -> None:
    if Path("/dev/kfd").exists():
        pytest.skip("this machine has an AMD GPU: its PCI bus names the SKU")
    run, text = health(tmp_path, NO_SKU)
    assert run.returncode == 1, run.stdout + run.stderr
    summary = json.loads(run.stdout)
    (codeless,) = [f for f in summary["failed"] if f["check"] == PROCESS_CHECK]
    assert codeless["code"] == "RF-CHECK-FAILED" and "declare validation_target_sku" in codeless["message"]
    assert "RF-CHECK-FAILED failing 1 of 3 before drain" in summary["flap"]["waiting"]
    assert "RF-CHECK-FAILED" not in summary["flap"]["drain"] and "test_" not in summary["flap"]["reason"]
    assert f'check="{PROCESS_CHECK}",status="fail",code="RF-CHECK-FAILED"}} 2' in text
    assert 'rocm_fleet_health_failing_runs{node="node1",code="RF-CHECK-FAILED"} 1' in text
    assert_only_codes_label_code(text)
    memory = json.loads((tmp_path / "state" / "node1.json").read_text())
    assert set(memory["flap"]["codes"]) <= set(CODES)


def test_a_history_that_keyed_a_check_by_its_test_id_never_reaches_the_textfile(tmp_path: Path) -> None:
    """A history written at d11d023 keeps a code-less failure under its test id (here one that failed the
    run before); the next run's textfile labels codes only."""
    state = tmp_path / "state"
    state.mkdir()
    words = f"{PROCESS_CHECK} failed 1 consecutive run"
    (state / "node1.json").write_text(json.dumps({"version": 1, "flap": {
        "codes": {PROCESS_CHECK: {"streak": 1, "passes": 0, "recent": "F", "first_seen": "2026-01-01T00:00:00+00:00",
                                  "last_seen": "2026-01-01T00:00:00+00:00"}},
        "drain": {PROCESS_CHECK: words}}}))
    run, text = health(tmp_path, "validation_gpu_count: null\nrocm_packages: []\nnode_tuning_cmdline_thp: keep\n"
                       "node_tuning_pci_realloc: keep\nnode_tuning_iommu: keep\nnode_tuning_vendor_iommu: keep\n")
    assert run.returncode in (0, 1), run.stdout + run.stderr
    assert PROCESS_CHECK not in CODE_LABEL.findall(text) and text
    assert_only_codes_label_code(text)
    memory = json.loads((state / "node1.json").read_text())
    assert set(memory["flap"]["codes"]) <= set(CODES) and set(memory["flap"]["drain"]) <= set(CODES)


def test_a_drain_held_under_a_test_id_is_kept_under_rf_check_failed_while_that_check_fails() -> None:
    words = f"{PROCESS_CHECK} failed 1 consecutive run"
    history = flap.read_history({"codes": {}, "drain": {PROCESS_CHECK: words}})
    decision = flap.step(history.as_dict(), {"RF-CHECK-FAILED": "no GPU on the PCI bus ..."}, at="t1", drained=True)
    assert decision.wanted == "keep" and decision.drain == {"RF-CHECK-FAILED": words}
    assert history.problems                                            # said once, not silently renamed


def test_rf_check_failed_is_a_configuration_problem_that_waits_like_drift() -> None:
    assert "RF-CHECK-FAILED" in CODES
    assert flap.drain_after("RF-CHECK-FAILED", {}) == flap.DEFAULT_DRAIN_AFTER
    assert not flap.is_fatal("RF-CHECK-FAILED", {})


NVIDIA_STANDIN = """#!/bin/sh
# MOCK: no NVIDIA GPU here. Prints real outputs of the lent H200 (tests/fixtures/real/nvidia-smi/SOURCES.md), the
# first line ("$ command") left out: the query of a GPU running someone's bf16 matmuls, and the process view of an
# idle one, as a run in its own PID namespace sees a neighbour outside it.
case "$*" in
  *--query-gpu=*) tail -n +2 "$FIXTURES/h200-x1-rocm-fleet-busy-query-gpu-util-mem-clocks.txt" ;;
  *--query-compute-apps=*) tail -n +2 "$FIXTURES/h200-x1-rocm-fleet-idle-query-compute-apps.txt" ;;
  *) exit 9 ;;
esac
"""


def test_a_gpu_in_use_by_no_process_the_node_can_list_is_someone_unseen_not_an_idle_gpu(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 41: the health mode's idle check read only the process list and memory; inside a container a busy
    # GPU with an empty list passed
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvidia-smi").write_text(NVIDIA_STANDIN)
    (tmp_path / "bin" / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("FIXTURES", str(Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nvidia-smi"))
    run, text = health(tmp_path, "validation_gpu_count: 1\nvalidation_gpu_vendor: nvidia\n"
                                 "validation_target_sku: h200\n")
    summary = json.loads(run.stdout)
    (found,) = [f for f in summary["failed"] if f["check"] == PROCESS_CHECK]
    assert found["code"] == "RF-GPU-UNSEEN", found
    assert "gpu0 now: 99 % utilization" in found["message"] and "someone it cannot see" in found["message"]
    assert f'check="{PROCESS_CHECK}",status="fail",code="RF-GPU-UNSEEN"}} 2' in text
