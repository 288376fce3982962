"""Between validations: what changed on the node since the last health run, and what holds it now.

These run in the health mode (`rocm-fleet health`, marker `health`) beside the smoke checks
listed in validation/checks/health.py; they put no load on a GPU and answer in seconds. Each
compares the node with the health memory the previous run left (validation/checks/health.py):

- GPU error counters (ECC correctable / uncorrectable / deferred, xGMI error status) must not
  have grown; a counter that went down was reset (reboot, driver reload) and starts over;
- the kernel log must hold no new GPU error line (amdgpu at error level, NVIDIA `NVRM: Xid`)
  since the last run's position (boot id and seconds since boot);
- the GPU firmware must be the set the node recorded; a change fails until an operator takes
  it (`rocm-fleet health --accept-changes`, after a validation passed on the new firmware);
- no process may be left holding a GPU (open /dev/kfd, /dev/dri/renderD*, /dev/nvidia*, or listed
  by the vendor tool) unless jobs are running on the node;
- no thermal or hardware throttling now, and an idle GPU cooler than its SKU's idle limit.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from validation import idle, parsers
from validation.checks.health import HealthState, now
from validation.checks.outcome import expect, fail_on_verdicts, require
from validation.checks.tools import skip_unless_driver_loaded
from validation.errors import ParseError
from validation.flap import ECC_CORRECTABLE_ONLY
from validation.judge import judge_value
from validation.parsers import dmesg
from validation.probes import gpu_activity, telemetry
from validation.records import Status
from validation.spec import gpu_vendor

pytestmark = [pytest.mark.smoke, pytest.mark.health]

COUNTERS = ("ecc_correctable", "ecc_uncorrectable", "ecc_deferred")


def _declares_gpus(spec: dict) -> bool:
    return spec.get("validation_gpu_count") not in (None, 0)


def _telemetry(host: Any, spec: dict) -> tuple[telemetry.GpuSample, ...]:
    if not _declares_gpus(spec):
        pytest.skip("the spec declares no GPUs")
    skip_unless_driver_loaded(host, gpu_vendor(spec))
    source = require(telemetry.detect_source(which=gpu_activity.host_which(host), run=gpu_activity.host_run(host)),
                     "RF-GPU-ACTIVITY-UNKNOWN", "none of amd-smi, rocm-smi or nvidia-smi is on the node: "
                     "the GPUs' counters, temperatures and throttle state cannot be read")
    snap = telemetry.read_once(source, 0.0, 30.0)
    expect(not snap.error, "RF-TOOL-FAILED", f"reading the GPUs failed: {snap.error}")
    return snap.samples


@pytest.mark.gpu
def test_gpu_error_counters_did_not_grow_since_the_last_health_run(host: Any, spec: dict, record: Any,
                                                                   health_state: HealthState) -> None:
    """No GPU error counter (ECC, deferred) grew since the last health run."""
    samples = _telemetry(host, spec)
    current = {f"gpu{s.gpu}": {c: getattr(s, c) for c in COUNTERS if getattr(s, c) is not None} for s in samples}
    before = health_state.get("error_counters") or {}
    health_state.set("error_counters", current)
    grew, uncorrectable = [], False
    for gpu, counters in sorted(current.items()):
        for name, value in counters.items():
            previous = (before.get(gpu) or {}).get(name)
            delta = None if previous is None or value < previous else value - previous
            record(f"health_{name}_delta", gpu, delta, "count", higher_is_better=False,
                   status="pass" if not delta else "fail", total=value, previous=previous)
            if delta:
                grew.append(f"{gpu} {name.replace('_', ' ')} {previous} -> {value} (+{delta})")
                uncorrectable |= name != "ecc_correctable"
    since = f"since the last health run ({(health_state.get('updated_at') or 'never')})"
    expect(not grew, "RF-ECC", f"GPU error counters grew {since}: {'; '.join(grew)}"
           + ("" if uncorrectable else f" ({ECC_CORRECTABLE_ONLY}: watch the rate; RMA if it keeps growing)"))


def test_no_new_gpu_errors_in_the_kernel_log_since_the_last_health_run(host: Any,
                                                                       health_state: HealthState) -> None:
    """The kernel log has no new GPU error line since the last health run."""
    boot_id = host.file("/proc/sys/kernel/random/boot_id").content_string.strip()
    uptime = float(host.file("/proc/uptime").content_string.split()[0])
    out = host.run("timeout 30 dmesg --level=err,crit,alert,emerg")
    expect(out.rc == 0, "RF-TOOL-FAILED", f"dmesg could not be read (rc {out.rc}): {out.stderr.strip()[:200]}; the "
           "health mode runs as root")
    try:
        lines = dmesg.gpu_errors(dmesg.parse(out.stdout), errors_only_log=True) if out.stdout.strip() else ()
    except ParseError as exc:
        expect(False, "RF-TOOL-FAILED", f"kernel log not understood: {exc}")
        return
    last = health_state.get("kernel_log") or {}
    same_boot = last.get("boot_id") == boot_id
    seen = float(last.get("seconds", -1.0)) if same_boot else -1.0
    new = [line for line in lines if line.seconds is None or line.seconds > seen] if same_boot else list(lines)
    if same_boot and lines and all(line.seconds is None for line in lines):   # no timestamps: count lines instead
        new = list(lines[int(last.get("count", 0)):])
    health_state.set("kernel_log", {"boot_id": boot_id, "seconds": uptime, "count": len(lines)})
    where = "since the last health run" if same_boot else "since this boot (first health run of this boot)"
    shown = "; ".join(f"[{line.seconds}] {line.text}" if line.seconds is not None else line.text
                      for line in new[:3])
    expect(not new, "RF-AMDGPU-KERNEL-ERRORS", f"{len(new)} new GPU error line(s) in the kernel log {where}: {shown}")


def _firmware(host: Any, spec: dict) -> dict[str, dict[str, str]]:
    if gpu_vendor(spec) == "nvidia":
        out = host.run("timeout 30 nvidia-smi --query-gpu=index,vbios_version --format=csv")
        expect(out.rc == 0, "RF-TOOL-FAILED", f"nvidia-smi exited {out.rc}: {out.stderr.strip()[:200]}")
        record = parsers.parse("nvidia-smi", out.stdout)
        return {f"gpu{g.index}": {"VBIOS": g.vbios_version or "?"} for g in record.gpus}
    if not host.exists("amd-smi"):
        pytest.skip("amd-smi is not installed: firmware versions cannot be read (test_gpu_health names it)")
    out = host.run("timeout 60 amd-smi firmware --json")
    expect(out.rc == 0, "RF-TOOL-FAILED", f"amd-smi firmware exited {out.rc}: {out.stderr.strip()[:200]}")
    return {f"gpu{g.index}": dict(g.firmware) for g in parsers.parse("amd-smi", out.stdout).gpus}


@pytest.mark.gpu
def test_gpu_firmware_is_the_set_the_node_recorded(host: Any, spec: dict, health_state: HealthState,
                                                    request: pytest.FixtureRequest) -> None:
    """The GPU firmware is the set the node recorded (a change waits for --accept-changes)."""
    if not _declares_gpus(spec):
        pytest.skip("the spec declares no GPUs")
    skip_unless_driver_loaded(host, gpu_vendor(spec))
    current = _firmware(host, spec)
    recorded = health_state.get("firmware")
    if recorded is None or request.config.getoption("--rf-health-accept"):
        health_state.set("firmware", {"versions": current, "recorded_at": now()})
        return
    before = recorded["versions"]
    changed = [f"{gpu} {fw} {before.get(gpu, {}).get(fw, 'absent')} -> {version}"
               for gpu, blocks in sorted(current.items()) for fw, version in sorted(blocks.items())
               if before.get(gpu, {}).get(fw) != version]
    changed += [f"{gpu} {fw} {version} -> absent" for gpu, blocks in sorted(before.items())
                for fw, version in sorted(blocks.items()) if fw not in current.get(gpu, {})]
    expect(not changed, "RF-FIRMWARE", f"GPU firmware differs from the set recorded {recorded['recorded_at']}: "
           f"{'; '.join(changed[:8])}{'; ...' if len(changed) > 8 else ''}; validate the node on the new firmware, "
           "then take it with `rocm-fleet health --accept-changes`")


def test_no_process_is_left_holding_a_gpu(host: Any, spec: dict, request: pytest.FixtureRequest,
                                          health_state: HealthState) -> None:
    """No process is left holding a GPU or its memory while no job runs."""
    if request.config.getoption("--rf-health-jobs-running"):
        pytest.skip("jobs run on the node now: processes on its GPUs are theirs (checked in prolog/epilog and when "
                    "the node is idle)")
    holders = gpu_activity.device_holders(gpu_activity.host_run(host))
    mine = gpu_activity.own_pids() if host.backend.NAME == "local" else frozenset()
    owner = idle.Ownership(pids=mine, ignored_names=frozenset(spec.get("validation_idle_ignore_processes") or ()))
    left = [p for p in holders if owner.is_foreign(p)]
    listed: list[str] = []
    if _declares_gpus(spec):      # the vendor tool also sees processes of other PID namespaces, and memory held
        reading = gpu_activity.read_activity(gpu_activity.host_run(host), gpu_activity.host_which(host), samples=1)
        ours = idle.Ownership(pids=mine | reading.tool_pids, ignored_names=owner.ignored_names)
        verdicts = idle.judge_activity(reading.gpus, request.getfixturevalue("targets"), ours, phase="now")
        listed = [v.reason for v in verdicts if v.status is Status.FAIL and v.metric in (
            "idle_foreign_processes", "idle_vram_used_mib")]
    shown = [f"pid {p.pid} {p.name or '?'} holding {p.device}" for p in left]
    expect(not left and not listed, "RF-GPU-BUSY", "left over on an idle node: " + "; ".join(shown + listed))


@pytest.mark.gpu
def test_gpus_are_unthrottled_and_cool_enough_now(host: Any, spec: dict, record: Any,
                                                  request: pytest.FixtureRequest) -> None:
    """No GPU is throttled by heat or hardware now, and an idle one is below its idle temperature."""
    samples = _telemetry(host, spec)
    targets = request.getfixturevalue("targets")
    verdicts = []
    busy_limit = targets.get("idle_gpu_busy_pct")
    for s in samples:
        subject = f"gpu{s.gpu}"
        throttled = judge_value("idle_throttled", subject, None if s.throttled is None else int(s.throttled), targets)
        if throttled.status is Status.FAIL:
            throttled = dataclasses.replace(throttled, reason=f"{subject} clocks held down now by a thermal or "
                                                                f"hardware reason (status {s.throttle_status})")
        if throttled.status is not Status.ERROR:      # a tool that reports no throttle state says nothing here
            verdicts.append(throttled)
        idle_now = s.util_pct is not None and busy_limit is not None and busy_limit.threshold is not None \
            and s.util_pct <= float(busy_limit.threshold)
        if s.temperature_c is not None and idle_now:
            temp = judge_value("idle_temperature_max_c", subject, s.temperature_c, targets)
            record("idle_temperature_max_c", subject, s.temperature_c, "°C", higher_is_better=False,
                   status=temp.status.value, reason=temp.reason, code=temp.code)
            verdicts.append(temp)
    fail_on_verdicts(verdicts)

