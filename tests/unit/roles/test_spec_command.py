"""`rocm-fleet spec`: a node's declared state from the inventory, for `validate --hosts local:// --spec`.

Expected values are read from inventories/example/group_vars/mi300x.yml and the roles' defaults.
The byte-for-byte agreement with what roles/validation_node writes on a node is proven on a lab
host (tests/integration/test_newcomer.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from validation.cli import main
from validation.spec import declared_state

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "inventories" / "example"
NODE = "gpu-node-01.example.com"


def spec_of(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["spec", "-i", str(EXAMPLE), *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_spec_is_the_role_defaults_overlaid_with_the_hosts_inventory_variables(capsys) -> None:
    rc, out, _ = spec_of(capsys, NODE)
    assert rc == 0
    doc = yaml.safe_load(out)
    assert doc["rocm_version"] == "6.2.4"                              # group_vars/mi300x.yml
    assert doc["node_tuning_modprobe_blacklist"] == ["ast"]            # group_vars over the default []
    assert doc["node_tuning_cpuidle_disabled_states"] == [2]           # roles/node_tuning/defaults
    assert doc["validation_gpu_count"] == 8
    assert not [k for k in doc if k.startswith(("ansible_", "validation_node_", "rocm_fleet_", "group_names"))]


def test_spec_text_is_sorted_yaml_with_the_roles_indentation(capsys) -> None:
    _, out, _ = spec_of(capsys, NODE)
    keys = [line.split(":")[0] for line in out.splitlines() if line and not line.startswith((" ", "-"))]
    assert keys == sorted(keys) and keys[0] == "amdgpu_driver_headers_manage"
    assert "amdgpu_driver_packages:\n- amdgpu-dkms\n" in out                   # lists flush with the key
    assert "env_profiles_env:\n    HIP_FORCE_DEV_KERNARG: '1'\n" in out         # mappings by four spaces


def test_extra_vars_override_the_inventory_and_key_value_words_stay_strings(capsys) -> None:
    _, out, _ = spec_of(capsys, NODE, "-e", "rocm_version=7.0.2", "-e", '{"validation_gpu_count": 4}')
    doc = yaml.safe_load(out)
    assert doc["rocm_version"] == "7.0.2" and doc["validation_gpu_count"] == 4


def test_several_hosts_give_one_file_that_validate_picks_from_by_node_name(capsys, tmp_path: Path) -> None:
    from validation.spec import load_spec_file

    _, out, _ = spec_of(capsys)                       # no HOST: every host of the inventory
    path = tmp_path / "spec.yml"
    path.write_text(out)
    assert sorted(yaml.safe_load(out)["hosts"]) == [NODE, "gpu-node-02.example.com"]
    assert "&id" not in out and "*id" not in out       # the hosts' shared defaults printed as plain YAML, twice
    assert load_spec_file(path, NODE)["rocm_version"] == "6.2.4"


def test_json_output_is_one_document(capsys) -> None:
    _, out, _ = spec_of(capsys, NODE, "--json")
    assert json.loads(out)["rocm_repo_source"] == "amd"


@pytest.mark.parametrize(("argv", "message"), [
    ([NODE.replace("01", "99")], "has no host gpu-node-99.example.com; it lists gpu-node-01.example.com"),
    (["-e", "rocm_version"], "-e 'rocm_version': give KEY=VALUE words"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv: list[str], message: str) -> None:
    rc, out, err = spec_of(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.startswith("rocm-fleet: error: ") and message in err and err.count("\n") == 1, err


def test_declared_state_keeps_node_variables_and_drops_run_bookkeeping() -> None:
    state = declared_state([{"rocm_version": "6.1.2", "gpu_access_groups": ["video"]}],
                           {"rocm_version": "6.2.4", "rocm_fleet_run_id": "20260101T000000Z",
                            "validation_node_tier": "quick", "validation_gpu_count": 8, "ansible_host": "10.0.0.1"},
                           {"validation_gpu_count": 4})
    assert state == {"rocm_version": "6.2.4", "gpu_access_groups": ["video"], "validation_gpu_count": 4}


def test_validate_runs_by_hand_on_this_machine_with_the_printed_spec(capsys, tmp_path: Path) -> None:
    """The newcomer's path: print the spec, validate this machine with it. This machine is not a
    converged node, so checks fail; every one gives a verdict (none ends in an error)."""
    _, out, _ = spec_of(capsys, NODE)
    (tmp_path / "spec.yml").write_text(out)
    proc = subprocess.run([sys.executable, "-m", "validation", "validate", "--hosts", "local://", "--spec",
                           str(tmp_path / "spec.yml"), "--tier", "smoke", "--no-gpu", "--results",
                           str(tmp_path / "r"), "--node-name", "by-hand"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads((tmp_path / "r" / "by-hand.json").read_text())
    assert doc["complete"] and len(doc["checks"]) > 20
    assert {c["status"] for c in doc["checks"]} <= {"pass", "fail", "skip"}, [
        c for c in doc["checks"] if c["status"] == "error"]
    assert "Traceback" not in proc.stdout + proc.stderr


def test_the_checks_read_the_same_spec_as_rocm_fleet_spec_and_a_missing_roles_dir_is_said(tmp_path: Path) -> None:
    from validation.errors import RocmFleetError
    from validation.spec import ROLES_DIR, checks_spec, role_defaults, spec_role_defaults

    found = {"rocm_version": "6.4.1", "validation_gpu_count": 8, "rocm_fleet_run_id": "r1", "mpi_launcher_user": "x"}
    spec = checks_spec(found)
    assert spec == declared_state(spec_role_defaults(), found)
    assert spec["node_tuning_state"] == "present"
    assert "rocm_fleet_run_id" not in spec and "mpi_launcher_user" not in spec
    # an installed wheel on a node has no roles/: the spec file validate.yml wrote whole is taken as it is
    assert checks_spec(found, roles_dir=tmp_path / "no-roles") == found
    with pytest.raises(RocmFleetError, match="no-roles is missing; run rocm-fleet from a checkout"):
        role_defaults(tmp_path / "no-roles")
    assert role_defaults(ROLES_DIR)["mpi_launcher_user"]


def test_a_variable_the_spec_does_not_hold_says_how_to_write_a_whole_one(tmp_path: Path) -> None:
    from validation.errors import RocmFleetError
    from validation.spec import checks_spec

    partial = checks_spec({"validation_gpu_count": 8}, roles_dir=tmp_path / "no-roles")   # a wheel, a partial file
    assert partial.get("rocm_repo_source") is None
    with pytest.raises(RocmFleetError, match="does not declare rocm_repo_source; write the node's whole spec"):
        partial["rocm_repo_source"]
    assert checks_spec({"validation_gpu_count": 8})["rocm_repo_source"] == "amd"     # the role's default
