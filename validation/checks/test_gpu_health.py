"""Every declared AMD GPU is healthy (smoke tier, needs a GPU): memory size, PCIe link, firmware,
error counters, kernel log. Results are per GPU; a failing GPU is named.

Read through amd-smi (`--json` where it exists), lspci and the kernel log; every parse goes
through validation/parsers and every number through the SKU's targets (validation/judge.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from validation import extract, parsers, ras
from validation.checks.outcome import CheckFailure, expect
from validation.checks.tools import CPER_FOLDER, amd_smi_text, run_tool, skip_unless_driver_loaded
from validation.errors import ParseError
from validation.judge import judge_value
from validation.parsers import amd_smi_ras, dmesg
from validation.records import FAILING
from validation.spec import gpu_vendor

pytestmark = [pytest.mark.smoke, pytest.mark.gpu]

MIB = 1 << 20


@pytest.fixture(scope="module")
def amd_gpus(host: Any, spec: dict) -> int:
    if gpu_vendor(spec) != "amd":
        pytest.skip("spec declares NVIDIA GPUs; AMD health checks do not apply")
    if spec.get("validation_gpu_count") is None:
        pytest.skip("spec declares no validation_gpu_count")
    skip_unless_driver_loaded(host, "amd")
    return int(spec["validation_gpu_count"])


def amd_smi(host: Any, *args: str) -> Any:
    out = run_tool(host, "amd-smi " + " ".join(args), timeout_s=120)
    expect(out.rc == 0, "RF-TOOL-FAILED", f"amd-smi {' '.join(args)} exited {out.rc}: {out.stderr.strip()[:300]}")
    try:
        return parsers.parse("amd-smi", out.stdout)
    except ParseError as exc:
        raise CheckFailure("RF-TOOL-FAILED", f"amd-smi {' '.join(args)} output not understood: {exc}") from exc


def fail_on(verdicts: list, record: Any) -> None:
    for v in verdicts:
        record(v.metric, v.subject, v.measured if isinstance(v.measured, (int, float)) else None, v.unit,
               status=v.status.value, reason=v.reason, code=v.code)
    bad = [v for v in verdicts if v.status in FAILING]
    if bad:
        raise CheckFailure(bad[0].code or "RF-NOT-REPORTED", "; ".join(v.reason for v in bad), bad[0].hint)


def test_every_gpu_has_the_skus_memory(host: Any, amd_gpus: int, targets: Any, record: Any) -> None:
    """Every declared GPU is listed by amd-smi with the memory its SKU has."""
    monitor = amd_smi(host, "monitor", "-v")     # VRAM_USED / VRAM_TOTAL per GPU, every 6.x/7.x release
    verdicts = [judge_value("vram_per_gpu_gb", f"gpu{g.index}",
                            None if g.vram_total_mib is None else g.vram_total_mib * MIB / 1e9, targets)
                for g in monitor.gpus]
    expect(len(monitor.gpus) == amd_gpus, "RF-GPU-MISSING",
           f"amd-smi monitor lists {len(monitor.gpus)} GPUs, spec declares {amd_gpus}")
    fail_on(verdicts, record)


def test_every_gpu_link_runs_at_its_full_pcie_speed_and_width(host: Any, amd_gpus: int, targets: Any,
                                                               record: Any) -> None:
    """Every GPU's PCIe link runs at its full speed and width, without fatal errors."""
    out = run_tool(host, "lspci -vvv -nn -d 1002:", timeout_s=60)
    expect(out.rc == 0, "RF-TOOL-FAILED", f"lspci exited {out.rc}: {out.stderr.strip()[:300]}")
    verdicts = extract.verdicts_for("lspci", parsers.parse("lspci", out.stdout), targets)
    expect(verdicts, "RF-TOOL-FAILED", "lspci shows no AMD device with link status (run as root for LnkSta)")
    fail_on(verdicts, record)


def test_firmware_is_the_same_on_every_gpu_and_matches_any_pins(host: Any, amd_gpus: int, spec: dict) -> None:
    """GPU firmware is the same on every GPU and matches any pinned versions."""
    firmware = amd_smi(host, "firmware", "--json")
    pins: dict[str, str] = {str(k): str(v) for k, v in (spec.get("validation_firmware_pins") or {}).items()}
    differ: list[str] = []
    blocks = sorted({fw for g in firmware.gpus for fw in g.firmware})
    for fw in blocks:
        versions = {f"gpu{g.index}": g.firmware.get(fw) for g in firmware.gpus}
        if len(set(versions.values())) > 1:
            differ.append(f"{fw}: " + ", ".join(f"{gpu}={v}" for gpu, v in versions.items()))
        if fw in pins and any(v != pins[fw] for v in versions.values()):
            wrong = [gpu for gpu, v in versions.items() if v != pins[fw]]
            differ.append(f"{fw}: pinned {pins[fw]}, found {versions[wrong[0]]} on {', '.join(wrong)}")
    missing = sorted(set(pins) - set(blocks))
    expect(not missing, "RF-FIRMWARE", f"pinned firmware not reported by amd-smi: {', '.join(missing)}")
    expect(not differ, "RF-FIRMWARE", "; ".join(differ))


def test_ecc_and_xgmi_error_counters_are_zero(host: Any, amd_gpus: int, targets: Any, record: Any) -> None:
    """The ECC and xGMI error counters are within the SKU's limits. XGMI_ERR reads N/A on MI300-series
    GPUs, which keep their xGMI link errors in the XGMI_WAFL RAS block: both are read, and a counter
    printed N/A is not reported, never a zero (validation/extract.py)."""
    metric = amd_smi(host, "metric", "--ecc", "--ecc-blocks", "--xgmi-err", "--json")
    judged = extract.verdicts_for("amd-smi", metric, targets)
    # the GPU count and identity are test_gpu_presence's; a view without counters keeps them all (never empty)
    verdicts = [v for v in judged if v.metric.startswith(("ecc_", "xgmi_"))] or judged
    fail_on(verdicts, record)


def test_kernel_log_has_no_amdgpu_errors(host: Any, amd_gpus: int) -> None:
    """The kernel log has no amdgpu errors."""
    out = host.run("timeout 30 dmesg --level=err,crit,alert,emerg")
    expect(out.rc == 0, "RF-TOOL-FAILED", f"dmesg could not be read (rc {out.rc}); run the checks as root")
    lines = [line for line in out.stdout.splitlines() if "amdgpu" in line.lower()]
    expect(not lines, "RF-AMDGPU-KERNEL-ERRORS", f"{len(lines)} amdgpu error lines, first: {lines[:3]}")


# --- RAS signals (validation/ras.py): CPER records, bad pages, PCIe AER and machine checks, PCIe counters

def test_no_gpu_has_a_fatal_cper_record(host: Any, amd_gpus: int, record: Any) -> None:
    """No GPU has a fatal CPER record (AMD's hardware error records, `amd-smi ras --cper`); non-fatal and
    corrected records are counted in the results."""
    text = amd_smi_text(host, f"ras --cper --severity all --folder {CPER_FOLDER}", "CPER records", timeout_s=60)
    try:
        entries = amd_smi_ras.parse_cper(text).entries if text.strip() else ()
    except ParseError as exc:
        raise CheckFailure("RF-TOOL-FAILED", f"amd-smi ras --cper output not understood: {exc}") from exc
    counts = ras.cper_counts(entries)
    for gpu in range(amd_gpus):
        bucket = counts.get(f"gpu{gpu}", {"fatal": 0, "nonfatal": 0})
        record("cper_fatal_records", f"gpu{gpu}", bucket["fatal"], "count", higher_is_better=False,
               status="fail" if bucket["fatal"] else "pass")
        record("cper_nonfatal_records", f"gpu{gpu}", bucket["nonfatal"], "count", higher_is_better=False,
               status="pass")
    findings = ras.cper_findings(entries)
    expect(not findings, "RF-CPER-FATAL", "; ".join(f.message for f in findings))


def test_gpus_run_the_declared_partition_modes(host: Any, amd_gpus: int, spec: dict) -> None:
    """Each GPU's primary partition runs the declared compute and memory modes (`amd-smi static --partition`):
    the modes revert to SPX/NPS1 at a reboot or a driver reload, so a node that came back in its default
    lists other GPUs than the scheduler was told."""
    compute = str(spec.get("amdgpu_partition_compute") or "").upper()
    memory = str(spec.get("amdgpu_partition_memory") or "").upper()
    if not compute or not memory:
        pytest.skip("spec declares no partition modes (amdgpu_partition_compute/_memory)")
    out = run_tool(host, "amd-smi static --partition", timeout_s=60)
    expect(out.rc == 0, "RF-TOOL-FAILED", f"amd-smi static --partition exited {out.rc}: {out.stderr.strip()[:300]}")
    try:
        record = parsers.parse("amd-smi", out.stdout)
    except ParseError as exc:
        raise CheckFailure("RF-TOOL-FAILED", f"amd-smi static --partition output not understood: {exc}") from exc
    primaries = record.partition_primaries
    expect(bool(primaries), "RF-NOT-REPORTED", "amd-smi static --partition shows no GPU's partition modes")
    wrong = [f"gpu{g.index} runs {g.compute_partition}/{g.memory_partition}" for g in primaries
             if (str(g.compute_partition).upper(), str(g.memory_partition).upper()) != (compute, memory)]
    expect(not wrong, "RF-PARTITION-MISMATCH",
           f"declared {compute}/{memory}: " + "; ".join(wrong) + " (converge roles/amdgpu_partition again: a reboot "
           "or a driver reload returns the GPUs to their default modes)")
    expect(not getattr(record, "truncated", False), "RF-INCOMPLETE-OUTPUT",
           "amd-smi static --partition output is cut short: the GPUs after the cut are not seen")


def test_no_gpu_has_pages_pending_retirement(host: Any, amd_gpus: int, record: Any) -> None:
    """No GPU has pages pending retirement (`amd-smi bad-pages`); retired pages are counted, and judged against
    a threshold only where one is known (validation/ras.py says why AMD's is not)."""
    text = amd_smi_text(host, "bad-pages", "retired and pending pages", timeout_s=60)
    try:
        pages = amd_smi_ras.parse_bad_pages(text)
    except ParseError as exc:
        raise CheckFailure("RF-TOOL-FAILED", f"amd-smi bad-pages output not understood: {exc}") from exc
    expect(not pages.truncated, "RF-INCOMPLETE-OUTPUT", "amd-smi bad-pages output is cut short")
    for p in pages.gpus:
        record("bad_pages_retired", f"gpu{p.gpu}", p.retired, "pages", higher_is_better=False,
               status="pass" if p.retired is not None else "error",
               reason=f"recorded, not judged: {ras.BAD_PAGE_THRESHOLD_BASIS}")
    findings = ras.bad_pages_findings(pages.gpus)
    expect(not findings, findings[0].code if findings else "RF-BAD-PAGES", "; ".join(f.message for f in findings))


def test_kernel_log_has_no_fatal_pcie_error_or_machine_check(host: Any, amd_gpus: int, record: Any) -> None:
    """The kernel log has no uncorrectable fatal PCIe error (AER, on a GPU's port or any other) and no
    machine-check events; non-fatal and corrected AER reports are counted in the results."""
    out = run_tool(host, "dmesg", timeout_s=30)
    expect(out.rc == 0, "RF-TOOL-FAILED", f"dmesg could not be read (rc {out.rc}); run the checks as root")
    try:
        errors = dmesg.hardware_errors(dmesg.parse(out.stdout)) if out.stdout.strip() else ()
    except ParseError as exc:
        raise CheckFailure("RF-TOOL-FAILED", f"kernel log not understood: {exc}") from exc
    for kind, count in ras.kernel_counts(errors).items():
        record(f"kernel_{kind.replace('-', '_')}_reports", "node", count, "count", higher_is_better=False,
               status="fail" if count and kind in (dmesg.AER_FATAL, dmesg.MCE) else "pass")
    findings = ras.kernel_findings(errors, nonfatal_fail=False)
    expect(not findings, findings[0].code if findings else "RF-MCE", "; ".join(f.message for f in findings))


def test_pcie_link_error_counters_are_reported(host: Any, amd_gpus: int, record: Any) -> None:
    """Every GPU reports its PCIe replay, NAK and recovery counters (`amd-smi metric --pcie`); their totals go
    into the results (growth is judged by the health mode)."""
    metric = amd_smi(host, "metric", "--pcie", "--json")
    missing = []
    for g in metric.gpus:
        for name in ras.PCIE_COUNTERS:
            if name in g.pcie_errors:
                record(f"pcie_{name}", f"gpu{g.index}", g.pcie_errors[name], "count", higher_is_better=False,
                       status="pass")
        if not g.pcie_errors:
            missing.append(f"gpu{g.index}{' (' + g.bdf + ')' if g.bdf else ''}")
    expect(not missing, "RF-NOT-REPORTED", f"no PCIe replay/NAK/recovery counter reported for {', '.join(missing)} "
           "(amd-smi printed them N/A or not at all)")
