"""The node checks on this machine (no GPU, no ROCm) with `--hosts=local://`: probes skip with a
clear reason, the declared GPUs that are missing fail, the results document is complete.

This runs the real suite through `rocm-fleet validate` on the machine running the tests; nothing
is mocked. It is the "no device" path of every probe.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def amd_node_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, str]:
    tmp = tmp_path_factory.mktemp("checks")
    spec = tmp / "spec.yml"
    spec.write_text("validation_gpu_count: 8\nvalidation_target_sku: mi300x\nnode_tuning_state: absent\n"
                    "gpu_access_state: absent\nenv_profiles_state: absent\n")
    proc = subprocess.run([sys.executable, "-m", "validation", "validate", "--hosts", "local://", "--spec", str(spec),
                           "--tier", "quick", "--results", str(tmp / "r"), "--node-name", "nogpu"],
                          capture_output=True, text=True, timeout=600, check=False)
    doc = json.loads((tmp / "r" / "nogpu.json").read_text())
    return proc.returncode, doc, proc.stdout


def by_name(doc: dict, name: str) -> list[dict]:
    return [c for c in doc["checks"] if c["name"] == name]


def test_run_completes_and_fails_because_declared_gpus_are_missing(amd_node_run: tuple) -> None:
    rc, doc, _ = amd_node_run
    assert rc == 1 and doc["complete"] is True
    (driver,) = by_name(doc, "test_amdgpu_driver_is_loaded")
    assert driver["status"] == "fail" and driver["code"] == "RF-NO-AMD-GPU"


def test_native_probes_skip_saying_there_is_no_amd_gpu(amd_node_run: tuple) -> None:
    _, doc, _ = amd_node_run
    native = [c for c in doc["checks"] if c["id"].startswith("test_native_probes.py")]
    assert len(native) == 150      # 12 + all_gather/alltoall 2 + 8 GPUs x (10 GST GEMM + 3 rocBLAS + 4 MIOpen)
    assert all(c["status"] == "skip" and "no /dev/kfd" in c["message"] for c in native)


def test_portable_probes_skip_saying_pytorch_sees_no_gpu(amd_node_run: tuple) -> None:
    _, doc, _ = amd_node_run
    portable = [c for c in doc["checks"] if c["id"].startswith("test_portable_probes.py")]
    assert portable and all(c["status"] == "skip" for c in portable)
    assert all("sees no GPU" in c["message"] or "not installed" in c["message"] for c in portable)


def test_results_carry_provenance(amd_node_run: tuple) -> None:
    _, doc, _ = amd_node_run
    assert doc["provenance"]["kernel"] and doc["provenance"]["command"]
    assert doc["provenance"]["gpus_on_pci_bus"] == []


@pytest.mark.skipif(shutil.which("rocminfo") is not None, reason="this machine has rocminfo installed")
def test_a_missing_rocminfo_is_reported_as_not_installed(amd_node_run: tuple) -> None:
    """On this machine rocminfo is really absent: timeout(1) cannot run it, and the check says so
    instead of calling timeout's own message "output not understood"."""
    _, doc, _ = amd_node_run
    (check,) = by_name(doc, "test_rocminfo_lists_every_declared_gpu")
    assert check["status"] == "fail" and check["code"] == "RF-TOOL-MISSING", check
    assert check["message"].startswith("rocminfo is not installed on this node (exit 127: timeout: failed to run "
                                       "command"), check["message"]
    assert "not understood" not in check["message"]
    assert "rocm_packages" in check["message"] + check["hint"]


def test_a_complete_quick_run_vouches_for_the_node_for_the_quick_tiers_week(amd_node_run: tuple) -> None:
    # the real plugin writes valid_until at the end of the session: finished_at + 7 days (validation/validity.py)
    _, doc, _ = amd_node_run
    finished, until = (dt.datetime.fromisoformat(doc[k]) for k in ("finished_at", "valid_until"))
    assert doc["complete"] and until - finished == dt.timedelta(days=7)
