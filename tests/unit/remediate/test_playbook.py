"""playbooks/remediate.yml's plan: bad limits refused before any change (a real ansible-playbook run that
reaches no host), and at most M nodes in a batch (the reboot and the tiers live only in the play whose
`serial` is M; that expression, run by Ansible over five hosts, makes batches of M)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "playbooks" / "remediate.yml"
BIN = Path(sys.executable).parent


def plays() -> list[dict]:
    return yaml.safe_load(PLAYBOOK.read_text())


def uses_role(tasks: list[dict], role: str) -> bool:
    text = json.dumps(tasks)
    return f'"name": "{role}"' in text


def test_only_the_batched_play_reboots_or_validates_and_its_batch_is_m() -> None:
    every = plays()
    found = [p for p in every if uses_role(p.get("tasks", []), "node_reboot")]
    assert [p["name"] for p in found] == ["Remediate, at most rocm_fleet_remediate_max_nodes nodes at once"]
    play = found[0]
    assert play["hosts"] == "remediate_candidates"            # only nodes rocm-fleet drained
    assert play["serial"] == "{{ rocm_fleet_remediate_max_nodes | default(1) }}"
    assert uses_role(play["tasks"], "validation_node")
    others = [p["name"] for p in every if p is not play and uses_role(p.get("tasks", []), "validation_node")]
    assert others == []
    first = every[0]
    assert first["any_errors_fatal"] is True and first["tasks"][0]["ansible.builtin.assert"]
    assert first["tasks"][0]["run_once"] is True


def run(tmp_path: Path, playbook: Path, hosts: int, **extra: object) -> subprocess.CompletedProcess[str]:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {f"n{i}": {"ansible_connection": "local",
                                                                      "ansible_python_interpreter": sys.executable}
                                                          for i in range(1, hosts + 1)}}}))
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(playbook), "-e",
                           json.dumps({"rocm_fleet_hosts": "all", **extra})],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)


@pytest.mark.parametrize(("extra", "said"), [
    ({"rocm_fleet_remediate_max_nodes": 0}, "rocm_fleet_remediate_max_nodes is 0, give a whole number >= 1"),
    ({"rocm_fleet_remediate_max_attempts": -2}, "rocm_fleet_remediate_max_attempts is -2, give a whole number >= 1"),
    ({"rocm_fleet_remediate_window_hours": "a day"}, 'rocm_fleet_remediate_window_hours is "a day", give hours > 0'),
    ({"rocm_fleet_remediate_tier": "acceptance"}, 'rocm_fleet_remediate_tier is "acceptance", give smoke or quick'),
])
def test_bad_limits_are_refused_in_one_line_before_any_host_is_touched(tmp_path: Path, extra: dict, said: str) -> None:
    done = run(tmp_path, PLAYBOOK, 3, **extra)
    assert done.returncode != 0
    output = (done.stdout + done.stderr).splitlines()
    lines = [line for line in output if "remediate.yml refused before any change" in line]
    assert lines and said in lines[0], done.stdout[-3000:]
    assert "Prepare the run" not in done.stdout and "Read the node's state" not in done.stdout


def test_the_batch_expression_takes_at_most_m_nodes_at_once(tmp_path: Path) -> None:
    remediation = next(p for p in plays() if p["hosts"] == "remediate_candidates" and "serial" in p)
    probe = tmp_path / "batches.yml"
    probe.write_text(yaml.safe_dump([{
        "name": "Batches", "hosts": "all", "gather_facts": False, "serial": remediation["serial"],
        "tasks": [{"name": "Batch", "ansible.builtin.debug": {"msg": "batch {{ ansible_play_batch | join(',') }}"},
                   "run_once": True}]}]))
    done = run(tmp_path, probe, 5, rocm_fleet_remediate_max_nodes="2")      # -e gives strings
    assert done.returncode == 0, done.stdout[-2000:]
    batches = [line.split("msg: batch ", 1)[1] for line in done.stdout.splitlines() if "msg: batch " in line]
    assert batches == ["n1,n2", "n3,n4", "n5"]
