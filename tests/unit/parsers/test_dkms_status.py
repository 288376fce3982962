"""dkms status parser against real outputs (tests/fixtures/real/dkms-status/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import dkms_status

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "dkms-status"


def _parse(name: str) -> dkms_status.DkmsStatusRecord:
    return dkms_status.parse((REAL / name).read_text())


def test_dkms3_format_with_original_modules_note() -> None:
    rec = _parse("amdgpu-rocm-issue5624-new-format-original-modules.txt")
    assert [(m.module, m.version, m.kernel, m.arch, m.state) for m in rec.modules] == [
        ("amdgpu", "6.16.6-2255209.24.04", "6.17.0-5-generic", "x86_64", "installed"),
        ("amdgpu", "6.16.6-2255209.24.04", "6.17.0-8-generic", "x86_64", "installed"),
    ]
    assert {m.notes for m in rec.modules} == {("Original modules exist",)}
    assert {m.warnings for m in rec.modules} == {()}
    assert rec.errors == ()


def test_dkms3_format_two_kernels_and_trailing_space_command_line() -> None:
    rec = _parse("amdgpu-rocm-issue-comment-terryrankine-new-format.txt")
    assert [m.kernel for m in rec.named("amdgpu")] == ["6.2.0-37-generic", "6.2.0-39-generic"]
    assert {m.version for m in rec.modules} == {"6.2.4-1697730.22.04"}


def test_dkms2_format() -> None:
    (module,) = _parse("amdgpu-rocm-issue1663-old-format.txt").modules
    assert (module.module, module.version, module.kernel, module.arch, module.state) == (
        "amdgpu", "5.11.32-1350682", "5.4.0-97-generic", "x86_64", "installed")


def test_added_state_has_no_kernel() -> None:
    rec = _parse("amdgpu-unknown-thread-old-format-added.txt")
    amdgpu = rec.named("amdgpu")[0]
    assert (amdgpu.version, amdgpu.state, amdgpu.kernel, amdgpu.arch) == ("5.6.0.15-1098277", "added", None, None)
    assert rec.named("nvidia")[0].state == "installed"


def test_built_added_and_warning_lines() -> None:
    rec = _parse("misc-forum-old-format-built-added-warning-excerpt.txt")
    assert len(rec.modules) == 13
    assert [m.state for m in rec.modules].count("built") == 5
    assert [m.state for m in rec.modules].count("added") == 1
    warned = [m for m in rec.modules if m.warnings]
    assert [(m.module, m.version, m.kernel) for m in warned] == [("rtl8812au", "4.2.2", "4.13.0-32-generic")]
    assert warned[0].warnings == ("WARNING! Diff between built and installed module!",)


def test_missing_dkms_conf_error_is_kept_with_no_modules() -> None:
    rec = _parse("amdgpu-rocm-issue3701-missing-dkms-conf.txt")
    assert rec.modules == ()
    assert rec.errors == ("Error! Could not locate dkms.conf file.",
                          "File: /var/lib/dkms/amdgpu/6.7.0-1787201.22.04/source/dkms.conf does not exist.")


def test_rejects_random_text() -> None:
    with pytest.raises(ParseError) as err:
        dkms_status.parse("something else entirely\n")
    assert (err.value.tool, err.value.line_no) == ("dkms-status", 1)


def test_rejects_rocminfo_output() -> None:
    text = (FIXTURES / "real" / "rocminfo" / "lab-debian12-vm-nogpu-rocminfo.txt").read_text()
    with pytest.raises(ParseError, match="dkms-status"):
        dkms_status.parse(text)


def test_unknown_state_is_rejected() -> None:
    with pytest.raises(ParseError, match="unknown module state"):
        dkms_status.parse("amdgpu/6.16.6-2255209.24.04, 6.17.0-5-generic, x86_64: broken\n")
