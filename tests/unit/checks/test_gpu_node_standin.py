"""The lab's GPU node (tests/integration/standins/gpu_node/ and the amd-smi stand-in) against the real suite:
the lab proves the CPER and bad-page remediation on it (tests/integration/test_remediate.py), so it must be
a node every GPU check passes on until a fault is injected, and then fail with the fault's own code.

MOCK, said plainly: no AMD GPU exists here. The GPU node is made in a private mount namespace (root, as CI
is): setup.sh's /sys/module/amdgpu and PCI devices, fake_kfd.sh's /dev; the tools are the stand-ins, which
print real outputs (tests/fixtures/real/, SOURCES.md there) except lspci's link blocks and the RAS views,
whose layouts are the real ones.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from validation import parsers, topology

ROOT = Path(__file__).resolve().parents[3]
STANDINS = ROOT / "tests" / "integration" / "standins"
REAL = ROOT / "tests" / "fixtures" / "real"
SETUP = STANDINS / "gpu_node" / "setup.sh"
VIEWS = ("amd-smi/mi300x-x8-amdsmi-changelog-6.1.0-monitor-ptumv.txt",
         "amd-smi/mi300x-x8-amdsmi-changelog-6.1.0-topology.txt",
         "amd-smi/mi300x-rocm-blogs-amd-smi-overview-firmware.txt",
         "rocminfo/mi300x-augmxnt-mi300-testing-00-system-info.txt",
         "rocm-smi/mi300x-augmxnt-vllm-collect-env-showtopo.txt")
GPU_FILES = ("test_gpu_presence.py", "test_gpu_health.py", "test_health.py")
SPEC = "validation_gpu_vendor: amd\nvalidation_gpu_count: 8\nvalidation_target_sku: mi300x\n"
root_only = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                               reason="a private mount namespace over /sys and /dev needs root and unshare")


def node(tmp: Path) -> dict[str, str]:
    """The stand-ins in tmp/bin and their data in tmp/data; the environment that finds them."""
    (tmp / "bin").mkdir(exist_ok=True)
    (tmp / "data").mkdir(exist_ok=True)
    shutil.copy(STANDINS / "amd_smi_standin.py", tmp / "bin" / "amd-smi")
    for tool in ("rocminfo", "rocm-smi", "lspci"):
        shutil.copy(STANDINS / "gpu_node" / tool, tmp / "bin" / tool)
    for tool in (tmp / "bin").iterdir():
        tool.chmod(0o755)
    for view in VIEWS:
        shutil.copy(REAL / view, tmp / "data")
    return {**os.environ, "PATH": f"{tmp / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "AMD_SMI_STANDIN_STATE": str(tmp / "amd-smi.json"), "AMD_SMI_STANDIN_DATA": str(tmp / "data"),
            "ROCMINFO_STANDIN_DATA": str(tmp / "data"), "ROCM_SMI_STANDIN_DATA": str(tmp / "data")}


def on_the_node(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    inner = f"{SETUP} && exec \"$@\""
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "env", "ROCM_FLEET_STANDIN_ANYWHERE=1",
                           str(ROOT / "tests" / "helpers" / "fake_kfd.sh"), "sh", "-c", inner, "gpu-node", *argv],
                          capture_output=True, text=True, timeout=300, check=False, env=env, cwd=ROOT)


def test_setup_refuses_outside_a_lab_host_and_changes_nothing() -> None:
    if Path("/etc/rocm-fleet-lab").exists():
        pytest.skip("this machine is a lab host")
    env = {k: v for k, v in os.environ.items() if k != "ROCM_FLEET_STANDIN_ANYWHERE"}
    out = subprocess.run([str(SETUP)], capture_output=True, text=True, timeout=30, check=False, env=env)
    assert out.returncode == 2 and "not a lab host" in out.stderr and out.stderr.count("\n") == 1, out
    assert not Path("/sys/module/amdgpu").exists() or Path("/sys/module/amdgpu/initstate").exists()


def test_the_tool_stand_ins_print_a_healthy_8_gpu_mi300x_node(tmp_path: Path) -> None:
    env = node(tmp_path)

    def tool(*argv: str) -> str:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=True, env=env).stdout

    assert len(parsers.parse("amd-smi", tool("amd-smi", "firmware", "--json")).gpus) == 8
    assert len(parsers.parse("amd-smi", tool("amd-smi", "monitor", "-v")).gpus) == 8
    assert parsers.parse("amd-smi", tool("amd-smi", "topology"))
    assert len(topology.from_rocm_smi(parsers.parse("rocm-smi", tool("rocm-smi", "--showtopo"))).gpu_numa) == 8
    links = parsers.parse("lspci", tool("lspci", "-vvv", "-nn", "-d", "1002:"))
    assert [(d.vendor_id, d.device_id, d.link_status.speed_gt_s, d.link_status.width) for d in links.devices] \
        == [(0x1002, 0x74a1, 32.0, 16)] * 8
    assert tool("rocminfo").count("AMD Instinct MI300X") == 8


@root_only
def test_every_gpu_check_of_the_smoke_tier_passes_on_the_gpu_node(tmp_path: Path) -> None:
    env = node(tmp_path)
    (tmp_path / "spec.yml").write_text(SPEC)
    run = on_the_node(env, sys.executable, "-m", "validation", "validate", "--hosts", "local://", "--spec",
                      str(tmp_path / "spec.yml"), "--tier", "smoke", "--results", str(tmp_path / "r"),
                      "--node-name", "gn")
    assert run.returncode in (0, 1), run.stderr[-2000:]
    checks = [c for c in json.loads((tmp_path / "r" / "gn.json").read_text())["checks"] if c.get("needs_gpu")]
    ran = {c["name"] for c in checks if c["status"] == "pass"}
    assert {"test_amdgpu_driver_is_loaded", "test_gpus_on_the_pci_bus_are_the_declared_sku",
            "test_rocminfo_gpus_are_the_declared_sku", "test_every_gpu_link_runs_at_its_full_pcie_speed_and_width",
            "test_firmware_is_the_same_on_every_gpu_and_matches_any_pins", "test_every_gpu_has_the_skus_memory",
            "test_no_gpu_has_a_fatal_cper_record", "test_no_gpu_has_pages_pending_retirement",
            "test_every_gpu_pair_is_linked_as_the_sku_expects"} <= ran, checks
    assert not [c for c in checks if c["status"] in ("fail", "error")], checks


@root_only
def test_the_health_mode_on_the_gpu_node_fails_an_injected_fault_with_its_own_code(tmp_path: Path) -> None:
    env = node(tmp_path)
    (tmp_path / "spec.yml").write_text(SPEC)

    def health() -> str:
        run = on_the_node(env, sys.executable, "-m", "validation", "health", "--spec", str(tmp_path / "spec.yml"),
                          "--state-dir", str(tmp_path / "state"), "--json")
        assert run.returncode in (0, 1), run.stderr[-2000:]
        return run.stdout

    first = json.loads(health())
    # this machine's own configuration may fail (it was never provisioned): no GPU check may
    assert not [f for f in first["failed"] if f["check"].split("::")[0] in GPU_FILES], first["failed"]
    for fault, code in (({"cper_fatal": 1}, "RF-CPER-FATAL"), ({"bad_pages_pending": 2}, "RF-BAD-PAGES")):
        (tmp_path / "amd-smi.json").write_text(json.dumps(fault))
        said = json.loads(health())
        assert code in {f["code"] for f in said["failed"]}, said["failed"]
        assert said["flap"]["drain"][code] == f"{code} (fatal, at once)", said["flap"]
