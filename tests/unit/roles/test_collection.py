"""The repository is also the Ansible collection rocm_fleet.fleet: it builds, installs, and its roles,
playbooks and filters work by FQCN from the installed copy, away from this checkout and its ansible.cfg.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("collection")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "PYTHONPATH"}
    env.update(ANSIBLE_COLLECTIONS_PATH=str(tmp / "installed"), ANSIBLE_NOCOLOR="1", HOME=str(tmp))
    built = _run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp), str(ROOT)], tmp, env)
    assert built.returncode == 0, built.stdout + built.stderr
    (tarball,) = tmp.glob("rocm_fleet-fleet-*.tar.gz")
    done = _run([str(BIN / "ansible-galaxy"), "collection", "install", "-p", str(tmp / "installed"), str(tarball)],
                tmp, env)
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp, tarball, env


def test_the_collection_version_is_the_package_version() -> None:
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert galaxy["version"] == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_it_ships_roles_playbooks_filters_and_the_package_they_call_but_no_tests(installed) -> None:
    _, tarball, _ = installed
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    tops = {n.split("/", 1)[0] for n in names}
    assert {"roles", "playbooks", "plugins", "validation", "meta", "MANIFEST.json"} <= tops, tops
    assert "plugins/filter/rocm_fleet.py" in names and "validation/declared.py" in names
    assert not tops & {"tests", "bench", ".venv", "collections", ".git"}, tops


def test_roles_playbooks_and_filters_work_by_fqcn_from_the_installed_collection(installed) -> None:
    tmp, _, env = installed
    play = tmp / "play.yml"
    play.write_text(yaml.safe_dump([{
        "name": "Use the installed collection", "hosts": "localhost", "connection": "local", "gather_facts": False,
        "tasks": [
            {"name": "Work out node_tuning's plan", "ansible.builtin.include_role": {
                "name": "rocm_fleet.fleet.node_tuning", "tasks_from": "set_vars"}},
            {"name": "Write it", "ansible.builtin.copy": {
                "dest": str(tmp / "out.json"), "mode": "0644",
                "content": "{{ {'plan': __node_tuning_plan, 'dir': '6.4.1' | rocm_fleet.fleet.repo_dir} | to_json }}"}},
        ]}]))
    ran = _run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}",
                "-e", "node_tuning_iommu=pt", str(play)], tmp, env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    out = json.loads((tmp / "out.json").read_text())
    assert "iommu=pt" in out["plan"]["cmdline"] and out["dir"] == "6.4.1"
    for playbook in ("site", "validate", "upgrade", "health", "remediate"):
        check = _run([str(BIN / "ansible-playbook"), "-i", "localhost,", f"rocm_fleet.fleet.{playbook}",
                      "--syntax-check"], tmp, env)
        assert check.returncode == 0, check.stdout + check.stderr
