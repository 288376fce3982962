"""An inventory host name that is not a node name stops every fan-out playbook before any change (issue 39
item 6): validate.yml, upgrade.yml, health.yml, remediate.yml, acceptance.yml and active_checks.yml build
controller paths from inventory_hostname (results/<run>/<name>.json, rollout/<name>.json,
bundles/<name>.tar.gz) and all start with playbooks/tasks/controller_run.yml, whose first task refuses such a
name through the collection's Jinja test rocm_fleet.fleet.node_name (validation/names.py NODE_RE, the rule
every other path that takes a node name checks).

`ansible-inventory` accepts a host named `a/../../b`; here it is run through ansible-playbook with a local
connection (tests/unit/ansible/controller_run_names.yml)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "tests" / "unit" / "ansible" / "controller_run_names.yml"
HOSTILE = "a/../../b"


def run(tmp: Path, hosts: list[str], *extra: str) -> subprocess.CompletedProcess[str]:
    case = tmp / "deep" / "er"
    (case / "results" / "a").mkdir(parents=True, exist_ok=True)      # so that a/../../b resolves: to deep/er/b
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "case_dir": str(case),
             "validation_node_wheelhouse": str(tmp / "wheelhouse")}
    inventory = tmp / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {h: local for h in hosts}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_CALLBACK_FORMAT_PRETTY": "false"}
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(PLAYBOOK), *extra], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
                          check=False)


def test_a_host_named_a_slash_dot_dot_is_refused_in_one_line_before_any_file_is_written(tmp_path: Path) -> None:
    done = run(tmp_path, ["gpu-01", HOSTILE])
    assert done.returncode != 0, done.stdout[-3000:]
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.json"))
    assert written == ["hosts.json"], f"written before the refusal: {written}"
    refused = [line for line in done.stdout.splitlines() if line.startswith("fatal: [")]
    assert len(refused) == 1, done.stdout[-3000:]                     # one line, for the whole run
    msg = json.loads(refused[0].split(" => ", 1)[1])["msg"]
    assert msg == ('inventory host name "a/../../b" is not a node name (letters, digits, \'.\', \'_\', \':\', '
                   "'-'; not starting with '-' or '.'): the controller writes results/<run>/<name>.json and other "
                   "files from it. Rename the host in the inventory (keep its address in ansible_host)"), msg


def test_a_run_name_that_is_not_one_file_name_is_refused_before_any_file_is_written(tmp_path: Path) -> None:
    """rocm_fleet_run_name becomes results/<run>/ on the controller: at d11d023 '../../x' was used as given."""
    done = run(tmp_path, ["gpu-01"], "-e", json.dumps({"rocm_fleet_run_name": "../../x"}))
    assert done.returncode != 0, done.stdout[-3000:]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.json")) == ["hosts.json"]
    assert 'rocm_fleet_run_name is "../../x", which is not one file name' in done.stdout, done.stdout[-3000:]


def test_node_names_pass_and_the_run_goes_on(tmp_path: Path) -> None:
    done = run(tmp_path, ["gpu-01", "gpu_02.rack3"])
    assert done.returncode == 0, done.stdout[-3000:]
    assert sorted(p.name for p in (tmp_path / "deep" / "er" / "results").iterdir()) == ["a", "gpu-01.json",
                                                                                        "gpu_02.rack3.json"]


def test_every_playbook_that_builds_a_controller_path_from_the_host_name_refuses_it_first() -> None:
    """A playbook whose dest/path/src holds inventory_hostname (or that runs roles/validation_node, which fetches
    to <results>/<run>/<inventory_hostname>.json) imports controller_run.yml before any play that may change
    something: only preflight.yml (input checks) and plays of asserts alone may come first."""
    first = yaml.safe_load((ROOT / "playbooks" / "tasks" / "controller_run.yml").read_text())[0]
    assert "rocm_fleet.fleet.node_name" in json.dumps(first), first["name"]
    builds = re.compile(r"(dest|path|src):.*inventory_hostname|validate_node\.yml|__record_dir ~ '/")
    found = []
    for playbook in sorted((ROOT / "playbooks").glob("*.yml")):
        if not builds.search(playbook.read_text()):
            continue
        found.append(playbook.name)
        for play in yaml.safe_load(playbook.read_text()):
            if play.get("ansible.builtin.import_playbook") == "preflight.yml":
                continue
            tasks = [*play.get("pre_tasks", []), *play.get("tasks", [])]
            if tasks and tasks[0].get("ansible.builtin.import_tasks") == "tasks/controller_run.yml":
                break
            assert not play.get("roles") and all("ansible.builtin.assert" in t for t in tasks), \
                f"{playbook.name}: play {play.get('name')!r} runs before tasks/controller_run.yml"
        else:
            raise AssertionError(f"{playbook.name} never imports tasks/controller_run.yml")
    assert {"acceptance.yml", "remediate.yml", "upgrade.yml", "validate.yml"} <= set(found), found


@pytest.mark.parametrize(("name", "ok"), [("gpu-01", True), ("n1.example.com", True), ("gpu-02.rack3:0", True),
                                          (HOSTILE, False), ("../x", False), ("-oProxyCommand=x", False),
                                          (".hidden", False), ("a b", False), ("n1\n", False), ("", False), (7, False)])
def test_the_jinja_test_is_the_node_name_rule(name: object, ok: bool) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("rocm_fleet_tests", ROOT / "plugins" / "test" / "rocm_fleet.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.TestModule().tests()["node_name"](name) is ok
