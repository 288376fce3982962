"""versions parser against real outputs (tests/fixtures/real/versions/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.errors import ParseError
from validation.parsers import versions

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = FIXTURES / "real" / "versions"


def _parse(name: str) -> versions.VersionsRecord:
    return versions.parse((REAL / name).read_text())


def test_hipcc_version_reads_hip_and_amd_clang_despite_time_lines() -> None:
    rec = _parse("rocm620-rocm-issue3598-hipcc-version.txt")
    assert rec.kinds == ("hipcc",)
    assert rec.hip_version == "6.2.41133-dd7f95766"
    assert (rec.clang_vendor, rec.clang_version) == ("AMD", "18.0.0git")
    assert rec.packages == ()


def test_apt_list_reads_amd_version_through_ansi_colour() -> None:
    rec = _parse("mi300x-augmxnt-mi300-testing-apt-list-rocm.txt")
    assert rec.kinds == ("apt",)
    (pkg,) = rec.packages
    assert (pkg.name, pkg.version, pkg.arch, pkg.installed) == ("rocm", "6.2.2.60202-116~22.04", "amd64", True)
    assert pkg.rocm_release == "6.2.2"


def test_dnf_list_installed_reads_el9_packages() -> None:
    rec = _parse("rocm530-rocky9-dnf-list-installed-grep-rocm.txt")
    assert rec.kinds == ("dnf",)
    assert [p.name for p in rec.packages] == ["hsa-rocr5.3.0", "rocm-core", "rocm-core5.3.0", "rocm-smi-lib",
                                              "rocminfo5.3.0"]
    core = rec.package("rocm-core")
    assert core is not None
    assert (core.version, core.arch, core.installed) == ("5.3.0.50300-63.el9", "x86_64", True)
    assert core.rocm_release == "5.3.0"
    smi = rec.package("rocm-smi-lib")
    assert smi is not None and smi.rocm_release == "5.0.0"  # its own version, not the ROCm release


def test_dpkg_query_debian_versions_with_epoch() -> None:
    rec = _parse("lab-debian12-dpkg-query-w.txt")
    assert rec.kinds == ("dpkg-query",)
    assert [(p.name, p.version) for p in rec.packages] == [
        ("pciutils", "1:3.9.0-4"), ("rocm-smi", "5.2.3-2"), ("rocminfo", "5.2.3-2")]
    assert all(p.rocm_release is None for p in rec.packages)  # Debian naming carries no ROCm build code


def test_rocm_version_file_single_line() -> None:
    # the format of /opt/rocm/.info/version as the issue quotes it ("6.2.4-139")
    rec = versions.parse("6.2.4-139\n")
    assert rec.kinds == ("rocm-version-file",)
    assert (rec.rocm_version, rec.rocm_build) == ("6.2.4", 139)


def test_rejects_random_text() -> None:
    with pytest.raises(ParseError) as err:
        versions.parse("Hello there, General Kenobi\n")
    assert (err.value.tool, err.value.line_no) == ("versions", 1)


def test_rejects_rocm_smi_output() -> None:
    text = (FIXTURES / "real" / "rocm-smi" / "mi300x-x1-thamada-gls-concise.txt").read_text()
    with pytest.raises(ParseError, match="versions"):
        versions.parse(text)
