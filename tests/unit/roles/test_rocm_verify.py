"""roles/rocm/tasks/verify.yml: every declared package installed at a matching version, read from the
hold's one dpkg-query (rocm_fleet.fleet.dpkg_holds' `installed`) on Debian, from package_facts elsewhere.

Run on localhost with the hold's result given as a variable: no ROCm is installed here. The real
dpkg-query answers in the lab (tests/integration: every converge ends with this check).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
VERIFY = ROOT / "roles/rocm/tasks/verify.yml"


def run_verify(tmp_path: Path, play_vars: dict) -> str:
    playbook = tmp_path / "verify.yml"
    playbook.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "vars": play_vars,
                                     "tasks": [{"ansible.builtin.include_tasks": str(VERIFY)}]}]))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-c", "local", "-i", "localhost,",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    return proc.stdout + proc.stderr


def test_the_holds_versions_pass_a_match_and_name_a_mismatch_and_a_missing_package(tmp_path: Path) -> None:
    out = run_verify(tmp_path, {
        "__rocm_dpkg": {"installed": {"rocminfo": "6.1.2-2", "rocm-core": "6.4.0.60400-47~22.04",
                                      "hipify-clang": "5.7.1+dfsg-1"}},
        "__rocm_wanted": [{"name": "rocminfo", "version": "6.1.2-*"}, {"name": "rocm-core", "version": "6.2.4*"},
                          {"name": "hipcc", "version": "1.0"}, {"name": "hipify-clang", "version": "5.7.1+dfsg-1"}]})
    # a '+' is itself, not a regular expression's repetition (it was, before: 5.7.1+dfsg-1 failed)
    assert "ok: [localhost] => (item=rocminfo)" in out and "ok: [localhost] => (item=hipify-clang)" in out
    assert "rocm-core is 6.4.0.60400-47~22.04, the inventory declares 6.2.4*." in out
    assert "hipcc is not installed, the inventory declares 1.0." in out
    assert "Read installed package versions" not in out.split("TASK [")[-1]     # no package_facts run
    assert "failed=1" in out


def test_after_an_install_the_second_holds_versions_are_the_ones_checked(tmp_path: Path) -> None:
    """install-Debian.yml reads the versions before apt (which runs only where one differs) and again after it."""
    wanted = [{"name": "rocminfo", "version": "6.2.4*"}]
    before = {"__rocm_dpkg": {"installed": {"rocminfo": "6.1.2-2"}}, "__rocm_wanted": wanted}
    assert "rocminfo is 6.1.2-2, the inventory declares 6.2.4*." in run_verify(tmp_path, before)
    after = {**before, "__rocm_dpkg_installed": {"installed": {"rocminfo": "6.2.4.60204-139~22.04"}}}
    out = run_verify(tmp_path, after)
    assert "ok: [localhost] => (item=rocminfo)" in out and "failed=0" in out, out[-3000:]
    skipped = {**before, "__rocm_dpkg_installed": {"skipped": True, "changed": False}}
    assert "rocminfo is 6.1.2-2" in run_verify(tmp_path, skipped)


@pytest.mark.skipif(not shutil.which("dpkg-query"), reason="package_facts reads dpkg here; this machine has none")
def test_without_the_holds_result_package_facts_reads_the_versions(tmp_path: Path) -> None:
    version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "bash"], capture_output=True, text=True,
                             check=True).stdout
    out = run_verify(tmp_path, {"__rocm_wanted": [{"name": "bash", "version": version}]})
    assert "TASK [Read installed package versions]" in out and "ok: [localhost] => (item=bash)" in out, out[-3000:]
    assert "failed=0" in out
    out = run_verify(tmp_path, {"__rocm_wanted": [{"name": "bash", "version": "0.0"}]})
    assert f"bash is {version}, the inventory declares 0.0." in out
