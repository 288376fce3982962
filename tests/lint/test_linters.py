"""The repository is clean under ruff, yamllint and ansible-lint --profile production."""

from __future__ import annotations

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
    result = run([str(BIN / "ruff"), "check", "validation", "tests", "bench", "roles"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_yamllint_is_clean() -> None:
    result = run([str(BIN / "yamllint"), "--strict", "."])
    assert result.returncode == 0, result.stdout + result.stderr


def test_ansible_lint_production_profile_is_clean() -> None:
    result = run([str(BIN / "ansible-lint"), "--profile", "production", "--offline", "roles", "playbooks",
                  "inventories"])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
