"""Run a node's tool for a check: a missing tool is said to be missing, not misread as bad output.

`timeout(1)` (every tool runs under it) exits 127 when the command is not found and 126 when it
cannot be executed, with a message of its own on stderr; a parser would only call that output
"not understood".
"""

from __future__ import annotations

from typing import Any

import pytest

from validation.checks.outcome import CheckFailure, expect

# Where each tool comes from, for the message (the fix is in the code's hint).
PACKAGES = {
    "rocminfo": "the rocminfo package (in rocm_packages)",
    "rocm-smi": "the rocm-smi package (in rocm_packages)",
    "amd-smi": "amd-smi-lib (add it to rocm_packages)",
    "nvidia-smi": "the NVIDIA driver",
    "lspci": "pciutils",
    "lscpu": "util-linux",
}
NOT_FOUND, NOT_EXECUTABLE = 127, 126


def run_tool(host: Any, command: str, *, timeout_s: int) -> Any:
    """host.run(`timeout <s> <command>`); fails RF-TOOL-MISSING when the tool is not installed (or cannot
    be run), naming the tool and where it comes from. Any other result is returned as it is."""
    __tracebackhide__ = True
    tool = command.split()[0]
    out = host.run(f"timeout {int(timeout_s)} {command}")
    if out.rc in (NOT_FOUND, NOT_EXECUTABLE):
        said = (out.stderr or out.stdout).strip().splitlines()
        what = "is not installed" if out.rc == NOT_FOUND else "is installed but cannot be run"
        raise CheckFailure("RF-TOOL-MISSING", f"{tool} {what} on this node (exit {out.rc}"
                           f"{': ' + said[0][:200] if said else ''}); it comes with {PACKAGES.get(tool, tool)}")
    return out


def skip_unless_driver_loaded(host: Any, vendor: str) -> None:
    """Skip a check that reads the GPUs when their driver is absent: test_gpu_presence fails for that
    with its own code, and one missing driver should not read as a dozen broken GPUs."""
    __tracebackhide__ = True
    if vendor == "amd" and not host.file("/sys/module/amdgpu").is_directory:
        pytest.skip("no AMD GPU present (amdgpu is not loaded); test_gpu_presence fails and says so")
    if vendor == "nvidia" and not host.exists("nvidia-smi"):
        pytest.skip("nvidia-smi is not installed: no NVIDIA driver; test_gpu_presence fails and says so")


# amd-smi writes each CPER record it reads into this folder as a .cper file (on /run: cleared at boot)
CPER_FOLDER = "/run/rocm-fleet/cper"


def amd_smi_text(host: Any, command: str, what: str, *, timeout_s: int) -> str:
    """The text of `amd-smi <command>`; a release without the command is RF-NOT-REPORTED, never a pass."""
    out = run_tool(host, f"amd-smi {command}", timeout_s=timeout_s)
    said = (out.stderr or out.stdout).strip()[:200]
    expect(out.rc == 0, "RF-NOT-REPORTED", f"amd-smi {command} exited {out.rc} ({said}): "
           f"{what} cannot be read on this node; amd-smi 6.4+ (ROCm 6.4) has it, and the checks run as root")
    return str(out.stdout)
