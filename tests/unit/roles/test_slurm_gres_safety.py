"""slurm_gres never writes what Slurm would ignore, keeps a linked slurm.conf a link, and refuses before any
change (issue 39 item 8).

The rules (validation/slurm_gres.py) are called directly; the role runs through ansible-playbook with a local
connection on this machine (tests/unit/ansible/slurm_gres_local.yml), against files under a temporary directory:
no Slurm daemon runs here, so nothing is restarted and scontrol is not asked (the lab proof on real Slurm:
tests/integration/test_slurm.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from validation import slurm_gres
from validation.errors import RocmFleetError

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "tests" / "unit" / "ansible" / "slurm_gres_local.yml"
CONF = """ClusterName=rack
SlurmctldHost=ctl
NodeName=gpu1 CPUs=192 # rack 3
NodeName=gpu2 CPUs=192 State=UNKNOWN
PartitionName=gpu Nodes=ALL Default=YES State=UP
"""


# --------------------------------------------------------------------------- the rule
def test_gres_goes_before_a_comment_not_into_it() -> None:
    out = slurm_gres.slurm_conf_with_gres(CONF, {"gpu1": "gpu:8"})
    assert "NodeName=gpu1 CPUs=192 Gres=gpu:8 # rack 3\n" in out, out
    assert slurm_gres.slurm_conf_with_gres(out, {"gpu1": "gpu:8"}) == out                  # idempotent
    assert "NodeName=gpu1 CPUs=192 Gres=gpu:64 # rack 3\n" in slurm_gres.slurm_conf_with_gres(out, {"gpu1": "gpu:64"})


def test_a_gres_word_in_a_comment_is_the_comments_and_stays() -> None:
    conf = CONF.replace("# rack 3", "#was Gres=gpu:4 before the swap")
    out = slurm_gres.slurm_conf_with_gres(conf, {"gpu1": "gpu:8"})
    assert "NodeName=gpu1 CPUs=192 Gres=gpu:8 #was Gres=gpu:4 before the swap\n" in out, out


def test_a_comment_right_after_the_name_is_not_part_of_the_name() -> None:
    out = slurm_gres.slurm_conf_with_gres(CONF.replace("NodeName=gpu1 CPUs=192 # rack 3", "NodeName=gpu1# rack 3"),
                                          {"gpu1": "gpu:8"})
    assert "NodeName=gpu1 Gres=gpu:8 # rack 3\n" in out, out


def test_gres_types_with_a_comment_gets_gpu_and_no_second_line() -> None:
    out = slurm_gres.slurm_conf_with_gres("GresTypes=mps # MPS for the inference queue\n" + CONF, {"gpu1": "gpu:8"})
    assert out.startswith("GresTypes=mps,gpu # MPS for the inference queue\n"), out
    assert out.count("GresTypes=") == 1


def test_a_hostlist_line_is_refused_however_it_is_commented() -> None:
    with pytest.raises(RocmFleetError, match=r"defines gpu1 on one line with other nodes \(gpu\[1-4\]\)"):
        slurm_gres.slurm_conf_with_gres("NodeName=gpu[1-4] CPUs=192 # rack 3\n", {"gpu1": "gpu:8"})


# --------------------------------------------------------------------------- the role, on this machine
def run_role(tmp: Path, conf: Path, gres: Path, **variables: object) -> subprocess.CompletedProcess[str]:
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "slurm_gres_conf_path": str(gres), "slurm_gres_slurm_conf_path": str(conf),
            "slurm_gres_node": "gpu1", "slurm_gres_detect": "rsmi", "validation_gpu_count": 8, **variables}
    inventory = tmp / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"case": host}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(PLAYBOOK)], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
                          check=False)


def test_a_hostlist_slurm_conf_is_refused_before_gres_conf_is_written(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(CONF.replace("NodeName=gpu1 CPUs=192 # rack 3", "NodeName=gpu[1-4] CPUs=192"))
    before = conf.read_bytes()
    gres = tmp_path / "gres.conf"
    done = run_role(tmp_path, conf, gres)
    assert done.returncode != 0, done.stdout
    assert "defines gpu1 on one line with other nodes (gpu[1-4])" in done.stdout, done.stdout[-3000:]
    assert not gres.exists(), "gres.conf was written before the refusal"
    assert conf.read_bytes() == before


def test_a_linked_slurm_conf_and_gres_conf_stay_links_and_their_targets_get_the_change(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "slurm.conf").write_text(CONF)
    (shared / "gres.conf").write_text("AutoDetect=off\n")
    conf, gres = tmp_path / "slurm.conf", tmp_path / "gres.conf"
    conf.symlink_to(shared / "slurm.conf")
    gres.symlink_to(shared / "gres.conf")
    done = run_role(tmp_path, conf, gres)
    assert done.returncode == 0, done.stdout[-3000:]
    assert conf.is_symlink() and gres.is_symlink(), "a link was replaced by a regular file"
    assert (shared / "slurm.conf").read_text() == "GresTypes=gpu\n" + CONF.replace("# rack 3", "Gres=gpu:8 # rack 3")
    assert (shared / "gres.conf").read_text().splitlines()[1:] == ["AutoDetect=rsmi"]
    again = run_role(tmp_path, conf, gres)                  # converged: nothing to write, no daemon to restart
    assert again.returncode == 0 and " changed=0 " in again.stdout, again.stdout[-3000:]
