"""The wheel that playbooks/validate.yml installs on nodes must carry every data file the suite
reads at run time (a missing checks/pytest.ini once stopped every node run before its first check)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_every_data_file_under_validation_is_declared_package_data() -> None:
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]
    data = [p for p in (ROOT / "validation").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert data, "expected data files (targets, templates, pytest.ini)"
    missing = [str(p.relative_to(ROOT)) for p in data if not any(fnmatch.fnmatch(p.name, pat) for pat in patterns)]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
