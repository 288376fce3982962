"""How a check says why it failed: a stable code, the observation, and what to do.

Checks call `expect(condition, code, message)`; the plugin copies the code and hint of the
raised CheckFailure into the node's results, the JUnit XML and the HTML report.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Codes for configuration and software checks (performance and device codes, RF-GPU-MISSING
# among them, live in validation.judge.CODES; a code is in one table only). Each maps to the
# remediation hint shown next to the failure.
CHECK_CODES: dict[str, str] = {
    "RF-CONFIG-ROCM-VERSION": "Re-run `ansible-playbook playbooks/site.yml --tags rocm_repo,rocm` for this host.",
    "RF-CONFIG-COMPAT": "Declare a supported ROCm / amdgpu / OS combination (validation/data/rocm_compat.yml).",
    "RF-CONFIG-PACKAGE-HOLD": "A ROCm package is not held; re-run site.yml --tags rocm (rocm_hold_packages: true).",
    "RF-CONFIG-REPO": "Repository files differ from the spec; re-run site.yml --tags rocm_repo.",
    "RF-NO-AMD-GPU": "No AMD GPU is visible: amdgpu/ROCk is not loaded. Check `lspci -d 1002:`, "
                     "`dmesg | grep -i amdgpu`, `modprobe amdgpu`; on a lab host this is expected.",
    "RF-NO-KFD": "/dev/kfd is missing: the amdgpu driver did not initialise the compute interface; check dmesg.",
    "RF-TOOL-FAILED": "A tool failed to run; its output is in the results file.",
    "RF-TOOL-MISSING": "A tool the check runs is not installed on the node: install the package the message "
                       "names (ROCm tools come with rocm_packages: re-run site.yml --tags rocm) and re-run.",
    "RF-FIRMWARE": "GPU firmware differs between GPUs or from the pinned set: update with AMD's firmware "
                   "bundle for this driver (amdgpu-dkms-firmware) and reboot; check validation_firmware_pins.",
    "RF-AMDGPU-KERNEL-ERRORS": "amdgpu logged errors: collect `dmesg`, check firmware/IFWI versions and RAS "
                               "counters; drain the node if they repeat.",
    "RF-NO-NVIDIA-GPU": "nvidia-smi does not answer: check the NVIDIA driver (`nvidia-smi`, dmesg NVRM lines).",
    "RF-NODE-UNREACHABLE": "The node stopped answering over SSH during the run: check that it is up (ping, ssh, "
                           "BMC console), then re-run validate.yml --limit NODE.",
    "RF-NODE-NO-RESULTS": "The node was targeted but delivered no results: read its lines in the play recap "
                          "(install, disk or timeout), fix, and re-run validate.yml --limit NODE.",
    "RF-PROBE-WRONG-RESULT": "A probe computed a wrong result on the named GPU: drain the node, re-run, and run "
                             "the vendor diagnostics (RVS/AGFHC or dcgmi diag) on that GPU; RMA if it repeats.",
}


class CheckFailure(AssertionError):
    """An assertion with a stable code and remediation hint."""

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        self.code = code
        self.message = message
        if hint is None:
            from validation.judge import CODES  # performance and device codes share one table there

            hint = CHECK_CODES.get(code) or CODES.get(code, "")
        self.hint = hint
        super().__init__(f"[{code}] {message}" + (f" | hint: {self.hint}" if self.hint else ""))


def expect(condition: object, code: str, message: str, hint: str | None = None) -> None:
    """Fail the current check with `code` when `condition` is false."""
    __tracebackhide__ = True
    if not condition:
        raise CheckFailure(code, message, hint)


def fail_on_verdicts(verdicts: Iterable[Any], *, shown: int = 8) -> None:
    """Fail the current check with every failing verdict (FAIL, TIMEOUT, ERROR) among `verdicts`,
    under the first one's code and hint; None entries (nothing judged) are passed over."""
    __tracebackhide__ = True
    from validation.records import FAILING

    bad = [v for v in verdicts if v is not None and v.status in FAILING]
    if bad:
        more = f"; and {len(bad) - shown} more" if len(bad) > shown else ""
        raise CheckFailure(bad[0].code or "RF-NOT-REPORTED", "; ".join(v.reason for v in bad[:shown]) + more,
                           bad[0].hint or None)
