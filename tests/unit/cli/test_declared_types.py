"""A wrongly typed declared variable (issue 32): `validation_gpu_count: "eight"` passed `spec` and
`site.yml --check`, and validate failed four checks with `invalid literal for int()`, tagged "expected on
a lab host". Now every declared variable is checked against its owner's argument spec (Ansible's own
validator) in `spec`, `validate` and the playbooks' preflight: one line per bad field, exit 2, nothing run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from validation import spec

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
BAD = {"validation_gpu_count": "eight", "validation_gpu_vendor": "intel"}
LINES = ["argument 'validation_gpu_count' is of type str and we were unable to convert to int",
         "value of validation_gpu_vendor must be one of: amd, nvidia, got: intel"]


def inventory(tmp_path: Path, variables: dict) -> Path:
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": {"n1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, **variables}}}}}}))
    return path


def rocm_fleet(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run([sys.executable, "-m", "validation", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120, check=False)


def test_the_role_defaults_pass_and_each_bad_field_is_one_line() -> None:
    assert spec.declared_problems(spec.role_defaults()) == []
    problems = spec.declared_problems({**spec.role_defaults(), **BAD, "validation_gpu_count_note": "x"})
    assert len(problems) == 2 and all(any(line in p for p in problems) for line in LINES)
    assert spec.declared_problems({"validation_gpu_count": "8"}) == []           # -e gives strings: converted
    assert spec.declared_problems({"validation_gpu_count": "{{ gpus }}"}) == []  # left to the role


def test_spec_refuses_them_with_one_line_per_field(tmp_path: Path) -> None:
    proc = rocm_fleet("spec", "-i", str(inventory(tmp_path, BAD)), "n1")
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    for line in LINES:
        assert sum(line in row for row in proc.stderr.splitlines()) == 1, proc.stderr
    assert all(row.startswith("n1: ") for row in proc.stderr.splitlines()[1:])


@pytest.mark.parametrize("how", ["ansible", "local"])
def test_validate_refuses_them_before_any_check_runs(tmp_path: Path, how: str) -> None:
    if how == "ansible":
        args = ["-i", str(inventory(tmp_path, BAD)), "--hosts", "ansible://gpu_nodes"]
    else:
        (tmp_path / "spec.yml").write_text(yaml.safe_dump(BAD))
        args = ["--hosts", "local://", "--spec", str(tmp_path / "spec.yml"), "--node-name", "n1"]
    proc = rocm_fleet("validate", *args, "--results", str(tmp_path / "r"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert all(line in proc.stderr for line in LINES) and not (tmp_path / "r").exists()


def test_the_preflight_refuses_them_before_any_role_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory(tmp_path, BAD)), "--check",
                           "playbooks/site.yml"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode != 0
    assert "Refuse declared variables that their roles' argument specs refuse" in proc.stdout
    assert all(line in proc.stdout for line in LINES), proc.stdout[-3000:]
    assert "TASK [Run every provisioning role's preflight" not in proc.stdout     # nothing ran after it


def test_a_checkout_on_a_node_without_ansible_core_is_not_refused_for_lacking_the_validator(monkeypatch) -> None:
    # Seen on the lent GPU machine (no ansible-core there): validate stopped with a traceback,
    # "No module named 'ansible'", before the first check. Nodes install the suite --no-deps.
    monkeypatch.setitem(sys.modules, "ansible.module_utils.common.arg_spec", None)   # import raises ImportError
    assert spec.declared_problems({**spec.role_defaults(), **BAD}) == []


def test_what_the_applied_roles_require_is_a_problem_only_when_missing() -> None:
    """The playbooks' preflight checks the required variables here, not through a task per role and host."""
    defaults = spec.role_defaults()
    without = {name: value for name, value in defaults.items() if name != "rocm_version"}
    assert spec.declared_problems(without) == []                      # no roles applied: nothing required
    assert spec.declared_problems(without, required_by=["rocm"]) == [
        "rocm_version is required by the role rocm (roles/rocm/meta/argument_specs.yml); declare it"]
    assert spec.declared_problems({**without, "rocm_version": "6.2.4"}, required_by=["rocm"]) == []
    assert spec.declared_problems(without, required_by=["node_drain"]) == []
