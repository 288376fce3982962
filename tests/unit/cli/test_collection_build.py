"""`ansible-galaxy collection build .` packs an allow-list (galaxy.yml `manifest:`): the collection's own paths,
never what else lies in a checkout (the lab's SSH keys, an operator's inventory, .env, results), and yet all
that the installed collection runs: the filters and the action plugins import `validation` from its root, and
the wheelhouse action builds the package from there (validation/wheelhouse.py).

Built from a copy of the tracked files (not this checkout, whose untracked files are whatever they are today).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from validation import wheelhouse

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent

# What a checkout may hold beside the collection: none of it may ship.
PRIVATE = (
    ".lab/x/id_ed25519",
    ".lab/x/hosts/h1/ssh_host_ed25519_key",
    ".lab/x/hosts/h1/ssh_host_ed25519_key.pub",
    ".env",
    "inventories/prod/group_vars/all.yml",
    "inventories/prod/hosts.yml",
    "results/foo.json",
    ".ansible/wheelhouse/0123/rocm_fleet-0.1.0-py3-none-any.whl",
    "roles/rocm/.secrets/vault.yml",              # a dot-directory inside a shipped path
    "validation/.cache/note.json",
    "roles/rocm/tasks/.local.yml",                # a dot-file inside a shipped path
    "rocm_fleet-fleet-0.0.9.tar.gz",             # an earlier build
    "build/lib/validation/declared.py",          # a stale setuptools build
)
# The collection's own paths: every tracked file under them ships.
SHIPPED_TREES = ("roles/", "playbooks/", "plugins/", "validation/", "meta/", "inventories/example/", "changelogs/")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name and os.path.lexists(ROOT / name)]


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "PYTHONPATH"}
    env.update(HOME=str(home), ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(home / "installed"))
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str], Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("collection-build")
    tree = tmp / "checkout"
    for name in _tracked():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tree / name, follow_symlinks=False)
    for name in PRIVATE:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("PRIVATE\n")
    env = _clean_env(tmp)
    out = tmp / "out"
    proc = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), "."],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tarball,) = out.glob("rocm_fleet-fleet-*.tar.gz")
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    return tarball, names, tmp, env


def test_nothing_private_beside_the_collection_is_packed(built) -> None:
    _, names, _, _ = built
    packed = sorted(name for name in PRIVATE if name in names)
    assert not packed, f"packed: {packed}"
    tops = {name.split("/", 1)[0] for name in names}
    assert not {t for t in tops if t.startswith(".")}, tops
    assert not any("/." in f"/{name}" for name in names), sorted(n for n in names if "/." in f"/{n}")
    assert not any(name.startswith(("inventories/prod", "inventories/lab", "results", "build/")) for name in names)


def test_every_tracked_file_of_the_collection_paths_is_packed(built) -> None:
    _, names, _, _ = built
    wanted = [name for name in _tracked() if name.startswith(SHIPPED_TREES)]
    assert "inventories/example/hosts.yml" in wanted and "roles/rocm/tasks/main.yml" in wanted
    missing = sorted(set(wanted) - names)
    assert not missing, f"not packed: {missing}"
    assert {"README.md", "pyproject.toml", "MANIFEST.json", "FILES.json"} <= names


def test_the_installed_collection_loads_its_filters_and_builds_its_wheel_from_its_own_files(built) -> None:
    """The filter plugin and the action plugins import `validation` from the installed collection's root (not from
    an installed package or this checkout); the wheelhouse action digests and builds that root's files."""
    tarball, _, tmp, env = built
    done = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "-p", str(tmp / "installed"),
                           str(tarball)], cwd=tmp, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    root = tmp / "installed" / "ansible_collections" / "rocm_fleet" / "fleet"
    probe = f"""
import importlib.util, json, sys
from pathlib import Path
root = Path({str(root)!r})
spec = importlib.util.spec_from_file_location("rf_filter", root / "plugins/filter/rocm_fleet.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
import validation, validation.cli, validation.wheelhouse
print(json.dumps({{
    "validation": validation.__file__,
    "repo_dir": module.FilterModule().filters()["repo_dir"]("6.4.1"),
    "wheel_inputs": sorted(str(p.relative_to(root)) for p in validation.wheelhouse.source_files(root)),
}}))
"""
    ran = subprocess.run([sys.executable, "-I", "-c", probe], cwd=tmp, env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr[-3000:]
    said = json.loads(ran.stdout)
    assert Path(said["validation"]).is_relative_to(root), said["validation"]
    assert said["repo_dir"] == "6.4.1"
    checkout = tmp / "checkout"
    expected = sorted(str(p.relative_to(checkout)) for p in wheelhouse.source_files(checkout)
                      if not p.relative_to(checkout).as_posix().startswith("validation/."))
    assert said["wheel_inputs"] == expected
