"""Names from an inventory are hostile (issue 32): a host named like an option, an ansible_host or
ansible_user that would be an ssh option, a group that is not there. Each is refused in one line, exit 2,
before anything runs; the playbooks build argv so that no inventory name is read as an option."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from validation import names, pull
from validation.multinode import model

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def inventory(tmp_path: Path, hosts: dict[str, dict[str, object]], group: str = "gpu_nodes") -> Path:
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {group: {"hosts": hosts}}}}))
    return path


def rocm_fleet(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run([sys.executable, "-m", "validation", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120, check=False)


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.mark.parametrize("name", ["--root=/tmp/evil", "-oProxyCommand=x", "n1\n", "../../x", "a b", "", ".hidden"])
def test_a_node_name_that_is_an_option_a_path_or_two_words_is_refused(name: str) -> None:
    with pytest.raises(names.UnsafeName, match="not a node name"):
        names.check_node(name, "inventory host")


@pytest.mark.parametrize("value", ["-oProxyCommand=touch /tmp/x", "h1\n", "h 1", "h1;id"])
def test_hosts_and_users_are_checked_whole_here_and_in_multinode(value: str) -> None:
    for check in (names.check_host, names.check_user):
        with pytest.raises(names.UnsafeName):
            check(value, "ansible_host")
    with pytest.raises(model.ClusterError):          # multinode's own check: `$` alone let "h1\n" through
        model.check_host(value, "ansible_host")
    assert model.check_host("node-1.example.com", "ansible_host") == "node-1.example.com"
    assert names.check_host("fe80::1%eth0", "ansible_host") and names.check_user("svc$", "ansible_user")


def test_the_pull_command_refuses_a_host_named_like_an_option_before_building(tmp_path: Path) -> None:
    evil = tmp_path / "evil"
    (evil / "playbooks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(evil)], check=True)
    out = tmp_path / "bundles"
    rc = pull.main(["--root", str(ROOT), "--dir", str(out), "-i", str(tmp_path / "inv.yml"), "--",
                    f"--root={evil}"])
    assert rc == 2 and not out.exists()


def test_pull_yml_never_lets_a_host_name_choose_what_is_bundled(tmp_path: Path) -> None:
    """The issue's reproduction: an inventory host named `--root=DIR` made the controller bundle DIR's
    playbooks/site.yml for the nodes. Now the name ends up after `--` and is refused as a name."""
    evil = tmp_path / "evil"
    (evil / "playbooks").mkdir(parents=True)
    (evil / "playbooks" / "site.yml").write_text("--- # the attacker's\n")
    subprocess.run(["git", "init", "-q", str(evil)], check=True)
    subprocess.run(["git", "-C", str(evil), "add", "-A"], check=True)
    local = {"ansible_connection": "local"}
    inv = inventory(tmp_path, {f"--root={evil}": local, "n1": local})
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_HOME": str(tmp_path / "home")}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inv), "playbooks/pull.yml"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0
    assert "is not a node name" in proc.stdout, proc.stdout[-3000:]
    bundles = ROOT / ".ansible" / "pull"
    assert not any(evil.name in str(p) for p in bundles.rglob("*")) if bundles.is_dir() else True


def test_acceptance_yml_passes_names_as_option_values() -> None:
    play = (ROOT / "playbooks" / "acceptance.yml").read_text()
    assert "'--expect'] + __report_hosts" not in play and "map('regex_replace', '^', '--expect=')" in play


def test_the_fleet_report_step_reads_nodes_named_like_options_as_names_and_refuses_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from validation import cli

    # the argv the playbooks' report step runs (plugins/ is no package on the import path: loaded by file)
    spec = importlib.util.spec_from_file_location("_fleet_report_action", ROOT / "plugins/action/fleet_report.py")
    assert spec is not None and spec.loader is not None
    action = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(action)
    report_argv = action.report_argv

    (tmp_path / "run").mkdir()
    argv = report_argv({"results": str(tmp_path / "run"), "expect": ["n1", "--json"], "unreachable": ["--out=/x"],
                        "reasons": {}})
    assert argv[-2:] == ["--expect=--json", "--unreachable=--out=/x"]
    assert cli.main(argv) == 2                  # read as names, not as --json or --out, and refused as names
    err = capsys.readouterr().err
    assert "'--json', which is not a node name" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run" / "fleet.md").exists() and not Path("/x").exists()
    argv = report_argv({"results": str(tmp_path / "run"), "expect": ["n1", "n2"], "unreachable": [], "reasons": {}})
    assert cli.main(argv) == 1 and "| n2 | error |" in (tmp_path / "run" / "fleet.md").read_text()


def test_validate_without_hosts_is_refused_instead_of_running_the_example_inventory() -> None:
    assert "--hosts ansible://GROUP -i INVENTORY" in one_line(rocm_fleet("validate"))


def test_a_mistyped_group_is_one_line_with_the_inventorys_groups(tmp_path: Path) -> None:
    inv = inventory(tmp_path, {"n1": {"ansible_host": "10.0.0.1"}}, group="lab")
    line = one_line(rocm_fleet("validate", "-i", str(inv), "--hosts", "ansible://labb", "--results",
                               str(tmp_path / "r")))
    assert "no group or host 'labb'" in line and "lab" in line.rsplit("groups:", 1)[1]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("var", "value"), [("ansible_host", "-oProxyCommand=touch /tmp/pwned"),
                                            ("ansible_user", "-oProxyCommand=touch /tmp/pwned"),
                                            ("ansible_host", "10.0.0.1\n")])
def test_validate_checks_ansible_host_and_user_before_ssh_sees_them(tmp_path: Path, var: str, value: str) -> None:
    inv = inventory(tmp_path, {"n1": {var: value}}, group="lab")
    line = one_line(rocm_fleet("validate", "-i", str(inv), "--hosts", "ansible://lab", "--results",
                               str(tmp_path / "r")))
    assert f"n1's {var}" in line and not (tmp_path / "r").exists()


def test_validate_refuses_a_node_name_that_would_leave_the_results_directory(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yml"
    spec.write_text("validation_gpu_count: 0\n")
    line = one_line(rocm_fleet("validate", "--hosts", "local://", "--spec", str(spec), "--node-name", "../../x",
                               "--results", str(tmp_path / "r" / "run")))
    assert "--node-name" in line and not (tmp_path / "r").exists()
