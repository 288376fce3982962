"""Issue 39 item 6: the node's name becomes a file name (`<state-dir>/<node>.json`, `<results>/<node>.json`),
so `rocm-fleet health --node-name` and the plugin's `--rf-node` are checked (validation/names.py) before
anything is written; at d11d023 `--node-name ../../escaped` wrote the state and results outside
`--state-dir`, and `--rf-node` was not checked at all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from validation.commands.validate import checks_argv, checks_env

HOSTILE = ["../../escaped", "a/b", "..", ".hidden", "-rf", "", "node\n1", "x" * 300]


def written(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def spec_in(root: Path) -> Path:
    spec = root / "work" / "spec.yml"
    spec.parent.mkdir()
    spec.write_text("validation_gpu_count: null\nrocm_packages: []\n")
    return spec


@pytest.mark.parametrize("name", HOSTILE)
def test_the_health_command_refuses_a_node_name_that_is_not_one_file_name_before_writing(name: str,
                                                                                          tmp_path: Path) -> None:
    spec = spec_in(tmp_path)
    run = subprocess.run([sys.executable, "-m", "validation", "health", "--spec", str(spec), "--state-dir",
                          str(tmp_path / "a" / "b" / "state"), f"--node-name={name}"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.startswith("rocm-fleet: error: --node-name is ") and run.stderr.count("\n") == 1, run.stderr
    assert "not a node name" in run.stderr and "Traceback" not in run.stderr
    assert written(tmp_path) == ["work", "work/spec.yml"]           # no state, no results, no lock, anywhere


@pytest.mark.parametrize("name", ["../../escaped", "a/b", ""])
def test_the_plugin_refuses_an_rf_node_that_is_not_one_file_name_before_writing(name: str, tmp_path: Path) -> None:
    spec = spec_in(tmp_path)
    deep = tmp_path / "a" / "b"
    argv = checks_argv("local://", "health", deep / "results", f"--rf-spec={spec}", f"--rf-node={name}",
                       f"--rf-health-state={deep / 'state'}", "-q", "-p", "no:cacheprovider")
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=checks_env(),
                         cwd=tmp_path / "work")
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert run.stderr.startswith("ERROR: --rf-node is ") and "\n" not in run.stderr.strip(), run.stderr  # pytest's
    # own usage-error line (it ends with an empty one); pytest's exit code for it is 4, its 2 means "interrupted"
    assert "not a node name" in run.stderr
    assert written(tmp_path) == ["work", "work/spec.yml"]
