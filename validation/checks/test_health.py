"""Between validations: what changed on the node since the last health run, and what holds it now.

These run in the health mode (`rocm-fleet health`, marker `health`) beside the smoke checks
listed in validation/checks/health.py; they put no load on a GPU and answer in seconds. Each
compares the node with the health memory the previous run left (validation/checks/health.py):

- GPU error counters (ECC correctable / uncorrectable / deferred, xGMI error status) must not
  have grown; a counter that went down was reset (reboot, driver reload) and starts over;
- the kernel log must hold no new GPU error line (amdgpu at error level, NVIDIA `NVRM: Xid`)
  since the last run's position (boot id and seconds since boot);
- RAS signals (validation/ras.py) must not have grown: CPER records (a new fatal one fails RF-CPER-FATAL,
  new non-fatal ones RF-CPER-NONFATAL), bad pages (pending: RF-BAD-PAGES; retired grew: RF-BAD-PAGES-GREW),
  PCIe AER and machine checks in the kernel log (RF-PCIE-AER-FATAL, RF-PCIE-AER, RF-MCE), PCIe replay /
  NAK / recovery counters (RF-PCIE-REPLAY) and the xGMI XGMI_WAFL counters (RF-XGMI-ERRORS); one bounded
  tool call per signal family;
- the GPU firmware must be the set the node recorded; a change fails until an operator takes
  it (`rocm-fleet health --accept-changes`, after a validation passed on the new firmware);
- no process may be left holding a GPU (open /dev/kfd, /dev/dri/renderD*, /dev/nvidia*, or listed
  by the vendor tool) unless jobs are running on the node;
- no thermal or hardware throttling now, and an idle GPU cooler than its SKU's idle limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest

from validation import idle, parsers, ras
from validation.checks.outcome import expect, fail_on_verdicts, require
from validation.checks.tools import CPER_FOLDER, amd_smi_text, skip_unless_driver_loaded
from validation.errors import ParseError
from validation.flap import ECC_CORRECTABLE_ONLY
from validation.health_state import HealthState, now
from validation.judge import judge_value
from validation.parsers import amd_smi_ras, dmesg
from validation.probes import gpu_activity, telemetry
from validation.records import Status
from validation.spec import gpu_vendor

pytestmark = [pytest.mark.smoke, pytest.mark.health]

T = TypeVar("T")

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


def _log_position(host: Any) -> tuple[str, float]:
    """(boot id, seconds since boot), read before the log so that a line logged meanwhile counts as new."""
    return (host.file("/proc/sys/kernel/random/boot_id").content_string.strip(),
            float(host.file("/proc/uptime").content_string.split()[0]))


def _new_since_the_last_run(health_state: HealthState, key: str, position: tuple[str, float], items: Sequence[T],
                            seconds: Callable[[T], float | None]) -> tuple[list[T], str]:
    """The kernel-log items the last health run did not see (by timestamp; by count where the log has none;
    all of them on a new boot), and since when; this run's position is kept under `key`."""
    boot_id, uptime = position
    last = health_state.get(key) or {}
    same_boot = last.get("boot_id") == boot_id
    seen = float(last.get("seconds", -1.0)) if same_boot else -1.0
    new = [i for i in items if seconds(i) is None or (seconds(i) or 0.0) > seen] if same_boot else list(items)
    if same_boot and items and all(seconds(i) is None for i in items):
        new = list(items[int(last.get("count", 0)):])
    health_state.set(key, {"boot_id": boot_id, "seconds": uptime, "count": len(items)})
    return new, "since the last health run" if same_boot else "since this boot (first health run of this boot)"


def test_no_new_gpu_errors_in_the_kernel_log_since_the_last_health_run(host: Any,
                                                                       health_state: HealthState) -> None:
    """The kernel log has no new GPU error line since the last health run."""
    position = _log_position(host)
    out = host.run("timeout 30 dmesg --level=err,crit,alert,emerg")
    expect(out.rc == 0, "RF-TOOL-FAILED", f"dmesg could not be read (rc {out.rc}): {out.stderr.strip()[:200]}; the "
           "health mode runs as root")
    try:
        lines = dmesg.gpu_errors(dmesg.parse(out.stdout), errors_only_log=True) if out.stdout.strip() else ()
    except ParseError as exc:
        expect(False, "RF-TOOL-FAILED", f"kernel log not understood: {exc}")
        return
    new, where = _new_since_the_last_run(health_state, "kernel_log", position, lines, lambda line: line.seconds)
    shown = "; ".join(f"[{line.seconds}] {line.text}" if line.seconds is not None else line.text
                      for line in new[:3])
    expect(not new, "RF-AMDGPU-KERNEL-ERRORS", f"{len(new)} new GPU error line(s) in the kernel log {where}: {shown}")


def _amd_gpus(host: Any, spec: dict) -> None:
    if not _declares_gpus(spec):
        pytest.skip("the spec declares no GPUs")
    if gpu_vendor(spec) != "amd":
        pytest.skip("the spec declares NVIDIA GPUs: CPER, bad pages and the amd-smi PCIe/xGMI counters are AMD's")
    skip_unless_driver_loaded(host, "amd")


def _since(health_state: HealthState) -> str:
    return f"since the last health run ({health_state.get('updated_at') or 'never'})"


@pytest.mark.gpu
def test_no_new_cper_records_since_the_last_health_run(host: Any, spec: dict, health_state: HealthState) -> None:
    """No GPU wrote a new fatal CPER record, nor new non-fatal ones, since the last health run."""
    _amd_gpus(host, spec)
    text = amd_smi_text(host, f"ras --cper --severity all --folder {CPER_FOLDER}", "CPER records", timeout_s=20)
    try:
        entries = amd_smi_ras.parse_cper(text).entries if text.strip() else ()
    except ParseError as exc:
        expect(False, "RF-TOOL-FAILED", f"amd-smi ras --cper output not understood: {exc}")
        return
    before = health_state.get("cper")
    health_state.set("cper", ras.cper_counts(entries))
    findings = ras.cper_findings(entries, before=before or {})
    findings.sort(key=lambda f: f.code != "RF-CPER-FATAL")      # a fatal record names the code
    expect(not findings, findings[0].code if findings else "RF-CPER-FATAL",
           f"new CPER records {_since(health_state)}: " + "; ".join(f.message for f in findings))


@pytest.mark.gpu
def test_no_bad_pages_pending_or_grown_since_the_last_health_run(host: Any, spec: dict,
                                                                  health_state: HealthState) -> None:
    """No GPU has pages pending retirement, and no GPU retired more pages since the last health run."""
    _amd_gpus(host, spec)
    text = amd_smi_text(host, "bad-pages", "retired and pending pages", timeout_s=20)
    try:
        pages = amd_smi_ras.parse_bad_pages(text)
    except ParseError as exc:
        expect(False, "RF-TOOL-FAILED", f"amd-smi bad-pages output not understood: {exc}")
        return
    before = health_state.get("bad_pages")
    health_state.set("bad_pages", ras.as_state(pages.gpus))
    findings = ras.bad_pages_findings(pages.gpus, before=before or {})
    rank = {"RF-BAD-PAGES": 0, "RF-NOT-REPORTED": 1, "RF-BAD-PAGES-GREW": 2}
    findings.sort(key=lambda f: rank.get(f.code, 3))
    expect(not findings, findings[0].code if findings else "RF-BAD-PAGES",
           f"bad pages {_since(health_state)}: " + "; ".join(f.message for f in findings))


@pytest.mark.gpu
def test_pcie_and_xgmi_link_errors_did_not_grow_since_the_last_health_run(host: Any, spec: dict, record: Any,
                                                                          health_state: HealthState) -> None:
    """No GPU's PCIe replay/NAK/recovery counters nor its xGMI (XGMI_WAFL) error counters grew since the last
    health run: one `amd-smi metric --pcie --ecc-blocks` call; xGMI growth fails RF-XGMI-ERRORS, PCIe growth
    RF-PCIE-REPLAY (both are listed when both grew)."""
    _amd_gpus(host, spec)
    text = amd_smi_text(host, "metric --pcie --ecc-blocks --json", "the PCIe and xGMI link error counters",
                        timeout_s=20)
    try:
        gpus = parsers.parse("amd-smi", text).gpus
    except ParseError as exc:
        expect(False, "RF-TOOL-FAILED", f"amd-smi metric --pcie --ecc-blocks output not understood: {exc}")
        return
    pcie = {f"gpu{g.index}": dict(g.pcie_errors) for g in gpus}
    xgmi = {f"gpu{g.index}": {k: v for k, v in (("xgmi_wafl_correctable", g.xgmi_wafl_correctable),
                                                ("xgmi_wafl_uncorrectable", g.xgmi_wafl_uncorrectable))
                              if v is not None} for g in gpus}
    before_pcie, before_xgmi = health_state.get("pcie_errors"), health_state.get("xgmi_errors")
    health_state.set("pcie_errors", pcie)
    health_state.set("xgmi_errors", xgmi)
    pcie_grew, xgmi_grew = ras.counter_growth(pcie, before_pcie), ras.counter_growth(xgmi, before_xgmi)
    for gpu, counters in sorted(pcie.items()):
        record("health_pcie_replay_nak_recovery_total", gpu, sum(counters.values()) if counters else None, "count",
               higher_is_better=False, status="fail" if any(g.startswith(f"{gpu} ") for g in pcie_grew) else "pass")
    unreported = [f"gpu{g.index}" for g in gpus if not g.pcie_errors]
    expect(not xgmi_grew, "RF-XGMI-ERRORS", f"xGMI error counters grew {_since(health_state)}: "
           + "; ".join(xgmi_grew + pcie_grew))
    expect(not pcie_grew, "RF-PCIE-REPLAY", f"PCIe link error counters grew {_since(health_state)}: "
           + "; ".join(pcie_grew))
    expect(not unreported, "RF-NOT-REPORTED", f"no PCIe replay/NAK/recovery counter reported for "
           f"{', '.join(unreported)}: their growth cannot be judged")


def test_no_new_pcie_aer_or_machine_check_in_the_kernel_log_since_the_last_health_run(
        host: Any, health_state: HealthState) -> None:
    """The kernel log has no new PCIe AER report (fatal, non-fatal or corrected) and no new machine-check
    events since the last health run (the AER and mce lines name no driver, so the amdgpu check misses them)."""
    position = _log_position(host)
    out = host.run("timeout 30 dmesg")
    expect(out.rc == 0, "RF-TOOL-FAILED", f"dmesg could not be read (rc {out.rc}): {out.stderr.strip()[:200]}; the "
           "health mode runs as root")
    try:
        errors = dmesg.hardware_errors(dmesg.parse(out.stdout)) if out.stdout.strip() else ()
    except ParseError as exc:
        expect(False, "RF-TOOL-FAILED", f"kernel log not understood: {exc}")
        return
    new, where = _new_since_the_last_run(health_state, "kernel_hw_errors", position, errors,
                                         lambda e: e.line.seconds)
    findings = ras.kernel_findings(tuple(new), nonfatal_fail=True)
    expect(not findings, findings[0].code if findings else "RF-PCIE-AER",
           f"new hardware error reports in the kernel log {where}: " + "; ".join(f.message for f in findings))


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
    """No process is left holding a GPU or its memory, and no GPU is in use, while no job runs; work on a GPU that
    no process the node can list does is someone it cannot see (RF-GPU-UNSEEN), not an idle GPU."""
    if request.config.getoption("--rf-health-jobs-running"):
        pytest.skip("jobs run on the node now: processes on its GPUs are theirs (checked in prolog/epilog and when "
                    "the node is idle)")
    holders = gpu_activity.device_holders(gpu_activity.host_run(host))
    mine = gpu_activity.own_pids() if host.backend.NAME == "local" else frozenset()
    owner = idle.Ownership(pids=mine, ignored_names=frozenset(spec.get("validation_idle_ignore_processes") or ()))
    left = [p for p in holders if owner.is_foreign(p)]
    found: list[Any] = []
    if _declares_gpus(spec):
        # the vendor tool sees memory held and load, also of processes the node cannot list (another PID namespace)
        reading = gpu_activity.read_activity(gpu_activity.host_run(host), gpu_activity.host_which(host), samples=1)
        ours = idle.Ownership(pids=mine | reading.tool_pids, ignored_names=owner.ignored_names)
        verdicts = idle.judge_activity(reading.gpus, request.getfixturevalue("targets"), ours, phase="now")
        found = [v for v in verdicts if v.status is Status.FAIL and v.code in idle.BUSY_CODES]
    shown = [f"pid {p.pid} {p.name or '?'} holding {p.device}" for p in left] + [v.reason for v in found]
    unseen = not left and bool(found) and all(v.code == idle.UNSEEN for v in found)
    expect(not shown, idle.UNSEEN if unseen else idle.BUSY, "left over on an idle node: " + "; ".join(shown))


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

