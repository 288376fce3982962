"""roles/amdgpu_partition on a lab host over real SSH, against the amd-smi stand-in, which keeps the partition
modes in its state file and takes only what the driver takes (tests/integration/standins/amd_smi_standin.py),
with the modprobe stand-in as the driver's reload (standins/gpu_node/modprobe): converge to CPX/NPS4 (memory,
reload, compute: changed), again (changed=0), back to SPX/NPS1 and again; the refusals before any change
(a combination the SKU does not run, half a declaration, a SKU without partitions), a memory change without
the reload allowed (the GPUs unchanged, the boot unit set for the next boot, the reason said), a busy GPU
(the tool's refusal, named), and a reboot (the GPUs come up SPX/NPS1; the boot unit sets the declared modes).

MOCK, said plainly: no AMD GPU exists here, so amd-smi and modprobe are stand-ins; the partition changes have
never run on an AMD GPU in this project (docs/partition.md).

Its own lab (rfpart-<key>, one host, no mirror), removed at the end also on failure.

    .venv/bin/pytest tests/integration/test_partition.py -q -s
"""

from __future__ import annotations

import base64
import json
import shlex
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible_run import ROOT, run_playbook

from validation.lab import Lab
from validation.lab.paths import default_lab_name

pytestmark = pytest.mark.lab

STANDINS = ROOT / "tests" / "integration" / "standins"
PLAYBOOK = ROOT / "tests" / "integration" / "playbooks" / "amdgpu_partition.yml"
STATE = "/var/lib/rocm-fleet-standin/amd-smi.json"
LAB = default_lab_name("rfpart")


@pytest.fixture(scope="module")
def node() -> Iterator[tuple[Lab, Path, str]]:
    work = Path(tempfile.mkdtemp(prefix="rfpart-"))
    with Lab(LAB, 1, mirror=False, state_dir=work / "state", inventory_path=work / "hosts.yml") as lab:
        host = f"{LAB}-1"
        for path, source in (("/usr/local/bin/amd-smi", STANDINS / "amd_smi_standin.py"),
                             ("/usr/local/bin/modprobe", STANDINS / "gpu_node" / "modprobe")):
            payload = base64.b64encode(source.read_bytes()).decode()
            put = lab.ssh(host, [f"echo {payload} | base64 -d > {path} && chmod 0755 {path}"])
            assert put.returncode == 0, put.stderr
        yield lab, work / "hosts.yml", host


def converge(inventory: Path, compute: str, memory: str, **extra: object):
    return run_playbook(inventory, PLAYBOOK, "-e", json.dumps({"validation_target_sku": "mi300x",
                                                                "amdgpu_partition_compute": compute,
                                                                "amdgpu_partition_memory": memory, **extra}))


def modes(lab: Lab, host: str) -> tuple[str, str, int]:
    """(compute, memory, GPUs listed) as amd-smi static --partition prints them on the node."""
    text = lab.ssh(host, ["amd-smi static --partition"]).stdout
    primaries = [block for block in text.split("GPU: ")[1:] if "PARTITION_ID: 0" in block]
    compute = {line.split(":", 1)[1].strip() for b in primaries for line in b.splitlines() if "ACCELERATOR" in line}
    memory = {line.split(":", 1)[1].strip() for b in primaries for line in b.splitlines() if "MEMORY_PART" in line}
    assert len(compute) == len(memory) == 1, text[:2000]
    return compute.pop(), memory.pop(), text.count("GPU: ")


def state_of(lab: Lab, host: str) -> str:
    return lab.ssh(host, [f"cat {STATE} 2>/dev/null || echo absent"]).stdout


def test_converges_to_cpx_nps4_and_back_then_changes_nothing(node: tuple[Lab, Path, str]) -> None:
    lab, inventory, host = node
    assert modes(lab, host) == ("SPX", "NPS1", 8)
    seen = []
    for compute, memory, listed in (("CPX", "NPS4", 64), ("QPX", "NPS4", 32), ("SPX", "NPS1", 8)):
        first = converge(inventory, compute, memory, amdgpu_partition_reload_ok=True)
        assert first.rc == 0 and first.changed() >= 1, first.output[-3000:]
        assert modes(lab, host) == (compute, memory, listed)
        again = converge(inventory, compute, memory, amdgpu_partition_reload_ok=True)
        assert again.rc == 0 and again.changed() == 0, again.changed_tasks()
        seen.append(f"{compute}/{memory}: changed {first.changed()} in {first.seconds:.1f} s, then changed 0 in "
                    f"{again.seconds:.1f} s, {listed} GPUs listed")
        if compute == "CPX":
            # a reboot returns the GPUs to SPX/NPS1 (the stand-in does as AMD says); the boot unit sets them again
            boot = lab.run(host, ["cat", "/proc/1/stat"]).stdout.split()[21]
            lab.restart(host)
            assert lab.run(host, ["cat", "/proc/1/stat"]).stdout.split()[21] != boot, "the host did not reboot"
            unit = lab.ssh(host, ["systemctl is-active rocm-fleet-partition.service; "
                                  "journalctl -b -u rocm-fleet-partition.service -o cat --no-pager"]).stdout
            assert unit.startswith("active"), unit
            assert "memory partition SPX/NPS1 -> NPS4, then an amdgpu reload" in unit, unit
            assert modes(lab, host) == ("CPX", "NPS4", 64)
            seen.append("rebooted: the GPUs came up SPX/NPS1, rocm-fleet-partition.service set CPX/NPS4: "
                        + " | ".join(line for line in unit.splitlines()[1:] if line.startswith("rocm-fleet-partition")))
    undeclared = converge(inventory, "", "")
    assert undeclared.rc == 0 and undeclared.changed() >= 1, undeclared.output[-3000:]
    assert lab.ssh(host, ["test -e /etc/systemd/system/rocm-fleet-partition.service"]).returncode != 0
    assert modes(lab, host) == ("SPX", "NPS1", 8)                      # left as they were
    assert converge(inventory, "", "").changed() == 0
    print("\n" + "\n".join(seen))


@pytest.mark.parametrize(("compute", "memory", "sku", "said"), [
    ("SPX", "NPS4", "mi300x", "mi300x cannot run SPX with NPS4: the number of memory partitions cannot exceed"),
    ("DPX", "NPS4", "mi300x", "mi300x cannot run DPX with NPS4"),
    ("CPX", "", "mi300x", "declare both (e.g. CPX and NPS4) or neither"),
    ("CPX", "NPS4", "h100", "partition modes cannot be set on h100"),
])
def test_a_combination_the_sku_does_not_run_is_refused_before_any_change(
        node: tuple[Lab, Path, str], compute: str, memory: str, sku: str, said: str) -> None:
    lab, inventory, host = node
    before = state_of(lab, host)
    run = converge(inventory, compute, memory, validation_target_sku=sku, amdgpu_partition_reload_ok=True)
    output = " ".join(run.output.split())
    assert run.rc != 0 and "amdgpu_partition refused before any change" in output and said in output, output[-3000:]
    assert "Read the partition modes" not in run.output and state_of(lab, host) == before


def test_a_memory_change_without_the_reload_allowed_changes_nothing_and_says_why(
        node: tuple[Lab, Path, str]) -> None:
    lab, inventory, host = node
    before = modes(lab, host)
    run = converge(inventory, "CPX", "NPS4")
    said = " ".join(run.output.split())          # the yaml callback folds long messages
    assert run.rc == 0, run.output[-3000:]
    # only the boot unit's files change: the modes are set at the next boot, or now with the reload allowed
    assert {t.split(" -> ")[0] for t in run.changed_tasks()} <= {
        "amdgpu_partition : Write the script that sets the modes at boot",
        "amdgpu_partition : Write its unit, ordered before slurmd",
        "amdgpu_partition : Enable the unit for the next boot (not started now, the converge set the modes)"}, \
        run.changed_tasks()
    assert "takes effect only after an amdgpu reload" in said, said[-3000:]
    assert "sets the modes at the next boot" in said and "amdgpu_partition_reload_ok=true" in said
    assert modes(lab, host) == before


def test_a_busy_gpu_fails_with_the_tools_refusal_and_keeps_its_modes(node: tuple[Lab, Path, str]) -> None:
    lab, inventory, host = node
    before = modes(lab, host)
    state = json.loads(lab.ssh(host, [f"cat {STATE}"]).stdout)
    lab.ssh(host, [f"echo {shlex.quote(json.dumps({**state, 'busy': True}))} > {STATE}"])
    try:
        run = converge(inventory, "CPX", "NPS4", amdgpu_partition_reload_ok=True)
        said = " ".join(run.output.split())
        assert run.rc != 0 and "AMDSMI_STATUS_BUSY" in said and "drain the node, then run again" in said, said[-3000:]
        assert modes(lab, host) == before
    finally:
        lab.ssh(host, [f"echo {shlex.quote(json.dumps(state))} > {STATE}"])
