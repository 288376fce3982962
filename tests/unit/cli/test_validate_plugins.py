"""The checks run with their own pytest plugins only: one installed beside the suite (a controller's
pytest-cov, pytest-benchmark, jaxtyping...) is not loaded into the run. A real plugin, found the way pytest
finds installed ones (a distribution's `pytest11` entry point), and the real `rocm-fleet validate` on
this machine's own checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STRAY = """
import os, pathlib

def pytest_configure(config):
    pathlib.Path(os.environ["STRAY_MARK"]).write_text("loaded\\n")
"""


def test_a_pytest_plugin_installed_beside_the_suite_is_not_loaded_into_its_run(tmp_path: Path) -> None:
    site, mark = tmp_path / "site", tmp_path / "mark"
    (site / "stray-1.0.dist-info").mkdir(parents=True)
    (site / "stray-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: stray\nVersion: 1.0\n")
    (site / "stray-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nstray = stray_plugin\n")
    (site / "stray_plugin.py").write_text(STRAY)
    (tmp_path / "empty").mkdir()
    path = os.pathsep.join([str(site), *os.environ.get("PYTHONPATH", "").split(os.pathsep)])
    env = {**os.environ, "PYTHONPATH": path, "STRAY_MARK": str(mark)}
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    plain = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", str(tmp_path / "empty")],
                           env=env, capture_output=True, text=True, timeout=120, check=False)
    assert mark.read_text() == "loaded\n", plain.stdout + plain.stderr          # pytest itself loads it
    mark.unlink()
    spec = tmp_path / "spec.yml"
    spec.write_text("validation_gpu_count: 0\n")
    run = subprocess.run([sys.executable, "-m", "validation", "validate", "--hosts", "local://", "--spec", str(spec),
                          "--tier", "smoke", "--no-gpu", "--results", str(tmp_path / "results"), "--node-name", "n1"],
                         env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]
    assert (tmp_path / "results" / "n1.json").is_file(), run.stdout[-3000:]
    assert not mark.exists(), "the stray plugin was loaded into the suite's run"
