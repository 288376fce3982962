"""The ROCm stack on the node is exactly what the inventory declares (smoke tier)."""

from __future__ import annotations

from typing import Any

import pytest

from validation import compat, declared
from validation.checks import facts
from validation.checks.outcome import expect
from validation.errors import CompatibilityError

pytestmark = pytest.mark.smoke


@pytest.fixture(autouse=True)
def _rocm_node(spec: dict) -> None:
    if not spec.get("rocm_version"):
        pytest.skip("spec declares no ROCm stack (rocm_version unset): not a ROCm node")


def test_declared_rocm_and_driver_are_a_supported_combination(host: Any, spec: dict) -> None:
    """The declared ROCm, amdgpu driver, OS and kernel are a combination the compatibility table supports."""
    driver = spec.get("amdgpu_driver_version") if spec["amdgpu_driver_mode"] == "dkms" else "inbox"
    combo = compat.Combination(rocm_version=str(spec["rocm_version"]), driver_version=str(driver),
                               os_id=facts.os_id(host), kernel=host.check_output("uname -r"))
    try:
        compat.check(combo, extra_rows=spec.get("rocm_repo_compat_extra") or [])
    except CompatibilityError as exc:
        expect(False, "RF-CONFIG-COMPAT", str(exc))


def test_rocm_packages_are_installed_at_the_declared_versions(host: Any, spec: dict) -> None:
    """Every declared ROCm package is installed at its declared version."""
    wrong = []
    for name, pattern in facts.wanted_packages(spec):
        package = host.package(name)
        if not package.is_installed:
            wrong.append(f"{name}: not installed (want {pattern})")
        elif not declared.version_matches(package.version, pattern):
            wrong.append(f"{name}: {package.version} (want {pattern})")
    expect(not wrong, "RF-CONFIG-ROCM-VERSION", "; ".join(wrong))


def test_rocm_version_package_proves_the_declared_release(host: Any, spec: dict) -> None:
    """The package that carries the ROCm release number shows the declared release."""
    name = spec["rocm_version_package"]
    version = host.package(name).version if host.package(name).is_installed else "not installed"
    expect(str(version).startswith(str(spec["rocm_version"])), "RF-CONFIG-ROCM-VERSION",
           f"{name} is {version}, the inventory declares ROCm {spec['rocm_version']}")


def test_rocm_packages_are_held(host: Any, spec: dict) -> None:
    """The ROCm packages are held, so no unattended upgrade moves them."""
    if not spec["rocm_hold_packages"]:
        pytest.skip("spec sets rocm_hold_packages: false")
    if not host.exists("apt-mark"):
        pytest.skip("holds are checked with apt-mark on Debian-family nodes; dnf versionlock is not checked yet")
    held = set(host.check_output("apt-mark showhold").split())
    missing = [name for name, _ in facts.wanted_packages(spec) if name not in held]
    expect(not missing, "RF-CONFIG-PACKAGE-HOLD", f"not held: {', '.join(missing)}")


def test_repository_sources_point_at_the_declared_release(host: Any, spec: dict) -> None:
    """The apt sources point at the declared ROCm release and keep signature checking on."""
    source = spec["rocm_repo_source"]
    sources = host.file("/etc/apt/sources.list.d/rocm-fleet.sources")
    if source == "distro":
        expect(not sources.exists, "RF-CONFIG-REPO", "rocm-fleet.sources exists although the spec uses distro packages")
        return
    base = spec["rocm_repo_mirror_url"] if source == "mirror" else spec["rocm_repo_amd_url"]
    expected = f"URIs: {base}/rocm/apt/{declared.repo_dir(spec['rocm_version'])}"
    expect(sources.exists, "RF-CONFIG-REPO", "/etc/apt/sources.list.d/rocm-fleet.sources is missing")
    expect(expected in sources.content_string.splitlines(), "RF-CONFIG-REPO",
           f"sources do not contain {expected!r}")
    expect("trusted=yes" not in sources.content_string.lower(), "RF-CONFIG-REPO", "sources disable verification")


def test_signing_key_and_pin_are_in_place(host: Any, spec: dict) -> None:
    """The repository's signing key and the apt pin that prefers it are in place."""
    if spec["rocm_repo_source"] == "distro":
        pytest.skip("spec uses distro packages: no key or pin")
    key = host.file("/etc/apt/keyrings/rocm-fleet.asc")
    pin = host.file("/etc/apt/preferences.d/rocm-fleet-pin")
    expect(key.exists and key.user == "root" and key.mode == 0o644, "RF-CONFIG-REPO",
           f"keyring missing or not root 0644 (exists={key.exists})")
    priority = spec["rocm_repo_apt_pin_priority"]
    expect(pin.exists and f"Pin-Priority: {priority}" in pin.content_string, "RF-CONFIG-REPO",
           f"pin file missing or without Pin-Priority: {priority}")


def test_rocminfo_is_installed(host: Any) -> None:
    """rocminfo is installed and on PATH."""
    expect(host.exists("rocminfo"), "RF-CONFIG-ROCM-VERSION", "rocminfo is not on PATH")
