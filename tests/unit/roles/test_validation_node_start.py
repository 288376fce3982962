"""roles/validation_node starts the tier through scripts that first check that the node is current
(vars/main.yml): run here exactly as the role runs them on a node, through the system's Python
(`python3 -S -c`) handing over to the venv's. This checkout's own interpreter stands in for a venv
where the suite is installed, and a wrapper that starts Python without its site packages for a venv
that no longer finds what the checks import. The lab runs them for real on every validate.yml
(tests/integration/test_fleet.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from validation import __version__
from validation.results import collect

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = yaml.safe_load((ROOT / "roles/validation_node/vars/main.yml").read_text())
IN_VENV = SCRIPTS["__validation_node_in_venv"]


def run(python: str, script: str, *args: str, cwd: Path | str = "/") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["python3", "-I", "-S", "-c", IN_VENV, python, script, *args], capture_output=True,
                          text=True, timeout=60, check=False, cwd=cwd)


def stale(proc: subprocess.CompletedProcess[str]) -> dict:
    """What the role reads of the start's answer (rocm_fleet.fleet.node_stale), checked against its last line."""
    assert proc.returncode == 3, proc.stdout + proc.stderr
    found = collect.stale(proc.stderr)
    assert found == json.loads(proc.stderr.splitlines()[-1])["stale"], proc.stderr
    return found


@pytest.fixture
def node(tmp_path: Path) -> dict:
    """A current node: its record names the wheelhouse, its spec equals the declared one, its directories exist."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "results").mkdir()
    spec = tmp_path / "etc" / "spec.yml"
    spec.write_text("validation_gpu_count: 8\n")
    spec.chmod(0o644)
    (tmp_path / "record").write_text("abc123\n")
    declared = f"{hashlib.sha256(spec.read_bytes()).hexdigest()} 644 {os.getuid()}:{os.getgid()}"
    return {"record": str(tmp_path / "record"), "spec": str(spec), "digest": "abc123", "declared": declared,
            "dirs": [str(tmp_path / "etc"), str(tmp_path / "results")]}


def start(node: dict, python: str = sys.executable, **changed: str) -> subprocess.CompletedProcess[str]:
    given = {**node, **changed}
    return run(python, SCRIPTS["__validation_node_start_script"], given["record"], given["spec"], given["digest"],
               given["declared"], *node["dirs"], "--", "--version")


def test_a_current_node_starts_the_command_at_once_in_the_same_process(node: dict) -> None:
    proc = start(node)
    assert (proc.returncode, proc.stdout.strip()) == (0, f"rocm-fleet {__version__}"), proc.stderr


def test_another_wheelhouse_or_none_named_is_an_install_and_not_a_spec(node: dict) -> None:
    assert stale(start(node, digest="def456")) == {
        "install": "installed from abc123, the controller's is def456", "spec": False}
    assert stale(start(node, digest=""))["install"] == "installed from abc123, the controller's is unnamed"
    Path(node["record"]).unlink()
    assert stale(start(node))["install"] == "installed from no wheelhouse, the controller's is abc123"


def test_a_spec_edited_by_hand_or_its_mode_is_a_spec_and_not_an_install(node: dict) -> None:
    Path(node["spec"]).chmod(0o600)
    assert stale(start(node)) == {"install": "", "spec": True}
    Path(node["spec"]).chmod(0o644)
    Path(node["spec"]).write_text("validation_gpu_count: 4\n")
    assert stale(start(node)) == {"install": "", "spec": True}
    Path(node["spec"]).unlink()
    assert stale(start(node)) == {"install": "", "spec": True}


def test_a_missing_directory_is_an_install(node: dict) -> None:
    Path(node["dirs"][1]).rmdir()
    assert stale(start(node))["install"] == f"missing {node['dirs'][1]}"


def test_a_venv_gone_or_without_the_suite_is_said_the_same_way_by_the_start_and_the_follower(
        node: dict, tmp_path: Path) -> None:
    gone = str(tmp_path / "venv" / "bin" / "python")
    assert stale(start(node, python=gone)) == {"install": "no virtual environment", "spec": True}
    assert stale(run(gone, SCRIPTS["__validation_node_follow_script"], "--version"))["install"] == \
        "no virtual environment"
    bare = tmp_path / "bare-python"          # Python without its site packages: nothing the suite needs is found
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    bare.chmod(0o755)
    assert stale(start(node, python=str(bare)))["install"] == \
        "cannot import validation testinfra pytest yaml jinja2 jsonschema requests"
    assert stale(run(str(bare), SCRIPTS["__validation_node_follow_script"], "--version")) == {
        "install": "cannot import validation", "spec": True}


def test_a_venv_python_that_cannot_be_run_is_out_of_date_too(node: dict, tmp_path: Path) -> None:
    broken = tmp_path / "python"              # executable, but nothing the kernel can run
    broken.write_bytes(b"\x00not a program\n")
    broken.chmod(0o755)
    assert stale(start(node, python=str(broken))) == {"install": "no virtual environment", "spec": True}


def test_a_module_in_the_working_directory_cannot_stand_in_for_the_suites(node: dict, tmp_path: Path) -> None:
    """Under sudo the node's commands run in the login user's home: a validation/ there is not imported."""
    home = tmp_path / "home"
    (home / "validation").mkdir(parents=True)
    (home / "validation" / "__init__.py").write_text("raise SystemExit('the home directory was imported')\n")
    given = {**node}
    proc = run(sys.executable, SCRIPTS["__validation_node_start_script"], given["record"], given["spec"],
               given["digest"], given["declared"], *node["dirs"], "--", "--version", cwd=home)
    assert (proc.returncode, proc.stdout.strip()) == (0, f"rocm-fleet {__version__}"), proc.stderr
    follow = run(sys.executable, SCRIPTS["__validation_node_follow_script"], "--version", cwd=home)
    assert follow.returncode == 0, follow.stderr


def test_the_follower_runs_the_command_it_is_given(node: dict) -> None:
    proc = run(sys.executable, SCRIPTS["__validation_node_follow_script"], "--version")
    assert (proc.returncode, proc.stdout.strip()) == (0, f"rocm-fleet {__version__}"), proc.stderr


def test_given_no_command_the_start_only_says_whether_the_node_is_current(node: dict) -> None:
    """validate.yml --check: the start checks and starts nothing."""
    check = [SCRIPTS["__validation_node_start_script"], node["record"], node["spec"], node["digest"],
             node["declared"], *node["dirs"], "--"]
    proc = run(sys.executable, *check)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    Path(node["spec"]).chmod(0o600)
    proc = run(sys.executable, *check)
    assert stale(proc) == {"install": "", "spec": True} and proc.stdout == ""


@pytest.mark.parametrize("stderr", [
    "",
    "Traceback (most recent call last):\n  ...\nValueError: boom",
    '{"stale": {"install": "", "spec": true}}\nthen something else',    # only the last line is the answer
    '{"stale": {"install": "no virtual envi',                           # cut off
    '{"stale": ["install"]}',
])
def test_the_role_reads_no_stale_report_from_any_other_answer(stderr: str) -> None:
    assert collect.stale(stderr) == {}


def test_the_roles_filter_is_the_same_reading() -> None:
    spec = importlib.util.spec_from_file_location("rocm_fleet_filters", ROOT / "plugins" / "filter" / "rocm_fleet.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.FilterModule().filters()["node_stale"] is collect.stale
