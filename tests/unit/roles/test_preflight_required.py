"""playbooks/preflight.yml skips each role's own argument-spec task (a task per role and host, issue 40):
its first task refuses what those specs refuse, a variable one of them requires among it. Run for real
through ansible-playbook on this machine (local connection; the first task fails, so nothing after it runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def test_a_missing_required_variable_stops_the_host_at_the_first_task(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": {"n1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "rocm_repo_source": "distribution"}}}}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(ROOT / "playbooks/preflight.yml")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-2000:]
    assert "rocm_version is required by the role rocm" in run.stdout, run.stdout[-3000:]
    assert "Refuse declared variables that their roles' argument specs refuse" in run.stdout
    assert "Run every provisioning role's preflight" not in run.stdout.split("PLAY RECAP")[0].split(
        "rocm_version is required")[1]
