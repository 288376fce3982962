"""The health mode: its checks' memory between runs, the processes left on a GPU, the Slurm decision,
the command on this machine, and the Prometheus textfile (validated by promtool).

MOCK where it must be, said plainly: no GPU exists here, so the error-counter and firmware checks
get RecordedHost (tests/helpers/recorded_host.py), which answers amd-smi with verbatim real
outputs or documented derived variants. The leftover-process scan, the command and the textfile
run for real on this machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import kernel_knobs
import pytest
from recorded_host import RecordedHost

from validation import flap, runner, slurm
from validation.checks import test_health as checks
from validation.checks.outcome import CheckFailure
from validation.errors import RocmFleetError
from validation.health_state import HealthState
from validation.probes import gpu_activity
from validation.report.health_text import textfile

AMD_SPEC = {"validation_gpu_count": 1, "validation_gpu_vendor": "amd"}


class Options:
    def __init__(self, **values: object) -> None:
        self.values = values

    def getoption(self, name: str) -> object:
        return self.values.get(name, False)


class Request:
    def __init__(self, **values: object) -> None:
        self.config = Options(**values)


def record(*_: object, **__: object) -> None:
    return None


def state(tmp_path: Path) -> HealthState:
    return HealthState(tmp_path, "node1")


def counters_host(fixture: str) -> RecordedHost:
    return RecordedHost({"amd-smi metric": fixture}, tools={"amd-smi"})


def test_error_counters_are_remembered_and_growth_fails_naming_the_gpu(tmp_path: Path) -> None:
    first = state(tmp_path)
    checks.test_gpu_error_counters_did_not_grow_since_the_last_health_run(
        counters_host("real/amd-smi/unknown-amdsmi-docs-ras-metric-ecc.txt"), AMD_SPEC, record, first)
    first.save()
    second = state(tmp_path)
    assert second.get("error_counters")["gpu0"]["ecc_uncorrectable"] == 0
    with pytest.raises(CheckFailure) as err:
        checks.test_gpu_error_counters_did_not_grow_since_the_last_health_run(
            counters_host("derived/amd-smi/unknown-amdsmi-docs-ras-metric-ecc-uncorrectable-1.txt"), AMD_SPEC,
            record, second)
    assert err.value.code == "RF-ECC" and "gpu0 ecc uncorrectable 0 -> 1 (+1)" in err.value.message
    second.save()
    third = state(tmp_path)      # the counter stays at 1: not new, so the next run passes
    checks.test_gpu_error_counters_did_not_grow_since_the_last_health_run(
        counters_host("derived/amd-smi/unknown-amdsmi-docs-ras-metric-ecc-uncorrectable-1.txt"), AMD_SPEC, record,
        third)


def firmware_host(fixture: str) -> RecordedHost:
    return RecordedHost({"amd-smi firmware": fixture}, tools={"amd-smi"})


def test_a_firmware_change_fails_until_it_is_accepted(tmp_path: Path) -> None:
    real = "real/amd-smi/mi300x-rocm-blogs-amd-smi-overview-firmware.txt"
    changed = "derived/amd-smi/mi300x-rocm-blogs-amd-smi-overview-firmware-rlc-65.txt"
    first = state(tmp_path)
    checks.test_gpu_firmware_is_the_set_the_node_recorded(firmware_host(real), AMD_SPEC, first, Request())
    first.save()
    for _ in range(2):           # it keeps failing: the recorded set is not replaced by the new one
        later = state(tmp_path)
        with pytest.raises(CheckFailure) as err:
            checks.test_gpu_firmware_is_the_set_the_node_recorded(firmware_host(changed), AMD_SPEC, later, Request())
        assert err.value.code == "RF-FIRMWARE" and "gpu0 RLC 64 -> 65" in err.value.message
        later.save()
    accepted = state(tmp_path)
    checks.test_gpu_firmware_is_the_set_the_node_recorded(firmware_host(changed), AMD_SPEC, accepted,
                                                          Request(**{"--rf-health-accept": True}))
    accepted.save()
    checks.test_gpu_firmware_is_the_set_the_node_recorded(firmware_host(changed), AMD_SPEC, state(tmp_path),
                                                          Request())


def test_a_process_holding_a_device_file_is_found_with_its_name(tmp_path: Path) -> None:
    """A real process on this machine holds a file open; the scan reads /proc as it would on a node
    (the device pattern is the temporary file, since this machine has no GPU device nodes)."""
    held = tmp_path / "renderD128"
    held.write_text("")
    holder = subprocess.Popen(["sh", "-c", f"exec 3<'{held}'; exec sleep 30"])
    try:
        for _ in range(50):
            found = gpu_activity.device_holders(runner.run, devices=(str(tmp_path / "renderD*"),))
            if found:
                break
        assert [(p.pid, p.name, p.device) for p in found] == [(holder.pid, "sleep", str(held))]
    finally:
        holder.kill()
        holder.wait()
    assert gpu_activity.device_holders(runner.run, devices=(str(tmp_path / "renderD*"),)) == ()


@pytest.mark.parametrize("name", ["-oProxyCommand=x", "node; rm -rf /", "", "a b", "x" * 200])
def test_hostile_slurm_node_names_are_refused(name: str) -> None:
    with pytest.raises(RocmFleetError, match="not a Slurm node name"):
        slurm.drain_argv(name, "RF-ECC")


def test_the_drain_reason_is_one_argument_one_line_and_bounded() -> None:
    argv = slurm.drain_argv("gpu-node-07", "RF-ECC; RF-FIRMWARE\nhalt\n" + "x" * 500)
    assert argv[:4] == ["scontrol", "update", "NodeName=gpu-node-07", "State=DRAIN"]
    assert argv[4].startswith("Reason=rocm-fleet health: RF-ECC; RF-FIRMWARE halt") and "\n" not in argv[4]
    assert len(argv[4]) == len("Reason=") + slurm.REASON_MAX


@pytest.mark.parametrize(("wanted", "states", "reason", "action"), [
    ("drain", "IDLE", None, "drain"),
    ("drain", "IDLE+DRAIN", "rocm-fleet health: RF-ECC", None),             # already drained for this reason
    ("drain", "IDLE+DRAIN", "rocm-fleet health: RF-FIRMWARE", "drain"),       # drained by us, another reason now
    ("drain", "IDLE+DRAIN", "disk swap, ticket 4711", None),                  # an administrator's drain: left alone
    ("resume", "IDLE+DRAIN", "rocm-fleet health: RF-ECC", "resume"),
    ("resume", "MIXED+DRAIN", "disk swap, ticket 4711", None),
    ("resume", "IDLE", None, None),
    ("keep", "IDLE+DRAIN", "rocm-fleet health: RF-ECC", None),              # its codes not released yet
    ("keep", "IDLE", None, None),                                           # an administrator resumed it: theirs
])
def test_slurm_decision(wanted: str, states: str, reason: str | None, action: str | None) -> None:
    node = slurm.SlurmNode(name="n1", states=frozenset(states.split("+")), reason=reason)
    assert slurm.decide(wanted, node, "RF-ECC") == action


@pytest.fixture
def kernel_settings_held() -> Iterator[None]:
    """THP is the machine's: a lab test file that changes it on purpose (test_tuning.py, test_health.py) may
    run beside the unit tests (.ci/test), so this test holds it shared (tests/helpers/kernel_knobs.py)."""
    with kernel_knobs.shared():
        yield


def test_the_health_command_judges_drift_and_writes_a_textfile_promtool_accepts(
        tmp_path: Path, kernel_settings_held: None) -> None:
    """On this machine, for real: THP is whatever its kernel says; the spec declares the other value."""
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not thp.exists():
        pytest.skip("this kernel has no transparent hugepages")
    now = thp.read_text().split("[")[1].split("]")[0]
    other = "never" if now != "never" else "always"
    spec = tmp_path / "spec.yml"
    base = "node_tuning_thp_defrag: keep\nnode_tuning_numa_balancing: keep\nnode_tuning_pci_realloc: keep\n" \
           "node_tuning_iommu: keep\nnode_tuning_vendor_iommu: keep\nnode_tuning_modprobe_blacklist: []\n" \
           "node_tuning_cmdline_thp: keep\nrocm_version: '6.1.2'\nrocm_packages: []\n"
    textfile = tmp_path / "prom" / "rocm_fleet_health.prom"

    def health(thp_declared: str) -> subprocess.CompletedProcess[str]:
        spec.write_text(base + f"node_tuning_thp_enabled: {thp_declared}\n")
        return subprocess.run([sys.executable, "-m", "validation", "health", "--spec", str(spec), "--state-dir",
                               str(tmp_path / "state"), "--node-name", "node1", "--textfile", str(textfile)],
                              capture_output=True, text=True, timeout=120, check=False)

    drifted = health(other)
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr       # below its streak: still a FAIL
    assert drifted.stdout.startswith("health node1: FAIL RF-TUNING-THP (")
    assert "; RF-TUNING-THP failing 1 of 3 before drain" in drifted.stdout and "drain:" not in drifted.stdout
    assert 'code="RF-TUNING-THP"} 2' in textfile.read_text() and 'rocm_fleet_health_ok{node="node1"} 0' in \
        textfile.read_text()
    assert 'rocm_fleet_health_failing_runs{node="node1",code="RF-TUNING-THP"} 1' in textfile.read_text()
    assert 'rocm_fleet_health_flapping{node="node1",code="RF-TUNING-THP"} 0' in textfile.read_text()
    memory = json.loads((tmp_path / "state" / "node1.json").read_text())
    assert memory["flap"]["codes"]["RF-TUNING-THP"]["streak"] == 1 and memory["flap"]["drain"] == {}
    assert "kernel_log" in memory          # the checks' own memory is kept beside it
    promtool = shutil.which("promtool") or str(Path(sys.executable).parent / "promtool")
    assert Path(promtool).exists(), "promtool is missing: .ci/setup installs it from Debian's prometheus package"
    check = subprocess.run([promtool, "check", "metrics"], input=textfile.read_text(), capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    fixed = health(now)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert fixed.stdout.startswith("health node1: PASS") and "rocm_fleet_health_ok{node=\"node1\"} 1" in \
        textfile.read_text()
    assert (tmp_path / "state" / "node1.json").is_file() and textfile.stat().st_mode & 0o777 == 0o644


def test_the_textfile_reports_a_flapping_code_and_promtool_accepts_it() -> None:
    history = None
    hot = {"RF-GPU-THROTTLED": "gpu3 clocks held down now"}
    for i, failures in enumerate([hot, {}, hot, {}, hot]):
        decision = flap.step(history, failures, at=str(i))
        history = decision.history
    doc = {"host": "gpu-node-07", "checks": [{"id": "test_gpus_are_unthrottled_and_cool_enough_now",
                                               "status": "fail", "code": "RF-GPU-THROTTLED"}]}
    text = textfile(doc, ok=False, duration_s=2.5, finished_at=1.7e9, drained=True, codes=decision.codes)
    assert 'rocm_fleet_health_flapping{node="gpu-node-07",code="RF-GPU-THROTTLED"} 1' in text
    assert 'rocm_fleet_health_failing_runs{node="gpu-node-07",code="RF-GPU-THROTTLED"} 1' in text
    assert 'rocm_fleet_health_drain_after_runs{node="gpu-node-07",code="RF-GPU-THROTTLED"} 3' in text
    promtool = shutil.which("promtool") or str(Path(sys.executable).parent / "promtool")
    check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_health_command_refuses_a_missing_spec_in_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "validation", "health", "--spec", str(tmp_path / "none.yml"),
                          "--state-dir", str(tmp_path)], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 2 and "no such file" in run.stderr and run.stderr.count("\n") == 1


def test_while_a_health_run_writes_its_results_last_holds_the_previous_whole_run(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    # The support bundle once packed the health mode's `last` two checks into a run (complete: false, no
    # failing code): each run now writes beside it and takes its place only when it is done.
    from validation.cli import main
    from validation.commands import health as command

    spec = tmp_path / "spec.yml"
    spec.write_text("validation_gpu_count: null\nrocm_packages: []\n")
    state = tmp_path / "state"
    argv = ["health", "--spec", str(spec), "--state-dir", str(state), "--node-name", "node1", "--json"]
    assert main(argv) in (0, 1)
    first = json.loads((state / "last" / "node1.json").read_text())
    assert first["complete"]
    seen_during: list[dict] = []
    real_run = command.subprocess.run

    def watching(cmd: list[str], **kwargs):     # the checks' subprocess: look at `last` while it runs
        seen_during.append(json.loads((state / "last" / "node1.json").read_text()))
        writing = Path(next(a for a in cmd if a.startswith("--rf-results=")).split("=", 1)[1])
        assert writing != state / "last" and writing.parent == state
        return real_run(cmd, **kwargs)

    monkeypatch.setattr(command.subprocess, "run", watching)
    assert main(argv) in (0, 1)
    assert seen_during == [first]                                # the previous run, whole, while this one ran
    second = json.loads((state / "last" / "node1.json").read_text())
    assert second["complete"] and second["started_at"] >= first["started_at"]
    assert not list(state.glob(".run-*")) and not list(state.glob(".old-*"))
