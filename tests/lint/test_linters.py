"""The repository is clean under ruff, mypy, yamllint, ansible-lint --profile production and its import contract."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.lint


def run(argv: list[str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)


def test_ruff_is_clean() -> None:
    result = run([str(BIN / "ruff"), "check", "validation", "tests", "bench", "roles", "plugins"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_type_checks() -> None:
    """mypy over validation/ ([tool.mypy] in pyproject.toml) finds nothing."""
    result = run([str(BIN / "mypy")])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_imports_keep_the_layering_and_have_no_cycles() -> None:
    """pyproject.toml [tool.importlinter]: each layer imports only those below it, nothing imports the
    checks (the pytest plugin), no package has a cycle."""
    result = run([str(BIN / "lint-imports"), "--no-cache"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


# The repository's own inventories; a user's copy (README: `cp -r inventories/example inventories/prod`)
# is theirs to lint, not this suite's.
INVENTORIES = ["inventories/example", "inventories/lab/group_vars"]


def tracked_yaml() -> list[str]:
    """The YAML files git tracks: the repository's, never a user's own files in the checkout."""
    listed = run(["git", "ls-files", "--", "*.yml", "*.yaml"])
    assert listed.returncode == 0, listed.stderr
    return listed.stdout.split()


def test_lint_reads_only_what_the_repository_tracks() -> None:
    user_copy = ROOT / "inventories" / "prod-lint-probe" / "group_vars" / "all.yml"
    user_copy.parent.mkdir(parents=True)
    try:
        user_copy.write_text("rocm_version: [unclosed\n")
        assert not [f for f in tracked_yaml() if f.startswith("inventories/prod-lint-probe")]
        assert "inventories/example/group_vars/mi300x.yml" in tracked_yaml()
    finally:
        user_copy.unlink()
        user_copy.parent.rmdir()
        user_copy.parent.parent.rmdir()


def test_yamllint_is_clean() -> None:
    result = run([str(BIN / "yamllint"), "--strict", *tracked_yaml()])
    assert result.returncode == 0, result.stdout + result.stderr


def snapshot_of_the_checkout(into: Path) -> Path:
    """The checkout's files as git sees them (tracked, and untracked ones it does not ignore), links kept, copied
    into `into`: what labs running beside the linters write and remove meanwhile (inventories/lab/<lab>.yml,
    ignored) is not there. ansible-lint walks the tree and read such a file as it was being removed, a
    load-failure (seen once the lab tests ran side by side, docs/testing.md)."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        source, target = ROOT / name, into / name
        if not source.is_symlink() and not source.is_file():
            continue                        # deleted in the working tree, not yet in the index
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        else:
            shutil.copy2(source, target)
    return into


def test_ansible_lint_production_profile_is_clean_over_the_whole_repository(tmp_path: Path) -> None:
    """No paths: ansible-lint lints the repository as .ansible-lint describes it (galaxy.yml, the changelog,
    the modules' documentation and EXAMPLES, the test playbooks), not only roles/ and playbooks/; in a copy of
    what git sees, so that files the labs write meanwhile are not in its walk."""
    tree = snapshot_of_the_checkout(tmp_path / "tree")
    result = subprocess.run([str(BIN / "ansible-lint"), "--profile", "production", "--offline"], cwd=tree,
                            capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "galaxy.yml" not in result.stdout + result.stderr


def test_the_changelog_fragments_are_valid() -> None:
    """changelogs/: antsibull-changelog's own lint of config.yaml, changelog.yaml and every fragment."""
    result = run([str(BIN / "antsibull-changelog"), "lint"])
    assert result.returncode == 0 and result.stdout.strip() == "", result.stdout + result.stderr
