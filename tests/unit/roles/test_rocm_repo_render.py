"""roles/rocm_repo renders AMD's exact repository lines, pins and key handling.

repo.radeon.com is unreachable here and no Ubuntu or RHEL host can run, so the role's own
templates are rendered through ansible-playbook for hosts whose facts are injected through the
fact cache. Expected files are typed from AMD's install documentation (ROCm/rocm-install-on-linux
docs/install/install-methods/package-manager/package-manager-{ubuntu,rhel}.rst), not produced by the
role. The facts are passed to the role's render entry point (rocm_repo_render_facts) instead of being
gathered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "tests" / "unit" / "ansible" / "render_rocm_repo.yml"
HEADER = "# Managed by rocm-fleet (Ansible). Local changes are overwritten on the next run.\n"

UBUNTU_2204 = {"distribution": "Ubuntu", "distribution_version": "22.04", "distribution_release": "jammy",
               "distribution_major_version": "22", "os_family": "Debian", "kernel": "5.15.0-119-generic"}
UBUNTU_2404 = {"distribution": "Ubuntu", "distribution_version": "24.04", "distribution_release": "noble",
               "distribution_major_version": "24", "os_family": "Debian", "kernel": "6.8.0-60-generic"}
RHEL_94 = {"distribution": "RedHat", "distribution_version": "9.4", "distribution_release": "Plow",
           "distribution_major_version": "9", "os_family": "RedHat", "kernel": "5.14.0-427.13.1.el9_4.x86_64"}
RHEL_96 = {"distribution": "RedHat", "distribution_version": "9.6", "distribution_release": "Plow",
           "distribution_major_version": "9", "os_family": "RedHat", "kernel": "5.14.0-570.12.1.el9_6.x86_64"}


CASES: dict[str, tuple[dict, dict]] = {
    "u2204-624": (UBUNTU_2204, {"rocm_version": "6.2.4", "amdgpu_driver_version": "6.2.4"}),
    "u2404-643": (UBUNTU_2404, {"rocm_version": "6.4.3", "amdgpu_driver_version": "6.4.3"}),
    "u2404-702": (UBUNTU_2404, {"rocm_version": "7.0.2", "amdgpu_driver_version": "30.10.2"}),
    "u2204-700": (UBUNTU_2204, {"rocm_version": "7.0.0", "amdgpu_driver_version": "30.10.0"}),
    "rhel94-624": (RHEL_94, {"rocm_version": "6.2.4", "amdgpu_driver_version": "6.2.4"}),
    "rhel96-702": (RHEL_96, {"rocm_version": "7.0.2", "amdgpu_driver_version": "30.10.2"}),
    "u2204-mirror": (UBUNTU_2204, {"rocm_version": "6.2.4", "amdgpu_driver_version": "6.2.4",
                                   "rocm_repo_source": "mirror",
                                   "rocm_repo_mirror_url": "https://mirror.example.net/radeon"}),
    "u2404-inbox": (UBUNTU_2404, {"rocm_version": "6.4.3", "amdgpu_driver_mode": "inbox"}),
    "u2404-702-nographics": (UBUNTU_2404, {"rocm_version": "7.0.2", "amdgpu_driver_version": "30.10.2",
                                           "rocm_repo_graphics": "absent"}),
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """Render every case in one ansible-playbook run (one inventory host per case)."""
    tmp = tmp_path_factory.mktemp("render")
    hosts = {}
    for name, (facts, variables) in CASES.items():
        (tmp / name).mkdir()
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "rocm_repo_render_dir": str(tmp / name), "rocm_repo_render_facts": facts, **variables}
    inventory = tmp / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(PLAYBOOK)],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return {name: {p.name: p.read_text() for p in (tmp / name).iterdir()} for name in CASES}


def test_ubuntu_2204_rocm_624_driver_624(rendered: dict) -> None:
    files = rendered["u2204-624"]
    assert files["rocm-fleet.sources"] == HEADER + (
        "# rocm-fleet: ROCm 6.2.4, amdgpu 6.2.4 from amd\n"
        "\n"
        "Types: deb\n"
        "URIs: https://repo.radeon.com/rocm/apt/6.2.4\n"
        "Suites: jammy\n"
        "Components: main\n"
        "Architectures: amd64\n"
        "Signed-By: /etc/apt/keyrings/rocm-fleet.asc\n"
        "\n"
        "Types: deb\n"
        "URIs: https://repo.radeon.com/amdgpu/6.2.4/ubuntu\n"
        "Suites: jammy\n"
        "Components: main\n"
        "Architectures: amd64\n"
        "Signed-By: /etc/apt/keyrings/rocm-fleet.asc\n")
    assert files["rocm-fleet-pin"] == HEADER + (
        "# rocm-fleet: prefer amd ROCm packages over the distribution's own.\n"
        "Package: *\n"
        "Pin: release o=repo.radeon.com\n"
        "Pin-Priority: 600\n")


def test_ubuntu_2404_rocm_643_driver_643(rendered: dict) -> None:
    files = rendered["u2404-643"]
    sources = files["rocm-fleet.sources"]
    assert "URIs: https://repo.radeon.com/rocm/apt/6.4.3\nSuites: noble\n" in sources
    assert "URIs: https://repo.radeon.com/amdgpu/6.4.3/ubuntu\nSuites: noble\n" in sources
    assert "graphics" not in sources
    assert "trusted=yes" not in sources.lower()


def test_ubuntu_2404_rocm_7_adds_graphics_and_uses_the_30_x_driver_path(rendered: dict) -> None:
    files = rendered["u2404-702"]
    uris = [line for line in files["rocm-fleet.sources"].splitlines() if line.startswith("URIs:")]
    assert uris == ["URIs: https://repo.radeon.com/rocm/apt/7.0.2",
                    "URIs: https://repo.radeon.com/amdgpu/30.10.2/ubuntu",
                    "URIs: https://repo.radeon.com/graphics/7.0.2/ubuntu"]


def test_graphics_repository_can_be_left_out_for_a_mirror_without_it(rendered: dict) -> None:
    uris = [line for line in rendered["u2404-702-nographics"]["rocm-fleet.sources"].splitlines()
            if line.startswith("URIs:")]
    assert uris == ["URIs: https://repo.radeon.com/rocm/apt/7.0.2",
                    "URIs: https://repo.radeon.com/amdgpu/30.10.2/ubuntu"]


def test_x_y_0_releases_use_the_x_y_directory(rendered: dict) -> None:
    files = rendered["u2204-700"]
    uris = [line for line in files["rocm-fleet.sources"].splitlines() if line.startswith("URIs:")]
    assert uris == ["URIs: https://repo.radeon.com/rocm/apt/7.0",
                    "URIs: https://repo.radeon.com/amdgpu/30.10/ubuntu",
                    "URIs: https://repo.radeon.com/graphics/7.0/ubuntu"]


def test_rhel_94_rocm_624_repo_file_checks_signatures_with_priority(rendered: dict) -> None:
    files = rendered["rhel94-624"]
    assert files["rocm-fleet.repo"] == HEADER + (
        "# rocm-fleet: ROCm 6.2.4, amdgpu 6.2.4 from amd\n"
        "\n"
        "[rocm]\n"
        "name=rocm 6.2.4\n"
        "baseurl=https://repo.radeon.com/rocm/el9/6.2.4/main\n"
        "enabled=1\n"
        "priority=50\n"
        "gpgcheck=1\n"
        "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-rocm-fleet\n"
        "\n"
        "[amdgpu]\n"
        "name=amdgpu 6.2.4\n"
        "baseurl=https://repo.radeon.com/amdgpu/6.2.4/el/9.4/main/x86_64/\n"
        "enabled=1\n"
        "priority=50\n"
        "gpgcheck=1\n"
        "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-rocm-fleet\n")


def test_rhel_96_rocm_702_adds_amdgraphics_with_the_minor_release_path(rendered: dict) -> None:
    files = rendered["rhel96-702"]
    baseurls = [line for line in files["rocm-fleet.repo"].splitlines() if line.startswith("baseurl=")]
    assert baseurls == ["baseurl=https://repo.radeon.com/rocm/el9/7.0.2/main",
                        "baseurl=https://repo.radeon.com/amdgpu/30.10.2/el/9.6/main/x86_64/",
                        "baseurl=https://repo.radeon.com/graphics/7.0.2/el/9.6/main/x86_64/"]
    assert "gpgcheck=0" not in files["rocm-fleet.repo"]


def test_mirror_source_pins_the_mirror_host_and_keeps_the_amd_layout(rendered: dict) -> None:
    files = rendered["u2204-mirror"]
    assert "URIs: https://mirror.example.net/radeon/rocm/apt/6.2.4\n" in files["rocm-fleet.sources"]
    assert 'Pin: origin "mirror.example.net"\n' in files["rocm-fleet-pin"]


def test_inbox_driver_adds_no_amdgpu_repository(rendered: dict) -> None:
    files = rendered["u2404-inbox"]
    assert "amdgpu" not in files["rocm-fleet.sources"].split("\n", 2)[2]


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_rendered_file_disables_verification(rendered: dict, case: str) -> None:
    for text in rendered[case].values():
        assert "trusted=yes" not in text and "gpgcheck=0" not in text and "sslverify=0" not in text
