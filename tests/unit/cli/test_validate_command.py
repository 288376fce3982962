"""`rocm-fleet validate` refuses, before running anything, what cannot give a verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from validation.cli import main
from validation.commands.validate import marker_expr


def test_validating_a_node_without_its_declared_state_is_refused_in_one_line(tmp_path: Path) -> None:
    """Before: 41 ERRORs with tracebacks and exit 1. Now nothing runs: exit 2 and what to pass."""
    proc = subprocess.run([sys.executable, "-m", "validation", "validate", "--hosts", "local://", "--tier", "smoke",
                           "--results", str(tmp_path / "r")], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and not (tmp_path / "r").exists()
    assert proc.stderr.count("\n") == 1 and "pass --spec FILE" in proc.stderr and "Traceback" not in proc.stderr


def test_a_missing_spec_or_baseline_file_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["validate", "--hosts", "local://", "--spec", str(tmp_path / "none.yml")]) == 2
    spec = tmp_path / "spec.yml"
    spec.write_text("validation_gpu_count: 1\n")
    assert main(["validate", "--hosts", "local://", "--spec", str(spec), "--baseline", str(tmp_path / "b.yml")]) == 2
    err = capsys.readouterr().err
    assert "--spec" in err and "--baseline" in err and "no such file" in err




@pytest.mark.parametrize("tier", ["smoke", "quick", "acceptance"])
def test_no_gpu_leaves_out_every_gpu_check_of_the_tier(tier: str) -> None:
    """pytest's own marker-expression evaluator decides, as it does when selecting checks."""
    selected = Expression.compile(marker_expr(tier, no_gpu=True)).evaluate
    assert not selected({"smoke", "gpu"}.__contains__)
    assert not selected({"quick", "gpu"}.__contains__)
    assert selected({"smoke"}.__contains__)
    assert selected({"quick"}.__contains__) is (tier != "smoke")


ROOT = Path(__file__).resolve().parents[3]


def _ssh_command(inventory: Path, host: str) -> str:
    """The ssh command testinfra's real backend builds for an ansible:// host (a fresh runner: its cache is
    per inventory path)."""
    from testinfra.utils.ansible_runner import AnsibleRunner
    AnsibleRunner._runners.pop(str(inventory), None)
    found = AnsibleRunner.get_runner(str(inventory)).get_host(host)      # what AnsibleBackend.run runs through
    assert found is not None
    cmd, args = found.backend._build_ssh_command("true")
    return " ".join(cmd) % tuple(args)


def test_ansible_hosts_share_one_ssh_connection_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured on a lab host's smoke tier: 105 SSH connections and 22.5 s without a ControlPath, 4.7 s with
    one. testinfra takes it from this checkout's ansible.cfg only once its directory exists, which on a
    machine where Ansible never connected it does not: the validate command creates it."""
    from validation.commands.validate import reuse_ssh_connections
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    n1: {ansible_host: 192.0.2.7, ansible_user: root}\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{Path('/usr/bin')}")
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    monkeypatch.chdir(ROOT)
    assert "ControlPath" not in _ssh_command(inventory, "n1")            # a fresh machine, before
    assert reuse_ssh_connections() is None
    control = tmp_path / "home" / ".ansible" / "cp"
    assert control.is_dir() and control.stat().st_mode & 0o777 == 0o700
    assert f"-o ControlPath={control}/%C" in _ssh_command(inventory, "n1")


def test_an_ansible_cfg_without_a_control_path_is_named_and_the_run_goes_on(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from validation.commands.validate import reuse_ssh_connections
    (tmp_path / "ansible.cfg").write_text("[ssh_connection]\npipelining = true\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    warning = reuse_ssh_connections()
    assert warning is not None and "control_path" in warning and "own SSH connection" in warning
    assert not (tmp_path / "home").exists()
